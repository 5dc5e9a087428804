"""Confidence intervals: normal and percentile bootstrap, vectorised and chunked.

Every function takes an explicit ``numpy.random.Generator`` or seed. Degenerate
samples (all values equal) give a zero-width interval, not NaN.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from judgekit.core.errors import StatsError

Seed = int | np.random.Generator | None


class Interval(NamedTuple):
    lo: float
    hi: float

    def as_list(self) -> list[float]:
        return [self.lo, self.hi]


def rng_of(seed: Seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _check(x: np.ndarray, level: float) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise StatsError("an interval needs a non-empty 1-D sample")
    if np.isnan(x).any():
        raise StatsError("sample contains NaN")
    if not 0.0 < level < 1.0:
        raise StatsError(f"confidence level {level} must lie in (0, 1)")
    return x


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """Student t quantile, cached: scipy's ppf costs ~100 us a call, and a collection
    asks for the same (level, replicas) tens of thousands of times. ``stdtrit`` is what
    ``scipy.stats.t.ppf`` evaluates (the same numbers) without importing scipy.stats."""
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


PARALLEL_ELEMS = 4_000_000  # a selection this large is split over the cores


def _partition_rows(x: np.ndarray, kth: list[int]) -> None:
    """``x.partition(kth, axis=1)`` in place; a large matrix's rows split over threads
    (numpy releases the GIL while it selects, and each row's result depends on that row
    alone, so the numbers are the same as one call's; no copy is made)."""
    workers = min(4, os.cpu_count() or 1, x.shape[0])
    if workers < 2 or x.size < PARALLEL_ELEMS:
        x.partition(kth, axis=1)
        return
    from concurrent.futures import ThreadPoolExecutor

    bounds = np.linspace(0, x.shape[0], workers + 1).astype(int)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda i: x[bounds[i]:bounds[i + 1]].partition(kth, axis=1),
                      range(workers)))


def row_quantiles(m: np.ndarray, qs: Sequence[float], *, overwrite: bool = False
                  ) -> list[np.ndarray]:
    """``np.quantile(m, qs, axis=1)`` (its default, linear method) as a list of rows,
    bit for bit, from one selection along each contiguous row, split over the cores when
    large. ``overwrite`` lets it reorder ``m`` in place (a temporary: no copy is made)."""
    x = np.ascontiguousarray(m, dtype=float) if overwrite else \
        np.array(m, dtype=float, order="C", copy=True)
    n = x.shape[1]
    if n == 0:
        raise StatsError("quantiles of an empty row")
    if np.isnan(x).any():  # numpy's NaN rules: leave them to numpy
        return list(np.quantile(x, list(qs), axis=1))
    at = [(n - 1) * float(q) for q in qs]
    lows = [min(n - 1, max(0, math.floor(h))) for h in at]
    kth = sorted({k for lo in lows for k in (lo, min(n - 1, lo + 1))})
    _partition_rows(x, kth)
    out = []
    for h, lo in zip(at, lows):
        a, b, t = x[:, lo], x[:, min(n - 1, lo + 1)], h - lo
        d = b - a  # numpy's _lerp: from the nearer end, so t = 1 gives b exactly
        out.append(b - d * (1 - t) if t >= 0.5 else a + d * t)
    return out


def shared_bootstrap_intervals(rows: np.ndarray, level: float = 0.95,
                               resamples: int = 10_000, seed: Seed = 0,
                               chunk_elems: int = 8_000_000) -> list[Interval]:
    """Percentile bootstrap intervals of the mean of each row of ``rows`` (S, n), every row
    resampled with the same column indices: e.g. ES and each VB_alpha of a collection,
    resampling queries once for all of them. A constant row gives a zero-width interval."""
    x = np.asarray(rows, float)
    if x.ndim != 2 or x.shape[1] == 0:
        raise StatsError("need a (statistics, n) matrix with n >= 1")
    if np.isnan(x).any():
        raise StatsError("sample contains NaN")
    rng = rng_of(seed)
    s, n = x.shape
    means = np.empty((s, resamples))
    step = max(1, chunk_elems // (n * s))
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int64)
        means[:, start:stop] = np.take(x, idx, axis=1).sum(axis=2) / n
    a = (1 - level) / 2
    lo, hi = row_quantiles(means, [a, 1 - a], overwrite=True)
    return [Interval(float(r[0]), float(r[0])) if np.all(r == r[0])
            else Interval(float(lo[i]), float(hi[i])) for i, r in enumerate(x)]


def normal_interval(x: np.ndarray, level: float = 0.95) -> Interval:
    """mean ± t_{n-1, 1-δ/2} · sd / sqrt(n) (sample sd, ddof=1).

    Student's t, not z: with the 5-20 replicas people use, z covered 0.79 at B = 5
    (see benchmarks/coverage.py for the table)."""
    x = _check(x, level)
    if np.all(x == x[0]):
        return Interval(float(x[0]), float(x[0]))
    m = float(x.mean())
    if x.size < 2:
        return Interval(m, m)
    half = float(t_quantile(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    return Interval(m - half, m + half)


def pseudo_variance(x: np.ndarray, lo: float, hi: float) -> float:
    """Sample variance of ``x`` with two pseudo-observations, ``lo`` and ``hi`` (the ends
    of the values' range), of weight 1/2 each: Agresti and Min's (2005) one discordant
    pseudo-pair for paired proportions, for any bounded mean. It keeps a variance when
    every value agrees and fades as n grows."""
    vals = np.concatenate([np.asarray(x, float), [lo, hi]])
    w = np.concatenate([np.ones(len(vals) - 2), [0.5, 0.5]])
    m = float(np.sum(w * vals) / w.sum())
    return float(np.sum(w * (vals - m) ** 2) / (w.sum() - 1))


def bounded_mean_interval(x: np.ndarray, lo: float, hi: float, level: float = 0.95
                          ) -> Interval:
    """Interval for the mean of values known to lie in [lo, hi] from few of them:
    mean +- t_{n-1} sqrt(pseudo_variance / n), clipped to [lo, hi]. Unlike the
    percentile bootstrap (0.65-0.84 at 4-10 values) or the plain t interval, it keeps
    a width when all values agree (4 queries at VB 1.0 give [0.43, 1], not [1, 1];
    a difference of two identical runs over 100 queries gives +-0.02, not [-1, 1]);
    coverage is in benchmarks/coverage.py (``vb_headline_coverage_min``)."""
    v = _check(np.asarray(x, float), level)
    if not lo < hi:
        raise StatsError(f"bounded mean: range [{lo}, {hi}] is empty")
    m = float(v.mean())
    q = t_quantile(0.5 + level / 2, max(1, v.size - 1))
    half = float(q * math.sqrt(pseudo_variance(v, lo, hi) / v.size))
    return Interval(max(lo, m - half), min(hi, m + half))


def bootstrap_means(x: np.ndarray, resamples: int, rng: np.random.Generator,
                    chunk_elems: int = 4_000_000) -> np.ndarray:
    """Means of ``resamples`` bootstrap resamples of ``x``, in memory-bounded chunks."""
    n = x.size
    out = np.empty(resamples)
    rows = max(1, chunk_elems // n)
    for start in range(0, resamples, rows):
        stop = min(resamples, start + rows)
        idx = rng.integers(0, n, size=(stop - start, n), dtype=np.int64)
        out[start:stop] = np.take(x, idx).sum(axis=1)
    return out / n


def percentile_interval(x: np.ndarray, level: float = 0.95, resamples: int = 10_000,
                        seed: Seed = 0) -> Interval:
    """Percentile bootstrap interval of the mean (the paper's 95% interval)."""
    x = _check(x, level)
    if np.all(x == x[0]):
        return Interval(float(x[0]), float(x[0]))
    means = bootstrap_means(x, resamples, rng_of(seed))
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return Interval(float(lo), float(hi))


def batched_percentile_intervals(samples: np.ndarray, level: float = 0.95,
                                 resamples: int = 2_000, seed: Seed = 0) -> np.ndarray:
    """Percentile intervals of the mean for each row of a (runs, n) array at once."""
    x = np.asarray(samples, dtype=float)
    rng = rng_of(seed)
    runs, n = x.shape
    out = np.empty((runs, 2))
    a = (1 - level) / 2
    step = max(1, 4_000_000 // (resamples * n))
    for s in range(0, runs, step):
        block = x[s : s + step]
        idx = rng.integers(0, n, size=(block.shape[0], resamples, n))
        means = np.take_along_axis(block[:, None, :], idx, axis=2).mean(axis=2)
        out[s : s + step] = np.column_stack(row_quantiles(means, [a, 1 - a], overwrite=True))
    return out


def cluster_bootstrap_interval(per_query: np.ndarray, level: float = 0.95,
                               resamples: int = 10_000, seed: Seed = 0) -> Interval:
    """Collection-level interval of a macro average: resample queries, each with
    all of its replicas (replicas are nested within queries, so the query is the
    independent unit). ``per_query`` holds each query's replica-mean score: the
    resampled macro average depends on a query only through that mean, so
    resampling the (Q,) means gives the same interval as resampling (Q, B) rows
    at 1/B of the work."""
    return percentile_interval(per_query, level, resamples, seed)


def replica_matrix_interval(scores: np.ndarray, level: float = 0.95, resamples: int = 10_000,
                            seed: Seed = 0) -> Interval:
    """Cluster bootstrap from a (queries, replicas) matrix (NaN marks a missing replica)."""
    s = np.asarray(scores, float)
    if s.ndim != 2:
        raise StatsError("need a (queries, replicas) matrix")
    return cluster_bootstrap_interval(np.nanmean(s, axis=1), level, resamples, seed)
