"""Pages of a run's item records without reading the whole file per request: an index
of line offsets (one byte scan, cached by the file's size and modification time), the
page's lines parsed alone; and, for search, filters and sorting, one parse of every
row's few scalar facts (id, verdict, people's label in the file), kept while the file
is unchanged. The index lives in the viewer's memory: a run's folder holds only what
the run wrote."""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads
from judgekit.view import background

MAX_LIMIT = 1000
CELL = 2000  # characters of a nested value shown in a grid cell
FILTERS = ("", "fail", "error", "labelled", "unlabelled", "disagree")
_VERDICT_KEYS = ("verdict", "pass", "correct", "score")
# the grid's first columns, where a run has them: what a person reads first
FIRST_COLUMNS = ("system", "input", "question", "prompt", "query", "first", "second",
                 "output", "answer", "response", "reference", "verdict", "winner", "score",
                 "success", "human", "explanation")
_ID_KEYS = ("id", "pair_id", "query_id", "item_id", "unit_id")

PEOPLE = ("human", "label")  # the columns of people's label in a record, in order


class Page(BaseModel):
    """One page of rows (flat, with ``_id``, ``_row`` and ``_label``) and the counts
    before and after search and filter."""

    total: int
    matched: int
    offset: int
    limit: int
    columns: list[str] = Field(default_factory=list)
    items: list[JSONObject] = Field(default_factory=list)


def people_label(row: JSONObject) -> object | None:
    """People's label a record already carries (its ``human``, else its ``label``
    column), or None."""
    for key in PEOPLE:
        v = row.get(key)
        if v not in (None, ""):
            return v
    return None


def row_id(row: JSONObject, k: int) -> str:
    """An item's id as labels name it: its first id field, else its line number."""
    for key in _ID_KEYS:
        if row.get(key) not in (None, ""):
            return str(row[key])
    return str(k)


def flat(row: JSONObject) -> JSONObject:
    """Scalars as they are; nested values as compact JSON text, cut to CELL characters."""
    return {k: v if isinstance(v, (str, int, float, bool)) or v is None else
            json.dumps(v, sort_keys=True, ensure_ascii=False)[:CELL] for k, v in row.items()}


def _number(v: Any) -> float:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return math.nan


@dataclass
class Index:
    """Line offsets of one JSONL file; ``facts`` once every row was parsed."""

    data: Any  # the file's bytes (an mmap, sliced like bytes)
    starts: np.ndarray
    ends: np.ndarray
    ids: list[str] | None = None  # unique: the second row of one id is "id#2"
    verdict: np.ndarray | None = None
    file_label: list[Any] | None = None
    error: np.ndarray | None = None
    by_id: dict[str, int] = field(default_factory=dict)
    sorted_by: dict[str, np.ndarray] = field(default_factory=dict)
    building: Any = field(default_factory=threading.Lock)
    path: Path | None = None  # the file (its facts of a large one are parsed apart)

    def __len__(self) -> int:
        return int(self.starts.size)

    def line(self, k: int) -> JSONObject:
        try:
            row = json_loads(self.data[int(self.starts[k]):int(self.ends[k])].decode(
                "utf-8", "replace"))
        except ValueError:
            row = None
        if not isinstance(row, dict):
            return {"_unreadable": f"line {k + 1} is not a JSON object"}
        return row

    def facts(self) -> Index:
        """Parse every row once for its id, verdict, file label and error flag (one
        thread builds them; another asking meanwhile waits for it)."""
        with self.building:
            return self._facts()

    def start_facts(self) -> None:
        """Build the facts in the background, so that the first search or filter does
        not wait for them."""
        if self.ids is None:
            threading.Thread(target=background.when_quiet, args=(self.facts,), daemon=True).start()

    def _facts(self) -> Index:
        if self.ids is not None:
            return self
        ids, verdict, error, labels = _facts_apart(self)
        self.by_id = {v: k for k, v in enumerate(ids)}
        self.verdict, self.error, self.file_label = verdict, error, labels
        self.ids = ids
        return self

    def order(self, column: str) -> np.ndarray:
        """Row numbers sorted by ``column`` (numbers before text, missing last)."""
        if column not in self.sorted_by:
            keys = []
            for k in range(len(self)):
                v = self.line(k).get(column)
                num = _number(v)
                keys.append((2, 0.0, "") if v is None else (0, num, "") if not math.isnan(num)
                            else (1, 0.0, str(v) if isinstance(v, str) else json.dumps(v)))
            self.sorted_by[column] = np.array(sorted(range(len(self)), key=keys.__getitem__),
                                              dtype=np.int64)
        return self.sorted_by[column]


_CACHE: OrderedDict[Path, tuple[tuple[int, int], Index]] = OrderedDict()
_LOCK = threading.Lock()
CACHE_FILES = 16  # indexes kept (least recently used dropped first) ...
CACHE_BYTES = 512 << 20  # ... and no more bytes of files than this


SCAN = 1 << 24  # bytes scanned for newlines at a time


Facts = tuple[list[str], np.ndarray, np.ndarray, list[Any]]
APART = 50_000  # rows from which the facts are parsed in a process of their own


def facts_of(ix: Index, pause: Any = None) -> Facts:
    """Every row's id, verdict, error flag and file label (see :meth:`Index.facts`);
    ``pause()`` is called every ``background.STEP`` rows (a builder apart waits there while a
    label is computed)."""
    n = len(ix)
    ids, seen = [], {}  # type: ignore[var-annotated]
    verdict = np.full(n, np.nan)
    error = np.zeros(n, bool)
    labels: list[Any] = [None] * n
    for k in range(n):
        if pause is not None and k % background.STEP == 0:
            pause()
        row = ix.line(k)
        base = row_id(row, k)
        c = seen.get(base, 0)
        seen[base] = c + 1
        ids.append(base if c == 0 else f"{base}#{c + 1}")
        verdict[k] = next((_number(row[key]) for key in _VERDICT_KEYS
                           if row.get(key) is not None), math.nan)
        error[k] = "_unreadable" in row or any(
            ("error" in key.lower() or "fail" in key.lower())
            and v not in (None, "", False, 0) for key, v in row.items())
        labels[k] = people_label(row)
    return ids, verdict, error, labels


def _facts_of_file(path: str, rows: int) -> Facts | None:
    """The file's facts, indexed here (None: not the ``rows`` rows it was asked for)."""
    ix = index(Path(path))
    got = facts_of(ix, background.wait_gate) if len(ix) == rows else None
    background.wait_gate()  # its server still there to take them
    return got


def _facts_apart(ix: Index) -> Facts:
    """:func:`facts_of`, for a large file in a process of its own: parsing 10^6 rows
    holds the interpreter for seconds, and a label or a page asked meanwhile waited for
    it. The same function either way; in this thread when a process cannot start."""
    if ix.path is None or len(ix) < APART:
        return facts_of(ix)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:  # the file's name goes, not its offsets: the process finds them again
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(1, mp_context=ctx, initializer=background.gated,
                                 initargs=(background.gate(ctx), os.getpid())) as ex:
            got = ex.submit(_facts_of_file, str(ix.path), len(ix)).result()
    except (OSError, BrokenProcessPool):  # no process to be had: parsed here
        got = None
    return facts_of(ix) if got is None else got


def _mapped(path: Path) -> Any:
    """The file's bytes, mapped read-only rather than read (a 200 MB items file is not
    copied into memory); an empty file as empty bytes."""
    import mmap

    with path.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""


def index(path: Path) -> Index:
    """The file's index, rebuilt when its size or modification time changed."""
    st = path.stat()
    stamp = (st.st_size, st.st_mtime_ns)
    with _LOCK:
        got = _CACHE.get(path)
        if got is not None and got[0] == stamp:
            _CACHE.move_to_end(path)
            return got[1]
    data = _mapped(path)
    raw = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, np.uint8)
    # newlines found chunk by chunk: the scan never holds a second copy of the file
    nl = np.concatenate([np.flatnonzero(raw[i:i + SCAN] == 10) + i
                         for i in range(0, raw.size, SCAN)] or [np.zeros(0, np.int64)])
    starts = np.concatenate([[0], nl + 1]).astype(np.int64)
    ends = np.concatenate([nl, [len(data)]]).astype(np.int64)
    # blank lines are skipped: only lines of a few bytes can be blank (every record is
    # "{...}"), so only those are looked at
    keep = (ends - starts) > 8
    for k in np.flatnonzero(~keep).tolist():
        keep[k] = bool(data[int(starts[k]):int(ends[k])].strip())
    made = Index(data, starts[keep], ends[keep], path=path)
    with _LOCK:
        _CACHE[path] = (stamp, made)
        _CACHE.move_to_end(path)
        while len(_CACHE) > 1 and (len(_CACHE) > CACHE_FILES or sum(
                len(ix.data) for _, ix in _CACHE.values()) > CACHE_BYTES):
            _CACHE.popitem(last=False)
    return made


def label_value(v: Any) -> float | None:
    text = str(v).strip().lower()
    if text in ("1", "1.0", "pass", "true", "first", "yes"):
        return 1.0
    if text in ("0", "0.0", "fail", "false", "second", "no"):
        return 0.0
    return None


def page(path: Path | None, labels: dict[str, JSONObject], *, offset: int = 0,
         limit: int = 100, q: str = "", show: str = "", sort: str = "",
         descending: bool = False) -> Page:
    """One page of rows (flat, with ``_id``, ``_row`` and ``_label``) after search,
    filter and sort, with the counts before and after them. ``labels``: item id ->
    annotator -> label, from the labels file."""
    if show not in FILTERS:
        raise DataError(f"filter {show!r}: use one of {', '.join(f or '(none)' for f in FILTERS)}")
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise DataError(f"offset {offset}, limit {limit}: use offset >= 0 and 1 <= limit <= "
                        f"{MAX_LIMIT}")
    if path is None:
        return Page(total=0, matched=0, offset=offset, limit=limit)
    ix = index(path)
    n = len(ix)
    if not (q or show or sort):  # no row but the page's is read
        rows = np.arange(offset, min(n, offset + limit))
        matched = n
        ix.start_facts()
    else:
        if show:  # ids, verdicts and file labels of every row (a search needs none)
            ix.facts()
        rows = ix.order(sort) if sort else np.arange(n)
        if descending:
            rows = rows[::-1]
        if q:
            hits = _candidates(ix, q.lower())
            rows = rows if hits is None else rows[np.isin(rows, hits)]
            rows = np.array([k for k in rows.tolist() if _has(ix, k, q.lower())], np.int64)
        if show:
            rows = rows[[_shown(ix, int(k), labels, show) for k in rows]] if rows.size else rows
        matched = int(rows.size)
        rows = rows[offset:offset + limit]
    out = []
    for k in rows.tolist():
        row = ix.line(k)
        key = ix.ids[k] if ix.ids is not None else row_id(row, k)
        item = {"_id": key, "_row": k, **flat(row)}
        got, given = labels.get(str(key)), people_label(row)
        if got:
            item["_label"] = ", ".join(f"{who}: {v}" for who, v in got.items())
        elif given is not None:
            item["_label"] = f"file: {given}"
        out.append(item)
    head = [ix.line(k) for k in range(min(n, 200))]
    seen = list(dict.fromkeys(k for r in head + out for k in r if k not in ("_row", "_id",
                                                                             "_label")))
    first = [k for k in FIRST_COLUMNS if k in seen]
    columns = ["_id"] + first + ["_label"] + [k for k in seen if k not in first]
    return Page(total=n, matched=matched, offset=offset, limit=limit, columns=columns,
                items=out)


def page_many(sources: list[tuple[str, Path | None]],
              labels: dict[str, dict[str, JSONObject]], *, offset: int = 0,
              limit: int = 100, q: str = "", show: str = "") -> Page:
    """One page of the sample grid across runs: every run's rows in turn, each row
    with ``_run``; search and filters apply to each run's rows (sorting is per run, on
    its own page). ``labels``: run name -> its labels."""
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise DataError(f"offset {offset}, limit {limit}: use offset >= 0 and 1 <= limit <= "
                        f"{MAX_LIMIT}")
    total = matched = 0
    out: list[JSONObject] = []
    columns: dict[str, None] = {"_run": None}
    for name, path in sources:
        if path is None:
            continue
        n = len(index(path))
        total += n
        if not (q or show):  # the run's rows count without reading them
            here, start = n, max(0, offset - matched)
            take = min(max(0, limit - len(out)), max(0, here - start))
            got = page(path, labels.get(name, {}), offset=start, limit=max(1, take)) \
                if take else None
        else:
            got = page(path, labels.get(name, {}), offset=max(0, offset - matched),
                       limit=MAX_LIMIT, q=q, show=show)
            here = got.matched
            take = min(max(0, limit - len(out)), max(0, here - max(0, offset - matched)))
        if got is not None:
            for row in got.items[:take]:
                out.append({"_run": name, **row})
            columns.update(dict.fromkeys(got.columns))
        matched += here
    return Page(total=total, matched=matched, offset=offset, limit=limit,
                columns=list(columns), items=out)


def _candidates(ix: Index, needle: str) -> np.ndarray | None:
    """Rows whose raw line holds ``needle`` (any case), from one scan of the whole file;
    None where the raw text cannot be searched for it (JSON escapes it)."""
    import re

    if not (needle.isascii() and needle.isprintable() and '"' not in needle
            and "\\" not in needle):
        return None
    # in a value, not a key: the needle, then the rest of a string that ends a value
    # (", }, ]), or the rest of a number or literal that does
    pattern = re.escape(needle.encode()) + rb'(?=(?:[^"\\\n]|\\.)*"\s*[,}\]]' \
        rb'|[^",:{}\[\]\n]*\s*[,}\]])'
    where = np.fromiter((m.start() for m in re.finditer(pattern, ix.data, re.IGNORECASE)),
                        np.int64)
    return np.unique(np.searchsorted(ix.starts, where, side="right") - 1)


def _has(ix: Index, k: int, needle: str) -> bool:
    """Does a value of row k contain ``needle`` (lower case)? The raw line is checked
    first, and the parsed values only where it could match: keys do not count."""
    if needle.isascii() and '"' not in needle and "\\" not in needle and \
            needle.encode() not in ix.data[ix.starts[k]:ix.ends[k]].lower():
        return False
    return any(needle in (v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
               .lower() for v in ix.line(k).values())


def _shown(ix: Index, k: int, labels: dict[str, JSONObject], show: str) -> bool:
    assert ix.ids is not None and ix.verdict is not None and ix.error is not None
    given = list((labels.get(ix.ids[k]) or {}).values()) or (
        [] if ix.file_label is None or ix.file_label[k] is None else [ix.file_label[k]])
    if show == "fail":
        return bool(ix.verdict[k] == 0)
    if show == "error":
        return bool(ix.error[k])
    if show == "labelled":
        return bool(given)
    if show == "unlabelled":
        return not given
    values = [v for v in (label_value(x) for x in given) if v is not None]
    return bool(values) and not math.isnan(ix.verdict[k]) and \
        round(sum(values) / len(values)) != ix.verdict[k]


def record(path: Path | None, *, row: int | None = None, item: str | None = None
           ) -> JSONObject | None:
    """One record by its line number, or by its (unique) id."""
    if path is None:
        return None
    ix = index(path)
    if row is not None:
        return ix.line(row) if 0 <= row < len(ix) else None
    k = ix.facts().by_id.get(item or "")
    return None if k is None else ix.line(k)
