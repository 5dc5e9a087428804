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
from judgekit.recorded.items import (
    Item,
    Shape,
    as_shape,
    item_row,
    normalise,
    population,
    present_value,
)
from judgekit.recorded.labels import LABELS_FILE, Draw, fingerprint


class Source(NamedTuple):
    name: str
    shape: Shape
    # the typed items (a run's labelling index: judgekit.labelling.snapshot.Items, read
    # an item at a time)
    items: Sequence[Item]
    labels_path: Path
    folder: Path | None  # the run folder, None for a verdicts file


class Indexed(Sequence[Item]):
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
            self.ids = [x.id for x in src.items]
            self.pop = population(src.items)
            self.present = _present(src)
            self.index = dict(zip(self.ids, range(len(self.ids))))
        # people's labels in the source as the first draws (terms.uniform_first), by the
        # ids they were made for
        self.uniform: tuple[tuple[str, ...], list[Draw], Any] | None = None

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
    def by_id(self) -> Mapping[str, Item]:
        """id -> item (a view: nothing copied)."""
        return _ById(self.index, self._items)

    @property
    def fingerprint(self) -> JSONObject:
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self._items)
        return self._fingerprint

    _items: Sequence[Item]


class _ById(Mapping[str, Item]):
    def __init__(self, index: Mapping[str, int], items: Sequence[Item]) -> None:
        self._index, self._items = index, items

    def __getitem__(self, key: str) -> Item:
        return self._items[self._index[key]]

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


_DERIVED: dict[int, tuple[Sequence[Item], int, Derived]] = {}
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
    :func:`judgekit.labelling.sources.label_source`."""
    if source.is_dir():
        return _run(source)
    if source.is_file():
        return _file(source)
    raise DataError(f"{source}: no such run folder or file")


def _run(folder: Path) -> Source:
    raise DataError(f"{folder}: a run folder's items come from its method's spec; read it "
                    "with judgekit.labelling.sources.label_source (what `judgekit label` and "
                    "`judgekit view` do)")


def from_run(folder: Path, method: str, details: list[str], got: RunItems | None) -> Source:
    """The Source of a run folder from its method's ``items`` hook (``got``; None: the
    method has none) and its detail files, as :func:`judgekit.labelling.sources.label_source`
    reads them."""
    if got is None or not got.rows:
        raise DataError(f"{folder}: a {method!r} run with no item a judge gave a "
                        "verdict on; labels are proposed for recorded verdicts, probe and "
                        "audit runs (or a verdicts file)")
    where = folder / (details[0] if details else "items.jsonl")
    return Source(folder.name, as_shape(got.shape, folder),
                  normalise(got.rows, got.shape, where),
                  folder / LABELS_FILE, folder)


def _file(path: Path) -> Source:
    from judgekit.recorded.tables import read

    table = read(path, "auto", {})
    if table.shape == "alpaca_eval":
        raise DataError(f"{path}: alpaca_eval annotations compare two models' outputs with "
                        "no per-item verdict of the judge to check; label pairwise or "
                        "pointwise verdicts")
    rows = [item_row(row, table.shape, table.roles, i) for i, row in enumerate(table.rows)]
    return Source(path.stem, as_shape(table.shape, path), normalise(rows, table.shape, path),
                  path.with_name(path.stem + ".labels.jsonl"), None)


def present_labels(src: Source) -> dict[str, float]:
    """People's labels already in the source (a human or label column, the majority of
    several annotators): item id -> its value (1 pass, or the first answer better).
    They count as labelled everywhere: ``label`` never proposes them and the viewer
    shows them."""
    return derived(src).present


def _present(src: Source) -> dict[str, float]:
    out = {}
    for x in src.items:
        v = present_value(x)
        if v is not None:
            out[x.id] = v
    return out
