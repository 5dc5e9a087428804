"""Excel workbooks (``.xlsx``): the first sheet, its first row the header, one row per
verdict, read through openpyxl (the ``xlsx`` extra: ``pip install 'judgekit[xlsx]'``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.recorded.base import FORMATS, RecordedFormat, Table
from judgekit.recorded.judged import JudgedInput, judged_from_table
from judgekit.recorded.tables import detect_rows

__all__: list[str] = []


def _rows(path: Path) -> list[JSONObject]:
    try:
        import openpyxl
    except ImportError:
        raise DataError(f"{path}: reading .xlsx needs openpyxl: pip install "
                        "'judgekit[xlsx]' (or save the sheet as CSV)") from None
    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several kinds for a file it cannot read
        raise DataError(f"{path}: not a readable .xlsx workbook ({exc})") from None
    try:
        sheet = book.worksheets[0]
        it = sheet.iter_rows(values_only=True)
        header = next(it, None)
        if header is None:
            raise DataError(f"{path}: the first sheet is empty")
        names = ["" if h is None else str(h).strip() for h in header]
        dup = sorted({n for n in names if n and names.count(n) > 1})
        if dup:
            raise DataError(f"{path}: column {dup[0]!r} appears twice in the header; rename "
                            "one")
        out = []
        for row in it:
            if row is None or all(v is None for v in row):
                continue
            out.append({n: ("" if v is None else v if isinstance(v, (int, float)) else str(v))
                        for n, v in zip(names, row) if n})
        return out
    finally:
        book.close()


def _table(path: Path, roles: dict[str, str]) -> Table:
    return detect_rows(path, _rows(path), roles)


def _judged(path: Path, spec: JudgedInput) -> list[Any]:
    return judged_from_table(path, _table(path, {}), spec.pass_threshold)


FORMAT = FORMATS.add("xlsx", RecordedFormat(
    "xlsx", suffixes=(".xlsx",), table=_table, judged=_judged,
    description="Excel workbook (.xlsx), first sheet (the xlsx extra)"))
