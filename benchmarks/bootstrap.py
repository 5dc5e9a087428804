"""Collection-level percentile bootstrap: judgekit against scipy.stats.bootstrap.

Data: 10,000 queries x 20 replicas. The interval is the cluster bootstrap of the
macro average (queries resampled with all their replicas), 10,000 resamples, 95%.
- judgekit: replica_matrix_interval(scores): reduces each query to its replica
  mean (the sufficient statistic for this resampling) and resamples those, in
  chunks of 4M indices (bounded memory).
- scipy: stats.bootstrap on the same (queries x replicas) data, the 20 replica
  columns as paired samples (paired=True resamples queries), statistic = macro
  average; batch=200 bounds its memory too.
- scipy_means_s: scipy given the per-query means directly (one-level), for reference.
Last line: JSON with judgekit_s, scipy_s, speedup, peak_mb.
"""

from __future__ import annotations

import json
import time
import tracemalloc

import numpy as np
from scipy import stats

from judgekit.stats.bootstrap import replica_matrix_interval


def macro_average(*cols: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean([c.mean(axis=axis) for c in cols], axis=0)


def main(queries: int = 10_000, replicas: int = 20, resamples: int = 10_000) -> None:
    rng = np.random.default_rng(0)
    scores = rng.beta(5, 2, size=(queries, replicas))
    tracemalloc.start()
    t = time.perf_counter()
    ours = replica_matrix_interval(scores, 0.95, resamples, seed=1)
    jk = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    t = time.perf_counter()
    ref = stats.bootstrap(tuple(scores.T), macro_average, n_resamples=resamples,
                          method="percentile", paired=True, confidence_level=0.95,
                          random_state=np.random.default_rng(1), vectorized=True, batch=200)
    sp = time.perf_counter() - t
    t = time.perf_counter()
    stats.bootstrap((scores.mean(axis=1),), np.mean, n_resamples=resamples,
                    method="percentile", random_state=np.random.default_rng(1))
    sp_means = time.perf_counter() - t
    figures = {"queries": queries, "replicas": replicas, "resamples": resamples,
               "judgekit_s": round(jk, 3), "scipy_s": round(sp, 3),
               "speedup": round(sp / jk, 2), "peak_mb": round(peak, 1),
               "scipy_means_s": round(sp_means, 3),
               "speedup_vs_scipy_means": round(sp_means / jk, 2),
               "judgekit_ci": [round(ours.lo, 5), round(ours.hi, 5)],
               "scipy_ci": [round(float(ref.confidence_interval.low), 5),
                            round(float(ref.confidence_interval.high), 5)]}
    for k, v in figures.items():
        print(f"{k:>24}: {v}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
