"""Paired differences of two runs on the same items, the building blocks of every
method's ``compare`` hook: a paired rate difference (Newcombe's interval with the exact
McNemar test), a paired mean difference (percentile bootstrap, paired t test), the
chance-corrected agreement of two runs' labels, records matched by a key."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from judgekit.payload import Json
from judgekit.spec import CompareRow, PairAgreement

__all__ = ["agreement", "mean_row", "paired_rate", "rows_by"]


def rows_by(rows: Iterable[Json], key: Callable[[Json], str]) -> dict[str, Json]:
    """Records by ``key`` (the first of each key)."""
    out: dict[str, Json] = {}
    for rec in rows:
        out.setdefault(key(rec), rec)
    return out


def paired_rate(name: str, pairs: list[tuple[float, float]], level: float) -> CompareRow:
    """B - A of paired 0/1 outcomes: Newcombe's paired interval, exact McNemar test."""
    from judgekit.stats.proportions import newcombe_paired

    if len(pairs) < 1:
        return CompareRow(name=name, n=0, a=None, b=None, difference=None,
                          difference_ci=None, p_value=None)
    x, y = zip(*pairs)
    d = newcombe_paired(list(y), list(x), level)  # B - A
    return CompareRow(name=name, n=d.n, a=float(np.mean(x)), b=float(np.mean(y)),
                      difference=d.diff, difference_ci=d.ci, p_value=d.p_value)


def mean_row(name: str, pairs: list[tuple[float, float]], level: float, seed: int
             ) -> CompareRow:
    """B - A of paired scores: percentile bootstrap of the mean difference (Hoeffding's
    bound when every difference is equal), paired t test."""
    from judgekit.stats.bootstrap import percentile_interval
    from judgekit.stats.tests import paired_t_test

    x, y = (np.array(v, float) for v in zip(*pairs))
    d = y - x
    if np.all(d == d[0]):
        # no spread to resample: Hoeffding's bound for a mean of differences in [-1, 1]
        # keeps a width (the bootstrap would give [d, d] from a handful of queries)
        half = float(np.sqrt(4.0 * np.log(2.0 / (1.0 - level)) / (2.0 * d.size)))
        ci = [max(-1.0, float(d[0]) - half), min(1.0, float(d[0]) + half)]
    else:
        ci = percentile_interval(d, level, 10_000, seed).as_list()
    t = paired_t_test(y, x)
    return CompareRow(name=name, n=len(x), a=float(x.mean()), b=float(y.mean()),
                      difference=float(d.mean()), difference_ci=ci, p_value=t.p_value)


def agreement(a: list[Any], b: list[Any], level: float, seed: int
              ) -> PairAgreement | None:
    """Percent agreement, Cohen's kappa and Gwet's AC1 of two runs' labels."""
    from judgekit.stats.agreement import agreement as measure

    if len(a) < 2:
        return None
    ag = measure(a, b, seed=seed, resamples=1000, level=level)
    return PairAgreement(n=ag.n, percent=ag.percent, kappa=ag.kappa, ac1=ag.ac, cis=ag.cis,
                         undefined=ag.undefined)
