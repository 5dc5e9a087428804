"""alpaca_eval ``annotations.json``: one object per comparison of ``generator_2``
against the baseline ``generator_1``, with the annotator's ``preference``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table

__all__: list[str] = []


def read_annotations(path: Path) -> list[JSONObject]:
    """The annotations of an alpaca_eval ``annotations.json``, checked."""
    return _alpaca(path)


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
