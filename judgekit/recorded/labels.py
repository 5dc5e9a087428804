"""The labels file: one JSON object per line, appended and fsynced under a lock, so two
annotators (or the viewer and the command line) can write at once and a kill -9 loses
at most the line being written.

Lines:
- ``{"kind": "draw", "draw": t, "batch": b, "id", "probability", "prediction",
  "means": {estimand: c + w.m}, "expected_var": {estimand: ...}, ...}``: the t-th item
  drawn, with what the draw was made from (the estimate needs it);
- ``{"kind": "label", "id", "label", "annotator", "at"}``: a label (the latest label of
  an annotator for an item counts; several annotators are averaged);
- ``{"kind": "undo", "id", "annotator", "at"}``: that annotator's label withdrawn;
- ``{"kind": "queue", "id", "at"}``: an item queued for people (``judgekit label
  --queue``, e.g. the items ``judgekit choose --selective`` escalated): offered before
  any draw until labelled; its label never enters the estimates, which count draws only;

The file's first line written by judgekit also carries ``"source": {"items", "ids",
"texts"}``: the fingerprint of the source the labels are given on (its item count, a
hash of its ids in order and one of its texts). A source changed since is told in one
line, with what still counts (:func:`source_change`). It is one more field of a line
the previous version reads, so files stay readable both ways.

Other tools may read only the label lines: ``{"id", "label", "annotator"}``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from judgekit.core.errors import DataError, OutputError, describe_validation
from judgekit.core.jsontypes import JSONObject
from judgekit.core.spec import Shape
from judgekit.core.textio import json_loads, read_lines
from judgekit.recorded.items import Item, human_value

LABELS_FILE = "labels.jsonl"  # a run folder's labels (a file's: FILE.labels.jsonl)


class Line(BaseModel):
    """A labels-file line (other fields ride along, as a later version may write)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    kind: Literal["draw", "label", "undo", "queue"] = "label"
    id: Annotated[str, BeforeValidator(str)]
    source: JSONObject | None = None  # the first line's: the source's fingerprint


class Draw(Line):
    """A draw: the t-th item drawn, and what it was drawn under (the estimate needs
    it). People's labels already in the source enter as draws made here, never
    written (``frame`` "undrawn", prediction 0.5)."""

    kind: Literal["draw"] = "draw"  # type: ignore[assignment]
    probability: float  # the chance the item was drawn with (its weight: 1/probability)
    prediction: float = 0.5  # the predictor's value on it when drawn
    draw: int | None = None  # 1, 2, ...
    batch: int = 0
    frame: str | None = None  # "undrawn": drawn from the items not drawn before
    means: dict[str, float] = Field(default_factory=dict)  # c + sum of w m, per estimand
    bounds: dict[str, list[float]] = Field(default_factory=dict)  # its term's bounds
    share: float = 1.0  # the batch's uniform share (below 1: steered)
    predicted_var: dict[str, float] | None = None
    plan: int = 0  # the draws the planned design aims at
    # the session's settings, on the first draw
    seed: int | None = None
    level: float | None = None
    target_width: float | None = None
    design: str | None = None
    label_error: Any = None
    which: str | None = None  # the estimand ("for" in the file)

    @model_validator(mode="before")
    @classmethod
    def _for(cls, data: Any) -> Any:
        if isinstance(data, dict) and "for" in data and "which" not in data:
            return {**data, "which": data["for"]}
        return data


class Mark(Line):
    """A label given (``kind`` label) or withdrawn (undo) by one annotator."""

    kind: Literal["label", "undo"] = "label"  # type: ignore[assignment]
    label: Any = None
    annotator: Annotated[str | None, BeforeValidator(lambda v: None if v in (None, "")
                                                      else str(v))] = None
    at: Any = None
    item_sha: Any = None  # the text labelled (a later change is seen)


class Labels(NamedTuple):
    draws: list[Draw]
    # item id -> annotator -> label (after undos), in the order labels arrived
    by_item: dict[str, JSONObject]
    history: list[Mark]  # label and undo lines, in order
    queue: tuple[str, ...] = ()  # items queued for people (judgekit label --queue)
    source: JSONObject | None = None  # the fingerprint of the source (first kept)


def read(path: Path) -> Labels:
    draws: list[Draw] = []
    by_item: dict[str, JSONObject] = {}
    history: list[Mark] = []
    queue: list[str] = []
    source: JSONObject | None = None
    if not path.is_file():
        return Labels(draws, by_item, history)
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        try:
            row = json_loads(line)
        except json.JSONDecodeError:
            if lineno == _last_line(path):  # a line cut by a crash mid-write
                break
            raise DataError(f"{path}:{lineno}: not a JSON object; remove or fix the line") \
                from None
        if not isinstance(row, dict) or "id" not in row:
            raise DataError(f"{path}:{lineno}: a labels line needs an object with \"id\"")
        kind = row.get("kind", "label")
        if source is None and isinstance(row.get("source"), dict):
            source = row["source"]
        item = str(row["id"])
        if kind == "draw":
            _check_draw(path, lineno, row)
            draws.append(_typed(Draw, row, path, lineno))
        elif kind == "queue":
            if item not in queue:
                queue.append(item)
        elif kind in ("undo", "label"):
            if kind == "label" and "label" not in row:
                raise DataError(f"{path}:{lineno}: a label line needs \"label\"")
            mark = _typed(Mark, row, path, lineno)
            who = mark.annotator or "anonymous"
            if kind == "undo":
                by_item.get(item, {}).pop(who, None)
            else:
                by_item.setdefault(item, {})[who] = mark.label
            history.append(mark)
        else:
            raise DataError(f"{path}:{lineno}: kind {kind!r}: use draw, label, undo or "
                            "queue")
    return Labels(draws, {k: v for k, v in by_item.items() if v}, history, tuple(queue),
                  source)


L = TypeVar("L", bound=Line)


def _typed(model: type[L], row: JSONObject, path: Path, lineno: int) -> L:
    """The line as its model, or one line naming the file, line and field."""
    try:
        return model.model_validate(row)
    except ValidationError as exc:
        raise DataError(f"{path}:{lineno}: {describe_validation(exc)}; restore the line "
                        "or remove it") from None


def _check_draw(path: Path, lineno: int, row: JSONObject) -> None:
    """A draw line as ``judgekit label`` writes it: a draw number and the probability the
    item was drawn with, finite and in (0, 1] (its weight is 1/probability)."""
    import math

    p, d = row.get("probability"), row.get("draw")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) \
            or not 0 < p <= 1:
        raise DataError(f"{path}:{lineno}: a draw line needs a probability in (0, 1], got "
                        f"{p!r}; draw lines are written by judgekit label: restore the line "
                        "or remove it and the draws after it")
    if isinstance(d, bool) or not isinstance(d, int) or d < 1:
        raise DataError(f"{path}:{lineno}: a draw line needs a draw number 1, 2, ..., got "
                        f"{d!r}; restore the line or remove it and the draws after it")
    for key in ("share", "predicted_var"):
        v = row.get(key)
        values = list(v.values()) if isinstance(v, dict) else [] if v is None else [v]
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x)
               for x in values):
            raise DataError(f"{path}:{lineno}: {key} {v!r} is not a finite number; "
                            "restore the line or remove it and the draws after it")


def item_sha(item: Item, *, legacy: bool = False) -> str | None:
    """A short hash of an item's texts: a label carries it, so a label whose item's text
    changed since (a re-exported file whose row-number ids now name other rows) is seen
    and not counted. None for items without text. The texts are read under their
    canonical names (a run folder's ``input``/``output`` are a file's
    ``question``/``answer``), so one item hashes alike in both; ``legacy``: the hash of
    labels files written before, under the names as found."""
    import hashlib

    texts = item.texts_as_found() if legacy else item.canonical_texts()
    if not texts:
        return None
    return hashlib.sha256(json.dumps(texts, sort_keys=True, ensure_ascii=False)
                          .encode("utf-8")).hexdigest()[:16]


def fingerprint(items: Iterable[Item]) -> JSONObject:
    """The fingerprint of a labels file's source ``items`` (the module's docstring)."""
    f = Fingerprint()
    for x in items:
        f.add(x)
    return f.value()


class Fingerprint:
    """:func:`fingerprint`, one item at a time (a source streamed once); the hashes are
    fed in blocks (the same bytes in the same order)."""

    BLOCK = 4096

    def __init__(self) -> None:
        import hashlib

        self.n, self.ids, self.texts = 0, hashlib.sha256(), hashlib.sha256()
        self.legacy = hashlib.sha256()  # the texts under the names as found (before)
        self._ids: list[str] = []
        self._texts: list[str] = []
        self._legacy: list[str] = []

    def add(self, x: Item) -> None:
        self.n += 1
        self._ids.append(x.id)
        self._texts.append("".join([f"{k}\x1f{v}\x1f" for k, v in x.canonical_texts().items()]))
        self._legacy.append("".join([f"{k}\x1f{v}\x1f" for k, v in x.texts_as_found().items()]))
        if len(self._ids) >= self.BLOCK:
            self._feed()

    def _feed(self) -> None:
        if self._ids:
            for h, part in ((self.ids, self._ids), (self.texts, self._texts),
                            (self.legacy, self._legacy)):
                h.update(("\x1e".join(part) + "\x1e").encode("utf-8", "surrogatepass"))
                part.clear()

    def value(self) -> JSONObject:
        self._feed()
        return {"items": self.n, "ids": self.ids.hexdigest()[:16],
                "texts": self.texts.hexdigest()[:16],
                "texts_as_found": self.legacy.hexdigest()[:16]}


def stamped(labels: Labels, source: Callable[[], JSONObject], rows: list[JSONObject]
            ) -> list[JSONObject]:
    """``rows`` to append, the first carrying the source's fingerprint (``source()``)
    when the file has none yet."""
    if not rows or labels.source is not None:
        return rows
    return [{**rows[0], "source": source()}, *rows[1:]]


def source_change(path: object, labels: Labels, now_: JSONObject,
                  items: Mapping[str, Item]) -> str | None:
    """One line saying how the source (its fingerprint ``now_``, its items by id) changed
    since the labels file's fingerprint, and what still counts (None: unchanged, or a
    file without a fingerprint)."""
    was = labels.source
    if was is None or (was.get("items") == now_["items"] and was.get("ids") == now_["ids"]
                       and was.get("texts") in (now_["texts"], now_.get("texts_as_found"))):
        return None  # (a fingerprint written before texts were named canonically)
    gone = sorted({k for k in labels.by_item if k not in items} |
                  {d.id for d in labels.draws if d.id not in items})
    stale = stale_ids(labels, items)
    counted = sum(1 for k in labels.by_item if k in items and k not in stale)
    how = (f"{was.get('items')} items then, {now_['items']} now"
           if was.get("items") != now_["items"] else "the same number of items") + (
        "; ids changed" if was.get("ids") != now_["ids"] else "") + (
        "; texts changed" if was.get("texts") not in (now_["texts"],
                                                      now_.get("texts_as_found")) else "")
    return (f"{path}: the source changed since these labels were given ({how}): "
            f"{counted} label(s) of items still present with the text they were given on "
            f"count; {len(stale)} given to a text that changed and {len(gone)} of ids no "
            f"longer present do not" + (f" ({', '.join(gone[:3])})" if gone else ""))


def stale_ids(labels: Labels, items: Mapping[str, Item]) -> set[str]:
    """Ids whose latest label was given to a text other than the item's text now."""
    last: dict[str, str] = {}
    for row in labels.history:
        if row.kind == "label" and isinstance(row.item_sha, str):
            last[row.id] = row.item_sha
    return {k for k, sha in last.items() if k in items and item_sha(items[k]) not in
            (None, sha) and item_sha(items[k], legacy=True) != sha}


def _last_line(path: Path) -> int:
    with path.open("rb") as fh:
        return fh.read().rstrip(b"\n").count(b"\n") + 1


def append(path: Path, rows: Iterable[JSONObject]) -> None:
    """Append lines under an exclusive lock, fsynced before returning."""
    got = list(rows)
    if got:
        transact(path, lambda _labels: got)


def transact(path: Path, decide: Callable[[Labels], list[JSONObject]]) -> list[JSONObject]:
    """Read the labels file, ``decide`` the lines to append from what it holds, and
    append them, all under one exclusive lock: two processes (two annotators, the viewer
    and the command) never decide from the same state, so a batch is proposed once.
    A torn last line (a writer killed mid-line, never acknowledged) is cut; a complete
    last line without its newline (a hand append) is kept and ended. The file is never
    written through a symbolic link. Returns the lines appended."""
    fd, created = _open_locked(path)
    wrote = False
    try:
        _mend_tail(fd, path)
        rows = decide(read(path))
        data = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
                       for r in rows)
        if data:
            os.write(fd, data.encode("utf-8"))
            os.fsync(fd)
            wrote = True
        return rows
    except OSError as exc:
        raise OutputError(f"{path}: cannot write the labels file ({exc.strerror})") from None
    finally:
        if created and not wrote and os.fstat(fd).st_size == 0:
            # nothing was appended to the file this call made (the decision failed, or
            # drew nothing): it goes, still under the lock (a process waiting on the
            # lock sees the name no longer leads to its file, and opens it again)
            with contextlib.suppress(OSError):
                os.unlink(path)
        os.close(fd)


def _open_locked(path: Path) -> tuple[int, bool]:
    """The labels file opened for appending and locked, and whether this call created
    it. Never through a symbolic link; opened again when the name was unlinked or
    replaced while the lock was awaited (its file is not the one at the name)."""
    base = os.O_RDWR | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    while True:
        try:
            try:
                fd, created = os.open(path, base | os.O_CREAT | os.O_EXCL, 0o644), True
            except FileExistsError:
                fd, created = os.open(path, base), False
        except FileNotFoundError:
            continue  # unlinked between the two opens: try again
        except OSError as exc:
            why = "it is a symbolic link" if os.path.islink(path) else exc.strerror
            raise OutputError(f"{path}: cannot write the labels file ({why})") from None
        _lock(fd)
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path, follow_symlinks=False))
        except FileNotFoundError:
            same = False
        if same:
            return fd, created
        os.close(fd)


def _mend_tail(fd: int, path: Path) -> None:
    size = os.fstat(fd).st_size
    if not size:
        return
    os.lseek(fd, max(0, size - 65536), os.SEEK_SET)
    tail = os.read(fd, 65536)
    if tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    last = tail[cut + 1:]
    try:
        complete = isinstance(json_loads(last.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        complete = False
    if complete:  # a whole line someone appended without its newline: keep it
        os.write(fd, b"\n")
    elif cut >= 0 or size <= 65536:
        os.ftruncate(fd, size - len(last))


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: appends of one write are atomic enough
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def values(path: Path, shape: Shape = "pointwise", warn_drawn: bool = True
           ) -> dict[str, float]:
    """Item id -> label value from a labels file (the mean of its annotators' latest
    labels): what ``judgekit analyse --labels``, the probe and the audit read."""
    if not path.is_file():
        raise DataError(f"labels file {path} not found")
    got = read(path)
    if got.draws and warn_drawn:
        import logging

        logging.getLogger("judgekit.labels").warning(
            "judgekit: %s: these labels were drawn by judgekit label where the judge was "
            "unsure, not at random; rates corrected from them here over-represent hard "
            "items (judgekit label and judgekit analyse --labels weight them)", path)
    return values_of(got, shape)


def values_of(labels: Labels, shape: Shape = "pointwise") -> dict[str, float]:
    """Item id -> the mean of its annotators' label values (items none could read: out)."""
    out = {}
    for item, who in labels.by_item.items():
        vals = [v for v in (human_value(x, shape) for x in who.values()) if v is not None]
        if vals:
            out[item] = sum(vals) / len(vals)
    return out


def unknown_ids(where: object, unknown: list[str], column: str = "id") -> str:
    """The one line every surface (``analyse --labels``, ``label``, ``view``) gives for
    labels whose ids match no item."""
    return (f"{where}: id {unknown[0]!r} matches no item ({len(unknown)} such); a label's "
            f"id is the item's {column} (repeats and a pair's other order: ID#2; Inspect "
            "logs: the sample id, or SAMPLE:EPOCH), or map the id column with --map "
            f"{column}=COLUMN")
