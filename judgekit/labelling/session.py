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
from scipy import stats as sps

from judgekit.core import seeds
from judgekit.core.errors import ConfigError, DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.labelling import store
from judgekit.labelling.items import Source, load, population, present_labels
from judgekit.labelling.store import human_value
from judgekit.stats import active

FOR = ("pass_rate", "agreement", "difference", "all")


class Figure(NamedTuple):
    name: str
    estimate: float | None
    ci: list[float] | None  # the confidence sequence: valid however often it is checked
    fixed_ci: list[float] | None  # the fixed-n interval (valid at a number set in advance)
    halfwidth: float | None
    draws_needed: int | None


class Status(NamedTuple):
    source: Source
    figures: list[Figure]
    draws: int  # draws counted (the labelled prefix)
    labels: int  # items labelled (by anyone)
    pending: list[JSONObject]  # draws waiting for a label, in order (unique items)
    target_width: float
    level: float
    done: bool

    def as_json(self) -> JSONObject:
        return {"run": self.source.name, "level": self.level,
                "target_width": self.target_width, "draws": self.draws,
                "labels": self.labels, "done": self.done,
                "pending": [p["id"] for p in self.pending],
                "figures": [f._asdict() for f in self.figures]}


def chosen(pop: active.Population, which: str) -> list[active.Estimand]:
    if which not in FOR:
        raise ConfigError(f"--for {which!r}: use {', '.join(FOR)}")
    every = active.estimands_for(pop)
    if which == "all":
        return every
    return [e for e in every if e.name.startswith(which)] or every[:1]


class _State(NamedTuple):
    labels: store.Labels
    pop: active.Population
    estimands: list[active.Estimand]
    y: dict[str, float]  # labelled item -> the mean of its annotators' labels


def _state(src: Source, which: str) -> _State:
    """The labels so far: the labels file's, over people's labels already in the source
    (which count as labelled and are never proposed)."""
    labels = store.read(src.labels_path)
    pop = population(src.items)
    given = store.values_of(labels, src.shape)
    known = {str(x["id"]) for x in src.items}
    unknown = sorted(set(given) - known)
    if unknown:
        raise DataError(store.unknown_ids(src.labels_path, unknown))
    y = {**present_labels(src), **given}
    return _State(labels, pop, chosen(pop, which), y)


def estimate(source: Path | Source, target_width: float = 0.1, level: float = 0.95,
             which: str = "pass_rate") -> Status:
    src = load(source) if isinstance(source, Path) else source
    return _estimate(src, _state(src, which), target_width, level)


def _uniform_first(src: Source, state: _State, drawn: set[str]) -> list[JSONObject]:
    """People's labels already in the source, as draws of a uniform first sample (each
    item with probability 1/N, the verdict as the prediction, so each term is the
    estimand's value on that item): they enter every estimate before the active draws.
    The file's labelled items are assumed a random sample of its items; items the
    labels file drew are counted there, not twice. Order: a seeded shuffle
    (judgekit.core.seeds' "labelling.present")."""
    given = present_labels(src)
    ids = [str(x["id"]) for x in src.items if str(x["id"]) in given
           and str(x["id"]) not in drawn and str(x["id"]) in state.y]
    if not ids:
        return []
    n = len(src.items)
    f = state.pop.verdict.astype(float)
    every = active.estimands_for(state.pop)
    means = {e.name: float(e.const + e.weights @ f) for e in every}
    var = {e.name: float(n * np.sum(e.weights ** 2) * 0.25) for e in every}
    index = {str(x["id"]): i for i, x in enumerate(src.items)}
    order = seeds.rng("labelling.present", 0).permutation(len(ids))
    return [{"id": ids[k], "probability": 1.0 / n, "prediction": float(f[index[ids[k]]]),
             "means": means, "expected_var": var} for k in order]


def _estimate(src: Source, state: _State, target_width: float, level: float) -> Status:
    labels, ests, y = state.labels, state.estimands, state.y
    alpha = 1 - level
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
    index = {str(x["id"]): i for i, x in enumerate(src.items)}
    horizon = float(labels.draws[0].get("horizon", 100)) if labels.draws else 100.0
    rho = active.cs_rho(horizon, alpha)
    first = _uniform_first(src, state, {str(d["id"]) for d in prefix})
    figures = []
    for e in ests:
        rows = [d for d in first + prefix if e.name in d.get("means", {})]
        if not rows:
            figures.append(Figure(e.name, None, None, None, None, None))
            continue
        z = np.array([d["means"][e.name] + e.weights[index[str(d["id"])]]
                      * (y[str(d["id"])] - d["prediction"]) / d["probability"]
                      for d in rows])
        pv = np.array([d["expected_var"][e.name] for d in rows])
        r = active.running(z, pv, level, rho, e.low, e.high)
        half = float(r.cs_high[-1] - r.cs_low[-1]) / 2
        need = active.draws_needed(float(r.sd[-1]), len(rows), target_width / 2, alpha, rho)
        if len(rows) < active.MIN_DRAWS:
            need = max(need, active.MIN_DRAWS - len(rows))
        need = min(need, len(src.items) - len(y))  # never more than the items left
        figures.append(Figure(e.name, round(float(np.clip(r.estimate[-1], e.low, e.high)), 6),
                              [round(float(r.cs_low[-1]), 6), round(float(r.cs_high[-1]), 6)],
                              [round(float(r.fixed_low[-1]), 6),
                               round(float(r.fixed_high[-1]), 6)],
                              round(half, 6), int(need)))
    done = bool(figures) and all(f.draws_needed == 0 for f in figures)
    return Status(src, figures, len(prefix), len(y), pending, target_width, level, done)


def propose(source: Path | Source, batch: int = 10, seed: int = 0, target_width: float = 0.1,
            level: float = 0.95, which: str = "pass_rate") -> Status:
    """The items to label next: the pending draws if some are unlabelled, else a new
    batch of ``batch`` distinct unlabelled items (none once the target is met)."""
    if batch < 1:
        raise ConfigError(f"--batch {batch}: give at least 1")
    src = load(source) if isinstance(source, Path) else source
    state = _state(src, which)
    st = _estimate(src, state, target_width, level)
    if st.pending or st.done:
        return st
    labels, pop, ests, y = state
    ids = [str(x["id"]) for x in src.items]
    done_idx = np.array([i for i, k in enumerate(ids) if k in y], int)
    m = active.fit_predictor(pop, done_idx, np.array([y[ids[i]] for i in done_idx]))
    q = active.sampling_probabilities(m, ests)
    every = active.estimands_for(pop)  # logged for all, so any of them can be estimated
    means = {e.name: round(e.const + float(e.weights @ m), 12) for e in every}
    var = {e.name: active.model_variance(e, m, q) for e in every}
    b = 1 + max((int(d.get("batch", 0)) for d in labels.draws), default=0)
    t0 = len(labels.draws)
    head: JSONObject = {}
    if not labels.draws:
        z = float(sps.norm.ppf(1 - (1 - level) / 2))
        worst = max(var[e.name] for e in ests)
        head = {"horizon": round(max((z * math.sqrt(worst) / (target_width / 2)) ** 2, 20.0), 1),
                "seed": seed, "for": which, "level": level, "target_width": target_width}
    rng = np.random.default_rng([seed, b])
    unlabelled = len(ids) - len(y)
    new: list[JSONObject] = []
    fresh: set[str] = set()
    while len(fresh) < min(batch, unlabelled) and len(new) < 200 * batch:
        j = int(rng.choice(len(ids), p=q))
        new.append({"kind": "draw", "draw": t0 + len(new) + 1, "batch": b, "id": ids[j],
                    "probability": float(q[j]), "prediction": float(m[j]), "means": means,
                    "expected_var": var, **(head if not new and head else {})})
        if ids[j] not in y:
            fresh.add(ids[j])
    store.append(src.labels_path, new)
    return estimate(src, target_width, level, which)


def add_label(source: Path | Source, item: str, label: Any, annotator: str) -> None:
    src = load(source) if isinstance(source, Path) else source
    if item not in {str(x["id"]) for x in src.items}:
        raise ConfigError(store.unknown_ids(src.name, [item]))
    if human_value(label, src.shape) is None:
        allowed = "first/second" if src.shape == "pairwise" else "pass/fail (1/0)"
        raise ConfigError(f"label {label!r}: use {allowed}")
    store.append(src.labels_path, [{"kind": "label", "id": item, "label": label,
                                    "annotator": annotator or "anonymous", "at": store.now()}])


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
                store.append(src.labels_path, [{"kind": "undo", "id": item,
                                                "annotator": who, "at": store.now()}])
                return item
    return None


class Settings(NamedTuple):
    """What a labelling session is run with (the first batch records them)."""

    target_width: float = 0.1
    level: float = 0.95
    which: str = "pass_rate"
    seed: int = 0


def recorded(source: Path | Source) -> Settings:
    """The settings the labels file's first batch was drawn with, so that the viewer and
    later proposals keep them; the defaults before any draw."""
    src = load(source) if isinstance(source, Path) else source
    draws = store.read(src.labels_path).draws
    head = draws[0] if draws else {}
    d = Settings()
    return Settings(float(head.get("target_width", d.target_width)),
                    float(head.get("level", d.level)), str(head.get("for", d.which)),
                    int(head.get("seed", d.seed)))
