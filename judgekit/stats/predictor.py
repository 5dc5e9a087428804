"""The labelling predictor: P(label = 1) for every item from the judge's verdict, its
score, the item's system and the judge's self-contradiction, by a ridge logistic
regression of the labels so far with a linear recalibration on top
(:func:`fit_predictor`). When the features take few distinct rows (a verdict, a system,
a Likert score), the fit sums the labels by row (:class:`Design`): at 10^6 items a fit
and its predictions then cost the distinct rows, not the items."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["GROUPS", "MODELS", "Design", "Population", "design_of", "fit_predictor"]


class Population(NamedTuple):
    """The items a judge scored: its verdict (0/1), an optional score (the judge's
    probability that the item passes, in [0, 1]), each item's system (an index) and,
    optionally, whether the judge contradicted itself on the item (1: a repeat or the
    swapped order gave another verdict)."""

    verdict: np.ndarray
    score: np.ndarray | None
    system: np.ndarray
    systems: tuple[str, ...] = ("",)
    unstable: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.verdict.size)


def _features(pop: Population) -> np.ndarray:
    f = pop.verdict.astype(float)
    cols = [np.ones(pop.n), f]
    if pop.score is not None:
        p = np.clip(pop.score.astype(float), 1e-3, 1 - 1e-3)
        cols.append(np.log(p / (1 - p)) / 4)
    for s in range(1, len(pop.systems)):
        d = (pop.system == s).astype(float)
        cols += [d, d * f]
    if pop.unstable is not None and pop.unstable.any():
        cols += [pop.unstable.astype(float), pop.unstable * f]
    return np.column_stack(cols)


def _logistic(xl: np.ndarray, yl: np.ndarray, ridge: float,
              offset_l: np.ndarray | None = None,
              counts: np.ndarray | None = None) -> np.ndarray:
    """The coefficients of a ridge logistic regression (Newton's method) of ``yl`` on
    ``xl`` (plus ``offset_l``); the intercept is not shrunk. With ``counts``, each row
    of ``xl`` stands for that many items and ``yl`` holds their labels' sum: the same
    likelihood, summed by group."""
    beta = np.zeros(xl.shape[1])
    pen = ridge * np.eye(xl.shape[1])
    pen[0, 0] = 1e-6  # the intercept is not shrunk
    ol = np.zeros(xl.shape[0]) if offset_l is None else offset_l
    for _ in range(30):
        p = 1 / (1 + np.exp(-np.clip(xl @ beta + ol, -30, 30)))
        if counts is None:
            grad = xl.T @ (yl - p) - pen @ beta
            hess = (xl * (p * (1 - p))[:, None]).T @ xl + pen
        else:
            grad = xl.T @ (yl - counts * p) - pen @ beta
            hess = (xl * (counts * p * (1 - p))[:, None]).T @ xl + pen
        step = np.linalg.solve(hess, grad)
        beta += step
        if float(np.abs(step).max()) < 1e-8:
            break
    return beta


def _curve(x: np.ndarray, beta: np.ndarray, offset: np.ndarray | None) -> np.ndarray:
    o = np.zeros(x.shape[0]) if offset is None else offset
    return np.asarray(1 / (1 + np.exp(-np.clip(x @ beta + o, -30, 30))))


class Design(NamedTuple):
    """The predictor's features: every item's row (``code`` None), or, when few
    distinct rows exist, one row per group with every item's group in ``code`` and an
    item of each group in ``rep`` (a fit then sums its labels by group: at 10^6 items a
    fit and its predictions cost the groups, not the items)."""

    x: np.ndarray
    code: np.ndarray | None = None
    rep: np.ndarray | None = None


GROUPS = 4096  # the most distinct feature rows fitted as groups (and at most n / 4)


def design_of(pop: Population) -> Design:
    """The population's :class:`Design` (kept for the last two populations asked)."""
    got = _DESIGNS.get(id(pop))
    if got is not None and got[0] is pop:
        return got[1]
    d = _design(pop)
    while len(_DESIGNS) >= 2:
        _DESIGNS.pop(next(iter(_DESIGNS)))
    _DESIGNS[id(pop)] = (pop, d)
    return d


def _design(pop: Population) -> Design:
    n = pop.n
    code, size = np.zeros(n, np.int64), 1
    cols = [pop.verdict, pop.system] + [a for a in (pop.unstable, pop.score) if a is not None]
    for col in cols:  # each feature column as a digit of a mixed radix
        a = np.asarray(col)
        if a.dtype.kind in "biu" and a.size and 0 <= int(a.min()) and int(a.max()) < n:
            digit, base = a.astype(np.int64), int(a.max()) + 1
        else:
            values, digit = np.unique(a, return_inverse=True)
            base = int(values.size)
        if base * size > 4 * max(n, 1):
            return Design(_features(pop))  # too many distinct rows: every item's
        code += digit.reshape(-1) * size
        size *= base
    used = np.bincount(code, minlength=size) > 0
    groups = int(used.sum())
    if groups > min(GROUPS, n // 4):
        return Design(_features(pop))
    code = (np.cumsum(used) - 1)[code]
    rep = np.empty(groups, np.int64)
    rep[code] = np.arange(n)  # any item of a group: its features are the group's
    sub = Population(pop.verdict[rep], None if pop.score is None else pop.score[rep],
                     pop.system[rep], pop.systems,
                     None if pop.unstable is None else pop.unstable[rep])
    return Design(_features(sub), code, rep)  # the same columns: sub holds every kind


_DESIGNS: dict[int, tuple[Population, Design]] = {}


# the predictors the cross-fit chooses among: "trust" starts from the judge's own score
# (its logit as an offset; the features' coefficients shrink towards trusting it),
# "full" from nothing, "verdict" and "flat" use less
MODELS = ("trust", "full", "verdict", "flat")


def fit_predictor(pop: Population, labelled: np.ndarray, y: np.ndarray,
                  ridge: float = 1.0, model: str = "full",
                  features: Design | None = None,
                  rows: np.ndarray | None = None) -> np.ndarray:
    """P(label = 1) for every item (or for the items ``rows`` only: the same numbers):
    a ridge logistic regression of the labels so far (``y``, each in [0, 1]: several
    annotators' mean) on the verdict, the score's logit, the system (with its
    interaction with the verdict) and the judge's self-contradiction. No labels: 0.5
    everywhere (nothing is trusted before it is checked). Labels chosen by an item's
    features do not bias P(y | features)."""
    labelled = np.asarray(labelled, int)
    at = slice(None) if rows is None else np.asarray(rows, int)
    if labelled.size == 0:
        return np.full(pop.n, 0.5)[at]
    d = design_of(pop) if features is None else features
    x = d.x[:, :{"trust": d.x.shape[1], "full": d.x.shape[1], "verdict": 2, "flat": 1}[model]]
    yl = np.clip(np.asarray(y, float), 0.0, 1.0)

    def offset(rows: Any) -> np.ndarray | None:  # the judge's own logit, where trusted
        if model != "trust":
            return None
        prior = np.clip(pop.score[rows].astype(float), 0.02, 0.98) \
            if pop.score is not None else 0.2 + 0.6 * pop.verdict[rows].astype(float)
        return np.asarray(np.log(prior / (1 - prior)))

    # a linear recalibration on top (least squares of the labels on m): labels that
    # annotators flip at a rate e have P(y = 1) in [e, 1 - e], a range the logistic
    # curve cannot end in
    if d.code is None:
        off_l = offset(labelled)  # computed on the rows used only (elementwise: the same)
        xl = x[labelled]
        beta_l = _logistic(xl, yl, ridge, off_l)
        m = _curve(x[at], beta_l, offset(at))
        ml = _curve(xl, beta_l, off_l)
        var = float(ml.var())
        if labelled.size < 10 or var <= 1e-9:
            return m
        beta = max(0.0, float(np.mean((ml - ml.mean()) * (yl - yl.mean()))) / var)
        alpha = float(yl.mean()) - beta * float(ml.mean())
        return np.asarray(np.clip(alpha + beta * m, 0.005, 0.995))
    # by group: the labels' count and sum in each, the same sums as item by item
    assert d.rep is not None
    g = d.rep.size
    counts = np.bincount(d.code[labelled], minlength=g).astype(float)
    sums = np.bincount(d.code[labelled], weights=yl, minlength=g)
    off = offset(d.rep)
    used = counts > 0
    beta_l = _logistic(x[used], sums[used], ridge, None if off is None else off[used],
                       counts[used])
    mg = _curve(x, beta_l, off)
    size = float(labelled.size)
    mean = float(counts @ mg) / size
    var = float(counts @ (mg - mean) ** 2) / size
    if labelled.size >= 10 and var > 1e-9:
        ybar = float(sums.sum()) / size
        beta = max(0.0, float((mg - mean) @ (sums - counts * ybar)) / size / var)
        mg = np.clip(ybar - beta * mean + beta * mg, 0.005, 0.995)
    return np.asarray(mg[d.code[at]])
