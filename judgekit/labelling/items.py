"""The items a person can label: from a recorded-verdicts run folder (its items.jsonl)
or straight from a file of recorded verdicts (any format ``judgekit analyse`` reads)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.spec import RunItems
from judgekit.labelling.store import fingerprint, human_value
from judgekit.stats.active import Population

LABELS_FILE = "labels.jsonl"
# columns holding the judge's own probability that an item passes, or its confidence in
# the verdict it gave (probability of being right)
PROBABILITY = ("probability", "p_pass", "judge_probability", "pass_probability")
CONFIDENCE = ("confidence", "judge_confidence")


class Source(NamedTuple):
    name: str
    shape: str  # pointwise | pairwise
    # id, verdict (1 pass / first), score?, system, text fields (a run's labelling
    # index: judgekit.labelling.snapshot.Items, read an item at a time)
    items: Sequence[JSONObject]
    labels_path: Path
    folder: Path | None  # the run folder, None for a verdicts file


class Indexed(Sequence[JSONObject]):
    """Items whose derived columns were written beside them (a run's labelling index,
    :class:`judgekit.labelling.snapshot.Items`): ``ix`` has ``ids``, ``population()``,
    ``labelled()``, ``present_labels()``, ``positions()`` and ``fingerprint``."""

    ix: Any


class Derived:
    """What every labelling request derives from a source's items, computed once per
    items list (a label POST on 10^6 items re-derived them several times: seconds each):
    the ids in order, id -> position, the population, people's labels already in the
    source, and (when first asked) the source's fingerprint."""

    def __init__(self, src: Source) -> None:
        self._fingerprint: JSONObject | None = None
        if isinstance(src.items, Indexed):  # a run's labelling index: its columns
            ix = src.items.ix
            self.ids = ix.ids
            self.pop = ix.population()
            labelled = ix.labelled()  # people's ids decoded once for both
            self.present = ix.present_labels(labelled)
            self._fingerprint = ix.fingerprint
            self.index: Mapping[str, int] = ix.positions(labelled)
        else:
            self.ids = [str(x["id"]) for x in src.items]
            self.pop = population(src.items)
            self.present = _present(src)
            self.index = dict(zip(self.ids, range(len(self.ids))))
        # people's labels in the source as the first draws (terms.uniform_first), by the
        # ids they were made for
        self.uniform: tuple[tuple[str, ...], list[JSONObject], Any] | None = None

    def locate(self, keys: Iterable[str], strict: bool = True) -> tuple[list[str], np.ndarray]:
        """The ``keys`` that are ids of the source and their positions, in the keys'
        order (one dict lookup each; a :class:`KeyError` for one that is not, unless
        ``strict`` is False: it is left out)."""
        known = getattr(self.index, "known", self.index)  # a snapshot's labelled ids
        found, at = [], []
        for k in keys:
            i = known.get(k)
            if i is None:
                if k not in self.index:
                    if strict:
                        raise KeyError(k)
                    continue
                i = self.index[k]
            found.append(k)
            at.append(i)
        return found, np.array(at, np.int64)

    @property
    def by_id(self) -> Mapping[str, JSONObject]:
        """id -> item (a view: nothing copied)."""
        return _ById(self.index, self._items)

    @property
    def fingerprint(self) -> JSONObject:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self._items)
        return self._fingerprint

    _items: Sequence[JSONObject]


class _ById(Mapping[str, JSONObject]):
    def __init__(self, index: Mapping[str, int], items: Sequence[JSONObject]) -> None:
        self._index, self._items = index, items

    def __getitem__(self, key: str) -> JSONObject:
        return self._items[self._index[key]]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


_DERIVED: dict[int, tuple[Sequence[JSONObject], int, Derived]] = {}
KEEP_DERIVED = 8


def derived(src: Source) -> Derived:
    """The source's :class:`Derived`, kept while the same items list (unchanged in
    length) is labelled; a list the caller changes in place needs a new Source."""
    got = _DERIVED.get(id(src.items))
    if got is not None and got[0] is src.items and got[1] == len(src.items):
        return got[2]
    d = Derived(src)
    d._items = src.items
    if len(_DERIVED) >= KEEP_DERIVED:
        _DERIVED.pop(next(iter(_DERIVED)))
    _DERIVED[id(src.items)] = (src.items, len(src.items), d)
    return d


def load(source: Path) -> Source:
    """The items of a recorded-verdicts file, labelled in FILE.labels.jsonl beside it. A run
    folder's items (labelled in RUN/labels.jsonl) are read through its method's spec by
    :func:`judgekit.runs.folder.label_source`."""
    if source.is_dir():
        return _run(source)
    if source.is_file():
        return _file(source)
    raise DataError(f"{source}: no such run folder or file")


def _run(folder: Path) -> Source:
    raise DataError(f"{folder}: a run folder's items come from its method's spec; read it "
                    "with judgekit.runs.folder.label_source (what `judgekit label` and "
                    "`judgekit view` do)")


def from_run(folder: Path, method: str, details: list[str], got: RunItems | None) -> Source:
    """The Source of a run folder from its method's ``items`` hook (``got``; None: the
    method has none) and its detail files, as :func:`judgekit.runs.folder.label_source`
    reads them."""
    if got is None or not got.rows:
        raise DataError(f"{folder}: a {method!r} run with no item a judge gave a "
                        "verdict on; labels are proposed for recorded verdicts, probe and "
                        "audit runs (or a verdicts file)")
    where = folder / (details[0] if details else "items.jsonl")
    return Source(folder.name, got.shape, _normalise(got.rows, got.shape, where),
                  folder / LABELS_FILE, folder)


def _file(path: Path) -> Source:
    from judgekit.methods.verdicts.analysis import majority, slot_of
    from judgekit.recorded.base import label_of
    from judgekit.recorded.tables import read

    table = read(path, "auto", {})
    if table.shape == "alpaca_eval":
        raise DataError(f"{path}: alpaca_eval annotations compare two models' outputs with "
                        "no per-item verdict of the judge to check; label pairwise or "
                        "pointwise verdicts")
    r = table.roles
    rows: list[JSONObject] = []
    for i, row in enumerate(table.rows):
        if table.shape == "pointwise":
            column = r["judge"].split(",")[0]
            raw = row.get(column)
            v = label_of(raw, 0.5)
            item: JSONObject = {"id": str(row.get(r["id"], i)) if "id" in r else str(i),
                                "verdict": v, "system": row.get(r["system"]) if "system" in r
                                else None, "question_id": row.get(r["question_id"])
                                if "question_id" in r else None}
            if isinstance(raw, float) and 0 < raw < 1:  # the judge's own probability
                item["probability"] = raw
            for key in PROBABILITY + CONFIDENCE:
                if row.get(key) not in (None, ""):
                    item[key] = row[key]
            for key in ("question", "input", "answer", "output", "explanation"):
                if row.get(key) not in (None, ""):
                    item[key] = row[key]
            people = [label_of(row.get(c), 0.5) for c in r.get("human", "").split(",")
                      if c and row.get(c) not in (None, "")]
            item["human"] = majority(people)
        else:
            item = {"pair_id": str(row.get(r["pair_id"], i)) if "pair_id" in r else str(i),
                    "first": row.get(r["first"]), "second": row.get(r["second"]),
                    "winner": slot_of(row.get(r["winner"])),
                    "question": row.get(r["question"]) if "question" in r else None,
                    "label": majority([slot_of(row.get(c)) for c in
                                       r.get("label", "").split(",") if c])}
        rows.append(item)
    return Source(path.stem, table.shape, _normalise(rows, table.shape, path),
                  path.with_name(path.stem + ".labels.jsonl"), None)


def _normalise(rows: list[JSONObject], shape: str, where: Path) -> list[JSONObject]:
    """One record per labelable item with a unique ``id`` and a 0/1 ``verdict`` (pairwise:
    1 when the judge chose the first answer); rows whose verdict cannot be read (a tie,
    empty) are left out, as ``judgekit analyse`` leaves them out."""
    out: list[JSONObject] = []
    seen: dict[str, int] = {}
    for k, row in enumerate(rows):
        key = numbered(row, k, shape, seen)
        item = shaped(row, shape)
        if item is None:
            continue
        item["id"] = key
        item["score"] = score_of(item, where)
        out.append(item)
    if not out:
        raise DataError(f"{where}: no item with a readable verdict to label")
    flags = unstable_flags([str(x["id"]) for x in out], [mark(x, shape) for x in out],
                           [int(bool(x.get("unstable"))) for x in out])
    for x, f in zip(out, flags.tolist()):
        x["unstable"] = f
    return out


def numbered(row: JSONObject, k: int, shape: str, seen: dict[str, int]) -> str:
    """Row ``k``'s item id: repeats of an id (or a pair's other order) are "ID#2", ...,
    numbered over every row, readable or not, as `judgekit analyse --labels` numbers
    them (``seen`` counts the ids so far)."""
    base = str(row.get("pair_id" if shape == "pairwise" else "id", k))
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}#{n + 1}"


def shaped(row: JSONObject, shape: str, copy: bool = True) -> JSONObject | None:
    """``row`` (a copy, or itself) with its 0/1 ``verdict`` (None: no readable
    verdict)."""
    if shape == "pairwise":
        w = row.get("winner")
        if w not in ("first", "second"):
            return None
        out = dict(row) if copy else row
        out["verdict"] = int(w == "first")
        return out
    if row.get("verdict") not in (0, 1):
        return None
    return dict(row) if copy else row


def mark(item: JSONObject, shape: str) -> int:
    """What must agree across an item's repeats: its verdict, or for a pair the answer
    the judge chose (a 64-bit hash of its text)."""
    if shape == "pairwise":
        return hash(str(item.get("first") if item["verdict"] else item.get("second")))
    return int(item["verdict"])


def unstable_flags(ids: Sequence[str], marks: Sequence[int] | np.ndarray,
                   own: Sequence[int] | np.ndarray
                   ) -> np.ndarray:
    """``unstable`` = 1 on items whose repeats (same id before "#") got different marks
    (:func:`mark`; for a pair judged in both orders: the judge picked the same slot both
    times, so its choice followed the position, not the answer), or already flagged
    (``own``). Repeats are found by sorting the ids' hashes (no dict of every id: 10^6
    items made one of 10^6 entries) and compared by their text."""
    bases = [k.split("#")[0] if "#" in k else k for k in ids]
    flags = np.asarray(own, np.int8).astype(bool)
    h = np.fromiter((hash(b) for b in bases), np.int64, len(bases))
    order = np.argsort(h, kind="stable")
    hs = h[order]
    cut = np.flatnonzero(np.diff(hs)) + 1
    starts, ends = np.concatenate([[0], cut]), np.concatenate([cut, [hs.size]])
    m = np.asarray(marks, np.int64)
    for a, b in zip(starts[ends - starts > 1].tolist(), ends[ends - starts > 1].tolist()):
        groups: dict[str, list[int]] = {}
        for i in order[a:b].tolist():
            groups.setdefault(bases[i], []).append(i)
        for members in groups.values():
            if len(members) > 1 and np.unique(m[members]).size > 1:
                flags[members] = True
    return flags.astype(np.int8)


def present_labels(src: Source) -> dict[str, float]:
    """People's labels already in the source (a human or label column, the majority of
    several annotators): item id -> its value (1 pass, or the first answer better).
    They count as labelled everywhere: ``label`` never proposes them and the viewer
    shows them."""
    return derived(src).present


def _present(src: Source) -> dict[str, float]:
    out = {}
    for x in src.items:
        v = present_value(x, src.shape)
        if v is not None:
            out[str(x["id"])] = v
    return out


def present_value(item: JSONObject, shape: str) -> float | None:
    """People's label already on ``item`` (a human or label column), as a value."""
    raw = item.get("label") if shape == "pairwise" else item.get("human")
    return None if raw is None else human_value(raw, shape)


def score_of(item: JSONObject, where: Path) -> float | None:
    for keys, as_conf in ((PROBABILITY, False), (CONFIDENCE, True)):
        for key in keys:
            if item.get(key) in (None, ""):
                continue
            try:
                p = float(item[key])
            except (TypeError, ValueError):
                raise DataError(f"{where}: item {item.get('id')!r}: {key} {item[key]!r} is "
                                "not a number in [0, 1]") from None
            if not 0 <= p <= 1:
                raise DataError(f"{where}: item {item.get('id')!r}: {key} {p} is outside "
                                "[0, 1]; give a probability")
            return p if not as_conf or item["verdict"] == 1 else 1 - p
    s = item.get("score")
    return float(s) if isinstance(s, (int, float)) and 0 <= s <= 1 else None


def population(items: Sequence[JSONObject]) -> Population:
    """The items as judgekit.stats.active sees them."""
    scores = [x.get("score") for x in items]
    return population_of(np.array([int(x["verdict"]) for x in items]),
                         np.array(scores, float) if all(s is not None for s in scores)
                         else None, [x.get("system") for x in items],
                         np.array([int(x.get("unstable") or 0) for x in items]))


def population_of(verdict: np.ndarray, score: np.ndarray | None, systems: list[object],
                  unstable: np.ndarray) -> Population:
    """The population of the items' columns (``systems``: each item's system, or
    None)."""
    names = sorted({str(x) for x in systems if x is not None})
    index = {n: i for i, n in enumerate(names)}
    system = np.array([index.get(str(x), 0) for x in systems])
    return Population(verdict, score, system, tuple(names) if len(names) > 1 else ("",),
                      unstable if unstable.any() else None)
