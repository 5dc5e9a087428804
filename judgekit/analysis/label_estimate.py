"""The estimate from people's labels so far: each estimand's figure, its interval under
the session's design (planned: fixed-n; sequential: anytime-valid), and how many more
draws and labels the target width needs. Nothing is drawn or written here; the
labelling session (:mod:`judgekit.labelling.session`) proposes and records, and
``judgekit analyse`` re-weights drawn labels with the same figures."""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from judgekit.analysis.label_terms import (
    State,
    fit_counted,
    label_error_of,
    state_of,
    terms_of,
    uniform_first,
)
from judgekit.analysis.source import Source, derived, load
from judgekit.core.errors import ConfigError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.label_error import parse_label_error
from judgekit.recorded import labels as store
from judgekit.stats import active

__all__ = ["DESIGNS", "INTERVALS", "Figure", "Settings", "Status", "estimate", "estimate_with",
           "recorded"]


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
    pending: list[store.Line]  # queued items, then draws waiting for a label (unique)
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
                "pending": [p.id for p in self.pending],
                "figures": [f._asdict() for f in self.figures]}


def estimate(source: Path | Source, target_width: float = 0.1, level: float = 0.95,
             which: str = "pass_rate", design: str = "planned",
             label_error: float | str | None = None, seed: int = 0) -> Status:
    """The figures from the labels so far (nothing is drawn)."""
    src = load(source) if isinstance(source, Path) else source
    return estimate_with(src, state_of(src, which), target_width, level, design, label_error,
                         seed)[0]


def estimate_with(src: Source, state: State, target_width: float, level: float,
              design: str = "planned", label_error: float | str | None = None,
              seed: int = 0) -> tuple[Status, np.ndarray, np.ndarray]:
    """The figures, and the next batch's probabilities and predictor."""
    if design not in DESIGNS:
        raise ConfigError(f"--design {design!r}: use {' or '.join(DESIGNS)}")
    labels, ests, y = state.labels, state.estimands, state.y
    err, err_ci = label_error_of(src, labels, label_error, level)
    prefix: list[store.Draw] = []
    pending: list[store.Line] = []
    waiting: set[str] = set()
    for d in labels.draws:  # the prefix up to the first draw still unlabelled
        item = d.id
        if not waiting and item in y:
            prefix.append(d)
        elif item not in y and item not in waiting:
            waiting.add(item)
            pending.append(d)
    queued: list[store.Line] = [store.Line(kind="queue", id=k) for k in labels.queue
                                if k not in y and k not in waiting]
    pending = queued + pending  # people's queue first
    n = len(src.items)
    first, head = uniform_first(src, state, {d.id for d in prefix})
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
    plan = max((d.plan for d in prefix), default=0)
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
    d = Settings()
    if not draws:
        return d
    head = draws[0]
    return Settings(d.target_width if head.target_width is None else head.target_width,
                    d.level if head.level is None else head.level, head.which or d.which,
                    d.seed if head.seed is None else head.seed, head.design or d.design,
                    parse_label_error(head.label_error))
