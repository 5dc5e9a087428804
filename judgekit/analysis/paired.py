"""Paired differences of two runs on the same items, the building blocks of every
method's ``compare`` hook: a paired rate difference (Newcombe's interval with the exact
McNemar test), a paired mean difference (Student t with range pseudo-observations,
paired t test), the chance-corrected agreement of two runs' labels, records matched by
a key."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from judgekit.core.payload import Json
from judgekit.core.spec import CompareRow, PairAgreement

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


def mean_row(name: str, pairs: list[tuple[float, float]], level: float, seed: int,
             bounds: tuple[float, float] = (0.0, 1.0)) -> CompareRow:
    """B - A of paired scores in ``bounds``: Student t on the differences with the ends
    of their range (+-(hi - lo)) as two half-weight pseudo-observations
    (:func:`judgekit.stats.bootstrap.bounded_mean_interval`), so identical runs give
    0 with a finite-sample width (+-0.02 over 100 queries), not [-1, 1]; paired t test.
    ``seed`` is kept for callers (the interval is analytic)."""
    from judgekit.stats.bootstrap import bounded_mean_interval
    from judgekit.stats.tests import paired_t_test

    x, y = (np.array(v, float) for v in zip(*pairs))
    d = y - x
    span = float(bounds[1] - bounds[0])
    ci = bounded_mean_interval(d, -span, span, level).as_list()
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
                         undefined=ag.undefined, note=ag.note)
