"""Rates over clustered observations, a call-level sign test, and a judge's preference
for a feature of one answer (its own model family, its length) controlled for quality.

A feature preference is measured as an asymmetry of errors. Among pairs where exactly
one answer carries the feature and a reference says which answer is better:

    preference = P(judge picks the feature side | it is the worse one)
               - P(judge picks the other side   | the feature side is the better one).

A judge that errs at the same rate whichever side carries the feature scores 0 however
accurate it is; a judge that, with probability d, picks the feature side regardless of
quality (and otherwise errs at rate e on both sides) scores d + (1 - d)e - (1 - d)e = d.
Comparing the raw win rate of the feature side with 0.5 would instead confound the
preference with quality (longer answers are often better ones)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from judgekit.core.errors import StatsError
from judgekit.stats.proportions import wilson_effective, wilson_interval


class ClusteredRate(NamedTuple):
    rate: float
    ci: list[float]
    n: int  # observations
    clusters: int


def clustered_rate(groups: Sequence[Sequence[bool]], level: float = 0.95) -> ClusteredRate:
    """A rate over observations that come in clusters (the answer slots of one tagger
    call, the replica pairs of one query): the pooled share, with a Wilson interval
    (continuity-corrected) at the effective sample size n / deff, where the design
    effect deff = var(cluster totals-based ratio estimator) / var(simple random sample)
    is estimated from the spread of the cluster shares (never below 1). Inside [0, 1]
    and never zero-width."""
    gs = [[bool(x) for x in g] for g in groups if len(g)]
    return clustered_rate_counts([sum(g) for g in gs], [len(g) for g in gs], level)


def clustered_rate_counts(successes: Sequence[float] | np.ndarray,
                          sizes: Sequence[float] | np.ndarray,
                          level: float = 0.95) -> ClusteredRate:
    """:func:`clustered_rate` from each cluster's successes and size (columnar data:
    ``np.bincount`` of the observations by cluster); empty clusters are ignored."""
    y, m = np.asarray(successes, float), np.asarray(sizes, float)
    keep = m > 0
    y, m = y[keep], m[keep]
    if not m.size:
        raise StatsError("a clustered rate needs at least one non-empty cluster")
    p, n, deff = _design_effect_counts(y, m)
    ci = wilson_effective(p, n / deff, level)
    return ClusteredRate(p, [ci.lo, ci.hi], int(n), int(m.size))


def design_effect(groups: Sequence[Sequence[bool]]) -> float:
    """The design effect of clustered 0/1 observations (see :func:`clustered_rate`):
    1 for independent ones, up to the cluster size when clusters are homogeneous."""
    gs = [[bool(x) for x in g] for g in groups if len(g)]
    return _design_effect(gs)[2] if gs else 1.0


def _design_effect(gs: Sequence[Sequence[bool]]) -> tuple[float, float, float]:
    """(pooled share, observations, design effect) of clustered 0/1 observations: the
    linearised variance of the ratio estimator sum(y) / sum(m) over clusters against
    that of a simple random sample of the same size (never below 1)."""
    return _design_effect_counts(np.array([sum(g) for g in gs], float),
                                 np.array([len(g) for g in gs], float))


def _design_effect_counts(y: np.ndarray, m: np.ndarray) -> tuple[float, float, float]:
    n, k = float(m.sum()), len(m)
    p = float(y.sum() / n)
    deff = 1.0
    if k >= 2 and 0.0 < p < 1.0:
        resid = y - p * m
        var_ratio = k / (k - 1) * float(np.sum(resid ** 2)) / n ** 2
        deff = max(1.0, var_ratio / (p * (1 - p) / n))
    return p, n, deff


class SignTest(NamedTuple):
    share: float | None  # share of decisive units that went the first way
    ci: list[float] | None
    p_value: float
    first: int
    second: int


def sign_test(first: int, second: int, level: float = 0.95) -> SignTest:
    """Exact two-sided sign test of ``first`` against ``second`` decisive units (ties
    dropped), with the Wilson interval of the share that went the first way."""
    from scipy.stats import binomtest

    if first < 0 or second < 0:
        raise StatsError("sign test counts must be >= 0")
    n = first + second
    if n == 0:
        return SignTest(None, None, 1.0, 0, 0)
    ci = wilson_interval(first, n, level)
    return SignTest(first / n, [ci.lo, ci.hi], float(binomtest(first, n, 0.5).pvalue),
                    first, second)


class Preference(NamedTuple):
    preference: float | None
    ci: list[float] | None
    p_value: float
    n: int  # pairs used (feature on exactly one side, reference known, verdict read)
    error_when_worse: float | None  # P(feature side picked | feature side worse)
    n_worse: int
    error_when_better: float | None  # P(other side picked | feature side better)
    n_better: int
    strata: int = 1  # strata the difference was combined over (Mantel-Haenszel)


def newcombe_unpaired(k1: int, n1: int, k2: int, n2: int, level: float = 0.95
                      ) -> list[float]:
    """Newcombe's hybrid score interval for p1 - p2 from independent samples (Newcombe
    1998, Statistics in Medicine 17:873, method 10): d - sqrt((p1-l1)^2 + (u2-p2)^2),
    d + sqrt((u1-p1)^2 + (p2-l2)^2), with Wilson limits (l, u) of each rate."""
    if n1 <= 0 or n2 <= 0:
        raise StatsError("both groups need at least one observation")
    p1, p2 = k1 / n1, k2 / n2
    l1, u1 = wilson_interval(k1, n1, level)
    l2, u2 = wilson_interval(k2, n2, level)
    d = p1 - p2
    return [max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
            min(1.0, d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))]


def feature_preference(feature: Sequence[str | None], better: Sequence[str | None],
                       chosen: Sequence[str | None], level: float = 0.95,
                       groups: Sequence[Any] | None = None,
                       strata: Sequence[Any] | None = None) -> Preference:
    """The asymmetry of errors (module docstring) over pairs: ``feature[i]`` is the side
    ("a"/"b") carrying the feature (None: neither or both), ``better[i]`` the side the
    reference prefers, ``chosen[i]`` the judge's pick. Newcombe's unpaired interval
    (method 10) and Fisher's exact test on the two error counts.

    ``groups`` names the pair each verdict belongs to when a pair was judged more than
    once (both orders: the feature then sits in each position once, so a position bias
    cancels instead of leaking into the preference). A pair falls wholly on one side
    (its feature and reference do not change with the order), so the two error rates
    stay independent; each is then a clustered rate: Newcombe's interval from Wilson
    limits at the effective n (design effect, as ``clustered_rate``) and a z test with
    the design-effect-inflated null variance.

    ``strata`` (the dataset of each verdict) compares the two error rates within each
    stratum and combines the differences with Mantel-Haenszel weights (see
    :func:`stratified_preference`): pooled, a judge with no preference is flagged when
    its accuracy and the feature's quality both vary by dataset."""
    from scipy.stats import fisher_exact, norm

    if not len(feature) == len(better) == len(chosen) or (
            groups is not None and len(groups) != len(feature)) or (
            strata is not None and len(strata) != len(feature)):
        raise StatsError("feature, better, chosen (and groups, strata) need one entry per "
                         "pair (per verdict with groups)")
    if strata is not None and len({x for x in strata if x is not None}) > 1:
        return stratified_preference(feature, better, chosen, level, groups, strata)
    keys = list(range(len(feature))) if groups is None else list(groups)
    worse: dict[Any, list[bool]] = {}
    good: dict[Any, list[bool]] = {}
    for f, r, c, g in zip(feature, better, chosen, keys):
        if f not in ("a", "b") or r not in ("a", "b") or c not in ("a", "b"):
            continue
        if f == r:
            good.setdefault(g, []).append(c != f)
        else:
            worse.setdefault(g, []).append(c == f)
    worse_err = [x for v in worse.values() for x in v]
    better_err = [x for v in good.values() for x in v]
    n1, n2 = len(worse_err), len(better_err)
    if n1 == 0 or n2 == 0:
        return Preference(None, None, 1.0, n1 + n2, None, n1, None, n2)
    k1, k2 = sum(worse_err), sum(better_err)
    p1, p2 = k1 / n1, k2 / n2
    if len(worse) == n1 and len(good) == n2:  # one verdict per pair
        p = float(fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)
        return Preference(p1 - p2, newcombe_unpaired(k1, n1, k2, n2, level), p,
                          n1 + n2, p1, n1, p2, n2)
    _, _, d1 = _design_effect(list(worse.values()))
    _, _, d2 = _design_effect(list(good.values()))
    l1, u1 = wilson_effective(p1, n1 / d1, level, continuity=False)
    l2, u2 = wilson_effective(p2, n2 / d2, level, continuity=False)
    d = p1 - p2
    ci = [max(-1.0, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)),
          min(1.0, d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))]
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (d1 / n1 + d2 / n2))
    pv = 1.0 if se == 0 else float(2 * norm.sf(abs(d) / se))
    return Preference(d, ci, pv, n1 + n2, p1, n1, p2, n2)


def stratified_preference(feature: Sequence[str | None], better: Sequence[str | None],
                          chosen: Sequence[str | None], level: float,
                          groups: Sequence[Any] | None, strata: Sequence[Any]) -> Preference:
    """The error asymmetry within each stratum, d_s = P(err | feature worse) -
    P(err | feature better), combined as the Mantel-Haenszel risk difference
    d = sum w_s d_s / sum w_s, w_s = m1 m2 / (m1 + m2) at the effective counts
    m = n / deff (pairs judged in both orders are clusters), with variance
    sum w_s^2 (v1_s + v2_s) / (sum w_s)^2, v = p~ (1 - p~) deff / n at
    p~ = (k + 1/2) / (n + 1) (a stratum with no error keeps a variance); a normal
    interval clipped to [-1, 1] and a z test against the within-stratum pooled rate.
    Strata where the feature is never (or always) the better side carry no weight."""
    from scipy.special import ndtri
    from scipy.stats import norm

    keys = list(range(len(feature))) if groups is None else list(groups)
    cells: dict[Any, tuple[dict[Any, list[bool]], dict[Any, list[bool]]]] = {}
    for f, r, c, g, st in zip(feature, better, chosen, keys, strata):
        if f not in ("a", "b") or r not in ("a", "b") or c not in ("a", "b"):
            continue
        worse, good = cells.setdefault(st, ({}, {}))
        (good if f == r else worse).setdefault(g, []).append(c != f if f == r else c == f)
    num = den = var = var0 = 0.0
    k1t = n1t = k2t = n2t = used = 0
    for worse, good in cells.values():
        w_err = [x for v in worse.values() for x in v]
        b_err = [x for v in good.values() for x in v]
        n1, n2 = len(w_err), len(b_err)
        k1t, n1t, k2t, n2t = k1t + sum(w_err), n1t + n1, k2t + sum(b_err), n2t + n2
        if n1 == 0 or n2 == 0:
            continue
        d1 = 1.0 if groups is None else _design_effect(list(worse.values()))[2]
        d2 = 1.0 if groups is None else _design_effect(list(good.values()))[2]
        m1, m2 = n1 / d1, n2 / d2
        w = m1 * m2 / (m1 + m2)
        p1, p2 = sum(w_err) / n1, sum(b_err) / n2
        t1, t2 = (sum(w_err) + 0.5) / (n1 + 1), (sum(b_err) + 0.5) / (n2 + 1)
        p0 = (sum(w_err) + sum(b_err) + 0.5) / (n1 + n2 + 1)
        num += w * (p1 - p2)
        den += w
        var += w * w * (t1 * (1 - t1) / m1 + t2 * (1 - t2) / m2)
        var0 += w * w * p0 * (1 - p0) * (1 / m1 + 1 / m2)
        used += 1
    if den == 0:
        return Preference(None, None, 1.0, n1t + n2t, None, n1t, None, n2t, used)
    d = num / den
    se, se0 = math.sqrt(var) / den, math.sqrt(var0) / den
    z = float(ndtri(0.5 + level / 2))
    pv = 1.0 if se0 == 0 else float(2 * norm.sf(abs(d) / se0))
    return Preference(d, [max(-1.0, d - z * se), min(1.0, d + z * se)], pv, n1t + n2t,
                      k1t / n1t if n1t else None, n1t, k2t / n2t if n2t else None, n2t, used)


def paired_n_needed(discordant: float, effect: float, power: float = 0.8,
                    level: float = 0.95) -> int | None:
    """Pairs a two-sided McNemar-type test at ``level`` needs to detect a paired
    difference ``effect`` with ``power``, given the share of discordant pairs
    (Connor 1987, Biometrics 43:207): n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2.
    None when the discordant share cannot hold the effect (psi < |d|)."""
    from scipy.special import ndtri

    d, psi = abs(float(effect)), float(discordant)
    if not 0 < d < 1 or not 0 < power < 1 or not 0 < level < 1:
        raise StatsError("effect, power and level must lie in (0, 1)")
    if psi < d or psi > 1:
        return None
    za, zb = float(ndtri(0.5 + level / 2)), float(ndtri(power))
    return int(math.ceil((za * math.sqrt(psi) + zb * math.sqrt(max(psi - d * d, 0.0))) ** 2
                         / (d * d)))


def rate_n_needed(rate: float, halfwidth: float, level: float = 0.95) -> int:
    """Items a rate near ``rate`` needs for a Wald half-width of ``halfwidth``:
    n = z^2 p(1 - p) / h^2 (p(1 - p) at least 0.01 so a pilot at 0 or 1 still plans)."""
    from scipy.special import ndtri

    if not 0 < halfwidth < 1 or not 0 < level < 1:
        raise StatsError("halfwidth and level must lie in (0, 1)")
    z = float(ndtri(0.5 + level / 2))
    v = max(float(rate) * (1 - float(rate)), 0.01)
    return int(math.ceil(z * z * v / (halfwidth * halfwidth)))


class Slope(NamedTuple):
    slope: float | None  # log-odds per unit of x; None when the fit separates
    ci: list[float] | None
    p_value: float | None
    n: int
    note: str


def logistic_slope(y: Sequence[int], x: Sequence[float],
                   covariates: Sequence[Sequence[float]] = (), level: float = 0.95
                   ) -> Slope:
    """The coefficient of ``x`` in a logistic regression of ``y`` (0/1) on an intercept,
    ``x`` and ``covariates`` (each a column), by iteratively reweighted least squares,
    with a Wald interval and p-value. Separated data (a covariate predicting every y)
    has no finite estimate: slope None, with a note."""
    from scipy.special import expit, ndtri
    from scipy.stats import norm

    yy = np.asarray(y, float)
    cols = [np.ones_like(yy), np.asarray(x, float), *[np.asarray(c, float)
                                                      for c in covariates]]
    design = np.column_stack(cols)
    n, k = design.shape
    if n <= k or np.ptp(design[:, 1]) == 0 or yy.min() == yy.max():
        return Slope(None, None, None, n, "too few pairs, or x or the picks do not vary")
    beta = np.zeros(k)
    for _ in range(100):
        p = expit(design @ beta)
        w = np.clip(p * (1 - p), 1e-10, None)
        info = design.T @ (design * w[:, None])
        try:
            step = np.linalg.solve(info, design.T @ (yy - p))
        except np.linalg.LinAlgError:
            return Slope(None, None, None, n, "singular design (collinear columns)")
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > 15:
        return Slope(None, None, None, n, "separated: the reference predicts the picks")
    cov = np.linalg.inv(info)
    se = float(math.sqrt(cov[1, 1]))
    z = float(ndtri(0.5 + level / 2))
    b = float(beta[1])
    return Slope(b, [b - z * se, b + z * se], float(2 * norm.sf(abs(b) / se)), n,
                 "log-odds of picking answer A per unit of x")


def audit_plan(rate: float, level: float, halfwidths: tuple[float, ...] = (0.1, 0.05)
               ) -> dict[str, Any]:
    """Items an audit needs for its success rate's interval half-width."""
    return {"level": level, "rate": rate,
            "items_needed": {repr(h): rate_n_needed(rate, h, level) for h in halfwidths}}
