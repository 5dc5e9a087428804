"""Section D: Monte Carlo replicas, per-query and collection-level aggregation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from judgekit.core import seeds
from judgekit.core.errors import StatsError
from judgekit.methods.vbscore.metric import vb_from
from judgekit.stats import (
    Interval,
    paired_t_test,
)
from judgekit.stats.bootstrap import row_quantiles


@dataclass
class QueryAggregate:
    query_id: str
    replicas: int
    es: float
    vb: dict[float, float]
    vb_of_mean_es: dict[float, float]
    es_ci: Interval
    vb_ci: dict[float, Interval]
    vb_ci_normal: dict[float, Interval]
    accuracy: float | None = None
    replicas_agree: bool = False  # every replica gave the same score
    # the paper's percentile bootstrap, kept only where it covers (B >= 20 replicas with
    # graded scores: 0.93 at nominal 0.95; with fewer, or 0/1 scores, 0.65-0.91)
    vb_ci_bootstrap: dict[float, Interval] | None = None


BOOTSTRAP_MIN_REPLICAS = 20  # below it the percentile bootstrap under-covers


@dataclass
class CollectionAggregate:
    n_queries: int
    es: float
    vb: dict[float, float]
    es_ci: Interval
    vb_ci: dict[float, Interval]
    t_test: dict[float, dict[str, float | None | str]] = field(default_factory=dict)
    accuracy: float | None = None


def shared_percentile_intervals(stats: np.ndarray, level: float, resamples: int,
                                rng: np.random.Generator) -> list[Interval]:
    """Percentile bootstrap intervals of the mean of each row of ``stats`` (S, B), all
    rows resampled with the same replica indices. A row whose values all agree gets a
    zero-width interval (flagged by the caller as no spread seen)."""
    s = np.asarray(stats, float)
    if s.ndim != 2 or s.shape[1] < 1:
        raise StatsError("need a (statistics, replicas) matrix")
    b = s.shape[1]
    a = (1 - level) / 2
    out = [Interval(float(r[0]), float(r[0])) if np.all(r == r[0]) else None for r in s]
    todo = [i for i, iv in enumerate(out) if iv is None]
    if todo:
        rows = max(1, 4_000_000 // (b * len(todo)))
        means = np.empty((len(todo), resamples))
        for start in range(0, resamples, rows):
            stop = min(resamples, start + rows)
            idx = rng.integers(0, b, size=(stop - start, b))
            means[:, start:stop] = s[todo][:, idx].mean(axis=2)
        qs = row_quantiles(means, [a, 1 - a], overwrite=True)
        for k, i in enumerate(todo):
            out[i] = Interval(float(qs[0][k]), float(qs[1][k]))
    return [iv for iv in out if iv is not None]


def batch_query_intervals(stats: Sequence[np.ndarray], level: float, resamples: int,
                          seed: int, chunk_elems: int = 8_000_000) -> list[list[Interval]]:
    """Percentile bootstrap intervals for many queries at once.

    ``stats[q]`` is query q's (S, B) matrix (ES and each VB_alpha over its B replicas).
    Every query with B replicas is resampled with one multinomial count matrix drawn
    from (seed, B), so a query's intervals depend only on its own scores and the seed,
    not on file order or the other queries; the resampled means of all queries are then
    one matrix product. A row whose values all agree gets a zero-width interval."""
    out: list[list[Interval]] = [[] for _ in stats]
    by_b: dict[int, list[int]] = {}
    for q, m in enumerate(stats):
        by_b.setdefault(int(m.shape[1]), []).append(q)
    a = (1 - level) / 2
    for b, qs in sorted(by_b.items()):
        rng = seeds.rng("vbscore.bootstrap", seed, b)
        draws = rng.multinomial(b, np.full(b, 1.0 / b), size=resamples)  # (R, B) counts
        # With few replicas the R draws repeat a handful of count patterns (126 for B = 5):
        # the bootstrap distribution is then those patterns' means with their frequencies.
        patterns, freq = np.unique(draws, axis=0, return_counts=True)
        s_rows = int(stats[qs[0]].shape[0])
        width = len(patterns) if 4 * len(patterns) <= resamples else resamples
        step = max(1, chunk_elems // (width * s_rows))
        for start in range(0, len(qs), step):
            block = qs[start:start + step]
            x = np.concatenate([stats[q] for q in block])  # (len*S, B)
            if width < resamples:
                lo, hi = pattern_quantiles(x, patterns, freq, (a, 1 - a))
            else:
                lo, hi = row_quantiles(x @ (draws.T / b), [a, 1 - a], overwrite=True)
            same = np.all(x == x[:, :1], axis=1)
            lo = np.where(same, x[:, 0], lo)
            hi = np.where(same, x[:, 0], hi)
            for k, q in enumerate(block):
                rows = range(k * s_rows, (k + 1) * s_rows)
                out[q] = [Interval(float(lo[r]), float(hi[r])) for r in rows]
    return out


def pattern_quantiles(x: np.ndarray, patterns: np.ndarray, freq: np.ndarray,
                      qs: Sequence[float]) -> list[np.ndarray]:
    """numpy's default (linear) quantiles of each row's bootstrap means, where resample
    pattern u (counts over the B columns) occurred ``freq[u]`` times: the same numbers as
    expanding all R resamples, at the cost of the U distinct patterns."""
    b = x.shape[1]
    r = int(freq.sum())
    means = x @ (patterns.T / b)  # (rows, U)
    order = np.argsort(means, axis=1, kind="stable")
    vals = np.take_along_axis(means, order, axis=1)
    cum = np.cumsum(freq[order], axis=1)  # how many resamples are <= each sorted value
    rows = np.arange(x.shape[0])
    out = []
    for q in qs:
        h = (r - 1) * q
        i0 = int(np.floor(h))
        frac = h - i0
        v0 = vals[rows, (cum > i0).argmax(axis=1)]
        v1 = vals[rows, (cum > min(i0 + 1, r - 1)).argmax(axis=1)]
        out.append(v0 + frac * (v1 - v0))
    return out


QUERY_GRID = 401  # candidate means over the range (the interval widens by one step)


def query_interval(values: np.ndarray, level: float = 0.95, low: float = 0.0,
                   high: float = 1.0) -> Interval:
    """judgekit's query-level interval of the mean replica score: a hedged-betting
    interval for a bounded mean (judgekit.stats.label_intervals.betting_mean_interval,
    on the score's range [low, high]). It covers at its level for any score
    distribution on the range, including the case t and Wilson miss: one reading
    dominates and a handful of replicas never shows the rare one (they covered 0.44 at
    5 replicas and 0.81 at 20; benchmarks/coverage.py)."""
    from judgekit.stats.label_intervals import betting_mean_interval

    return betting_mean_interval(np.asarray(values, float), level, low, high, QUERY_GRID)


def aggregate_query(query_id: str, es_reps: Sequence[float],
                    vb_reps: Mapping[float, Sequence[float]], *, level: float = 0.95,
                    resamples: int = 10_000, rng: np.random.Generator | int = 0,
                    correct: Sequence[bool] | None = None,
                    variance_of_mean: float | None = None,
                    clip: bool = False, intervals: list[Interval] | None = None
                    ) -> QueryAggregate:
    """Mean of replica VB (VB_hat), VB of the mean ES (Jensen), and their intervals:
    judgekit's query interval (:func:`query_interval`, a bounded-mean betting interval;
    ``vb_ci_normal`` is the same, kept for old readers), and the percentile
    bootstrap only where it covers (:func:`bootstrap_covers`).

    ``variance_of_mean`` is the variance VB of the mean ES uses: None for the
    Bernoulli ES(1 - ES); for the spread variance, the mean of the replicas' spread
    variances. ``clip`` clips it to [0, 1] as the per-replica VBs were."""
    es = np.asarray(es_reps, float)
    if es.size < 1:
        raise StatsError(f"query {query_id}: no replica scores")
    alphas = list(vb_reps)
    stats = np.vstack([es, *[np.asarray(vb_reps[a], float) for a in alphas]])
    boot = None
    if bootstrap_covers(es):
        # One set of resample indices serves every statistic of the query (ES and each
        # VB_alpha): the same replicas are resampled together.
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        cis = intervals if intervals is not None else \
            shared_percentile_intervals(stats, level, resamples, gen)
        boot = dict(zip(alphas, cis[1:]))
    vb_ci, vb_mean, vb_jensen = {}, {}, {}
    for j, a in enumerate(alphas, start=1):
        v = stats[j]
        vb_mean[a] = float(v.mean())
        m = float(es.mean())
        var = m * (1 - m) if variance_of_mean is None else variance_of_mean
        vb_jensen[a] = vb_from(m, var, a, clip)
        vb_ci[a] = query_interval(v, level, -a / 2, 1.0)
    acc = float(np.mean(correct)) if correct is not None and len(correct) else None
    agree = bool(np.all(es == es[0])) and all(
        np.all(np.asarray(v, float) == np.asarray(v, float)[0]) for v in vb_reps.values())
    return QueryAggregate(query_id, int(es.size), float(es.mean()), vb_mean, vb_jensen,
                          query_interval(es, level), vb_ci, dict(vb_ci), acc, agree, boot)


def bootstrap_covers(es: Sequence[float] | np.ndarray) -> bool:
    """Whether the percentile bootstrap covers for a query with these replica scores:
    at least BOOTSTRAP_MIN_REPLICAS of them, not all 0/1 (benchmarks/coverage.py)."""
    v = np.asarray(es, float)
    return v.size >= BOOTSTRAP_MIN_REPLICAS and not bool(np.all((v == 0) | (v == 1)))


def aggregate_collection(queries: Sequence[QueryAggregate], *, level: float = 0.95,
                         resamples: int = 10_000, seed: int = 0) -> CollectionAggregate:
    """Macro average over queries (the query is the unit) with
    :func:`judgekit.stats.bootstrap.bounded_mean_interval`: Student t with the ends of
    the range as pseudo-observations (ES in [0, 1]; VB_alpha in [-alpha/2, 1], since the
    variance is at most 1/4), which covers from 4 queries on where the percentile
    bootstrap gave VB 1.000 [1.000, 1.000] for 4 agreeing queries; paired t-test of
    per-query VB against ES for each alpha. ``resamples`` and ``seed`` are kept for
    callers."""
    from judgekit.stats.bootstrap import bounded_mean_interval

    if not queries:
        raise StatsError("no queries to aggregate")
    es = np.array([q.es for q in queries])
    alphas = list(queries[0].vb)
    vbs = {a: np.array([q.vb[a] for q in queries]) for a in alphas}
    es_ci = bounded_mean_interval(es, 0.0, 1.0, level)
    vb, vb_ci, tests = {}, {}, {}
    for a in alphas:
        v = vbs[a]
        vb[a] = float(v.mean())
        vb_ci[a] = bounded_mean_interval(v, min(-a / 2, float(v.min())), 1.0, level) \
            if a > 0 else bounded_mean_interval(v, 0.0, 1.0, level)
        t = paired_t_test(v, es)
        tests[a] = {"t": t.t, "p_value": t.p_value, "note": t.note}
    accs = [q.accuracy for q in queries if q.accuracy is not None]
    return CollectionAggregate(len(queries), float(es.mean()), vb, es_ci, vb_ci,
                               tests, float(np.mean(accs)) if accs else None)
