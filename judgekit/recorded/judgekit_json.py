"""judgekit's own judged items: a JSON list of objects with Prompt, Output and
optionally Label, Reason, Source (what the West Frisian items and ``judgekit.audit``
take)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.textio import json_loads, read_text
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput
from judgekit.recorded.tables import table_from_judged

__all__: list[str] = []


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    try:
        doc = json_loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(doc, list):
        hint = "; an Inspect log? set data_format: inspect" if isinstance(doc, dict) \
            and "eval" in doc else ""
        raise DataError(f"{path}: expected a JSON list of judged items{hint}")
    return doc


def _table(path: Path, roles: dict[str, str]) -> Table:
    items = _judged(path, JudgedInput.model_validate({}))
    if not all(isinstance(it, dict) for it in items):
        raise DataError(f"{path}: judged items are JSON objects")
    return table_from_judged(items, cluster=0, grader=lambda parts: "judge")


def _sniff(doc: Any) -> bool:
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) \
        and "Prompt" in doc[0] and "Output" in doc[0]


FORMAT = FORMATS.add("json", RecordedFormat(
    "json", sniff=_sniff, table=_table, judged=_judged,
    description="judgekit's judged items (a JSON list with Prompt, Output, Label)"))
