"""Delimited text tables (``.csv``, ``.tsv``; comma, tab, semicolon or bar, told from
the header line): one row per verdict, the roles detected from the column names
(``judgekit analyse``) or given as ``columns`` (the audit)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from judgekit.core.jsontypes import JSONObject
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput, judged_from_rows
from judgekit.recorded.tables import detect_rows

__all__: list[str] = []


def _rows(path: Path) -> list[JSONObject]:
    from judgekit.recorded.csvsafe import read_dicts

    rows: list[JSONObject] = list(read_dicts(path)[1])  # already one dict per row: no copy
    return rows


def _stream(path: Path) -> Iterator[JSONObject]:
    from judgekit.recorded.csvsafe import iter_dicts

    return iter_dicts(path)  # type: ignore[return-value]


def _table(path: Path, roles: dict[str, str]) -> Table:
    return detect_rows(path, _rows(path), roles)


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return judged_from_rows(path, "csv", spec, _table)


FORMAT = FORMATS.add("csv", RecordedFormat(
    "csv", suffixes=(".csv", ".tsv"), table=_table, judged=_judged, stream=_stream,
    description="CSV, one row per verdict"))
