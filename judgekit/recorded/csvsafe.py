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
from collections.abc import Iterable, Iterator, Mapping, Sequence
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


DELIMITERS = (",", "\t", ";", "|")


def _delimiter(fh: IO[str], name: str) -> str:
    """The file's delimiter: a tab for ``.tsv``; otherwise, of comma, tab, semicolon and
    bar, the one the header line splits on most (a comma when none does)."""
    if name.lower().endswith(".tsv"):
        return "\t"
    start = fh.tell()
    try:
        head = fh.readline()
    except UnicodeDecodeError:  # the reader names the line below
        head = ""
    fh.seek(start)
    counts = {d: head.count(d) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: (counts[d], d == ","))
    return best if counts[best] > 0 else ","


def read_dicts(source: str | object, path: object = None
               ) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV file (``source`` a path, read as it is parsed, never
    held whole) or of CSV text (``source`` the text, ``path`` its name): a cell may be as
    long as the file (a judged answer of megabytes), and a malformed file, a row with
    more or fewer cells than the header, or bytes that are not UTF-8 are a one-line
    :class:`DataError` naming the line."""
    header: list[str] = []
    rows = list(iter_dicts(source, path, header))
    return header, rows


def iter_dicts(source: str | object, path: object = None,
               header: list[str] | None = None) -> Iterator[dict[str, str]]:
    """The rows of :func:`read_dicts` one at a time (nothing held but the row being
    read); ``header``, when given, receives the header's names before the first row."""
    import io
    import os
    from pathlib import Path

    from judgekit.core.errors import DataError
    from judgekit.core.progress import track

    if isinstance(source, str) and path is not None:
        name, size = path, len(source)
        fh: IO[str] = io.StringIO(source, newline="")
    else:
        name = source
        try:
            size = os.path.getsize(str(source))
            fh = open(str(source), encoding="utf-8-sig", newline="")  # noqa: SIM115
        except FileNotFoundError:
            raise DataError(f"{source}: file not found") from None
        except OSError as exc:
            raise DataError(f"{source}: cannot be read ({exc.strerror or exc})") from None
    # the csv module's per-field limit (128 KiB by default) is process-wide; raising it
    # is idempotent and only ever allows longer cells
    csv.field_size_limit(max(csv.field_size_limit(), min(size + 1, 2**31 - 1)))
    with fh:
        reader = csv.DictReader(fh, strict=True, delimiter=_delimiter(fh, str(name)))
        try:
            names = [h.strip() for h in reader.fieldnames or []]
            dup = sorted({h for h in names if h and names.count(h) > 1})
            if dup:  # DictReader would keep the last one silently
                raise DataError(f"{name}: column {dup[0]!r} appears twice in the header; "
                                "rename one")
            if header is not None:
                header[:] = list(reader.fieldnames or [])
            for row in track(reader, f"reading {Path(str(name)).name}", unit="rows"):
                n = reader.line_num
                extra = row.get(None)  # type: ignore[call-overload]
                if extra is not None or any(v is None for v in row.values()):
                    got = sum(v is not None for k, v in row.items() if k is not None) + (
                        len(extra) if isinstance(extra, list) else 0)
                    raise DataError(f"{name} line {n}: {got} cells where the header has "
                                    f"{len(reader.fieldnames or [])}; fix the row (a cell "
                                    "with a comma or a line break needs quotes)")
                yield row
        except csv.Error as exc:
            raise DataError(f"{name} line {reader.line_num}: not valid CSV ({exc})") from None
        except UnicodeDecodeError:
            raise DataError(f"{name}: near line {reader.line_num + 1}: not valid UTF-8; "
                            "save the file as UTF-8") from None
