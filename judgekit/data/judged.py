"""Judged items (the West Frisian format): Prompt, Output, Source, Label and a Rubric
with per-criterion values and `<c>_reason` strings."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from judgekit.errors import DataError, describe_validation


class JudgedItem(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    Prompt: str
    Output: str
    Source: str | None = None
    Label: int | None = None
    Rubric: dict[str, int | str] | None = None

    @field_validator("Label")
    @classmethod
    def _binary(cls, v: int | None) -> int | None:
        if v is not None and v not in (0, 1):
            raise ValueError(f"Label must be 0 or 1, got {v}")
        return v

    def criterion_values(self) -> dict[str, int]:
        return {k: int(v) for k, v in (self.Rubric or {}).items()
                if not k.endswith("_reason") and isinstance(v, int)}


def load_judged(path: str | Path, start: int = 0, limit: int | None = None,
                indices: list[int] | None = None) -> list[JudgedItem]:
    p = Path(path)
    if not p.exists():
        raise DataError(f"judged-items file {p} not found")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(doc, list):
        raise DataError(f"{p}: expected a JSON list of judged items")
    if indices is not None:
        bad = [i for i in indices if not 0 <= i < len(doc)]
        if bad:
            raise DataError(f"{p}: item index {bad[0]} is outside 0..{len(doc) - 1}")
        chosen = [(i, doc[i]) for i in indices]
    else:
        chosen = list(enumerate(doc))[start: None if limit is None else start + limit]
        if limit is not None and len(chosen) < limit:
            raise DataError(f"{p}: sample_size {limit} from item {start} exceeds its "
                            f"{len(doc)} items")
    out = []
    for i, raw in chosen:
        try:
            out.append(JudgedItem.model_validate(raw))
        except ValidationError as exc:
            raise DataError(f"{p}: item {i}: {describe_validation(exc)}") from exc
    return out
