"""CSV that is safe to open: cells from judged text, ids and judges' reasons are data,
never formulas, and never split a row.

- A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
  prefixed with ``'`` (OWASP's CSV-injection advice), so a spreadsheet shows it instead
  of evaluating it; a cell that is a plain number (``-0.25``, ``+3e-2``) is left as it is.
- Rows end with CRLF (RFC 4180): Python's csv module then quotes any cell holding a bare
  CR or LF, so a reader sees the same rows and columns that were written.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

__all__ = ["cell", "rows_text", "write_dicts", "write_rows"]

_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def cell(value: Any) -> Any:
    """``value`` as it may sit in a CSV cell (text that a spreadsheet would run as a
    formula gets a leading ``'``)."""
    if isinstance(value, str) and value.startswith(_FORMULA) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_rows(out: IO[str], header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow([cell(h) for h in header])
    for r in rows:
        w.writerow([cell("" if v is None else v) for v in r])


def write_dicts(out: IO[str], fieldnames: Sequence[str],
                rows: Iterable[Mapping[str, Any]]) -> None:
    w = csv.DictWriter(out, fieldnames=list(fieldnames), lineterminator="\r\n")
    w.writerow({k: cell(k) for k in fieldnames})
    for r in rows:
        w.writerow({k: cell(v) for k, v in r.items()})


def rows_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    import io

    buf = io.StringIO(newline="")
    write_rows(buf, header, rows)
    return buf.getvalue()
