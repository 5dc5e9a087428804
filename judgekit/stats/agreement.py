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
from scipy.special import ndtri
from scipy.stats import binomtest

from judgekit.errors import StatsError
from judgekit.stats.bootstrap import Interval, Seed, rng_of


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
    return 1.0 if pe == 1.0 else (po - pe) / (1.0 - pe)


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
    nominal or interval difference, from the coincidence matrix."""
    x, y = _pair(a, b)
    values = np.concatenate([x, y]).astype(float)
    n = values.size
    if level == "nominal":
        def delta(u: np.ndarray, v: np.ndarray) -> np.ndarray:
            return (u != v).astype(float)
    elif level == "interval":
        def delta(u: np.ndarray, v: np.ndarray) -> np.ndarray:
            return (u - v) ** 2
    else:
        raise StatsError(f"unknown alpha level {level!r}: nominal or interval")
    d_o = float(np.sum(delta(x.astype(float), y.astype(float))) * 2 / n)
    d_e = float(np.sum(delta(values[:, None], values[None, :])) / (n * (n - 1)))
    return 1.0 if d_e == 0 else 1.0 - d_o / d_e


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
    kappa: float
    alpha: float
    ac: float
    prevalence: float  # share of the reference's most common label
    majority_baseline: float  # agreement of always saying that label
    cis: dict[str, list[float]]


def agreement(judge: ArrayLike, human: ArrayLike, *, ordinal: bool = False,
              seed: Seed = 0, resamples: int = 2000) -> Agreement:
    """Percent agreement, Cohen's kappa (quadratic-weighted if ordinal), Krippendorff's
    alpha (interval if ordinal), Gwet's AC1 / AC2, prevalence and the majority-class
    baseline, each statistic with an item bootstrap interval."""
    x, y = _pair(judge, human)
    w = "quadratic" if ordinal else "nominal"
    lvl = "interval" if ordinal else "nominal"
    stats: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "percent": percent_agreement,
        "kappa": lambda u, v: cohen_kappa(u, v, w),
        "alpha": lambda u, v: krippendorff_alpha(u, v, lvl),
        "ac": lambda u, v: gwet_ac(u, v, w),
    }
    rng = rng_of(seed)
    cis: dict[str, list[float]] = {}
    for k, f in stats.items():
        def stat(i: np.ndarray, f: Callable[[np.ndarray, np.ndarray], float] = f) -> float:
            return f(x[i], y[i])
        cis[k] = list(item_bootstrap(stat, x.size, rng, resamples))
    values, counts = np.unique(y, return_counts=True)
    top = values[np.argmax(counts)]
    v = {k: f(x, y) for k, f in stats.items()}
    return Agreement(int(x.size), v["percent"], v["kappa"], v["alpha"], v["ac"],
                     float(counts.max() / y.size), float(np.mean(y == top)), cis)


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
    """Flip rate under a transform minus the identical-rerun flip rate (the noise floor),
    with an item bootstrap interval of the paired difference and an exact McNemar test
    on the items where exactly one of the two flipped."""
    t, r = np.asarray(transform_flips, float), np.asarray(rerun_flips, float)
    if t.shape != r.shape or t.size == 0:
        raise StatsError("flip_excess needs paired, non-empty flip lists")
    diff = t - r
    if np.all(diff == diff[0]) and np.all(np.isin(t, (0, 1))) and np.all(np.isin(r, (0, 1))):
        # no spread for the bootstrap to see: Newcombe's score interval for a difference
        # of two proportions (it ignores the pairing, so it errs on the wide side)
        from judgekit.stats.proportions import wilson_interval

        lt, ht = wilson_interval(int(t.sum()), t.size, level)
        lr, hr = wilson_interval(int(r.sum()), r.size, level)
        ci = Interval(lt - hr, ht - lr)
    else:
        ci = item_bootstrap(lambda i: float(diff[i].mean()), t.size, seed, resamples, level)
    only_t, only_r = int(np.sum((t == 1) & (r == 0))), int(np.sum((t == 0) & (r == 1)))
    p = 1.0 if only_t + only_r == 0 else float(
        binomtest(only_t, only_t + only_r, 0.5).pvalue)
    return Excess(float(t.mean()), float(r.mean()), float(diff.mean()), list(ci), p,
                  int(t.size))


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
    event (0, 0.5 or 1 when an item is judged in both orders)."""
    c = np.asarray(chosen, float)
    if c.size == 0:
        raise StatsError("signed_bias needs at least one item")
    if np.all(c == c[0]) and c[0] in (0.0, 1.0):
        # every item agrees: the bootstrap has no spread to show, so bound the share
        # with a Wilson interval over items instead of reporting certainty
        from judgekit.stats.proportions import wilson_interval

        lo, hi = wilson_interval(int(c.sum()), int(c.size), level)
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


class Corrected(NamedTuple):
    estimate: float
    ci: list[float]
    human_only: float
    human_only_ci: list[float]
    n_labelled: int
    n_items: int


def ppi_mean(judge_all: ArrayLike, judge_labelled: ArrayLike,
             human_labelled: ArrayLike, level: float = 0.90) -> Corrected:
    """Prediction-powered estimate of a mean (a pass rate, or a class share for k-ary
    labels one class at a time): the judge's mean over all N items plus the mean
    human-minus-judge correction on the n labelled items, with the normal interval
    sqrt(Var(judge)/N + Var(human - judge)/n) (Angelopoulos et al. 2023). The human-only
    estimate and its interval, from the same n labels, are returned alongside."""
    f = np.asarray(judge_all, float)
    fl, y = np.asarray(judge_labelled, float), np.asarray(human_labelled, float)
    if fl.shape != y.shape or y.size < 2 or f.size < 2:
        raise StatsError("PPI needs >= 2 labelled items and >= 2 judged items")
    z = float(ndtri(0.5 + level / 2))
    rect = y - fl
    est = float(f.mean() + rect.mean())
    se = math.sqrt(f.var(ddof=1) / f.size + rect.var(ddof=1) / y.size)
    h_se = math.sqrt(y.var(ddof=1) / y.size)
    return Corrected(est, [est - z * se, est + z * se], float(y.mean()),
                     [float(y.mean()) - z * h_se, float(y.mean()) + z * h_se],
                     int(y.size), int(f.size))


def ppi_shares(judge_all: ArrayLike, judge_labelled: ArrayLike, human_labelled: ArrayLike,
               level: float = 0.90) -> dict[int, Corrected]:
    """k-ary labels: the prediction-powered share of every class (one indicator each)."""
    f, fl, y = (np.asarray(v) for v in (judge_all, judge_labelled, human_labelled))
    classes = sorted(set(np.unique(f).tolist()) | set(np.unique(y).tolist()))
    return {int(c): ppi_mean(f == c, fl == c, y == c, level) for c in classes}


def importance_inclusion(weights: ArrayLike, n: int) -> np.ndarray:
    """Inclusion probabilities for Poisson sampling of about ``n`` items with
    probability proportional to ``weights`` (e.g. the judge's instability), capped at 1
    and re-spread so they still sum to n; every item keeps a positive probability."""
    w = np.asarray(weights, float) + 1e-3
    if n <= 0 or w.size == 0:
        raise StatsError("importance sampling needs n >= 1 and at least one item")
    n = min(n, w.size)
    pi = np.zeros_like(w)
    free = np.ones(w.size, bool)
    left = float(n)
    while True:  # cap at 1, give the excess to the rest
        pi[free] = left * w[free] / w[free].sum()
        over = free & (pi >= 1.0)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = n - float(np.sum(~free))
        if left <= 0 or not free.any():
            break
    return np.clip(pi, 1e-9, 1.0)


def ppi_weighted(judge_all: ArrayLike, labelled: ArrayLike, human: ArrayLike,
                 inclusion: ArrayLike, level: float = 0.90) -> Corrected:
    """Prediction-powered mean when the human-labelled items were drawn with known
    inclusion probabilities pi_i (Poisson sampling, e.g. by the judge's uncertainty):
    theta = mean(f) + (1/N) sum_{i in S} (y_i - f_i) / pi_i (Horvitz-Thompson), with
    variance Var(f)/N + (1/N^2) sum_{i in S} (1 - pi_i) (y_i - f_i)^2 / pi_i^2. Unbiased
    for any design with all pi_i > 0; the human-only estimate uses the same weights
    (Horvitz-Thompson mean of y over the N items)."""
    f = np.asarray(judge_all, float)
    idx = np.asarray(labelled, int)
    y = np.asarray(human, float)
    pi = np.asarray(inclusion, float)[idx]
    if y.shape != idx.shape or y.size < 2:
        raise StatsError("weighted PPI needs >= 2 labelled items with their labels")
    n_all = f.size
    z = float(ndtri(0.5 + level / 2))
    rect = y - f[idx]
    est = float(f.mean() + np.sum(rect / pi) / n_all)
    var = f.var(ddof=1) / n_all + float(np.sum((1 - pi) * rect**2 / pi**2)) / n_all**2
    h = float(np.sum(y / pi) / n_all)
    h_var = float(np.sum((1 - pi) * y**2 / pi**2)) / n_all**2
    return Corrected(est, [est - z * math.sqrt(var), est + z * math.sqrt(var)], h,
                     [h - z * math.sqrt(h_var), h + z * math.sqrt(h_var)], int(y.size), n_all)


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
