"""Labels that pay: which items a person should label next, and the corrected estimates
(with intervals) those labels give.

Every estimand is linear in the human labels y: theta = c + sum_i w_i y_i (a pass rate
of one system, the judge's agreement with people, a difference of two systems). Items
are drawn with replacement from probabilities q that are fixed before each batch; a
draw of an item already labelled reuses its label (no new work). Draw t gives

    Z_t = c + sum_i w_i m_i + w_j (y_j - m_j) / q_j      (j the item drawn)

for any predictor m fixed independently of draw j, so E[Z_t] = theta exactly: the
estimate is valid whatever the judge, and a poor predictor only costs width (active
statistical inference, Zrnic & Candes 2024).

The design (``judgekit label``'s default, "planned"):

1. a **uniform pilot** (q = 1/N) of ``PILOT`` draws (the first look comes after
   :func:`pilot_size` of them: fewer when the target is wide);
2. the predictor: the judge's verdict, its score's logit, the item's system and whether
   the judge contradicted itself, **calibrated** by a ridge logistic regression on the
   labels so far (no prior trust in the score: an overconfident score is recalibrated,
   an anti-correlated one turned round);
3. **steering only when it pays**: the next batch's q is the uniform mixture
   (1 - u) a + u / N, a_i proportional to |w_i| sqrt(m_i (1 - m_i)), with u chosen from
   ``SHARES`` (u = 1 is uniform) by the variance each q *would give*, estimated from the
   labels drawn so far with cross-fitted residuals (inverse-probability weighted), never
   from the predictor's own variance; steering is kept only if that estimate is at most
   ``STEER_GAIN`` of the uniform one;
4. the **fixed-n interval** from the cross-fitted terms (each draw's m fitted on the
   other folds' labels; Zrnic & Candes' cross-prediction), Wilson's interval at the
   effective sample size (Student's t, Wilson's continuity correction); the design
   plans the draws that reach the target width and looks only at the plan (a look that
   misses re-plans; a far plan aims at AIM of it), so the interval is looked at a few
   times, not after every label; its coverage is checked by
   benchmarks/active_labels.py.

For a user who checks after every label, the anytime-valid interval is a betting
confidence sequence (Waudby-Smith & Ramdas 2024, hedged capital with the predictable
plug-in bet) on the *predictable* terms (each batch's m fitted on earlier labels only),
with each draw's bounds fixed before it was drawn. It needs no variance model and is
valid for bounded terms at every time at once.

Annotators who flip a label with probability e: observed labels have mean
e + (1 - 2 e) y, so theta = c + (theta_obs - c - e sum w) / (1 - 2 e); estimate and
limits are mapped through it (an estimated e's interval widens the limits).

Pure functions and arrays: files, items and the command line are judgekit.labelling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import ndtri

from judgekit.core import seeds as streams
from judgekit.core.errors import StatsError
from judgekit.stats.label_intervals import (  # noqa: F401 - the session's intervals
    MIN_BLOCK,
    Combined,
    Interval,
    betting_cs,
    betting_cs_path,
    combine,
    digest,
    draws_needed,
    expected_new_labels,
    fixed_interval,
)
from judgekit.stats.predictor import (  # noqa: F401 - the session's predictor
    MODELS,
    Design,
    Population,
    design_of,
    fit_predictor,
)

__all__ = ["MODELS", "Estimand", "Interval", "Population", "betting_cs", "betting_cs_path",
           "combine", "crossfit", "draws_needed", "estimands_for", "expected_new_labels",
           "first_draws", "fit_predictor", "fixed_interval", "frame", "known_before",
           "label_error_map", "pilot_size", "sampling_probabilities", "squared_weights",
           "steer", "term_bounds", "terms"]

UNIFORM_SHARE = 0.25  # the mixture of the previous version (draw lines without bounds)
# uniform share candidates (1: no steering). A share of 0.1 lets one surprise weigh 10
# times an average label; the steered terms' spread is then underestimated on the labels
# a target of 0.1 needs, and the interval undercovers (0.75-0.85 at nominal 0.90 in
# benchmarks/active_labels.py), so steering stops at 0.25 (weights at most 4x).
SHARES = (1.0, 0.5, 0.25)
STEER_GAIN = 0.9  # steer only if the estimated variance is at most this of uniform's
PILOT = 30  # uniform draws before any steering (and before the first look, see pilot_size)
MIN_PILOT = 10  # the fewest draws before the first look
EXTEND = 0.1  # a plan further than this share of the draws so far is aimed short
# of the draws a far plan asks for, then looked at again: a plan made early (few steered
# draws) is often far off, and a look half-way costs less than the draws past the target
# (calibrated score, 200 runs of benchmarks/active_labels.py: 0.7 took 101.7 labels,
# 0.5 took 99.4, coverage alike)
AIM = 0.5
FOLDS = 5


class Estimand(NamedTuple):
    """theta = const + weights . y, with theta in [low, high]."""

    name: str
    const: float
    weights: np.ndarray
    low: float = 0.0
    high: float = 1.0


def estimands_for(pop: Population) -> list[Estimand]:
    """The pass rate of each system, the judge's agreement with people (the share of
    items where the label equals the verdict) and, with several systems, each system's
    difference from the first (kept for the last two populations asked: a request
    asked for them three times, 10^6 weights each)."""
    got = _ESTIMANDS.get(id(pop))
    if got is not None and got[0] is pop:
        return list(got[1])
    out = _estimands(pop)
    for e in out:
        e.weights.setflags(write=False)  # shared with the next caller: never changed
    while len(_ESTIMANDS) >= 2:
        _ESTIMANDS.pop(next(iter(_ESTIMANDS)), None)
    _ESTIMANDS[id(pop)] = (pop, out)
    return list(out)


_ESTIMANDS: dict[int, tuple[Population, list[Estimand]]] = {}


def _estimands(pop: Population) -> list[Estimand]:
    n = pop.n
    out = []
    rates = []
    for s, name in enumerate(pop.systems):
        mask = pop.system == s
        w = mask / max(int(mask.sum()), 1)
        rates.append(w)
        out.append(Estimand(f"pass_rate[{name}]" if len(pop.systems) > 1 else "pass_rate",
                            0.0, w))
    f = pop.verdict.astype(float)
    out.append(Estimand("agreement", float((1 - f).sum() / n), (2 * f - 1) / n))
    for s in range(1, len(pop.systems)):
        out.append(Estimand(f"difference[{pop.systems[s]} - {pop.systems[0]}]", 0.0,
                            rates[s] - rates[0], -1.0, 1.0))
    return out


def crossfit(pop: Population, labelled: np.ndarray, y: np.ndarray, seed: int = 0,
             folds: int = FOLDS) -> tuple[np.ndarray, list[np.ndarray], str]:
    """Cross-fitted predictors: the labelled items are split into ``folds`` folds (by a
    seeded permutation); fold k's predictor is fitted on the other folds' labels. Of
    the feature sets in MODELS (everything; the verdict alone; a flat rate), the one
    with the least out-of-fold squared error is kept, so features that carry nothing
    add no noise. Returns (fold of each labelled item, each fold's predictor over all
    items, the model kept)."""
    labelled = np.asarray(labelled, int)
    yv = np.asarray(y, float)
    k = max(2, min(folds, labelled.size))
    order = streams.rng("labelling.folds", seed).permutation(labelled.size)
    fold = np.empty(labelled.size, int)
    fold[order] = np.arange(labelled.size) % k
    key = digest(pop.verdict, *(a for a in (pop.score, pop.unstable) if a is not None),
                  pop.system, labelled, yv, np.array([seed, k, pop.score is None]))
    memo = _CROSSFIT.get(key)
    if memo is not None:  # the same items and labels as a moment ago
        return fold, memo[0], memo[1]
    best: tuple[float, list[np.ndarray], str] | None = None
    x = design_of(pop) if labelled.size else None  # once for every fit below
    for model in MODELS:  # chosen on the labelled items' out-of-fold predictions
        oof = np.empty(labelled.size)
        for j in range(k):
            here = fold == j
            oof[here] = fit_predictor(pop, labelled[~here], yv[~here], model=model,
                                      features=x, rows=labelled[here])
        loss = float(np.mean((yv - oof) ** 2))
        if best is None or loss < best[0] - 1e-12:
            best = (loss, [], model)
    assert best is not None
    best[1].extend(fit_predictor(pop, labelled[fold != j], yv[fold != j], model=best[2],
                                 features=x) for j in range(k))
    for pred in best[1]:
        pred.setflags(write=False)  # shared with the next caller: never changed
    while len(_CROSSFIT) >= 2:
        _CROSSFIT.pop(next(iter(_CROSSFIT)))
    _CROSSFIT[key] = (best[1], best[2])
    return fold, best[1], best[2]


# the last cross-fits, by a digest of everything they depend on (a labelling session
# asks for the same one twice per request, and again when no label came in since)
_CROSSFIT: dict[bytes, tuple[list[np.ndarray], str]] = {}


def sampling_probabilities(m: np.ndarray, estimands: Sequence[Estimand],
                           uniform_share: float = UNIFORM_SHARE, floor: float = 1e-4,
                           w2: np.ndarray | None = None) -> np.ndarray:
    """q_i proportional to sqrt(max(m_i (1 - m_i), floor) sum_e (N w_ei)^2), mixed with
    uniform. The floor keeps items the predictor is sure of (but fitted on few labels)
    from weights so large that one surprise dominates. ``w2``: that sum, when already
    computed (:func:`squared_weights`)."""
    n = m.size
    if w2 is None:
        w2 = squared_weights(estimands)
    score = np.sqrt(np.clip(m * (1 - m), floor, None) * w2)
    total = float(score.sum())
    active = score / total if total > 0 else np.full(n, 1 / n)
    return np.asarray((1 - uniform_share) * active + uniform_share / n)


def squared_weights(estimands: Sequence[Estimand]) -> np.ndarray:
    """sum_e (N w_ei)^2 for each item i."""
    n = estimands[0].weights.size if estimands else 0
    return np.asarray(np.sum([e.weights ** 2 for e in estimands], axis=0) * n * n)


def terms(e: Estimand, m: np.ndarray, q: np.ndarray, drawn: np.ndarray, y: np.ndarray
          ) -> np.ndarray:
    """Z_t for draws ``drawn`` (indices) with labels ``y`` under predictor m and
    probabilities q fixed for all of them."""
    base = e.const + float(e.weights @ m)
    return np.asarray(base + e.weights[drawn] * (y - m[drawn]) / q[drawn])


def term_bounds(e: Estimand, m: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """The least and greatest value a draw's term can take under m and q (over every
    item and label in [0, 1]): fixed before the draw, the confidence sequence's bounds."""
    base = e.const + float(e.weights @ m)
    a = e.weights * (0.0 - m) / q
    b = e.weights * (1.0 - m) / q
    return base + float(np.minimum(a, b).min()), base + float(np.maximum(a, b).max())


def frame(e: Estimand, m: np.ndarray, q: np.ndarray, undrawn: np.ndarray
          ) -> tuple[float, float, float]:
    """A draw without replacement (des Raj's ordered estimator): the item is drawn from
    the items not drawn before (``undrawn``) with probabilities q (over them), and its
    term is

        Z_t = c + sum_{drawn before} w_i y_i + sum_{undrawn} w_i m_i + w_j (y_j - m_j) / q_j

    whose mean given the past is theta exactly; the spread shrinks as items are drawn
    (the finite-population correction comes by itself). Returns c + sum_{undrawn} w m
    and the least and greatest value of w_j (y - m_j) / q_j over undrawn j and y in
    [0, 1] (fixed before the draw: the confidence sequence's bounds, once the labels
    drawn before are added)."""
    u = np.asarray(undrawn, bool) & (q > 0)
    base = e.const + float(e.weights[u] @ m[u])
    a = e.weights[u] * (0.0 - m[u]) / q[u]
    b = e.weights[u] * (1.0 - m[u]) / q[u]
    return base, float(np.minimum(a, b).min()), float(np.maximum(a, b).max())


def known_before(idx: np.ndarray, values: np.ndarray, per_draw: bool = False,
                 first: np.ndarray | None = None) -> np.ndarray:
    """For draws of items ``idx`` (in order), the sum of ``values`` over the distinct
    items drawn before each draw. ``values``: every item's, or (``per_draw``) each
    draw's item's, in draw order (the same numbers: at 10^6 items, a product over the
    draws instead of the items); ``first``: :func:`first_draws` of ``idx``, if known."""
    idx = np.asarray(idx, np.int64)
    contrib = np.zeros(idx.size)
    if idx.size:
        first = first_draws(idx) if first is None else first
        v = np.asarray(values)
        contrib[first] = v[first] if per_draw else v[idx[first]]
    return np.concatenate([[0.0], np.cumsum(contrib)[:-1]])


def first_draws(idx: np.ndarray) -> np.ndarray:
    """The position of each distinct item's first draw in ``idx`` (by item)."""
    return np.asarray(np.unique(np.asarray(idx, np.int64), return_index=True)[1])


def model_variance(e: Estimand, m: np.ndarray, q: np.ndarray) -> float:
    """Var(Z) if the predictor were calibrated: sum w^2 m (1 - m) / q (logged in draw
    lines so that the previous version can still read a labels file)."""
    return float(np.sum(e.weights ** 2 * m * (1 - m) / q))


def pilot_size(target_width: float, level: float, error: float = 0.0,
               estimands: Sequence[Estimand] = ()) -> int:
    """Uniform draws before the design first looks at its interval: ``PILOT``, or, for a
    target so wide that people alone would need few labels, a quarter of what they would
    need at the widest spread (each label's variance 1/4, labels flipped at rate
    ``error``; for each estimand N sum w^2 times that per uniform draw: 1 for a share of
    every item, 2 for one of two equal systems), at least ``MIN_PILOT``. A fixed pilot of
    30 cost 1.6 times the random plan at a target width of 0.2 (nominal 0.80), which
    reaches it with about 18 labels; a look before each estimand has its share of the
    draws costs coverage and labels (two systems' rates at 0.2, nominal 0.90: 0.87
    coverage and 62 labels, against 0.935 and 58 with the 30-draw pilot)."""
    half = target_width / 2 * (1 - 2 * error)
    if not half > 0:
        return PILOT
    spread = max([e.weights.size * float(e.weights @ e.weights) for e in estimands] + [1.0])
    worst = spread * (float(ndtri(0.5 + level / 2)) / half) ** 2 / 4
    return int(min(PILOT, max(MIN_PILOT, math.ceil(worst / 4))))


def steer(m: np.ndarray, estimands: Sequence[Estimand], drawn: np.ndarray,
          q_drawn: np.ndarray, resid: np.ndarray
          ) -> tuple[np.ndarray, float, float, list[float]]:
    """The next batch's probabilities: the mixture share u in ``SHARES`` whose variance,
    estimated from the draws so far, is least; uniform unless that is at most
    ``STEER_GAIN`` of uniform's. ``drawn`` are the draws' items, ``q_drawn`` the
    probabilities they were drawn with, ``resid`` their cross-fitted residuals
    y - m^(-k). For a candidate q', Var(Z) = sum_i w_i^2 r_i^2 / q'_i - (sum_i w_i r_i)^2
    is estimated by the mean over draws of w_j^2 r_j^2 / (q'_j q_j) minus the square of
    the mean of w_j r_j / q_j (inverse-probability weighted, so draws made by any
    earlier design count); the binding (largest) estimand decides.
    Returns (q, u, estimated variance ratio to uniform, each estimand's estimated
    per-draw variance under q)."""
    n = m.size
    uniform = np.full(n, 1.0 / n)
    r = np.asarray(resid, float)

    def each(q: np.ndarray) -> list[float]:
        return [max(0.0, float(np.mean(e.weights[drawn] ** 2 * r ** 2
                                       / (q[drawn] * q_drawn)))
                    - float(np.mean(e.weights[drawn] * r / q_drawn)) ** 2)
                for e in estimands]

    base = each(uniform)
    if drawn.size < PILOT or max(base) <= 0:
        return uniform, 1.0, 1.0, base
    best = (1.0, uniform, 1.0, base)
    w2 = squared_weights(estimands)
    for u in SHARES[1:]:
        q = sampling_probabilities(m, estimands, u, floor=1.0 / drawn.size, w2=w2)
        got = each(q)
        ratio = max(got) / max(base)
        if ratio < best[2]:
            best = (u, q, ratio, got)
    if best[2] > STEER_GAIN:
        return uniform, 1.0, best[2], base
    return best[1], best[0], best[2], best[3]


def label_error_map(iv: Interval, e: Estimand, error: float,
                    error_ci: Sequence[float] | None = None) -> Interval:
    """An interval of theta from observed (noisy) labels, mapped to the true labels' for
    annotators who flip a label with probability ``error``: theta = c + (x - c - e W) /
    (1 - 2 e), W = sum of the weights (monotone in x, and in e). With ``error_ci`` each
    limit takes the more extreme of its two error limits. Clipped to the range; the
    estimate stays inside."""
    lo_e, hi_e = (error, error) if error_ci is None else (float(error_ci[0]),
                                                          float(error_ci[1]))
    if not 0.0 <= lo_e <= error <= hi_e < 0.5:
        raise StatsError(f"label error {error} (interval {lo_e}-{hi_e}) must lie in "
                         "[0, 0.5) with the rate inside its interval")
    if error == 0.0 and hi_e == 0.0:
        return iv
    w = float(e.weights.sum())

    def g(x: float, err: float) -> float:
        return min(e.high, max(e.low, e.const + (x - e.const - err * w) / (1 - 2 * err)))

    est = g(iv.estimate, error)
    a = min(g(iv.low, lo_e), g(iv.low, hi_e))
    b = max(g(iv.high, lo_e), g(iv.high, hi_e))
    return Interval(est, min(a, est), max(b, est))
