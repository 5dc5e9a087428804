"""JSON Lines tables (``.jsonl``): one object per verdict, the roles detected from the
keys (``judgekit analyse``) or given as ``columns`` (the audit)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.textio import iter_jsonl, read_jsonl
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput, judged_from_rows
from judgekit.recorded.tables import detect_rows

__all__: list[str] = []


def _table(path: Path, roles: dict[str, str]) -> Table:
    return detect_rows(path, read_jsonl(path), roles)


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return judged_from_rows(path, "jsonl", spec, _table)


FORMAT = FORMATS.add("jsonl", RecordedFormat(
    "jsonl", suffixes=(".jsonl",), table=_table, judged=_judged, stream=iter_jsonl,
    description="JSON Lines, one object per verdict"))
