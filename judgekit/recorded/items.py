"""The item record, typed once: what a recorded row becomes where a format reads it, and
what items.jsonl, labelling, ``choose`` and the viewer pass around.

One model per shape (inspect_ai's ``EvalSample`` is the anchor: made where the log is
read, handed everywhere):

- :class:`PointwiseItem`: one verdict on one output (1 pass, 0 fail);
- :class:`PairwiseItem`: one preference between two answers (``verdict`` 1 when the
  judge chose the first).

A method's own fields ride along (``extra="allow"``: the viewer shows them). Two roles
that used to share a column are kept apart:

- ``confidence``: the judge's confidence in the verdict it gave, from 0.5 to 1
  (``confidence``, ``judge_confidence``);
- ``probability``: the judge's probability that the item passes (pairwise: that the
  first answer is better), from 0 to 1 (``probability``, ``p_pass``,
  ``judge_probability``, ``pass_probability``).

``score`` is what the labelling predictor uses: the probability of a pass, read from
``probability``, or from ``confidence`` turned towards the verdict (a fail judged with
confidence 0.8 is a pass with probability 0.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.spec import Shape, TableShape
from judgekit.stats.active import Population

__all__ = ["CONFIDENCE", "PROBABILITY", "SHAPES", "Item", "PairwiseItem", "PointwiseItem",
           "Shape", "VerdictRow", "as_shape", "human_value", "item_of", "item_row",
           "majority", "mark", "normalise", "numbered", "population", "population_of",
           "present_value", "score_of", "slot_of", "unstable_flags"]

SHAPES: tuple[Shape, ...] = ("pointwise", "pairwise")
# the columns of each role, in the order they are looked for
PROBABILITY = ("probability", "p_pass", "judge_probability", "pass_probability")
CONFIDENCE = ("confidence", "judge_confidence")
TEXT_KEYS = ("question", "answer", "input", "output", "first", "second", "reference")
# one text under two names: a run folder's items and the file they came from
CANONICAL = (("question", ("question", "input")), ("answer", ("answer", "output")),
             ("first", ("first",)), ("second", ("second",)), ("reference", ("reference",)))
SLOTS = {"first": "first", "a": "first", "1": "first", "answer_a": "first",
         "output_1": "first", "second": "second", "b": "second", "2": "second",
         "answer_b": "second", "output_2": "second", "tie": "tie", "draw": "tie",
         "equal": "tie", "both": "tie", "0": "tie", "1.5": "tie", "0.5": "tie"}


def _name(v: Any) -> str | None:
    return None if v is None else str(v)


Name = Annotated[str | None, BeforeValidator(_name)]  # ids, systems: any scalar, as text


class Item(BaseModel):
    """What every item has: its id, the judge's 0/1 verdict and the columns labelling
    derives (``score``, ``unstable``); texts are kept as found (a number stays one)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    shape: Shape
    id: Annotated[str, BeforeValidator(str)]
    verdict: Literal[0, 1]
    score: float | None = None  # the probability of a pass the predictor uses
    unstable: int = 0  # 1: the item's repeats disagree (or its own flag says so)
    system: Name = None
    question_id: Name = None
    question: Any = None
    input: Any = None
    answer: Any = None
    output: Any = None
    reference: Any = None
    explanation: Any = None
    probability: Any = None  # the judge's probability of a pass, as the file gave it
    confidence: Any = None  # the judge's confidence in its verdict, as the file gave it

    @property
    def people(self) -> Any:
        """People's label already in the source (None: none; each shape names its own
        column: a pointwise item's ``human``, a pair's ``label``)."""
        return None

    def texts_as_found(self) -> dict[str, str]:
        """The item's texts under the names it has them by (labels files written before
        canonical names hash these)."""
        out = {}
        for k in TEXT_KEYS:
            v = getattr(self, k, None)
            if isinstance(v, str):
                out[k] = v
        return out

    def canonical_texts(self) -> dict[str, str]:
        """The item's texts under their canonical names (the first name it has of each:
        a run folder's ``input``/``output`` are a file's ``question``/``answer``)."""
        out = {}
        for name, names in CANONICAL:
            v = next((t for k in names if isinstance(t := getattr(self, k, None), str)),
                     None)
            if v is not None:
                out[name] = v
        return out

    def fields(self) -> JSONObject:
        """The record as JSON (unset optional fields left out), the viewer's row."""
        return self.model_dump(mode="json", exclude_none=True)


class PointwiseItem(Item):
    """One verdict on one output."""

    shape: Literal["pointwise"] = "pointwise"
    human: Any = None  # people's label in the file (the majority of its annotators)
    humans: list[Any] = Field(default_factory=list)  # each annotator's, where several

    @property
    def people(self) -> Any:
        return self.human


class PairwiseItem(Item):
    """One preference between two answers (``verdict`` 1: the judge chose the first)."""

    shape: Literal["pairwise"] = "pairwise"
    pair_id: Name = None
    first: Any = None
    second: Any = None
    winner: Literal["first", "second"]
    label: Any = None  # people's preference in the file: first, second or tie
    order: int | None = None

    @property
    def people(self) -> Any:
        return self.label


class VerdictRow(BaseModel):
    """A line of an analyse run's items.jsonl as choose compares judges on it: one
    verdict (pointwise) or one order of a pair (pairwise: ties kept), people's label,
    the judge's confidence in its verdict and what the call cost, where recorded."""

    model_config = ConfigDict(extra="allow")
    id: Name = None
    pair_id: Name = None
    order: int = 0
    question_id: Name = None
    verdict: Any = None
    winner: Any = None
    human: Any = None
    label: Any = None
    judge: str | None = None
    confidence: Any = None  # the judge's confidence in its verdict (0.5 to 1)
    cost: Any = None
    seconds: Any = None

    def key(self, shape: Shape) -> str:
        """The item's key: its id, or a pair's id and order."""
        return str(self.id) if shape == "pointwise" else f"{self.pair_id}#{self.order}"

    def cluster(self, shape: Shape) -> str:
        """What its items are clustered by: the question (else the item), or the pair."""
        return (self.question_id or self.key(shape)) if shape == "pointwise" \
            else str(self.pair_id)

    def said(self, shape: Shape) -> str:
        """The judge's readable verdict ("1"/"0", or "first"/"second"/"tie")."""
        return str(self.verdict if shape == "pointwise" else self.winner)

    def people(self, shape: Shape) -> Any:
        """People's label on it (None: none)."""
        return self.human if shape == "pointwise" else self.label


MODELS: dict[str, type[Item]] = {"pointwise": PointwiseItem, "pairwise": PairwiseItem}


def as_shape(value: object, where: object) -> Shape:
    """``value`` as an item shape, or one line naming where it came from."""
    if value == "pointwise" or value == "pairwise":
        return value  # type: ignore[return-value]
    raise DataError(f"{where}: items of shape {value!r} cannot be labelled (labelling "
                    f"takes {' or '.join(SHAPES)} items)")


def item_of(row: Mapping[str, Any], shape: Shape, key: str) -> Item | None:
    """``row`` as the item ``key`` of ``shape`` (None: no readable verdict: a tie, or
    empty, left out as ``judgekit analyse`` leaves it out)."""
    if shape == "pairwise":
        w = row.get("winner")
        if w not in ("first", "second"):
            return None
        return PairwiseItem.model_validate({**row, "id": key, "verdict": int(w == "first")})
    if row.get("verdict") not in (0, 1) or isinstance(row.get("verdict"), bool):
        return None
    return PointwiseItem.model_validate({**row, "id": key})


def item_row(row: Mapping[str, Any], shape: TableShape, roles: Mapping[str, str], i: int
             ) -> JSONObject:
    """Row ``i`` of a recorded table (its ``roles``: role -> column) under the item's
    field names: what :func:`item_of` then types."""
    from judgekit.recorded.base import label_of

    def col(role: str) -> Any:
        return row.get(roles[role]) if role in roles else None

    def several(role: str) -> list[Any]:
        return [row.get(c) for c in roles.get(role, "").split(",") if c]

    if shape != "pointwise":
        return {"pair_id": str(row.get(roles["pair_id"], i)) if "pair_id" in roles
                else str(i),
                "first": col("first"), "second": col("second"),
                "winner": slot_of(col("winner")), "question": col("question"),
                "label": majority([slot_of(v) for v in several("label")])}
    raw = row.get(roles["judge"].split(",")[0])
    out: JSONObject = {"id": str(row.get(roles["id"], i)) if "id" in roles else str(i),
                       "verdict": label_of(raw, 0.5), "system": col("system"),
                       "question_id": col("question_id")}
    if isinstance(raw, float) and 0 < raw < 1:  # the judge's own probability
        out["probability"] = raw
    for key in PROBABILITY + CONFIDENCE:
        if row.get(key) not in (None, ""):
            out[key] = row[key]
    for key in ("question", "input", "answer", "output", "explanation"):
        if row.get(key) not in (None, ""):
            out[key] = row[key]
    people = [label_of(v, 0.5) for v in several("human") if v not in (None, "")]
    out["human"] = majority(people)
    if len(several("human")) >= 2:  # each annotator's, for their agreement and error
        out["humans"] = people
    return out


def numbered(row: Mapping[str, Any], k: int, shape: Shape, seen: dict[str, int]) -> str:
    """Row ``k``'s item id: repeats of an id (or a pair's other order) are "ID#2", ...,
    numbered over every row, readable or not, as `judgekit analyse --labels` numbers
    them (``seen`` counts the ids so far)."""
    base = str(row.get("pair_id" if shape == "pairwise" else "id", k))
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}#{n + 1}"


def score_of(item: Item, where: Path) -> float | None:
    """The item's probability of a pass (see the module docstring), checked: a value
    that is not a number in [0, 1] is an error naming the file, item and column."""
    extra = item.model_extra or {}
    for keys, as_conf in ((PROBABILITY, False), (CONFIDENCE, True)):
        for key in keys:
            raw = getattr(item, key) if key in Item.model_fields else extra.get(key)
            if raw in (None, ""):
                continue
            try:
                p = float(raw)
            except (TypeError, ValueError):
                raise DataError(f"{where}: item {item.id!r}: {key} {raw!r} is not a "
                                "number in [0, 1]") from None
            if not 0 <= p <= 1:
                raise DataError(f"{where}: item {item.id!r}: {key} {p} is outside [0, 1]; "
                                "give a probability")
            return p if not as_conf or item.verdict == 1 else 1 - p
    s = item.score
    return float(s) if s is not None and 0 <= s <= 1 else None


def normalise(rows: Iterable[Mapping[str, Any]], shape: Shape, where: Path) -> list[Item]:
    """One item per row with a readable verdict, each with a unique id (repeats
    numbered), its ``score`` and ``unstable`` flag; an error when none is readable."""
    out: list[Item] = []
    seen: dict[str, int] = {}
    for k, row in enumerate(rows):
        item = item_of(row, shape, numbered(row, k, shape, seen))
        if item is None:
            continue
        item.score = score_of(item, where)
        out.append(item)
    if not out:
        raise DataError(f"{where}: no item with a readable verdict to label")
    flags = unstable_flags([x.id for x in out], [mark(x) for x in out],
                           [int(bool(x.unstable)) for x in out])
    for x, f in zip(out, flags.tolist()):
        x.unstable = f
    return out


def mark(item: Item) -> int:
    """What must agree across an item's repeats: its verdict, or for a pair the answer
    the judge chose (a 64-bit hash of its text)."""
    if isinstance(item, PairwiseItem):
        return hash(str(item.first if item.verdict else item.second))
    return int(item.verdict)


def unstable_flags(ids: Sequence[str], marks: Sequence[int] | np.ndarray,
                   own: Sequence[int] | np.ndarray) -> np.ndarray:
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


def human_value(label: Any, shape: str | None = None) -> float | None:
    """A label as the value y the estimands use: 1 pass (pairwise: the first answer is
    better), 0 fail (the second), None when it is neither."""
    text = str(label).strip().casefold() if label is not None else ""
    if isinstance(label, bool):
        return float(label)
    if isinstance(label, (int, float)) and label in (0, 1):
        return float(label)
    good = {"1", "pass", "yes", "true", "correct", "first", "a"}
    bad = {"0", "fail", "no", "false", "incorrect", "second", "b"}
    return 1.0 if text in good else 0.0 if text in bad else None


def present_value(item: Item) -> float | None:
    """People's label already on ``item`` (a human or label column), as a value."""
    raw = item.people
    return None if raw is None else human_value(raw, item.shape)


def population(items: Sequence[Item]) -> Population:
    """The items as judgekit.stats.active sees them."""
    scores = [x.score for x in items]
    return population_of(np.array([x.verdict for x in items]),
                         np.array(scores, float) if all(s is not None for s in scores)
                         else None, [x.system for x in items],
                         np.array([x.unstable for x in items]))


def population_of(verdict: np.ndarray, score: np.ndarray | None, systems: list[object],
                  unstable: np.ndarray) -> Population:
    """The population of the items' columns (``systems``: each item's system, or
    None)."""
    names = sorted({str(x) for x in systems if x is not None})
    index = {n: i for i, n in enumerate(names)}
    system = np.array([index.get(str(x), 0) for x in systems])
    return Population(verdict, score, system, tuple(names) if len(names) > 1 else ("",),
                      unstable if unstable.any() else None)


def slot_of(value: Any) -> str | None:
    """A pairwise verdict or label as the slot it names: first, second or tie."""
    if value is None:
        return None
    return SLOTS.get(str(value).strip().lower())


def majority(labels: Sequence[Any]) -> Any:
    """The label more annotators gave than any other (None: no label, or a tie)."""
    from collections import Counter

    if len(labels) <= 1:  # the common case, one annotator (or none)
        return labels[0] if labels else None
    top = Counter(x for x in labels if x is not None).most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]
