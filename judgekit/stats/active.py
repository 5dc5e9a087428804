"""Active labelling: which items a person should label next, and the corrected
estimates those labels give (active statistical inference; Zrnic and Candes 2024,
with the defensive mixture of the on-demand seed, Chaganty et al. 2017).

Every estimand is linear in the human labels y: theta = c + sum_i w_i y_i (a pass rate
of one system, the judge's agreement with people, a difference of two systems). Items
are drawn one at a time, with replacement, from probabilities q: a predictor m (the
judge's verdict, its score and the item's system, calibrated on the labels so far) says
how uncertain each item's label still is, v_i = m_i (1 - m_i), and q_i is proportional
to sqrt(v_i * sum_e w_ei^2), mixed with the uniform distribution (``uniform_share``) so
that no weight exceeds 1 / uniform_share whatever the judge. Draw t gives, for each
estimand,

    Z_t = c + sum_i w_i m_i + w_j (y_j - m_j) / q_j      (j the item drawn)

with m and q fixed before the draw, so E[Z_t | past] = theta exactly: the estimate is
valid for any judge, and a wrong predictor only costs width. A draw of an item already
labelled reuses its label (no new work). The estimate is the mean of the Z_t; the
fixed-n interval is Student's t on their spread, and the interval that may be checked
after every label is Robbins' normal-mixture confidence sequence (Waudby-Smith et al.
2024, asymptotic confidence sequences), intersected over time.

Pure functions and arrays: files, items and the command line are judgekit.labelling.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

__all__ = ["Estimand", "Population", "Running", "cs_halfwidth", "cs_rho", "draws_needed",
           "estimands_for", "fit_predictor", "running", "sampling_probabilities", "terms"]

UNIFORM_SHARE = 0.25  # the defensive mixture: q_i >= UNIFORM_SHARE / N
PRIOR_DRAWS = 20  # the predictor's variance counts as this many draws in the spread
MIN_DRAWS = 20  # the stopping rule is not checked before this many draws


class Population(NamedTuple):
    """The items a judge scored: its verdict (0/1), an optional score (the judge's
    probability that the item passes, in [0, 1]), each item's system (an index) and,
    optionally, whether the judge contradicted itself on the item (1: a repeat or the
    swapped order gave another verdict)."""

    verdict: np.ndarray
    score: np.ndarray | None
    system: np.ndarray
    systems: tuple[str, ...] = ("",)
    unstable: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.verdict.size)


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
    difference from the first."""
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


def _features(pop: Population) -> np.ndarray:
    f = pop.verdict.astype(float)
    cols = [np.ones(pop.n), f]
    if pop.score is not None:
        p = np.clip(pop.score.astype(float), 1e-3, 1 - 1e-3)
        cols.append(np.log(p / (1 - p)) / 4)
    for s in range(1, len(pop.systems)):
        d = (pop.system == s).astype(float)
        cols += [d, d * f]
    if pop.unstable is not None and pop.unstable.any():
        cols.append(pop.unstable.astype(float))
    return np.column_stack(cols)


def fit_predictor(pop: Population, labelled: np.ndarray, y: np.ndarray,
                  ridge: float = 1.0) -> np.ndarray:
    """P(label = 1) for every item: a ridge logistic regression of the labels so far on
    the verdict, the score's logit, the system (with its interaction with the verdict)
    and the judge's self-contradiction where known. The prior (no labels) trusts the
    judge: the score where there is one, the verdict shrunk to 0.2/0.8 otherwise, no lean
    where it contradicted itself. Labels chosen by an item's features do not bias
    P(y | features), so no weighting is needed here."""
    x = _features(pop)
    f = pop.verdict.astype(float)
    prior = np.clip(pop.score.astype(float), 0.02, 0.98) if pop.score is not None \
        else 0.2 + 0.6 * f
    offset = np.log(prior / (1 - prior))
    if pop.unstable is not None:  # the judge contradicted itself: no prior lean
        offset = np.where(pop.unstable.astype(bool), 0.0, offset)
    beta = np.zeros(x.shape[1])
    if labelled.size:
        xl, ol, yl = x[labelled], offset[labelled], y.astype(float)
        for _ in range(25):
            p = 1 / (1 + np.exp(-np.clip(xl @ beta + ol, -30, 30)))
            grad = xl.T @ (yl - p) - ridge * beta
            hess = (xl * (p * (1 - p))[:, None]).T @ xl + ridge * np.eye(x.shape[1])
            step = np.linalg.solve(hess, grad)
            beta += step
            if float(np.abs(step).max()) < 1e-8:
                break
    return np.asarray(1 / (1 + np.exp(-np.clip(x @ beta + offset, -30, 30))))


def sampling_probabilities(m: np.ndarray, estimands: Sequence[Estimand],
                           uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    """q_i proportional to sqrt(m_i (1 - m_i) sum_e w_ei^2), mixed with uniform."""
    n = m.size
    w2 = np.sum([e.weights ** 2 for e in estimands], axis=0) * n * n
    score = np.sqrt(np.clip(m * (1 - m), 1e-4, None) * w2)
    total = float(score.sum())
    active = score / total if total > 0 else np.full(n, 1 / n)
    return np.asarray((1 - uniform_share) * active + uniform_share / n)


def terms(e: Estimand, m: np.ndarray, q: np.ndarray, drawn: np.ndarray, y: np.ndarray
          ) -> np.ndarray:
    """Z_t for draws ``drawn`` (indices) with labels ``y`` under predictor m and
    probabilities q fixed for all of them."""
    base = e.const + float(e.weights @ m)
    return np.asarray(base + e.weights[drawn] * (y - m[drawn]) / q[drawn])


def model_variance(e: Estimand, m: np.ndarray, q: np.ndarray) -> float:
    """Var(Z) if the predictor were calibrated: sum w^2 m (1 - m) / q (an upper bound)."""
    return float(np.sum(e.weights ** 2 * m * (1 - m) / q))


def cs_rho(horizon: float, alpha: float) -> float:
    """The mixture's rho that makes the confidence sequence tightest at ``horizon``
    draws (Waudby-Smith et al., eq. for the two-sided normal mixture)."""
    a = -2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)
    return math.sqrt(a / max(horizon, 1.0))


def cs_halfwidth(sd: float, t: int, alpha: float, rho: float) -> float:
    """Robbins' two-sided normal-mixture boundary divided by t."""
    r2 = rho * rho
    return sd * math.sqrt(2 * (t * r2 + 1) / (t * t * r2)
                          * math.log(math.sqrt(t * r2 + 1) / alpha))


class Running(NamedTuple):
    """Estimate after each draw t = 1..T: mean, fixed-n interval, confidence sequence."""

    estimate: np.ndarray
    fixed_low: np.ndarray
    fixed_high: np.ndarray
    cs_low: np.ndarray
    cs_high: np.ndarray
    sd: np.ndarray


def running(z: np.ndarray, prior_var: np.ndarray, level: float, rho: float,
            low: float = 0.0, high: float = 1.0) -> Running:
    """Running estimates of the draws' terms z (in order). The spread blends the sample
    variance with ``prior_var`` (at each draw, the variance the predictor of that time
    expects of a draw) as PRIOR_DRAWS draws, so a few draws that happen to agree cannot
    give a zero width, and the blend follows the predictor as it improves. The sequence
    is the running intersection of the mixture boundaries, clipped to [low, high]."""
    t = np.arange(1, z.size + 1, dtype=float)
    mean = np.cumsum(z) / t
    sq = np.cumsum(z * z)
    ss = np.clip(sq - t * mean * mean, 0, None)
    pv = np.asarray(prior_var, float)
    # the predictor's variance lifts a spread that a few agreeing draws left near zero,
    # but never lowers the draws' own (it misses what the predictor cannot see)
    var = np.maximum((ss + PRIOR_DRAWS * pv) / (t - 1 + PRIOR_DRAWS),
                     ss / np.maximum(t - 1, 1))
    sd = np.sqrt(var)
    alpha = 1 - level
    # heavy tails (a rare item drawn with a large weight) leave fewer effective degrees
    # of freedom: t / kurtosis (t / 3 for normal terms), at most t - 1
    c3, c4 = np.cumsum(z ** 3) / t, np.cumsum(z ** 4) / t
    m2 = sq / t - mean ** 2
    m4 = c4 - 4 * mean * c3 + 6 * mean ** 2 * (sq / t) - 3 * mean ** 4
    kurt = np.where(m2 > 1e-12, m4 / np.maximum(m2, 1e-12) ** 2, 3.0)
    df = np.clip(3 * t / np.maximum(kurt, 3.0) - 1, 1, None)
    tq = sps.t.ppf(1 - alpha / 2, df)
    half = tq * sd / np.sqrt(t)
    r2 = rho * rho
    bound = sd * np.sqrt(2 * (t * r2 + 1) / (t * t * r2) * np.log(np.sqrt(t * r2 + 1) / alpha))
    cs_lo = np.maximum.accumulate(np.clip(mean - bound, low, high))
    cs_hi = np.minimum.accumulate(np.clip(mean + bound, low, high))
    cs_hi = np.maximum(cs_hi, cs_lo)
    return Running(mean, np.clip(mean - half, low, high), np.clip(mean + half, low, high),
                   cs_lo, cs_hi, sd)


def draws_needed(sd: float, t: int, halfwidth: float, alpha: float, rho: float,
                 cap: int = 10 ** 7) -> int:
    """Further draws until the sequence's half-width reaches ``halfwidth`` at this
    spread (0 when it already has)."""
    if cs_halfwidth(sd, max(t, 1), alpha, rho) <= halfwidth:
        return 0
    lo, hi = max(t, 1), max(t, 1)
    while cs_halfwidth(sd, hi, alpha, rho) > halfwidth and hi < cap:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if cs_halfwidth(sd, mid, alpha, rho) > halfwidth else (lo, mid)
    return hi - t
