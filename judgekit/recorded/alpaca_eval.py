"""alpaca_eval ``annotations.json``: one object per comparison of ``generator_2``
against the baseline ``generator_1``, with the annotator's ``preference``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table

__all__: list[str] = []


class Annotation(BaseModel):
    """One alpaca_eval annotation: an annotator's preference between two outputs (1 the
    first, 2 the second; anything else, such as 1.5, 0 or null, is a tie or none)."""

    model_config = ConfigDict(extra="allow")
    instruction: Any = ""
    output_1: Any = ""
    output_2: Any = ""
    generator_1: Any = None
    generator_2: Any = None
    preference: Any = None
    annotator: Any = None
    price_per_example: Any = None
    time_per_example: Any = None

    @property
    def winner(self) -> str | None:
        """first, second, or None (a tie or no preference)."""
        p = self.preference
        if isinstance(p, bool):
            return None
        if isinstance(p, (int, float)) and p in (1, 2):
            return "first" if p == 1 else "second"
        return None


def read_annotations(path: Path) -> list[Annotation]:
    """The annotations of an alpaca_eval ``annotations.json``, checked and typed."""
    return [Annotation.model_validate(r) for r in _alpaca(path)]


def _alpaca(path: Path) -> list[JSONObject]:
    try:
        doc = json_loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, list) or not all(isinstance(r, dict) for r in doc):
        raise DataError(f"{path}: an alpaca_eval annotations.json is a list of objects")
    need = ("generator_1", "generator_2", "preference")
    for i, r in enumerate(doc):
        gone = [k for k in need if k not in r]
        if gone:
            raise DataError(f"{path}: annotation {i} has no field {gone[0]!r} (alpaca_eval's "
                            "annotations.json has generator_1, generator_2, preference)")
    return doc


def _table(path: Path, roles: dict[str, str]) -> Table:
    return Table("alpaca_eval", _alpaca(path), {
        "baseline": "generator_1", "model": "generator_2", "preference": "preference",
        "first": "output_1", "second": "output_2", "question": "instruction"})


def _sniff(doc: Any) -> bool:
    first = doc[0] if isinstance(doc, list) and doc and isinstance(doc[0], dict) else {}
    return "preference" in first


FORMAT = FORMATS.add("alpaca_eval", RecordedFormat(
    "alpaca_eval", sniff=_sniff, table=_table,
    description="alpaca_eval annotations.json"))
