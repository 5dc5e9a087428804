"""JSON Lines tables (``.jsonl``): one object per verdict, the roles detected from the
keys (``judgekit analyse``) or given as ``columns`` (the audit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.textio import read_jsonl
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput, judged_from_table, read_table
from judgekit.recorded.tables import detect_rows

__all__: list[str] = []


def _table(path: Path, roles: dict[str, str]) -> Table:
    return detect_rows(path, read_jsonl(path), roles)


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    if spec.columns:
        return read_table(path, "jsonl", spec.columns, spec.pass_threshold)
    try:
        return judged_from_table(path, _table(path, {}), spec.pass_threshold)
    except DataError as exc:  # nothing detected: say what the mapping is
        raise DataError(f"{path}: data_format jsonl needs columns: {{prompt: COLUMN, "
                        f"output: COLUMN, label: COLUMN?}} ({exc})") from None


FORMAT = FORMATS.add("jsonl", RecordedFormat(
    "jsonl", suffixes=(".jsonl",), table=_table, judged=_judged,
    description="JSON Lines, one object per verdict"))
