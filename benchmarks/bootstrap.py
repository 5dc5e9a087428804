"""Collection-level percentile bootstrap: judgekit against scipy.stats.bootstrap.

Data: 10,000 queries x 20 replicas. The interval is the cluster bootstrap of the
macro average (queries resampled with all their replicas), 10,000 resamples, 95%.

Headline, like for like (same data, same work): judgekit's cluster_bootstrap_interval
on the 10,000 per-query replica means against scipy.stats.bootstrap given the same
10,000 means (vectorized, 10,000 percentile resamples): `speedup`.

Separately, the matrix comparison: judgekit's replica_matrix_interval on the
(queries x replicas) matrix (it reduces each query to its replica mean, the sufficient
statistic for this resampling, then resamples those) against scipy on the same matrix
with the 20 replica columns as paired samples (batch=200); scipy then resamples 20x
the data, so this ratio (`matrix_speedup`) mostly measures that reduction, not a faster
bootstrap. Last line: JSON with judgekit_s, scipy_s, speedup, matrix_speedup, peak_mb.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import numpy as np
from _smoke import SMOKE
from scipy import stats

from judgekit.stats.bootstrap import cluster_bootstrap_interval, replica_matrix_interval


def macro_average(*cols: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean([c.mean(axis=axis) for c in cols], axis=0)


def main(queries: int = 10_000, replicas: int = 20, resamples: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    scores = rng.beta(5, 2, size=(queries, replicas))
    means = scores.mean(axis=1)
    # like for like: both given the same per-query means
    tracemalloc.start()
    t = time.perf_counter()
    ours = cluster_bootstrap_interval(means, 0.95, resamples, seed=1)
    jk = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    t = time.perf_counter()
    ref = stats.bootstrap((means,), np.mean, n_resamples=resamples, method="percentile",
                          confidence_level=0.95, random_state=np.random.default_rng(1),
                          vectorized=True, batch=200)
    sp = time.perf_counter() - t
    # the matrix comparison, stated separately
    t = time.perf_counter()
    ours_m = replica_matrix_interval(scores, 0.95, resamples, seed=1)
    jk_m = time.perf_counter() - t
    t = time.perf_counter()
    ref_m = stats.bootstrap(tuple(scores.T), macro_average, n_resamples=resamples,
                            method="percentile", paired=True, confidence_level=0.95,
                            random_state=np.random.default_rng(1), vectorized=True, batch=200)
    sp_m = time.perf_counter() - t
    figures = {"queries": queries, "replicas": replicas, "resamples": resamples,
               "judgekit_s": round(jk, 3), "scipy_s": round(sp, 3),
               "speedup": round(sp / jk, 2), "peak_mb": round(peak, 1),
               "judgekit_ci": [round(ours.lo, 5), round(ours.hi, 5)],
               "scipy_ci": [round(float(ref.confidence_interval.low), 5),
                            round(float(ref.confidence_interval.high), 5)],
               "matrix_judgekit_s": round(jk_m, 3), "matrix_scipy_s": round(sp_m, 3),
               "matrix_speedup": round(sp_m / jk_m, 2),
               "matrix_judgekit_ci": [round(ours_m.lo, 5), round(ours_m.hi, 5)],
               "matrix_scipy_ci": [round(float(ref_m.confidence_interval.low), 5),
                                   round(float(ref_m.confidence_interval.high), 5)]}
    for k, v in figures.items():
        print(f"{k:>24}: {v}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main(200, 5, 400) if SMOKE else main()
