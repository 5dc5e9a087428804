"""A run folder's item index (``label-index.npz``), the indexed item store: what every
labelling request derives from the run's items, written once by the run beside its item
records, so that
``judgekit view`` and ``judgekit label`` on 10^6 items read a few arrays instead of
parsing every item (about 15 s a first label at 10^6 items; well under a second read).

It holds, per labelable item in order: its id, the judge's verdict and score, its
system, whether its repeats disagree, people's label already in the file, and where its
record lies in the item file (byte offsets); plus the source's fingerprint. An item's
full record is read from the item file when it is asked for. The index is used only
while the item file is the one it was written from (same size and modification time,
or the same bytes); otherwise the items are read as before. Format: NumPy's ``.npz``
(no pickled objects), with a ``meta`` JSON document carrying ``version``."""

from __future__ import annotations

import array
import json
import os
import struct
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, overload

import numpy as np

from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads
from judgekit.recorded import items as it
from judgekit.recorded.items import SHAPES, Shape
from judgekit.stats.active import Population

NAME = "label-index.npz"
VERSION = 3  # 3: ids as one UTF-8 block and their ends (2: a JSON list)
MAX_ITEMS = 2_000_000


def write(folder: Path, detail: str, shape: Shape, count: int, judge: str | None = None
          ) -> None:
    """Write ``folder``'s index of the ``count`` items in its ``detail`` file (the items
    hook's rows as they are, one per non-blank line), of ``shape``. A file with no
    readable verdict gets no index (labelling it says why, as before), nor one of more
    than MAX_ITEMS items: building it would hold every id in memory (about 1 GB at
    10^7); such a run is labelled by reading its items, and is better sampled first."""
    if count > MAX_ITEMS:
        return
    from judgekit.recorded.labels import Fingerprint
    from judgekit.runs.io import write_with

    path = folder / detail
    ids: list[str] = []
    seen: dict[str, int] = {}
    starts, ends = array.array("q"), array.array("q")
    id_blob, id_ends = bytearray(), array.array("q")  # the ids, one block (made as read)
    verdict, own, marks = array.array("b"), array.array("b"), array.array("q")
    score, present = array.array("d"), array.array("d")
    systems: list[object] = []  # each item's system, one string per name
    names: dict[str, str] = {}
    scored = True
    finger = Fingerprint()
    k = 0
    pos = 0
    nan = float("nan")
    digest = _hasher()  # of the bytes as read here: the file is not read a second time
    with path.open("rb") as fh:
        for raw in fh:
            digest.update(raw)
            start, pos = pos, pos + len(raw)
            if len(raw) < 8 and not raw.strip():  # every record is "{...}"
                continue
            row = json_loads(raw.decode("utf-8"))
            if judge is not None and row.get("judge") != judge:
                continue  # another judge's copy of an item (a file of several judges)
            key = it.numbered(row, k, shape, seen)
            k += 1
            item = it.item_of(row, shape, key)
            if item is None:
                continue
            s = it.score_of(item, path)
            scored = scored and s is not None
            ids.append(key)
            id_blob += key.encode("utf-8", "surrogatepass")
            id_ends.append(len(id_blob))
            starts.append(start)
            ends.append(start + len(raw.rstrip(b"\r\n")))
            verdict.append(item.verdict)
            own.append(1 if item.unstable else 0)
            score.append(nan if s is None else s)
            sys_ = item.system
            systems.append(None if sys_ is None else names.setdefault(sys_, sys_))
            marks.append(it.mark(item))
            lab = it.present_value(item)
            present.append(nan if lab is None else lab)
            finger.add(item)
    if not ids:
        return
    del seen
    unstable = it.unstable_flags(ids, np.frombuffer(marks, np.int64),
                                 np.frombuffer(own, np.int8))
    pop = it.population_of(np.frombuffer(verdict, np.int8).astype(np.int64),
                           np.frombuffer(score, float) if scored else None, systems,
                           unstable)
    hashed = np.fromiter((h64(k) for k in ids), np.int64, len(ids))
    order = np.argsort(hashed, kind="stable")
    st = os.stat(path)
    meta = {"version": VERSION, "detail": detail, "shape": shape, "items": len(ids),
            "size": st.st_size, "mtime_ns": st.st_mtime_ns, "digest": digest.hexdigest(),
            "fingerprint": finger.value(), "names": list(pop.systems), "scored": scored}

    def fill(fh: Any) -> None:  # streamed into the file, no copy of the archive held
        np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 ids=np.frombuffer(id_blob, np.uint8),
                 id_ends=np.frombuffer(id_ends, np.int64),
                 starts=np.frombuffer(starts, np.int64), ends=np.frombuffer(ends, np.int64),
                 verdict=np.frombuffer(verdict, np.int8), score=np.frombuffer(score, float),
                 system=pop.system.astype(np.int32), unstable=unstable,
                 present=np.frombuffer(present, float), hashed=hashed[order], order=order)
    write_with(folder / NAME, fill)


def h64(key: str) -> int:
    """A 64-bit hash of an id, the same in every process (the index's id lookup)."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogatepass"),
                                          digest_size=8).digest(), "little", signed=True)


def _hasher() -> Any:
    import hashlib

    return hashlib.blake2b(digest_size=16)


def _digest(path: Path) -> str:
    h = _hasher()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


class Ids(Sequence[str]):
    """The index's ids, each decoded when it is asked for (a list of 10^6 ids took a
    tenth of a second to make on every first request): one UTF-8 block and where each
    id ends in it."""

    def __init__(self, blob: bytes, ends: np.ndarray) -> None:
        self.blob, self.ends = blob, ends

    def __len__(self) -> int:
        return int(self.ends.size)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return self.take(np.arange(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        i = int(i) % n
        a = int(self.ends[i - 1]) if i else 0
        return self.blob[a:int(self.ends[i])].decode("utf-8", "surrogatepass")

    def take(self, at: np.ndarray) -> list[str]:
        """The ids at positions ``at`` (non-negative), in that order."""
        at = np.asarray(at, np.int64)
        ends = self.ends[at]
        starts = np.where(at > 0, self.ends[np.maximum(at - 1, 0)], 0)
        b = self.blob
        return [b[a:z].decode("utf-8", "surrogatepass")
                for a, z in zip(starts.tolist(), ends.tolist())]

    def __iter__(self) -> Iterator[str]:
        return iter(self.take(np.arange(len(self))))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class Index(NamedTuple):
    """A read index: the columns, and where the records are."""

    path: Path  # the item file
    shape: Shape
    ids: Ids
    starts: np.ndarray
    ends: np.ndarray
    verdict: np.ndarray
    score: np.ndarray | None
    system: np.ndarray
    names: tuple[str, ...]
    unstable: np.ndarray
    present: np.ndarray
    fingerprint: JSONObject
    hashed: np.ndarray  # the ids' h64, sorted
    order: np.ndarray  # the position of each sorted hash's id

    def population(self) -> Population:
        return Population(self.verdict.astype(np.int64), self.score,
                          self.system.astype(np.int64), self.names,
                          self.unstable if self.unstable.any() else None)

    def labelled(self) -> tuple[list[str], np.ndarray]:
        """The ids people labelled in the file, and their positions."""
        at = np.flatnonzero(~np.isnan(self.present))
        return self.ids.take(at), at

    def present_labels(self, labelled: tuple[list[str], np.ndarray] | None = None
                       ) -> dict[str, float]:
        ids, at = self.labelled() if labelled is None else labelled
        return dict(zip(ids, self.present[at].tolist()))

    def positions(self, labelled: tuple[list[str], np.ndarray] | None = None
                  ) -> Positions:
        return Positions(self, labelled)


class Positions(Mapping[str, int]):
    """id -> position, from the index's sorted hashes (a dict of 10^6 ids took half a
    second to build on every first request); the ids people labelled, looked up by the
    thousand, are kept in a dict."""

    def __init__(self, ix: Index, labelled: tuple[list[str], np.ndarray] | None = None
                 ) -> None:
        self.ix = ix
        ids, at = ix.labelled() if labelled is None else labelled
        self.known = dict(zip(ids, at.tolist()))

    def __getitem__(self, key: str) -> int:
        got = self.known.get(key) if isinstance(key, str) else None
        if got is not None:
            return got
        if not isinstance(key, str):
            raise KeyError(key)
        ix, h = self.ix, h64(key)
        i = int(np.searchsorted(ix.hashed, h))
        while i < ix.hashed.size and int(ix.hashed[i]) == h:
            j = int(ix.order[i])
            if ix.ids[j] == key:
                return j
            i += 1
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self.ix.ids)

    def __len__(self) -> int:
        return len(self.ix.ids)


def read(folder: Path) -> Index | None:
    """``folder``'s index, or None when it has none, or one that no longer describes
    its item file (the items are then read as before)."""
    got = folder / NAME
    if not got.is_file():
        return None
    try:
        z = _mapped(got)
        meta = json.loads(z["meta"].tobytes())
        if meta.get("version") != VERSION:
            return None
        path = folder / str(meta["detail"])
        st = os.stat(path)
        if st.st_size != meta["size"] or (st.st_mtime_ns != meta["mtime_ns"] and
                                           _digest(path) != meta["digest"]):
            return None
        ids = Ids(z["ids"].tobytes(), z["id_ends"])
        cols = {k: z[k] for k in ("starts", "ends", "verdict", "score", "system",
                                  "unstable", "present", "hashed", "order")}
    except (OSError, ValueError, KeyError, TypeError, struct.error,
            zipfile.BadZipFile):  # unreadable: read
        return None  # the items
    ends = ids.ends
    if ends.dtype != np.int64 or (ends.size and (int(ends[-1]) != len(ids.blob) or int(
            ends[0]) < 0 or bool(np.any(ends[1:] < ends[:-1])))):
        return None  # ids that do not tile their block
    if any(len(v) != len(ids) for v in cols.values()) or len(ids) != meta["items"]:
        return None
    if meta["shape"] not in SHAPES:
        return None
    return Index(path, meta["shape"], ids, cols["starts"], cols["ends"],
                 cols["verdict"], cols["score"] if meta["scored"] else None,
                 cols["system"], tuple(meta["names"]), cols["unstable"], cols["present"],
                 meta["fingerprint"], cols["hashed"], cols["order"])


def _mapped(path: Path) -> dict[str, np.ndarray]:
    """Each array of an uncompressed ``.npz`` (what ``numpy.savez`` writes), mapped
    read-only from the file: nothing is read until it is used (the id lookup's hashes,
    the records' offsets: 32 MB at 10^6 items, of which a lookup touches a few pages).
    A member that is compressed or holds objects is an error (ValueError). On Windows,
    where a mapped file cannot be replaced by the next run, the arrays are read."""
    from numpy.lib import format as npy

    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(path) as zf, path.open("rb") as fh:
        for info in zf.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED or name == info.filename:
                raise ValueError(f"{path}: {info.filename} is not a stored array")
            fh.seek(info.header_offset)
            local = fh.read(30)
            if local[:4] != b"PK\x03\x04":
                raise ValueError(f"{path}: {info.filename} has no local header")
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            version = npy.read_magic(fh)
            shape, fortran, dtype = (npy.read_array_header_1_0(fh) if version == (1, 0)
                                     else npy.read_array_header_2_0(fh))
            if dtype.hasobject:
                raise ValueError(f"{path}: {info.filename} holds objects")
            size = int(np.prod(shape)) * dtype.itemsize
            if fh.tell() + size > info.header_offset + 30 + name_len + extra_len + \
                    info.file_size:
                raise ValueError(f"{path}: {info.filename} is shorter than its header says")
            if size == 0:
                out[name] = np.empty(shape, dtype)
            elif os.name == "nt":  # a mapped file cannot be replaced there: read it
                out[name] = np.fromfile(fh, dtype, int(np.prod(shape))).reshape(
                    shape, order="F" if fortran else "C")
            else:
                out[name] = np.memmap(path, dtype=dtype, mode="r", offset=fh.tell(),
                                      shape=shape, order="F" if fortran else "C")
    return out


