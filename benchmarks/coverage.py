"""Coverage of judgekit's 95% intervals at the sizes people use.

Query level: a query's replica scores are B draws from that query's score
distribution; the interval should cover its true mean. Two score models:
``continuous`` (clip(mu + N(0, 0.15)) with mu ~ U(0.2, 0.9)) and ``binary`` (each
replica succeeds with probability p ~ U(0.5, 1), as with one-interpretation
queries, where all replicas often agree). Intervals: judgekit's Student-t normal
interval, judgekit's query interval (Wilson when every replica scored 0 or 1, else
Student t), and the percentile bootstrap (the paper's). Collection level: Q queries,
the cluster bootstrap over queries, covering the superpopulation mean.

Then issue 33's designs (benchmarks/coverage_edges.py): corrected pass rates at the
edges beside ppi_py and truescore, corrected paired differences, agreement at n = 50
and prevalence 0.9, label plans against the simulated need, and the VB headline over
4-20 queries. ``python benchmarks/coverage.py [REPS]`` (default 1,000 per design).

Prints a table and, on the last line, one JSON object keyed
"<level>/<model>/<interval>/B=<B>[/Q=<Q>]" -> coverage, plus "zero_width_share", and
ppi_coverage_min, ppi_width_over_human_max, paired_ppi_coverage_min,
agreement_coverage_min, plan_error_max, vb_headline_coverage_min (with
vb_headline_nominal) among others.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
from _smoke import argv, pick

from judgekit.methods.vbscore.replicas import query_interval
from judgekit.stats import batched_percentile_intervals, cluster_bootstrap_interval
from judgekit.stats.bootstrap import normal_interval

# This file is named like the `coverage` package, which numba (under ppi_py, an optional
# peer) imports: keep this folder off the import path and load the helper by its file.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

BS = (5, 10, 20, 50)
QS = (10, 30, 100)
QUERIES = pick(2000, 50)  # --smoke: a few queries and collections, the same rows
COLLECTIONS = pick(300, 4)


def draw(model: str, rng: np.random.Generator, params: np.ndarray, b: int) -> np.ndarray:
    if model == "dominant":  # one reading scores about 0.85, a rare one 0.1
        common = rng.random((params.size, b)) < params[:, None]
        return np.where(common, np.clip(0.85 + rng.normal(0, 0.02, (params.size, b)), 0, 1),
                        0.1)
    if model == "heavy":  # heavy-tailed scores (t on 1.5 df) around mu
        return np.clip(params[:, None] + 0.05 * rng.standard_t(1.5, (params.size, b)), 0, 1)
    if model == "continuous":
        return np.clip(params[:, None] + rng.normal(0, 0.15, (params.size, b)), 0, 1)
    return (rng.random((params.size, b)) < params[:, None]).astype(float)


def params_of(model: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if model == "dominant":  # the common reading's share
        return rng.uniform(0.85, 0.97, n)
    if model == "heavy":
        return rng.uniform(0.3, 0.7, n)
    return rng.uniform(0.2, 0.9, n) if model == "continuous" else rng.uniform(0.5, 1.0, n)


def true_mean(model: str, params: np.ndarray) -> np.ndarray:
    if model == "binary":
        return params
    if model == "dominant":  # E over the clip is exact to 1e-9 at 0.85 +- 0.02
        return params * 0.85 + (1 - params) * 0.1
    if model == "heavy":
        t = 0.05 * np.random.default_rng(7).standard_t(1.5, 400_000)
        grid = np.linspace(0.3, 0.7, 401)
        means = np.array([np.clip(m + t, 0, 1).mean() for m in grid])
        return np.interp(params, grid, means)
    # E[clip(mu + e)] by quadrature over e ~ N(0, 0.15)
    z = np.linspace(-6, 6, 801)
    w = np.exp(-z**2 / 2)
    w /= w.sum()
    return (np.clip(params[:, None] + 0.15 * z[None, :], 0, 1) * w).sum(axis=1)


def main() -> None:
    t0 = time.perf_counter()
    rng = np.random.default_rng(2026)
    figs: dict[str, float] = {}
    rows = []
    for model in ("continuous", "binary", "dominant", "heavy"):
        for b in (BS if model in ("continuous", "binary") else (5, 20)):
            p = params_of(model, rng, QUERIES)
            x = draw(model, rng, p, b)
            truth = true_mean(model, p)
            norm = np.array([normal_interval(r) for r in x])
            ours = np.array([query_interval(r) for r in x])
            figs[f"query_width/{model}/judgekit/B={b}"] = float(np.mean(ours[:, 1] - ours[:, 0]))
            perc = batched_percentile_intervals(x, 0.95, 1000, rng)
            for name, ci in (("t", norm), ("judgekit", ours), ("percentile", perc)):
                cov = float(np.mean((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
                figs[f"query/{model}/{name}/B={b}"] = cov
            zero = float(np.mean(norm[:, 1] - norm[:, 0] == 0))
            figs[f"zero_width_share/{model}/B={b}"] = zero
            cov_t = figs[f"query/{model}/t/B={b}"]
            rows.append(f"query      {model:<10} B={b:<3}        t {cov_t:.3f}"
                        f"  judgekit {figs[f'query/{model}/judgekit/B={b}']:.3f}"
                        f"  percentile {figs[f'query/{model}/percentile/B={b}']:.3f}"
                        f"  zero-width {zero:.3f}")
        if model not in ("continuous", "binary"):
            continue
        superpop = float(true_mean(model, params_of(model, np.random.default_rng(0),
                                                     20_000)).mean())
        for q in QS:
            for b in (5, 20):
                hits = 0
                for _ in range(COLLECTIONS):
                    x = draw(model, rng, params_of(model, rng, q), b)
                    ci = cluster_bootstrap_interval(x.mean(axis=1), 0.95, 1000, rng)
                    hits += ci.lo <= superpop <= ci.hi
                key = f"collection/{model}/cluster/B={b}/Q={q}"
                figs[key] = hits / COLLECTIONS
                rows.append(f"collection {model:<10} B={b:<3} Q={q:<4} cluster bootstrap "
                            f"{figs[key]:.3f}")
    spec = importlib.util.spec_from_file_location("coverage_edges", _HERE / "_coverage_edges.py")
    assert spec is not None and spec.loader is not None
    edges = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(edges)
    args = argv()
    more, edge_rows = edges.run(int(args[0]) if args else pick(1000, 10))
    figs.update(more)
    rows += edge_rows
    print("\n".join(rows))
    figs["vb_query_coverage_min"] = min(v for k, v in figs.items()
                                        if k.startswith("query/") and "/judgekit/" in k)
    figs["wall_s"] = round(time.perf_counter() - t0, 1)
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
