"""Judged items (the West Frisian format): Prompt, Output, Source, Label and a Rubric
with per-criterion values and `<c>_reason` strings."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from judgekit.core.errors import DataError, describe_validation
from judgekit.core.jsontypes import JSONObject
from judgekit.data.registry import dataset


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


@dataset("west_frisian", formats=("json",), kind="judged", licence="MIT",
         url="https://raw.githubusercontent.com/adewynter/no_data_algorithm/main/"
             "west_frisian_dataset_with_rubric_shuffled.json",
         filename="west_frisian_dataset_with_rubric_shuffled.json",
         description="West Frisian judged items with per-criterion rubric values (the "
                     "No-Data paper's LLM experiment)")
def load_judged(path: str | Path, start: int = 0, limit: int | None = None,
                indices: list[int] | None = None, spec: Any = None) -> list[JudgedItem]:
    """Judged items from ``path``: judgekit's JSON list, or (``spec.data_format``) an
    Inspect log, a promptfoo results file, or a CSV / JSONL with a column mapping."""
    from judgekit.recorded.judged import read_records

    p = Path(path)
    if not p.exists():
        raise DataError(f"judged-items file {p} not found")
    doc = read_records(p, spec)
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
    if spec is not None and getattr(spec, "labels_file", None):
        chosen = _with_labels(chosen, doc, Path(spec.labels_file))
    out = []
    for i, raw in chosen:
        try:
            out.append(JudgedItem.model_validate(raw))
        except ValidationError as exc:
            raise DataError(f"{p}: item {i}: {describe_validation(exc)}") from exc
    return out


def check_judged(items: list[JudgedItem], criteria: list[str], aggregate: Any,
                 positions: list[int], source: str, *, strict: bool = False,
                 known: list[str] | None = None) -> JSONObject:
    """Items whose Label disagrees with their own rubric values under the rubric's
    aggregator, and rubric fields the rubric does not define. Returned as counts and
    item positions (and logged once as a warning); ``strict`` makes either an error."""
    disagree: list[int] = []
    unknown: dict[str, list[int]] = {}
    for pos, it in zip(positions, items):
        vals = it.criterion_values()
        extra = sorted(set(vals) - set(criteria) - set(known or []))
        for f in extra:
            unknown.setdefault(f, []).append(pos)
        if it.Label is not None and all(c in vals for c in criteria) and \
                int(aggregate([vals[c] for c in criteria])) != it.Label:
            disagree.append(pos)
    report = {"label_rubric_disagreements": {"count": len(disagree), "items": disagree},
              "unknown_rubric_fields": {f: {"count": len(v), "items": v}
                                        for f, v in unknown.items()}}
    problems = []
    if disagree:
        problems.append(f"{len(disagree)} item(s) whose Label disagrees with their own rubric "
                        f"values under the rubric's aggregator (items {disagree[:10]})")
    for f, v in unknown.items():
        problems.append(f"rubric field {f!r} on {len(v)} item(s) is not a criterion of the "
                        f"rubric (items {v[:10]})")
    if problems:
        msg = f"{source}: " + "; ".join(problems)
        if strict:
            raise DataError(msg + " (--strict)")
        logging.getLogger("judgekit.data").warning("judgekit: %s", msg)
    return report


def _with_labels(chosen: list[tuple[int, Any]], doc: list[Any], path: Path
                 ) -> list[tuple[int, Any]]:
    """The chosen items with Label taken from a labels file (an item its annotators
    split on keeps its own Label); an id matching no item is an error."""
    from judgekit.recorded.labels import values

    labels = values(path)
    keys = {str(raw.get("id", i)) if isinstance(raw, dict) else str(i)
            for i, raw in enumerate(doc)}
    unknown = sorted(set(labels) - keys)
    if unknown:
        raise DataError(f"{path}: id {unknown[0]!r} is not an item of the data "
                        f"({len(unknown)} such); labels match items by id or position")
    out = []
    for i, raw in chosen:
        key = str(raw.get("id", i)) if isinstance(raw, dict) else str(i)
        v = labels.get(key)
        out.append((i, {**raw, "Label": int(v)} if v in (0.0, 1.0) and isinstance(raw, dict)
                    else raw))
    return out


def attach_labels(items: list[JudgedItem], positions: list[int], path: str) -> None:
    """People's labels from a labels file (``judgekit label`` on an audit run: ids are
    the items' positions in the data file) become the items' human labels; an id
    matching no audited item is an error, not a label silently dropped."""
    from pathlib import Path

    from judgekit.core.errors import DataError
    from judgekit.recorded import labels as store

    got = store.values(Path(path))
    where = {str(p): i for i, p in enumerate(positions)}
    unknown = [k for k in got if k not in where]
    if unknown:
        raise DataError(store.unknown_ids(f"human_labels {path}", unknown, "position"))
    for key, value in got.items():
        items[where[key]].Label = int(value >= 0.5)
