"""Judge reliability statistics: agreement honest under skew, flips against a noise
floor, repeat reliability, and pass rates corrected with few human labels.

All functions are pure (numpy arrays in, numbers out); intervals resample items
(the item is the independent unit) with an explicit seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from judgekit.core.errors import StatsError
from judgekit.stats.bootstrap import Interval, Seed, rng_of
from judgekit.stats.ppi import (  # noqa: F401  (re-exported: their old home)
    Corrected,
    importance_inclusion,
    ppi_mean,
    ppi_shares,
    ppi_weighted,
)

SMALL_N = 30  # below it, the agreement intervals under-cover at skewed prevalence


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(a), np.asarray(b)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise StatsError("agreement needs two equal, non-empty label lists")
    return x, y


def _weights(cats: np.ndarray, kind: str) -> np.ndarray:
    """Agreement weights w[i, j] in [0, 1]: identity (nominal) or quadratic (ordinal)."""
    k = len(cats)
    if kind == "nominal" or k < 2:
        return np.eye(k)
    if kind == "quadratic":
        d = (cats[:, None] - cats[None, :]).astype(float)
        return 1.0 - (d / (cats.max() - cats.min())) ** 2
    raise StatsError(f"unknown weights {kind!r}: nominal or quadratic")


def percent_agreement(a: ArrayLike, b: ArrayLike) -> float:
    x, y = _pair(a, b)
    return float(np.mean(x == y))


def _confusion(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The categories seen and the joint proportion matrix of (a, b)."""
    x, y = _pair(a, b)
    cats, codes = np.unique(np.concatenate([x, y]), return_inverse=True)
    k = len(cats)
    obs = np.zeros((k, k))
    np.add.at(obs, (codes[: x.size], codes[x.size:]), 1.0)
    return cats, obs / obs.sum()


def cohen_kappa(a: ArrayLike, b: ArrayLike, weights: str = "nominal") -> float:
    """Cohen's kappa (weighted for ordinal scores): (p_o - p_e) / (1 - p_e)."""
    cats, obs = _confusion(a, b)
    w = _weights(cats, weights)
    po = float((w * obs).sum())
    pe = float((w * np.outer(obs.sum(1), obs.sum(0))).sum())
    # both raters used one and the same class: chance agreement is 1 and kappa is 0/0,
    # undefined (not 1.0); callers report it as undefined with the reason
    return float("nan") if pe >= 1.0 - 1e-12 else (po - pe) / (1.0 - pe)


def gwet_ac(a: ArrayLike, b: ArrayLike, weights: str = "nominal") -> float:
    """Gwet's AC1 (nominal) or AC2 (weighted): chance agreement from the mean category
    prevalence, pe = T_w / (q (q - 1)) * sum_k pi_k (1 - pi_k), stable under skew where
    kappa and alpha collapse (Gwet 2008, 2014)."""
    cats, obs = _confusion(a, b)
    q = len(cats)
    if q < 2:
        return 1.0
    w = _weights(cats, weights)
    po = float((w * obs).sum())
    pi = (obs.sum(1) + obs.sum(0)) / 2.0
    pe = float(w.sum() / (q * (q - 1)) * np.sum(pi * (1 - pi)))
    return (po - pe) / (1.0 - pe)


def krippendorff_alpha(a: ArrayLike, b: ArrayLike, level: str = "nominal") -> float:
    """Krippendorff's alpha for two coders, no missing values: 1 - D_o / D_e with the
    nominal or interval difference. D_e, the mean difference over all pairs of the 2N
    pooled values, comes from category counts (nominal: n^2 - sum of squared counts) or
    the first two moments (interval: 2 n sum v^2 - 2 (sum v)^2), so memory and time are
    linear in N, not a (2N)^2 coincidence matrix."""
    x, y = _pair(a, b)
    xf, yf = x.astype(float), y.astype(float)
    values = np.concatenate([xf, yf])
    n = values.size
    if level == "nominal":
        _, counts = np.unique(values, return_counts=True)
        d_o = float(np.count_nonzero(xf != yf)) * 2 / n
        pairs = float(n) * n - float(np.sum(counts.astype(float) ** 2))
    elif level == "interval":
        d_o = float(np.sum((xf - yf) ** 2)) * 2 / n
        pairs = 2.0 * n * float(np.sum(values**2)) - 2.0 * float(np.sum(values)) ** 2
    else:
        raise StatsError(f"unknown alpha level {level!r}: nominal or interval")
    d_e = max(0.0, pairs) / (n * (n - 1))
    return float("nan") if d_e == 0 else 1.0 - d_o / d_e  # one value only: undefined


def fleiss_kappa(ratings: ArrayLike) -> float:
    """Fleiss' kappa of several raters (Fleiss 1971): ``ratings`` is items x raters of
    category labels, every item rated by the same number m >= 2 of raters. From the
    items' category counts: P_i = (sum_c n_ic^2 - m) / (m (m - 1)), P_e = sum_c p_c^2;
    kappa = (mean P_i - P_e) / (1 - P_e); NaN when every rating is one category."""
    r = np.asarray(ratings)
    if r.ndim != 2 or r.shape[1] < 2 or r.shape[0] < 1:
        raise StatsError("Fleiss' kappa needs items x raters with at least 2 raters")
    m = r.shape[1]
    cats = np.unique(r)
    counts = np.stack([(r == c).sum(axis=1) for c in cats], axis=1).astype(float)
    p_i = (np.sum(counts**2, axis=1) - m) / (m * (m - 1))
    p_c = counts.sum(axis=0) / (r.shape[0] * m)
    p_e = float(np.sum(p_c**2))
    return float("nan") if p_e >= 1.0 else (float(p_i.mean()) - p_e) / (1.0 - p_e)


def item_bootstrap(stat: Callable[[np.ndarray], float], n: int, seed: Seed,
                   resamples: int = 2000, level: float = 0.95) -> Interval:
    """Percentile interval of ``stat(idx)`` over resampled item indices (clusters)."""
    rng = rng_of(seed)
    vals = []
    for _ in range(resamples):
        v = stat(rng.integers(0, n, size=n))
        if math.isfinite(v):
            vals.append(v)
    if not vals:
        return Interval(float("nan"), float("nan"))
    a = (1 - level) / 2
    lo, hi = np.quantile(vals, [a, 1 - a])
    return Interval(float(lo), float(hi))


class Agreement(NamedTuple):
    n: int
    percent: float
    kappa: float | None  # None: undefined (see ``undefined``)
    alpha: float | None
    ac: float
    prevalence: float  # share of the reference's most common label
    majority_baseline: float  # agreement of always saying that label
    cis: dict[str, list[float] | None]
    level: float = 0.95
    undefined: dict[str, str] | None = None  # statistic -> why it has no value
    note: str | None = None  # why the intervals may not hold (n below what was checked)


def _finite(v: float) -> float | None:
    return float(v) if math.isfinite(v) else None


def agreement(judge: ArrayLike, human: ArrayLike, *, ordinal: bool = False,
              seed: Seed = 0, resamples: int = 2000, level: float = 0.95,
              groups: Sequence[object] | None = None) -> Agreement:
    """Percent agreement (Wilson interval), Cohen's kappa (quadratic-weighted if ordinal),
    Krippendorff's alpha (interval if ordinal), Gwet's AC1 / AC2 (item bootstrap
    intervals at ``level``), prevalence and the majority-class baseline.

    Kappa and alpha are undefined (None, with the reason in ``undefined``) when both
    raters used a single class. Their intervals, and AC1's, are the central posterior
    intervals of the statistic under a Dirichlet posterior on the k x k table of
    (judge, human) labels (prior 1/k per agreement cell, 1/(2k(k-1)) per disagreement
    cell), from ``resamples`` seeded draws: computed from the table, so linear in n,
    and covering 0.94-0.98 at nominal 0.95 with 50 items at prevalence 0.9 (0.92 with
    30) where the item bootstrap gave 0.75-0.89 (benchmarks/coverage.py). They keep a
    width when every item agrees. ``note`` says when n is below 30, where no interval
    we tried covers at skewed prevalence (0.83 with 20 items).

    ``groups`` names each item's cluster (the question several answers share): the
    table then counts at the effective sample size n / deff (the largest design effect
    of agreement and of each rater's classes) and percent agreement takes the clustered
    Wilson interval, so that answers to one question are not counted as independent
    evidence."""
    from judgekit.stats.preference import clustered_rate, design_effect
    from judgekit.stats.proportions import wilson_interval

    x, y = _pair(judge, human)
    units: list[np.ndarray] | None = None
    if groups is not None:
        if len(groups) != x.size:
            raise StatsError("groups needs one entry per item")
        by: dict[object, list[int]] = {}
        for i, g in enumerate(groups):
            by.setdefault(g, []).append(i)
        if len(by) < x.size:
            units = [np.array(v) for v in by.values()]
    w = "quadratic" if ordinal else "nominal"
    lvl = "interval" if ordinal else "nominal"
    stats: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "kappa": lambda u, v: cohen_kappa(u, v, w),
        "alpha": lambda u, v: krippendorff_alpha(u, v, lvl),
        "ac": lambda u, v: gwet_ac(u, v, w),
    }
    po = percent_agreement(x, y)
    if units is None:
        p_ci = wilson_interval(int(round(po * x.size)), int(x.size), level)
    else:
        c = clustered_rate([list(x[u] == y[u]) for u in units], level)
        p_ci = Interval(c.ci[0], c.ci[1])
    rng = rng_of(seed)
    v = {k: f(x, y) for k, f in stats.items()}
    deff = 1.0
    if units is not None:
        # answers to one question are not independent: the table counts at the effective
        # n (Kish), the largest design effect of agreement and of either rater's classes
        deff = max([design_effect([list(x[u] == y[u]) for u in units])] + [
            design_effect([list(r[u] == c) for u in units]) for r in (x, y)
            for c in np.unique(np.concatenate([x, y]))])
    posterior = _posterior_cis(x, y, w, resamples, level, rng, 1.0 / deff)
    cis: dict[str, list[float] | None] = {"percent": p_ci.as_list()}
    undefined: dict[str, str] = {}
    for k in stats:
        if not math.isfinite(v[k]):
            # the sample's statistic is undefined; the population's interval stands
            undefined[k] = "both raters gave every item the same single label"
        cis[k] = posterior[k]
    values, counts = np.unique(y, return_counts=True)
    top = values[np.argmax(counts)]
    n_units = x.size if units is None else len(units)
    note = None if n_units >= SMALL_N else (
        f"only {n_units} {'items' if units is None else 'clusters'}: below {SMALL_N} the "
        "agreement intervals under-cover when one label dominates (benchmarks/coverage.py); "
        "read them as rough")
    return Agreement(int(x.size), po, _finite(v["kappa"]), _finite(v["alpha"]), v["ac"],
                     float(counts.max() / y.size), float(np.mean(y == top)), cis, level,
                     undefined or None, note)


def _posterior_cis(x: np.ndarray, y: np.ndarray, weights: str, draws: int, level: float,
                   rng: np.random.Generator, scale: float = 1.0
                   ) -> dict[str, list[float] | None]:
    """Central posterior intervals of kappa, alpha and AC (population forms) from
    Dirichlet draws of the (judge, human) cell probabilities; ``scale`` (1 / design
    effect) turns the counts into effective counts."""
    cats, obs = _confusion(x, y)
    if len(cats) == 1 and set(cats.tolist()) <= {0, 1}:
        # pass/fail labels, one class seen: the statistic of the sample is undefined, but
        # the population's is not, and the posterior still bounds it (at 95/5 skew and
        # n = 40, 12% of samples show one class; no interval there cost coverage)
        cats, obs = np.array([0, 1]), np.diag([1.0, 0.0] if cats[0] == 0 else [0.0, 1.0])
    k = len(cats)
    if k < 2:
        return {"kappa": None, "alpha": None, "ac": None}
    counts = obs * x.size * scale
    wm = _weights(cats, weights)
    # the hull of the central intervals under two priors (a robust-Bayes interval over
    # the prior class): Jeffreys' 1/2 on every cell, and 1/k on each agreement cell with
    # 1/(2k(k-1)) on each disagreement cell. Either alone under-covered somewhere at
    # n = 40-50 under skew (Jeffreys 0.86 for AC1 at 95/5, the other 0.88 for AC1 at
    # 90/10); the hull held 0.93 or more (benchmarks/coverage.py)
    sparse = np.full((k, k), 1.0 / (2 * k * (k - 1)))
    np.fill_diagonal(sparse, 1.0 / k)
    a = (1 - level) / 2
    vals: dict[str, list[np.ndarray]] = {"kappa": [], "alpha": [], "ac": []}
    hull: dict[str, list[float] | None] = {}
    for prior in (np.full((k, k), 0.5), sparse):
        for name in vals:
            vals[name] = []
        for start in range(0, draws, 4096):
            m = min(4096, draws - start)
            p = rng.dirichlet((counts + prior).ravel(), size=m).reshape(m, k, k)
            po = np.einsum("ij,mij->m", wm, p)
            r, c = p.sum(axis=2), p.sum(axis=1)
            mean = (r + c) / 2
            pe = {"kappa": np.einsum("ij,mi,mj->m", wm, r, c),
                  "alpha": np.einsum("ij,mi,mj->m", wm, mean, mean),
                  "ac": wm.sum() / (k * (k - 1)) * np.sum(mean * (1 - mean), axis=1)}
            with np.errstate(divide="ignore", invalid="ignore"):
                for name, e in pe.items():
                    vals[name].append((po - e) / (1 - e))
        for name, parts in vals.items():
            v = np.concatenate(parts)
            v = v[np.isfinite(v)]
            got = None if v.size == 0 else [float(q) for q in np.quantile(v, [a, 1 - a])]
            old = hull.get(name)
            hull[name] = got if old is None else old if got is None else \
                [min(old[0], got[0]), max(old[1], got[1])]
    return hull


def flips(base: ArrayLike, other: ArrayLike) -> np.ndarray:
    """Per item: did the verdict change (0/1)?"""
    x, y = _pair(base, other)
    return (x != y).astype(float)


class Excess(NamedTuple):
    flip_rate: float
    noise_floor: float
    excess: float
    excess_ci: list[float]
    p_value: float
    n: int


def flip_excess(transform_flips: ArrayLike, rerun_flips: ArrayLike, *,
                seed: Seed = 0, resamples: int = 2000, level: float = 0.95) -> Excess:
    """Flip rate under a transform minus the flip rate of a reference on the same items
    (the noise floor: a placebo transform, or identical re-runs), with Newcombe's
    paired score interval (method 10) at ``level`` and an exact McNemar test on the
    items where exactly one of the two flipped. ``seed`` and ``resamples`` are kept for
    callers; the interval is analytic."""
    from judgekit.stats.proportions import newcombe_paired

    t, r = np.asarray(transform_flips, float), np.asarray(rerun_flips, float)
    if t.shape != r.shape or t.size == 0:
        raise StatsError("flip_excess needs paired, non-empty flip lists")
    d = newcombe_paired(t, r, level)
    return Excess(float(t.mean()), float(r.mean()), d.diff, d.ci, d.p_value, int(t.size))


def benjamini_hochberg(pvalues: ArrayLike) -> list[float]:
    """BH-adjusted p-values (step-up, monotone, capped at 1)."""
    p = np.asarray(pvalues, float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p)
    adj = p[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(adj[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out.tolist()


def signed_bias(chosen: ArrayLike, *, seed: Seed = 0, resamples: int = 2000,
                level: float = 0.95) -> tuple[float, list[float], int]:
    """P(event) - 0.5 (e.g. the first slot or the longer answer was chosen), with an
    item bootstrap interval; ``chosen`` is per item the share of its verdicts with the
    event (0, 0.5 or 1 when an item is judged in both orders). When every item has the
    same value the bootstrap has no spread: the interval is then Wilson's for the
    events counted over the items (never [b, b]). For verdicts judged in two
    conditions, :func:`judgekit.stats.proportions.newcombe_paired` is the sharper
    tool (the probe uses it)."""
    c = np.asarray(chosen, float)
    if c.size == 0:
        raise StatsError("signed_bias needs at least one item")
    if np.all(c == c[0]):
        from judgekit.stats.proportions import wilson_interval

        lo, hi = wilson_interval(int(round(c.sum())), int(c.size), level)
        return float(c.mean() - 0.5), [lo - 0.5, hi - 0.5], int(c.size)
    ci = item_bootstrap(lambda i: float(c[i].mean() - 0.5), c.size, seed, resamples, level)
    return float(c.mean() - 0.5), list(ci), int(c.size)


class Reliability(NamedTuple):
    pass_probability: list[float]
    pass_ci: list[list[float]]
    unstable_share: float
    single_run_reliability: float
    k_for_target: int | None


def repeat_reliability(samples: np.ndarray, target: float = 0.8,
                       level: float = 0.95) -> Reliability:
    """k verdicts (0/1) per item: each item's pass probability with a Wilson interval,
    the share of items that are not unanimous, the single-run reliability (one-way
    ICC(1): between-item share of the variance) and, by Spearman-Brown, the number of
    runs whose average reaches ``target``: k = R (1 - r) / (r (1 - R))."""
    from judgekit.stats.proportions import wilson_interval

    x = np.asarray(samples, float)
    if x.ndim != 2 or x.shape[1] < 2:
        raise StatsError("repeat reliability needs an (items, k >= 2) matrix")
    n, k = x.shape
    p = x.mean(axis=1)
    cis = [wilson_interval(int(round(v * k)), k, level).as_list() for v in p]
    msb = k * np.var(p, ddof=1) if n > 1 else 0.0
    msw = float(np.sum((x - p[:, None]) ** 2) / (n * (k - 1)))
    denom = msb + (k - 1) * msw
    r1 = float((msb - msw) / denom) if denom > 0 else 1.0
    r1 = max(min(r1, 1.0), 0.0)
    need = None
    if 0 < r1 < 1 and 0 < target < 1:
        # a hair of tolerance: 9.000000000000002 runs means 9
        need = int(math.ceil(target * (1 - r1) / (r1 * (1 - target)) - 1e-9))
    elif r1 >= target:
        need = 1
    return Reliability(p.tolist(), cis, float(np.mean((p > 0) & (p < 1))), r1, need)


def ceiling(annotations: Sequence[Sequence[int]], *, seed: Seed = 0,
            resamples: int = 1000) -> dict[str, float | list[float] | int]:
    """Human-human agreement (the ceiling a judge can be held to): percent agreement and
    Gwet's AC1 averaged over every pair of annotators, on the items each pair both
    labelled; ``annotations[i]`` lists item i's labels (None-free, >= 2 per item)."""
    pairs_pa, pairs_ac = [], []
    width = max(len(a) for a in annotations)
    for j in range(width):
        for k in range(j + 1, width):
            both = [(a[j], a[k]) for a in annotations if len(a) > k]
            if len(both) >= 2:
                u, v = zip(*both)
                pairs_pa.append(percent_agreement(u, v))
                pairs_ac.append(gwet_ac(u, v))
    if not pairs_pa:
        raise StatsError("a human ceiling needs items with at least two annotations")
    first = [a[0] for a in annotations if len(a) > 1]
    second = [a[1] for a in annotations if len(a) > 1]
    ci = item_bootstrap(lambda i: percent_agreement(np.asarray(first)[i],
                                                    np.asarray(second)[i]),
                        len(first), seed, resamples)
    return {"percent": float(np.mean(pairs_pa)), "ac1": float(np.mean(pairs_ac)),
            "percent_ci_first_pair": list(ci), "n": len(first),
            "annotator_pairs": len(pairs_pa)}
