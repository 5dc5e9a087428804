"""Propose the next items to label and estimate from the labels so far.

The draws are made in batches; within a batch the predictor and the probabilities are
those fitted on the labels that existed when the batch was drawn, and each draw line
records them, so the estimate never depends on what was labelled later. A batch is only
drawn when every earlier draw is labelled: asking again without labelling returns the
same items (nothing is drawn twice). The estimate uses the draws up to the first one
still unlabelled, so skipping an item cannot bias it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from judgekit.core.errors import ConfigError, DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.labelling import store
from judgekit.labelling.items import Source, derived, load, present_labels
from judgekit.labelling.store import human_value
from judgekit.labelling.terms import (
    FOR,
    Fit,
    State,
    Terms,
    chosen,
    counted,
    draw_row,
    fit_counted,
    label_error_of,
    parse_label_error,
    state_of,
    terms_of,
    uniform_first,
)
from judgekit.stats import active

_State = State  # the name benchmarks/active_labels.py builds states with
__all__ = ["DESIGNS", "FOR", "INTERVALS", "Figure", "Fit", "Settings", "Status", "Terms",
           "add_label", "chosen", "counted", "enqueue", "estimate", "next_draws",
           "parse_label_error", "propose", "recorded", "terms_of", "undo"]



DESIGNS = ("planned", "sequential")
INTERVALS = {"planned": "fixed-n interval (planned design: Wilson at the effective n of "
                        "the cross-fitted estimate; stop at the target width, do not "
                        "re-check afterwards)",
             "sequential": "anytime-valid interval (betting confidence sequence: valid "
                           "however often it is checked)"}


class Figure(NamedTuple):
    name: str
    estimate: float | None
    ci: list[float] | None  # the interval of the session's design (``interval`` says which)
    fixed_ci: list[float] | None  # the fixed-n interval (valid at a number set in advance)
    halfwidth: float | None
    draws_needed: int | None  # further draws the design needs (draws of labelled items
    # are free)
    labels_needed: int | None = None  # further labels: at most the items still unlabelled
    interval: str = INTERVALS["planned"]
    sequential_ci: list[float] | None = None  # the anytime-valid interval
    sequential_estimate: float | None = None  # the running mean, inside sequential_ci
    draws: int = 0


class Status(NamedTuple):
    source: Source
    figures: list[Figure]
    draws: int  # draws counted (the labelled prefix)
    labels: int  # items labelled (by anyone)
    pending: list[JSONObject]  # draws waiting for a label, in order (unique items)
    target_width: float
    level: float
    done: bool
    design: str = "planned"
    label_error: float | None = None
    label_error_ci: list[float] | None = None
    steering: JSONObject | None = None  # the next batch's uniform share and its reason

    @property
    def labels_needed(self) -> int:
        return max((f.labels_needed or 0 for f in self.figures), default=0)

    def as_json(self) -> JSONObject:
        return {"run": self.source.name, "level": self.level, "design": self.design,
                "interval": INTERVALS[self.design],
                "target_width": self.target_width, "draws": self.draws,
                "labels": self.labels, "items": len(self.source.items), "done": self.done,
                "labels_needed": self.labels_needed, "label_error": self.label_error,
                "label_error_ci": self.label_error_ci, "steering": self.steering,
                "pending": [p["id"] for p in self.pending],
                "figures": [f._asdict() for f in self.figures]}


def estimate(source: Path | Source, target_width: float = 0.1, level: float = 0.95,
             which: str = "pass_rate", design: str = "planned",
             label_error: float | str | None = None, seed: int = 0) -> Status:
    """The figures from the labels so far (nothing is drawn)."""
    src = load(source) if isinstance(source, Path) else source
    return _estimate(src, state_of(src, which), target_width, level, design, label_error,
                     seed)[0]


def _estimate(src: Source, state: State, target_width: float, level: float,
              design: str = "planned", label_error: float | str | None = None,
              seed: int = 0) -> tuple[Status, np.ndarray, np.ndarray]:
    """The figures, and the next batch's probabilities and predictor."""
    if design not in DESIGNS:
        raise ConfigError(f"--design {design!r}: use {' or '.join(DESIGNS)}")
    labels, ests, y = state.labels, state.estimands, state.y
    err, err_ci = label_error_of(src, labels, label_error, level)
    prefix: list[JSONObject] = []
    pending: list[JSONObject] = []
    waiting: set[str] = set()
    for d in labels.draws:  # the prefix up to the first draw still unlabelled
        item = str(d["id"])
        if not waiting and item in y:
            prefix.append(d)
        elif item not in y and item not in waiting:
            waiting.add(item)
            pending.append(d)
    queued = [{"id": k, "queued": True} for k in labels.queue
              if k not in y and k not in waiting]
    pending = queued + pending  # people's queue first
    n = len(src.items)
    first, head = uniform_first(src, state, {str(d["id"]) for d in prefix})
    rows = first + prefix
    fit = fit_counted(src, state, rows, seed, head) if rows else None
    known = derived(src)
    keys, at = known.locate(y, strict=False)
    by = np.argsort(at, kind="stable")  # in the source's order
    labelled = at[by]
    m_next = active.fit_predictor(state.pop, labelled, np.array(
        [y[keys[k]] for k in by.tolist()], float),
        model=fit.model if fit is not None else "full")
    future: list[float | None] = [None] * len(ests)
    if fit is not None and fit.preds:
        q_next, share, ratio, got = active.steer(m_next, ests, fit.idx, fit.q, fit.resid)
        future = list(got)
    else:
        q_next, share, ratio = np.full(n, 1.0 / n), 1.0, 1.0
    steering = {"uniform_share": share, "variance_vs_uniform": round(ratio, 4),
                "steered": share < 1.0,
                "predicted_var": {e.name: v for e, v in zip(ests, future) if v is not None}}
    scale = 1.0 - 2.0 * (err or 0.0)
    left = n - len(y)
    plan = max((int(d.get("plan", 0)) for d in prefix), default=0)
    undrawn = n - (0 if fit is None else int(np.unique(fit.idx).size))
    pilot = active.pilot_size(target_width, level, err or 0.0, ests)
    figures = []
    for e, fvar in zip(ests, future, strict=True):
        if fit is None:
            need = pilot
            figures.append(Figure(e.name, None, None, None, None, need,
                                  active.expected_new_labels(q_next, labelled, need),
                                  INTERVALS[design]))
            continue
        tm = terms_of(e, fit, n)
        floor = float(np.mean((e.weights[fit.idx] / fit.q) ** 2)) / fit.idx.size
        seq = active.label_error_map(
            active.betting_cs(tm.z_seq, tm.low, tm.high, level, e.low, e.high), e,
            err or 0.0, err_ci)
        t = fit.idx.size
        fixed = seq if t < 2 else active.label_error_map(  # one draw has no spread
            active.fixed_interval(tm.z_cf, level, e.low, e.high, floor, tm.block,
                                  tm.expected), e, err or 0.0, err_ci)
        if t < 2:
            shown = seq
            need = pilot - t
        elif design == "planned":
            shown = fixed
            need = 0
            if t < pilot:
                need = pilot - t
            elif t < plan:  # labelling towards the plan: no look before it is reached
                need = plan - t
            elif (fixed.high - fixed.low) / 2 > target_width / 2:  # a look: re-plan
                need = active.draws_needed(
                    tm.z_cf, level, target_width / 2 * scale, e.low, e.high, floor, tm.block,
                    int(share < 1.0), fvar, expected=tm.expected)
                if need > active.EXTEND * t:  # far off: aim short, the next look re-plans
                    need = math.ceil(active.AIM * need)
                need = min(max(need, 1), undrawn)  # each draw is another item
        else:
            shown = seq
            need = _cs_draws_needed(seq, t, target_width / 2)
            if t < pilot:
                need = max(need, pilot - t)
        lab = active.expected_new_labels(q_next, labelled, need)
        if left == 0:
            need, lab = 0, 0
        figures.append(Figure(
            e.name, round(shown.estimate, 6), [round(shown.low, 6), round(shown.high, 6)],
            [round(fixed.low, 6), round(fixed.high, 6)], round((shown.high - shown.low) / 2, 6),
            int(need), int(lab), INTERVALS["sequential" if t < 2 else design],
            [round(seq.low, 6), round(seq.high, 6)],
            round(seq.estimate, 6), t))
    done = bool(figures) and all(f.draws_needed == 0 for f in figures)
    st = Status(src, figures, len(prefix), len(y), pending, target_width, level, done,
                design, err, err_ci, steering)
    return st, q_next, m_next


def _cs_draws_needed(seq: active.Interval, t: int, halfwidth: float) -> int:
    """About how many more draws the confidence sequence needs: its half-width shrinks
    like sqrt(log(1 + t) / t)."""
    half = (seq.high - seq.low) / 2
    if half <= halfwidth:
        return 0
    lo, hi = t, 2 * t

    def at(u: int) -> float:
        return half * math.sqrt(math.log1p(u) / u * t / math.log1p(t))

    while at(hi) > halfwidth and hi < 10 ** 7:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if at(mid) > halfwidth else (lo, mid)
    return hi - t


def propose(source: Path | Source, batch: int = 10, seed: int = 0, target_width: float = 0.1,
            level: float = 0.95, which: str = "pass_rate", design: str = "planned",
            label_error: float | str | None = None) -> Status:
    """The items to label next: the pending draws if some are unlabelled, else a new
    batch of at most ``batch`` distinct unlabelled items (no more than the design still
    needs; none once the target is met)."""
    if batch < 1:
        raise ConfigError(f"--batch {batch}: give at least 1")
    src = load(source) if isinstance(source, Path) else source

    decided: list[Status] = []

    def decide(labels: store.Labels) -> list[JSONObject]:  # under the file's lock
        st, rows = next_draws(src, state_of(src, which, labels), batch, seed, target_width,
                              level, which, design, label_error)
        decided.append(st)
        return store.stamped(labels, lambda: derived(src).fingerprint, rows)

    if not store.transact(src.labels_path, decide) and decided:
        return decided[0]  # nothing drawn: the figures the decision was made on
    return estimate(src, target_width, level, which, design, label_error, seed)


def next_draws(src: Source, state: State, batch: int, seed: int, target_width: float,
               level: float, which: str, design: str, label_error: float | str | None
               ) -> tuple[Status, list[JSONObject]]:
    """The session's status and the draw lines of its next batch (none while draws are
    pending or once the target is met): what :func:`propose` appends to the labels
    file."""
    st, q, m = _estimate(src, state, target_width, level, design, label_error, seed)
    if st.pending or st.done:
        return st, []
    labels, pop, ests, y = state
    ids = derived(src).ids
    every = active.estimands_for(pop)  # all estimands logged: any can be read
    b = 1 + max((int(d.get("batch", 0)) for d in labels.draws), default=0)
    t0 = len(labels.draws)
    head: JSONObject = {}
    if not labels.draws:
        head = {"seed": seed, "for": which, "level": level, "target_width": target_width,
                "design": design, "label_error": label_error}
    rng = np.random.default_rng([seed, b])
    known = derived(src)
    undrawn = np.ones(len(ids), bool)
    undrawn[known.locate(str(d["id"]) for d in labels.draws)[1]] = False
    undrawn[known.locate(present_labels(src))[1]] = False
    want = min(batch, len(ids) - len(y), max(1, st.labels_needed))
    plan = max((f.draws + (f.draws_needed or 0) for f in st.figures), default=0)
    new: list[JSONObject] = []
    fresh: set[str] = set()
    while len(fresh) < want and undrawn.any():
        qu = np.where(undrawn, q, 0.0)
        qu = qu / qu.sum() if qu.sum() > 0 else undrawn / undrawn.sum()
        j = int(rng.choice(len(ids), p=qu))
        new.append({"kind": "draw", "draw": t0 + len(new) + 1, "batch": b, "id": ids[j],
                    "probability": float(qu[j]), "prediction": float(m[j]),
                    "frame": "undrawn", "share": (st.steering or {}).get("uniform_share", 1.0),
                    "plan": plan,
                    "predicted_var": (st.steering or {}).get("predicted_var", {}),
                    **draw_row(every, m, qu, undrawn), **(head if not new and head else {})})
        undrawn[j] = False
        if ids[j] not in y:
            fresh.add(ids[j])
    return st, new


def enqueue(source: Path | Source, ids: list[str]) -> int:
    """Queue items for people (offered before any draw until labelled; their labels do
    not enter the estimates). Unknown ids are one error naming the first; items already
    queued or labelled are skipped. Returns how many were queued."""
    src = load(source) if isinstance(source, Path) else source
    known = derived(src).index
    unknown = [k for k in ids if k not in known]
    if unknown:
        raise DataError(store.unknown_ids(src.name, unknown))
    labels = store.read(src.labels_path)
    done = set(labels.queue) | set(store.values_of(labels, src.shape)) | \
        set(present_labels(src))
    new = list(dict.fromkeys(k for k in ids if k not in done))
    _append(src, [{"kind": "queue", "id": k, "at": store.now()} for k in new])
    return len(new)


def add_label(source: Path | Source, item: str, label: Any, annotator: str) -> None:
    src = load(source) if isinstance(source, Path) else source
    by_id = derived(src).by_id
    if item not in by_id:
        raise ConfigError(store.unknown_ids(src.name, [item]))
    if human_value(label, src.shape) is None:
        allowed = "first/second" if src.shape == "pairwise" else "pass/fail (1/0)"
        raise ConfigError(f"label {label!r}: use {allowed}")
    row: JSONObject = {"kind": "label", "id": item, "label": label,
                       "annotator": annotator or "anonymous", "at": store.now()}
    sha = store.item_sha(by_id[item])
    if sha is not None:
        row["item_sha"] = sha  # the text labelled: a later change of the item is seen
    _append(src, [row])


def _append(src: Source, rows: list[JSONObject]) -> None:
    """Append ``rows`` under the file's lock (the source's fingerprint first, once)."""
    if rows:
        store.transact(src.labels_path, lambda labels: store.stamped(
            labels, lambda: derived(src).fingerprint, rows))


def undo(source: Path | Source, annotator: str) -> str | None:
    """Withdraw the annotator's latest label still standing; the item's id, or None."""
    src = load(source) if isinstance(source, Path) else source
    labels = store.read(src.labels_path)
    who = annotator or "anonymous"
    for row in reversed(labels.history):
        if row.get("kind", "label") == "label" and str(row.get("annotator") or
                                                          "anonymous") == who:
            item = str(row["id"])
            if who in labels.by_item.get(item, {}):
                _append(src, [{"kind": "undo", "id": item, "annotator": who,
                               "at": store.now()}])
                return item
    return None


class Settings(NamedTuple):
    """What a labelling session is run with (the first batch records them)."""

    target_width: float = 0.1
    level: float = 0.95
    which: str = "pass_rate"
    seed: int = 0
    design: str = "planned"
    label_error: float | str | None = None


def recorded(source: Path | Source) -> Settings:
    """The settings the labels file's first batch was drawn with, so that the viewer and
    later proposals keep them; the defaults before any draw."""
    src = load(source) if isinstance(source, Path) else source
    draws = store.read(src.labels_path).draws
    head = draws[0] if draws else {}
    d = Settings()
    return Settings(float(head.get("target_width", d.target_width)),
                    float(head.get("level", d.level)), str(head.get("for", d.which)),
                    int(head.get("seed", d.seed)), str(head.get("design", d.design)),
                    parse_label_error(head.get("label_error")))
