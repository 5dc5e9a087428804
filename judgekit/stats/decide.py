"""Decisions on recorded verdicts that hold at the edges: skewed labels, questions with
several items, ties, pairs judged in both orders.

- :func:`cluster_mean`: the mean of per-unit values (a pair's position score, a judge's
  error minus an uninformed judge's) with the delete-one-cluster jackknife variance
  (CR3) and Student's t on clusters - 1 degrees of freedom. Units of one question are
  one cluster; nothing floors the design effect at 1, so the negative correlation of
  a pair's two orders narrows the interval as it should (Cameron & Miller 2015, "A
  practitioner's guide to cluster-robust inference", sections IIB and VIC).
- :func:`sign_flip_p`: the randomisation test of a zero mean that flips the signs of
  whole clusters' totals: exact whenever the totals are symmetric about 0 under the
  null (a position bias of zero with the answers' order randomised or both orders
  shown), whatever the number of clusters, where the t interval is a little liberal
  with 25 clusters of unequal sizes.
- :func:`versus_uninformed`: the judge's accuracy against the best uninformed judge's,
  paired on the same items (the majority label, and random verdicts at the judge's own
  rate). The baseline is estimated on the same items, so its uncertainty is in the
  paired difference. "Above" needs both differences above 0 (an intersection-union
  test, level kept); "no better" needs one shown below 0 (a union of two one-sided
  tests at (1 - level) / 2 each: at most 1 - level when the judge is at least as good).
- :func:`beyond_chance`: agreement above what a judge independent of people scores, a
  permutation test of the observed agreement minus its expectation under independence
  (the numerator of kappa, which AC1's and alpha's decisions share); clusters of one
  size are permuted whole. A random judge meets the null exactly, whatever the skew.

Pure numpy/scipy; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np

from judgekit.core.errors import StatsError
from judgekit.core.progress import track
from judgekit.stats.proportions import newcombe_paired

__all__ = ["Chance", "MeanCI", "Uninformed", "beyond_chance", "cluster_mean", "family_level",
           "paired_difference", "random_ac1", "sign_flip_interval", "sign_flip_p",
           "unseen_disagreement_bound", "versus_uninformed"]


class MeanCI(NamedTuple):
    estimate: float
    ci: list[float]
    n: int  # units
    clusters: int
    p_value: float  # two-sided, against 0


def cluster_mean(values: Sequence[float], groups: Sequence[Hashable] | None = None,
                 level: float = 0.95, bounds: tuple[float, float] = (-1.0, 1.0)
                 ) -> MeanCI:
    """The mean of ``values`` with a cluster-robust interval (Student t, clusters - 1
    degrees of freedom), clipped to ``bounds``; each value its own cluster when
    ``groups`` is None. The ratio estimator sum(y_g) / sum(m_g) over clusters g; its
    variance the delete-one-cluster jackknife (G - 1) / G * sum((theta_(-g) -
    mean(theta_(-.)))^2), which for clusters of one value is CR1's G / (G - 1) *
    sum((y_g - mean)^2) / n^2."""
    from scipy.stats import t as student

    y = np.asarray(values, float)
    if y.ndim != 1 or y.size == 0:
        raise StatsError("a mean needs at least one value")
    if not 0.0 < level < 1.0:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    if groups is None:
        codes = np.arange(y.size)
    else:
        if len(groups) != y.size:
            raise StatsError("groups and values differ in length")
        codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)[1]
    k = int(codes.max()) + 1
    tot = np.bincount(codes, weights=y, minlength=k)
    m = np.bincount(codes, minlength=k).astype(float)
    n = float(y.size)
    est = float(tot.sum() / n)
    if k < 2:
        return MeanCI(est, [bounds[0], bounds[1]], int(n), k, 1.0)
    # the delete-one-cluster jackknife (CR3): it equals CR1 for clusters of one unit and
    # is larger with few clusters of unequal sizes, where CR1 falls below nominal
    # (Cameron & Miller 2015, section VIC; MacKinnon & White 1985)
    loo = (tot.sum() - tot) / np.maximum(n - m, 1.0)
    var = (k - 1) / k * float(np.sum((loo - loo.mean()) ** 2))
    se = math.sqrt(max(var, 0.0))
    q = float(student.ppf(0.5 + level / 2, k - 1))
    lo, hi = max(bounds[0], est - q * se), min(bounds[1], est + q * se)
    p = 1.0 if se == 0 else float(2 * student.sf(abs(est) / se, k - 1))
    if se == 0 and est != 0:
        p = 0.0
    return MeanCI(est, [min(lo, est), max(hi, est)], int(n), k, p)


def sign_flip_p(values: Sequence[float], groups: Sequence[Hashable] | None = None,
                seed: int = 0, flips: int = 4000) -> float:
    """Two-sided p of a zero mean by flipping the signs of the cluster totals: every
    sign pattern when there are at most 12 clusters, else ``flips`` random ones
    (p = (1 + #{|T*| >= |T|}) / (1 + B))."""
    y = np.asarray(values, float)
    if groups is None:
        tot = y
    else:
        codes = np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)[1]
        tot = np.bincount(codes, weights=y)
    t0 = abs(float(tot.sum()))
    if t0 == 0:
        return 1.0
    k = tot.size
    if k <= 12:
        signs = 1 - 2 * ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1)
        stats = np.abs(signs @ tot)
        return float(np.mean(stats >= t0 - 1e-12))
    rng = np.random.default_rng(seed)
    hits = 0
    for start in range(0, flips, 1000):
        b = min(1000, flips - start)
        signs = rng.choice([-1.0, 1.0], size=(b, k))
        hits += int(np.sum(np.abs(signs @ tot) >= t0 - 1e-12))
    return (1 + hits) / (1 + flips)


MANY_CLUSTERS = 2000  # beyond: the cluster t interval (accurate with many clusters)


def sign_flip_interval(values: Sequence[float], groups: Sequence[Hashable] | None,
                       level: float, seed: int = 0, flips: int = 4000,
                       bounds: tuple[float, float] = (-1.0, 1.0)) -> MeanCI:
    """The mean with the interval that inverts the sign-flip test: every delta whose
    test of a zero mean of (values - delta), flipping the signs of whole clusters'
    totals, is not rejected at 1 - level (one set of signs for every delta, so the ends
    are found by bisection). Its decision and its interval are one procedure: the
    interval excludes 0 exactly when the test at 0 rejects. Exact under a symmetric null
    whatever the number of clusters; with more than MANY_CLUSTERS clusters, the cluster
    t interval (:func:`cluster_mean`), which is accurate there."""
    y = np.asarray(values, float)
    if y.size == 0:
        raise StatsError("a mean needs at least one value")
    codes = np.arange(y.size) if groups is None else \
        np.unique(np.asarray([str(g) for g in groups]), return_inverse=True)[1]
    tot = np.bincount(codes, weights=y)
    m = np.bincount(codes).astype(float)
    k = tot.size
    est = float(tot.sum() / m.sum())
    if k < 2 or k > MANY_CLUSTERS:
        return cluster_mean(list(y), None if groups is None else list(groups), level, bounds)
    if k <= 12:
        signs = (1 - 2 * ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1)).astype(float)
        extra = 0
    else:
        signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(flips, k))
        extra = 1
    alpha = 1 - level

    def p(delta: float) -> float:
        t = tot - delta * m
        t0 = abs(float(t.sum()))
        hits = int(np.sum(np.abs(signs @ t) >= t0 - 1e-12))
        return (extra + hits) / (extra + signs.shape[0])

    def end(inside: float, outside: float) -> float:
        if p(outside) >= alpha:
            return outside
        for _ in range(40):
            mid = (inside + outside) / 2
            if p(mid) >= alpha:
                inside = mid
            else:
                outside = mid
        return inside

    lo, hi = end(est, bounds[0]), end(est, bounds[1])
    p0 = p(0.0)
    if p0 >= alpha and bounds[0] <= 0.0 <= bounds[1]:  # never exclude a value not rejected
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    return MeanCI(est, [min(lo, est), max(hi, est)], int(y.size), k, p0)


class Uninformed(NamedTuple):
    accuracy: float
    majority: float  # the majority label's accuracy on the same items
    random: float  # random verdicts at the judge's own rates, expected accuracy
    vs_majority: MeanCI  # judge - majority label, paired per item
    vs_random: MeanCI  # judge - random at its rates, paired per item
    decision: str  # above | no better | not distinguishable


def versus_uninformed(judge: Sequence[Hashable], human: Sequence[Hashable],
                      groups: Sequence[Hashable] | None = None, level: float = 0.95
                      ) -> Uninformed:
    """The judge's accuracy against the best uninformed judge's, paired on the same items
    (see the module's docstring)."""
    j, h = [str(x) for x in judge], [str(x) for x in human]
    if len(j) != len(h) or not j:
        raise StatsError("judge and human labels must be equal, non-empty lists")
    classes = sorted(set(j) | set(h))
    hc = {c: h.count(c) for c in classes}
    top = max(classes, key=lambda c: (hc[c], c))
    jr = {c: j.count(c) / len(j) for c in classes}
    correct = np.array([a == b for a, b in zip(j, h)], float)
    maj = np.array([b == top for b in h], float)
    rnd = np.array([jr[b] for b in h], float)
    d1 = cluster_mean(correct - maj, groups, level)
    d2 = cluster_mean(correct - rnd, groups, level)
    if d1.ci[0] > 0 and d2.ci[0] > 0:
        decision = "above"
    elif d1.ci[1] < 0 or d2.ci[1] < 0:
        decision = "no better"
    else:
        decision = "not distinguishable"
    return Uninformed(float(correct.mean()), float(maj.mean()), float(rnd.mean()), d1, d2,
                      decision)


class Chance(NamedTuple):
    observed: float  # observed agreement
    expected: float  # its expectation for a judge independent of people (same margins)
    p_value: float  # one-sided permutation p of observed - expected
    permutations: int


def _excess(j: np.ndarray, h: np.ndarray, k: int) -> float:
    pa = float(np.mean(j == h))
    pj = np.bincount(j, minlength=k) / j.size
    ph = np.bincount(h, minlength=k) / h.size
    return pa - float(pj @ ph)


def beyond_chance(judge: Sequence[Hashable], human: Sequence[Hashable],
                  groups: Sequence[Hashable] | None = None, seed: int = 0,
                  permutations: int = 2000) -> Chance:
    """A permutation test of agreement beyond chance: observed agreement minus its
    expectation under independence (margins kept), against the same statistic with
    people's labels permuted over items. With ``groups``: whole clusters among clusters
    of one size, then the labels within each cluster (valid when the items of a question
    are exchangeable; a cluster of a size no other has is still permuted, so questions
    of uneven sizes keep the test's power). p = (1 + #{T* >= T}) / (1 + B)."""
    js, hs = [str(x) for x in judge], [str(x) for x in human]
    if len(js) != len(hs) or len(js) < 2:
        raise StatsError("agreement beyond chance needs two equal lists of 2 or more")
    code = {c: i for i, c in enumerate(sorted(set(js) | set(hs)))}
    j = np.array([code[x] for x in js])
    h = np.array([code[x] for x in hs])
    k = len(code)
    t0 = _excess(j, h, k)
    pj = np.bincount(j, minlength=k) / j.size
    ph = np.bincount(h, minlength=k) / h.size
    expected = float(pj @ ph)
    rng = np.random.default_rng(seed)
    by_size: dict[int, list[np.ndarray]] | None = None
    if groups is not None:
        g = np.unique(np.asarray([str(x) for x in groups]), return_inverse=True)[1]
        by_size = {}
        for c in range(int(g.max()) + 1):
            mem = np.flatnonzero(g == c)
            by_size.setdefault(mem.size, []).append(mem)
        in_order = np.argsort(g, kind="stable")  # items cluster by cluster
    hits = 0
    for _ in track(range(permutations), "agreement beyond chance", permutations,
                   "permutations"):
        hp = h.copy()
        if by_size is None:
            hp = h[rng.permutation(h.size)]
        else:
            for mems in by_size.values():
                if len(mems) < 2:
                    continue
                order = rng.permutation(len(mems))
                src = np.concatenate([mems[i] for i in order])
                dst = np.concatenate(mems)
                hp[dst] = h[src]
            # then within each cluster: sorting by (cluster, a random key) shuffles each
            # cluster's positions among themselves
            hp[in_order] = hp[np.lexsort((rng.random(h.size), g))]
        if _excess(j, hp, k) >= t0 - 1e-12:
            hits += 1
    return Chance(float(np.mean(j == h)), expected, (1 + hits) / (1 + permutations),
                  permutations)


def random_ac1(judge: Sequence[Hashable], human: Sequence[Hashable]) -> float:
    """Gwet's AC1 that a judge independent of people, with the judge's own rates, scores
    on these items in expectation (plug-in): (sum_c pj_c ph_c - pe) / (1 - pe), pe =
    sum_c pi_c (1 - pi_c) / (K - 1), pi_c the mean of the two rates. With skewed labels
    it is far above 0 (0.895 at 95/5 for both), which is why AC1 is never tested
    against 0."""
    js, hs = [str(x) for x in judge], [str(x) for x in human]
    classes = sorted(set(js) | set(hs))
    if len(classes) < 2:
        return float("nan")
    pj = np.array([js.count(c) / len(js) for c in classes])
    ph = np.array([hs.count(c) / len(hs) for c in classes])
    pi = (pj + ph) / 2
    pe = float(np.sum(pi * (1 - pi)) / (len(classes) - 1))
    return (float(pj @ ph) - pe) / (1 - pe)


def unseen_disagreement_bound(n: int, level: float) -> float:
    """The largest rate of disagreement ``n`` units that show none leave plausible: the
    exact (Clopper-Pearson) one-sided upper bound at (1 - level) / 2, 1 - ((1 - level) /
    2) ** (1 / n). A paired difference of shares whose units show no disagreement lies
    within +/- this (each direction's rate is at most the disagreement rate); an
    interval of zero width would claim none can exist."""
    if n < 1:
        return 1.0
    return 1.0 - ((1.0 - level) / 2.0) ** (1.0 / n)


def paired_difference(first: Sequence[float], second: Sequence[float],
                      groups: Sequence[Hashable] | None, level: float
                      ) -> tuple[float, list[float], str]:
    """The mean of ``first - second`` over paired units (shares in [0, 1]: a judge's
    verdict and a person's label, ties 1/2) with its interval at ``level``: Newcombe's
    hybrid score interval for independent units, the cluster-robust t interval (CR3)
    when units share a cluster. When no unit disagrees the interval is the unseen-
    disagreement bound (never zero width). Returns (estimate, interval, how)."""
    a, b = np.asarray(first, float), np.asarray(second, float)
    clustered = groups is not None and len(set(groups)) < len(groups)
    units = len(set(groups)) if clustered and groups is not None else a.size
    if a.size and bool(np.all(a == b)):
        u = unseen_disagreement_bound(units, level)
        return 0.0, [-u, u], (f"no disagreement in {units} "
                              f"{'clusters' if clustered else 'units'}: +/- the exact "
                              "bound of an unseen disagreement rate")
    if clustered:
        m = cluster_mean(list(a - b), groups, level)
        return m.estimate, m.ci, "paired, clustered by question"
    if np.all(np.isin(a, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))):
        d = newcombe_paired(list(a), list(b), level)
        return d.diff, d.ci, "paired (Newcombe's interval)"
    m = cluster_mean(list(a - b), None, level)
    return m.estimate, m.ci, "paired mean (t interval)"


def family_level(level: float, rows: int) -> float:
    """The per-row level whose intervals hold together at ``level`` over ``rows`` rows
    (Bonferroni): a claim resting on any one of them keeps its error at 1 - level."""
    return 1.0 - (1.0 - level) / max(1, rows)
