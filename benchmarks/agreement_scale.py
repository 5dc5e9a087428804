"""Agreement at scale: `judgekit.stats.agreement.agreement` (percent, kappa, alpha, AC1
with 2,000-draw intervals) on n = 3,200 judge-human label pairs, as on the recorded
verdicts of a real judge, and on 10x that, with and without question clusters.

The statistics come from category counts and the intervals from a Dirichlet posterior
on the k x k table, so the cost does not grow with n beyond reading the labels (the
(2n)^2 coincidence matrix of the old alpha took about 8 minutes per judge here).
The last line is one JSON object: n, seconds_2000_resamples (ungrouped, at n = 3,200),
growth_10x (time at 32,000 over time at 3,200), and the grouped figures.
"""

from __future__ import annotations

import json
import time

import numpy as np
from _smoke import pick

from judgekit.stats.agreement import agreement

N = pick(3200, 320)  # --smoke: a tenth


def labels(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    human = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    judge = np.where(rng.random(n) < 0.8, human, rng.choice(3, n))
    return judge, human, (np.arange(n) // 4).tolist()  # four answers per question


def timed(n: int, grouped: bool, repeats: int = 3) -> float:
    j, h, g = labels(n, n)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        agreement(j, h, seed=1, resamples=2000, level=0.95, groups=g if grouped else None)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    agreement(*labels(100, 0)[:2])  # warm imports
    small, large = timed(N, False), timed(10 * N, False)
    g_small, g_large = timed(N, True), timed(10 * N, True)
    print(f"n = {N:,}: {small:.3f} s; n = {10 * N:,}: {large:.3f} s (x{large / small:.2f})")
    print(f"grouped by question: {g_small:.3f} s; {g_large:.3f} s (x{g_large / g_small:.2f})")
    print(json.dumps({"n": N, "seconds_2000_resamples": round(small, 4),
                      "growth_10x": round(large / small, 3),
                      "grouped_seconds_2000_resamples": round(g_small, 4),
                      "grouped_growth_10x": round(g_large / g_small, 3)}))


if __name__ == "__main__":
    main()
