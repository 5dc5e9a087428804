"""A run folder's items for labelling, read through its item index
(:mod:`judgekit.runs.index`): each record is read when it is asked for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, overload

from judgekit.analysis.source import Indexed, Source
from judgekit.core.textio import json_loads
from judgekit.recorded import items as it
from judgekit.recorded.labels import LABELS_FILE
from judgekit.runs.index import Index, read

__all__ = ["Items", "source"]


def source(folder: Path) -> Source | None:
    """A run folder's labelling Source from its index (None: it has no usable one)."""
    ix = read(folder)
    if ix is None:
        return None
    return Source(folder.name, ix.shape, Items(ix), folder / LABELS_FILE, folder)


class Items(Indexed):
    """A source's items as a sequence that reads each record when it is asked for (as
    :func:`judgekit.analysis.source.from_run` would have made it)."""

    def __init__(self, index: Index) -> None:
        self.ix = index

    def __len__(self) -> int:
        return len(self.ix.ids)

    @overload
    def __getitem__(self, i: int) -> it.Item: ...

    @overload
    def __getitem__(self, i: slice) -> list[it.Item]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        with self.ix.path.open("rb") as fh:
            return self._read(fh, i)

    def _read(self, fh: Any, i: int) -> it.Item:
        ix = self.ix
        if i < 0:
            i += len(self)
        start, end = int(ix.starts[i]), int(ix.ends[i])
        fh.seek(start)
        row = json_loads(fh.read(end - start).decode("utf-8"))
        item = it.item_of(row, ix.shape, ix.ids[i])
        if item is None:  # the file changed under the index
            raise IndexError(f"{ix.path}: item {i} is no longer where its index says")
        item.score = it.score_of(item, ix.path)
        item.unstable = int(ix.unstable[i])
        return item

    def __iter__(self) -> Iterator[it.Item]:
        with self.ix.path.open("rb") as fh:
            for i in range(len(self)):
                yield self._read(fh, i)
