"""Statistics of graded judgements (scores on a scale), pure functions on arrays:
rank and linear correlations, quadratic-weighted kappa, Krippendorff's alpha (interval
and ordinal) and a percentile bootstrap that resamples whole clusters."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

__all__ = ["ClusterBootstrap", "jackknife_interval", "kendall", "krippendorff_alpha",
           "pearson", "spearman", "weighted_kappa"]


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.spearmanr(x, y).statistic)


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.kendalltau(x, y, variant="b").statistic)


def pearson(x: np.ndarray, y: np.ndarray) -> float:
    return float(stats.pearsonr(x, y).statistic)


def weighted_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Quadratic-weighted Cohen's kappa over the categories either rater used (as
    scikit-learn's ``cohen_kappa_score(weights="quadratic")``: the weight of a cell is
    the squared distance of the categories' ranks over (k - 1)^2)."""
    labels = np.unique(np.concatenate([a, b]))
    k = labels.size
    if k < 2:
        return float("nan")
    ia, ib = np.searchsorted(labels, a), np.searchsorted(labels, b)
    conf = np.zeros((k, k))
    np.add.at(conf, (ia, ib), 1)
    expected = np.outer(conf.sum(1), conf.sum(0)) / conf.sum()
    idx = np.arange(k)
    w = (idx[:, None] - idx[None, :]) ** 2 / (k - 1) ** 2
    return float(1 - (w * conf).sum() / (w * expected).sum())


def krippendorff_alpha(data: np.ndarray, metric: str) -> float:
    """Krippendorff's alpha of reliability data (coders x units, NaN: missing) with the
    interval (squared difference) or ordinal (squared count between the values) metric,
    from the coincidence matrix (Krippendorff 2011)."""
    values = np.unique(data[~np.isnan(data)])
    k = values.size
    if k < 2:
        return float("nan")
    o = np.zeros((k, k))
    for u in data.T:
        got = u[~np.isnan(u)]
        m = got.size
        if m < 2:
            continue
        idx = np.searchsorted(values, got)
        c = np.bincount(idx, minlength=k).astype(float)
        o += (np.outer(c, c) - np.diag(c)) / (m - 1)
    n_c = o.sum(1)
    n = n_c.sum()
    if metric == "interval":
        d = (values[:, None] - values[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        lo = np.minimum.outer(np.arange(k), np.arange(k))
        hi = np.maximum.outer(np.arange(k), np.arange(k))
        d = (cum[hi] - np.where(lo > 0, cum[lo - 1], 0) - (n_c[lo] + n_c[hi]) / 2) ** 2
    expected = (np.outer(n_c, n_c) * d).sum() / (n - 1)
    return float(1 - (o * d).sum() / expected) if expected > 0 else float("nan")


def jackknife_interval(fn: Callable[[np.ndarray], float], cluster: np.ndarray,
                       level: float, fisher: bool = False, lo: float = -1.0,
                       hi: float = 1.0) -> list[float] | None:
    """A leave-one-cluster-out jackknife interval with Student's t at G - 1 degrees of
    freedom (G clusters): estimate +/- t * SE_jack, on Fisher's z scale for a
    correlation (``fisher``; mapped back with tanh), clipped to [lo, hi]. Small samples
    and few clusters widen it through t, where a percentile bootstrap is too narrow."""
    codes = np.unique(cluster)
    g = codes.size
    if g < 3:
        return None
    every = np.arange(cluster.size)

    def on_scale(v: float) -> float:
        return float(np.arctanh(np.clip(v, -0.999999, 0.999999))) if fisher else v

    with np.errstate(all="ignore"):
        full = on_scale(fn(every))
        leave = np.array([on_scale(fn(every[cluster != c])) for c in codes])
    leave = leave[np.isfinite(leave)]
    if not math.isfinite(full) or leave.size < 3:
        return None
    se = math.sqrt((leave.size - 1) / leave.size * float(np.sum((leave - leave.mean()) ** 2)))
    t = float(stats.t.ppf(0.5 + level / 2, leave.size - 1))
    a, b = full - t * se, full + t * se
    if fisher:
        a, b = math.tanh(a), math.tanh(b)
    return [float(min(max(a, lo), hi)), float(min(max(b, lo), hi))]


class ClusterBootstrap:
    """Percentile intervals of a statistic over resampled clusters."""

    def __init__(self, cluster: np.ndarray, level: float, resamples: int,
                 rng: np.random.Generator) -> None:
        self.level = level
        codes = np.unique(cluster)
        members = [np.flatnonzero(cluster == c) for c in codes]
        draws = rng.integers(0, len(members), size=(resamples, len(members)))
        self.samples = [np.concatenate([members[j] for j in d]) for d in draws]

    def interval(self, fn: Callable[[np.ndarray], float], lo: float = -math.inf,
                 hi: float = math.inf) -> list[float] | None:
        got = []
        for idx in self.samples:
            with np.errstate(all="ignore"):
                try:
                    v = fn(idx)
                except (ValueError, ZeroDivisionError, FloatingPointError):
                    continue
            if math.isfinite(v):
                got.append(v)
        if len(got) < len(self.samples) // 2:
            return None
        a = (1 - self.level) / 2
        q = np.quantile(got, [a, 1 - a])
        return [float(min(max(q[0], lo), hi)), float(min(max(q[1], lo), hi))]
