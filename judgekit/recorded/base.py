"""What every recorded format shares: the :class:`RecordedFormat` entry of the one
registry of formats (:data:`FORMATS`, a :class:`~judgekit.core.registry.Registry`), the
:class:`Table` a format's rows are read into, and the verdict and message-text readers.

A format is one module under :mod:`judgekit.recorded` that registers one
:class:`RecordedFormat` with its file suffixes and, where a suffix is shared (``.json``),
a content sniffer. It supplies ``table`` (the rows with their roles: what ``judgekit
analyse``, ``label`` and ``view`` read), ``judged`` (judged items: what the audit and
the pointwise probe read), or both; the one it lacks is derived from the other
(:func:`judgekit.recorded.judged.judged_from_table`,
:func:`judgekit.recorded.tables.table_from_judged`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.registry import Registry
from judgekit.core.spec import TableShape

__all__ = ["FAIL", "FORMATS", "PASS", "RecordedFormat", "StreamedRows", "Table", "label_of",
           "text_of"]


class Table(NamedTuple):
    """A recorded file's rows and the column that plays each role."""

    shape: TableShape
    rows: list[JSONObject] | StreamedRows
    roles: dict[str, str]


class StreamedRows:
    """A table's rows read from its file each time they are iterated, none held: what
    ``judgekit analyse`` passes through at any size. The first row (for the columns) is
    kept; ``len`` is known once a pass has ended; ``map`` gives the rows as ``fn``
    changes them, as lazily."""

    def __init__(self, source: Callable[[], Iterator[JSONObject]]) -> None:
        self._source = source
        self._first: JSONObject | None = None
        self._len: int | None = None

    def __iter__(self) -> Iterator[JSONObject]:
        n = 0
        for row in self._source():
            if self._first is None:
                self._first = row
            n += 1
            yield row
        self._len = n

    def __len__(self) -> int:
        if self._len is None:
            for _ in self:
                pass
        return self._len or 0

    def __bool__(self) -> bool:
        return self.first() is not None

    def __getitem__(self, i: int) -> JSONObject:
        if i != 0:
            raise IndexError("streamed rows are read in order; only the first is kept")
        first = self.first()
        if first is None:
            raise IndexError("no rows")
        return first

    def first(self) -> JSONObject | None:
        if self._first is None:
            rows = self._source()
            try:
                self._first = next(iter(rows), None)
            finally:
                close = getattr(rows, "close", None)
                if close is not None:  # a generator holding the file open
                    close()
        return self._first

    def map(self, fn: Callable[[], Callable[[JSONObject], JSONObject]]) -> StreamedRows:
        """These rows through ``fn()`` (a fresh function per pass: it may keep state)."""
        def source() -> Iterator[JSONObject]:
            step = fn()
            return (step(r) for r in self)
        return StreamedRows(source)


@dataclass(frozen=True)
class RecordedFormat:
    """One format of judgements recorded elsewhere.

    Attributes:
        name: what ``--format`` / ``data_format`` names it.
        suffixes: file suffixes it is recognised by (lower case, with the dot).
        sniff: for a suffix several formats share (``.json``): does this parsed
            document look like this format?
        table: ``table(path, roles) -> Table`` (roles given with ``--map``).
        judged: ``judged(path, spec) -> judged items`` (dicts with Prompt, Output,
            Label, Reason, Source).
        stream: ``stream(path) -> rows``, one at a time, for a format whose ``table``
            reads plain rows (what ``judgekit analyse`` reads at any size).
    """

    name: str
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[Any], bool] | None = None
    table: Callable[[Path, dict[str, str]], Table] | None = None
    judged: Callable[[Path, Any], list[Any]] | None = None  # (path, JudgedInput)
    description: str = ""
    # the rows one at a time (a table format that can stream: CSV, JSONL, Parquet)
    stream: Callable[[Path], Iterator[JSONObject]] | None = None

    @property
    def key(self) -> str:
        return self.name


FORMATS: Registry[RecordedFormat] = Registry("recorded format", kind=RecordedFormat,
                                             group="judgekit.recorded", error=DataError)

PASS = {"c", "correct", "pass", "passed", "true", "yes", "1", "1.0"}
FAIL = {"i", "incorrect", "fail", "failed", "false", "no", "0", "0.0"}


def label_of(value: Any, threshold: float = 0.5) -> int | None:
    """A verdict as 1 / 0, or None when it is neither (partial credit, empty, a number
    that is not finite, or, with a threshold in [0, 1], a score outside [0, 1])."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return _scored(float(value), threshold)
    text = str(value).strip().casefold() if value is not None else ""
    if text in PASS:
        return 1
    if text in FAIL:
        return 0
    try:
        return _scored(float(text), threshold)
    except ValueError:
        return None


def _scored(x: float, threshold: float) -> int | None:
    if not math.isfinite(x) or (0.0 <= threshold <= 1.0 and not 0.0 <= x <= 1.0):
        return None
    return int(x >= threshold)


def text_of(content: Any) -> str:
    """Message content: a string or a list of content parts ({"type": "text", ...})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content
                         if isinstance(p, dict) and p.get("type", "text") == "text")
    return "" if content is None else str(content)
