"""Intervals for rates: Wilson score intervals for proportions, and a seeded
percentile bootstrap for statistics of paired labels (accuracy, F1)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.special import ndtri

from judgekit.errors import StatsError
from judgekit.stats.bootstrap import Interval, Seed, rng_of


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    Unlike the Wald interval it never leaves [0, 1] and keeps a width at 0/n and
    n/n; e.g. 0 of 10 gives [0, 0.278] at 95%.
    """
    if n <= 0:
        raise StatsError("a rate needs at least one trial (n >= 1)")
    if not 0 <= successes <= n:
        raise StatsError(f"successes {successes} must lie in 0..{n}")
    if not 0.0 < level < 1.0:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    z = float(ndtri(0.5 + level / 2.0))
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(lo, hi)


def rate_with_interval(flags: Sequence[bool], level: float = 0.95
                       ) -> tuple[float | None, list[float] | None, int]:
    """(rate, [lo, hi], n) of a list of booleans; (None, None, 0) when empty."""
    n = len(flags)
    if n == 0:
        return None, None, 0
    k = int(sum(bool(f) for f in flags))
    return k / n, wilson_interval(k, n, level).as_list(), n


def paired_bootstrap_interval(truth: Sequence[int], pred: Sequence[int],
                              metric: Callable[[np.ndarray, np.ndarray], float],
                              seed: Seed, resamples: int = 2000, level: float = 0.95
                              ) -> Interval:
    """Percentile bootstrap of ``metric(truth, pred)`` resampling items (pairs)."""
    t, p = np.asarray(truth), np.asarray(pred)
    if t.size == 0 or t.size != p.size:
        raise StatsError("paired bootstrap needs equal, non-empty label lists")
    rng = rng_of(seed)
    idx = rng.integers(0, t.size, size=(resamples, t.size))
    stats = np.array([metric(t[i], p[i]) for i in idx])
    a = (1.0 - level) / 2.0
    return Interval(float(np.quantile(stats, a)), float(np.quantile(stats, 1.0 - a)))


def accuracy(t: np.ndarray, p: np.ndarray) -> float:
    return float(np.mean(t == p))


def binary_f1(t: np.ndarray, p: np.ndarray) -> float:
    tp = float(np.sum((t == 1) & (p == 1)))
    denom = float(np.sum(t == 1) + np.sum(p == 1))
    return 0.0 if denom == 0 else 2.0 * tp / denom
