"""Pass rates corrected with few human labels: prediction-powered inference (PPI++),
from a simple random sample or an importance sample of the items.

All functions are pure (numpy arrays in, numbers out).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from judgekit.core.errors import ConfigError, StatsError
from judgekit.stats.bootstrap import pseudo_variance

__all__ = ["MIN_REPEATS", "Corrected", "LabelError", "importance_inclusion",
           "label_error_from_repeats", "ppi_difference", "resolve_label_error",
           "ppi_interval", "ppi_mean", "ppi_shares", "ppi_weighted", "with_label_error"]


class Corrected(NamedTuple):
    estimate: float
    ci: list[float]
    human_only: float
    human_only_ci: list[float]
    n_labelled: int
    n_items: int
    lam: float = 1.0  # power-tuning weight on the judge (0: human labels alone)
    level: float = 0.90
    sampling: str = "random"
    # the variance terms of the interval (random sampling): Var(y - lambda f) with its
    # unseen-error floor, and Var(y); the label plan recomputes the interval from them
    residual_var: float | None = None
    label_var: float | None = None
    # the annotators' error rate the rate was corrected for (None: labels taken as
    # error-free), with its interval when it was estimated from repeated labels
    label_error: float | None = None
    label_error_ci: list[float] | None = None
    kind: str = "rate"  # or "difference" (a paired difference in [-1, 1])

    def labels_for_halfwidth(self, halfwidth: float) -> int | None:
        """How many human labels (in all) give a corrected interval of +- ``halfwidth``
        (half its width) under the same design; None when it is already that narrow,
        ``n_items`` when even labelling every item would not reach it. With the
        variance terms (random sampling) it recomputes the interval actually reported,
        Student-t Wilson at the effective n with its continuity correction, from
        (1/n - 1/N) Var(y - lambda f) + Var(y) / N at each candidate n; otherwise it
        scales the half-width by 1 / sqrt(labels)."""
        half = (self.ci[1] - self.ci[0]) / 2
        if half <= halfwidth or halfwidth <= 0:
            return None
        scale = 1.0 - 2.0 * (self.label_error or 0.0)  # the observed-label scale
        if self.residual_var is None or self.label_var is None or self.label_var <= 0:
            return int(min(self.n_items, math.ceil(self.n_labelled * (half / halfwidth) ** 2)))
        est = min(1.0, max(0.0, (self.label_error or 0.0) + scale * self.estimate))
        v_r, v_y = self.residual_var, self.label_var

        def half_at(m: int) -> float:
            if self.kind == "difference":
                from judgekit.stats.bootstrap import t_quantile

                var = (1 / m - 1 / self.n_items) * v_r + v_y / self.n_items
                return t_quantile(0.5 + self.level / 2, m - 1) * math.sqrt(max(var, 0.0))
            lo, hi = ppi_interval(est, v_y, v_r, m, self.n_items, self.level)
            return (hi - lo) / 2

        target = halfwidth * scale
        lo_n, hi_n = self.n_labelled, self.n_items
        if half_at(hi_n) > target:
            return self.n_items
        while hi_n - lo_n > 1:  # the half-width falls as n grows: bisect
            mid = (lo_n + hi_n) // 2
            lo_n, hi_n = (lo_n, mid) if half_at(mid) <= target else (mid, hi_n)
        return hi_n


def ppi_interval(estimate: float, label_var: float, residual_var: float, n: int,
                 big_n: int, level: float) -> list[float]:
    """The corrected rate's interval from its variance terms, for n labels of N items:
    Var = (1/n - 1/N) residual_var + label_var / N; the effective sample size
    label_var / Var (never below n: lambda = 0 is the human labels alone); Wilson's
    interval there with Student's t on n - 1 degrees of freedom (the residual variance
    is estimated from n labels) and half of Wilson's continuity correction. Chosen by
    simulation (benchmarks/coverage.py, 80 designs: judges 0.7-0.95 sensitive, 30-200
    labels, pass rates 0.05-0.5): the full correction covered 0.90-0.96 at nominal
    0.90 and over-covered at low pass rates; t with half the correction covers
    0.89-0.95 at 2% less width; neither alone holds (0.84)."""
    from judgekit.stats.proportions import wilson_effective

    var = (1 / n - 1 / big_n) * residual_var + label_var / big_n
    n_eff = n * max(1.0, label_var / n / var) if var > 0 and label_var > 0 else float(n)
    return wilson_effective(estimate, n_eff, level, continuity=0.5, df=n - 1).as_list()


def ppi_mean(judge_all: ArrayLike, judge_labelled: ArrayLike,
             human_labelled: ArrayLike, level: float = 0.90, lam: float | None = None
             ) -> Corrected:
    """Prediction-powered estimate of a mean (a pass rate, or a class share for k-ary
    labels one class at a time) from judge verdicts on all N items (``judge_all``, the
    labelled ones included) and human labels on a simple random sample of n of them.

    Power-tuned (PPI++, Angelopoulos, Duchi & Zrnic 2023):
    theta = lambda mean_N(f) + mean_n(y - lambda f), with lambda = Cov(f, y) / Var(f)
    on the labelled items, clipped to [0, 1]; lambda = 0 is the human labels alone, so
    the corrected interval is never wider than theirs beyond the noise of estimating
    lambda. Its variance, items drawn from a population,
    Var = (1/n - 1/N) Var(y - lambda f) + Var(y) / N, the rectifier's variance with a
    pseudo-disagreement each way at weight 1/2. The interval is :func:`ppi_interval` (inside [0, 1],
    a width at the boundary); the human-only interval is the same at lambda = 0."""
    tuned = lam is None
    est, _, lam, s_y, n, big_n, y_mean = _ppi(judge_all, judge_labelled, human_labelled,
                                               lam)
    fl, y = np.asarray(judge_labelled, float), np.asarray(human_labelled, float)
    residual = s_y
    if lam > 0:
        # the rectifier's variance with one pseudo-disagreement each way at weight 1/2
        # (Agresti & Min, as ppi_difference): labels that show few judge errors say the
        # judge errs rarely, not never. Without it, at a pass rate of 0.05 with 100
        # labels, coverage was 0.875 at nominal 0.90 and 0.74 in draws showing at most
        # two false passes; with it 0.91 (benchmarks/coverage.py). Where the judge then
        # no longer helps, the human labels alone.
        residual = pseudo_variance(y - lam * fl, -lam, 1.0)
        if tuned and residual >= pseudo_variance(y, 0.0, 1.0):  # a lambda given is kept
            lam, est, residual = 0.0, y_mean, s_y
    ci = ppi_interval(est, s_y, residual, n, big_n, level)
    h_ci = ppi_interval(y_mean, s_y, s_y, n, big_n, level)
    return Corrected(min(1.0, max(0.0, est)), ci, y_mean, h_ci, int(n), int(big_n), lam,
                     level, "random", residual, s_y)


def with_label_error(c: Corrected, error: float, error_ci: Sequence[float] | None = None,
                     difference: bool = False) -> Corrected:
    """``c`` corrected for annotators who flip a label with probability ``error``
    (either way): a human label is then right with probability 1 - e, so its mean is
    e + theta (1 - 2e) and theta = (mean - e) / (1 - 2e) (Rogan-Gladen with equal
    error rates); for a ``difference`` of two such rates the e cancels and
    theta = mean / (1 - 2e). Estimate and limits are mapped through it, clipped to the
    range; with ``error_ci`` (the error rate estimated from repeated labels) each limit
    takes the more extreme of the two error-rate limits, so the interval carries that
    uncertainty too. Uncorrected, labels 5% flipped cover 0.60-0.66 at nominal 0.90."""
    lo_e, hi_e = (error, error) if error_ci is None else (float(error_ci[0]),
                                                          float(error_ci[1]))
    if not 0.0 <= lo_e <= error <= hi_e < 0.5:
        raise StatsError(f"label error {error} (interval {lo_e}-{hi_e}) must lie in "
                         "[0, 0.5) with the rate inside its interval")
    floor = -1.0 if difference else 0.0

    def g(t: float, e: float) -> float:
        return min(1.0, max(floor, (t - (0.0 if difference else e)) / (1 - 2 * e)))

    def limits(ci: list[float]) -> list[float]:
        return [min(g(ci[0], lo_e), g(ci[0], hi_e)), max(g(ci[1], lo_e), g(ci[1], hi_e))]

    return c._replace(estimate=g(c.estimate, error), ci=limits(c.ci),
                      human_only=g(c.human_only, error),
                      human_only_ci=limits(c.human_only_ci), label_error=float(error),
                      label_error_ci=None if error_ci is None else [lo_e, hi_e])


MIN_REPEATS = 10  # items labelled twice needed to estimate the annotators' error


class LabelError(NamedTuple):
    """The flip rate a corrected figure accounts for: stated, or estimated from items
    two annotators labelled (its interval and how many such items)."""

    rate: float
    ci: list[float] | None
    items: int | None  # the items labelled twice it was estimated from (None: stated)

    @property
    def how(self) -> str:
        return "stated" if self.items is None else "estimated from repeats"


def resolve_label_error(setting: float | str | None,
                        groups: Iterable[Sequence[float | None]], level: float,
                        where: object) -> LabelError | None:
    """The label error a run corrects for: None (labels error-free), a stated rate, or
    ``"repeats"``: the flip rate estimated (:func:`label_error_from_repeats`) from the
    first two readable labels of each item in ``groups`` (each item's annotators'
    labels, 0/1) labelled at least twice; fewer than MIN_REPEATS such items is one
    line naming ``where``."""
    if setting is None:
        return None
    if setting != "repeats":
        return LabelError(float(setting), None, None)
    pairs = [[v for v in g if v is not None][:2] for g in groups]
    pairs = [p for p in pairs if len(p) == 2]
    if len(pairs) < MIN_REPEATS:
        raise ConfigError(f"--label-error repeats: only {len(pairs)} item(s) of {where} "
                          f"have labels from two annotators; have at least {MIN_REPEATS} "
                          "labelled twice, or give a rate (e.g. 0.1)")
    e, ci, n = label_error_from_repeats([p[0] for p in pairs], [p[1] for p in pairs], level)
    return LabelError(e, ci, n)


def label_error_from_repeats(first: ArrayLike, second: ArrayLike, level: float = 0.90
                             ) -> tuple[float, list[float], int]:
    """Annotators' flip rate e from items labelled twice (0/1), with an interval: two
    independent labels disagree with probability d = 2 e (1 - e), so
    e = (1 - sqrt(1 - 2 d)) / 2, mapped from d's Wilson interval (monotone). Returns
    (e, [lo, hi], items); an upper limit at d >= 0.5 is capped just below 0.5."""
    from judgekit.stats.proportions import wilson_interval

    a, b = np.asarray(first, float), np.asarray(second, float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise StatsError("repeated labels need two equal, non-empty 0/1 lists")
    k = int(np.sum(a != b))

    def e_of(d: float) -> float:
        return min(0.4999, (1 - math.sqrt(max(0.0, 1 - 2 * min(d, 0.5)))) / 2)

    lo, hi = wilson_interval(k, int(a.size), level)
    return e_of(k / a.size), [e_of(lo), e_of(hi)], int(a.size)


def _ppi(judge_all: ArrayLike, judge_labelled: ArrayLike, human_labelled: ArrayLike,
         lam: float | None) -> tuple[float, float, float, float, int, int, float]:
    """PPI++'s estimate, variance, lambda, Var(y), n, N and the labels' mean."""
    f = np.asarray(judge_all, float)
    fl, y = np.asarray(judge_labelled, float), np.asarray(human_labelled, float)
    if fl.shape != y.shape or y.size < 2 or f.size < 2:
        raise StatsError("PPI needs >= 2 labelled items and >= 2 judged items")
    if y.size > f.size:
        raise StatsError(f"PPI: {y.size} labelled items but only {f.size} judged items; "
                         "judge_all must include the labelled items")
    n, big_n = y.size, f.size
    if lam is None:
        var_f = float(fl.var(ddof=1))
        cov = float(np.cov(fl, y, ddof=1)[0, 1]) if var_f > 0 else 0.0
        lam = 0.0 if var_f <= 0 else min(1.0, max(0.0, cov / var_f))
    rect = y - lam * fl
    est = float(lam * f.mean() + rect.mean())
    s_y = float(y.var(ddof=1))
    var = (1 / n - 1 / big_n) * float(rect.var(ddof=1)) + s_y / big_n
    if lam > 0 and bool(np.all(fl == y)):
        # A labelled sample with no judge-human disagreement says the judge errs rarely,
        # not never: count one unseen disagreement (|r| = lambda) in the rectifier's
        # variance, as ppi_weighted does, and fall back to the human labels alone when
        # the judge then no longer helps (else lambda -> 1 and the interval collapses
        # to Var(y) / N around the judge's rate).
        var += (1 / n - 1 / big_n) * lam**2 / n
        h_var = (1 / n - 1 / big_n) * s_y + s_y / big_n
        if var >= h_var:
            lam = 0.0
            est, var = float(y.mean()), h_var
    return est, var, lam, s_y, n, big_n, float(y.mean())


def ppi_difference(judge_all: ArrayLike, judge_labelled: ArrayLike,
                   human_labelled: ArrayLike, level: float = 0.90) -> Corrected:
    """Prediction-powered mean of paired differences in [-1, 1] (two systems' verdicts on
    the same questions: judge A - B on every shared question, human A - B on a random
    sample of them): PPI++'s estimate and power tuning as ``ppi_mean``, with a
    Student-t interval on n - 1 degrees of freedom clipped to [-1, 1] (a difference
    takes three or more values, so a Wilson interval at an effective n would be
    needlessly wide). Both variances count, as Agresti and Min (2005) do for paired
    proportions, one discordant pseudo-question each way at weight 1/2: without it the
    interval under-covers when few labelled questions differ (0.85 at nominal 0.90
    with 50 labels and nested outcomes) and collapses when none does; with it coverage
    stays at or above the level across the designs of benchmarks/recorded_verdicts.py."""
    from scipy.stats import t as student

    est, _, lam, _, n, big_n, y_mean = _ppi(judge_all, judge_labelled, human_labelled,
                                           None)
    fl, y = np.asarray(judge_labelled, float), np.asarray(human_labelled, float)
    v_y = pseudo_variance(y, -1.0, 1.0)
    v_r = pseudo_variance(y - lam * fl, -1.0, 1.0)
    var = (1 / n - 1 / big_n) * v_r + v_y / big_n
    q = float(student.ppf(0.5 + level / 2, n - 1))

    def interval(centre: float, v: float) -> list[float]:
        h = q * math.sqrt(v)
        return [max(-1.0, centre - h), min(1.0, centre + h)]

    return Corrected(min(1.0, max(-1.0, est)), interval(est, var), y_mean,
                     interval(y_mean, v_y / n), int(n), int(big_n), lam, level,
                     "random", v_r, v_y, kind="difference")


def ppi_shares(judge_all: ArrayLike, judge_labelled: ArrayLike, human_labelled: ArrayLike,
               level: float = 0.90) -> dict[int, Corrected]:
    """k-ary labels: the prediction-powered share of every class (one indicator each),
    with one power-tuning lambda for all classes (pooled covariance over pooled
    variance), so that the shares still sum to 1."""
    f, fl, y = (np.asarray(v) for v in (judge_all, judge_labelled, human_labelled))
    classes = sorted(set(np.unique(f).tolist()) | set(np.unique(y).tolist()))
    cov = var = 0.0
    for c in classes:
        a, b = (fl == c).astype(float), (y == c).astype(float)
        if a.size > 1:
            var += float(a.var(ddof=1))
            cov += float(np.cov(a, b, ddof=1)[0, 1])
    lam = 0.0 if var <= 0 else min(1.0, max(0.0, cov / var))
    return {int(c): ppi_mean(f == c, fl == c, y == c, level, lam) for c in classes}


def importance_inclusion(weights: ArrayLike, n: int, uniform_share: float = 0.5
                         ) -> np.ndarray:
    """Inclusion probabilities for Poisson sampling of about ``n`` items: a defensive
    mixture of probability proportional to ``weights`` (e.g. the judge's instability;
    capped at 1 and re-spread) and uniform sampling,
    pi_i = (1 - s) pi_weights_i + s n / N with s = ``uniform_share``. The uniform part
    bounds every Horvitz-Thompson weight by N / (s n), so an error on an item the judge
    was sure of cannot move the estimate by more than that (without it such an item
    had pi = 3.5e-4 and one label moved the estimate by 1.4)."""
    w = np.clip(np.asarray(weights, float), 0.0, None)
    if n <= 0 or w.size == 0:
        raise StatsError("importance sampling needs n >= 1 and at least one item")
    if not 0.0 <= uniform_share <= 1.0:
        raise StatsError(f"uniform_share {uniform_share} must lie in [0, 1]")
    n = min(n, w.size)
    uniform = np.full(w.size, n / w.size)
    if w.sum() <= 0:
        return uniform
    pi = np.zeros_like(w)
    free = w > 0
    left = float(n)
    while True:  # cap at 1, give the excess to the rest
        pi[free] = left * w[free] / w[free].sum()
        over = free & (pi >= 1.0)
        if not over.any():
            break
        pi[over] = 1.0
        free &= ~over
        left = n - float(np.sum(pi[~free & (w > 0)]))
        if left <= 0 or not free.any():
            break
    return np.clip((1 - uniform_share) * pi + uniform_share * uniform, 0.0, 1.0)


def ppi_weighted(judge_all: ArrayLike, labelled: ArrayLike, human: ArrayLike,
                 inclusion: ArrayLike, level: float = 0.90) -> Corrected:
    """Prediction-powered mean when the human-labelled items were drawn with known
    inclusion probabilities pi_i (Poisson sampling, e.g. by the judge's uncertainty):
    theta = lambda mean_N(f) + r_H, where r_H = sum_S (r_i / pi_i) / sum_S (1 / pi_i) is
    the Hajek (weight-normalised Horvitz-Thompson) mean of the power-tuned rectifier
    r = y - lambda f, with variance
    (1/N_H^2) sum_{i in S} (1 - pi_i) (r_i - r_H)^2 / pi_i^2 + Var(y) / N and lambda
    minimising it (weighted least squares, clipped to [0, 1]). Consistent for any
    design with all pi_i > 0 (the Hajek ratio removes the variance of Poisson
    sampling's random sample size, which made the plain Horvitz-Thompson interval
    under-cover). The human-only estimate is the same at lambda = 0. Intervals are
    Wilson's (continuity-corrected) at Kish's effective sample size of the weights,
    times the variance the judge removes."""
    from judgekit.stats.proportions import wilson_effective

    f = np.asarray(judge_all, float)
    idx = np.asarray(labelled, int)
    y = np.asarray(human, float)
    pi = np.asarray(inclusion, float)[idx]
    if y.shape != idx.shape or y.size < 2:
        raise StatsError("weighted PPI needs >= 2 labelled items with their labels")
    if np.any(pi <= 0):
        raise StatsError("weighted PPI: every labelled item needs inclusion probability > 0")
    n_all = f.size
    fl = f[idx]
    w = (1 - pi) / pi**2
    big_n = float(np.sum(1 / pi))  # Hajek: the estimated number of items

    def mean_h(v: np.ndarray) -> float:
        return float(np.sum(v / pi) / big_n)

    fc = fl - mean_h(fl)
    den = float(np.sum(w * fc**2))
    lam = 0.0 if den <= 0 else min(1.0, max(0.0, float(np.sum(w * fc * (y - mean_h(y))))
                                            / den))
    var_y = float(np.sum((y - mean_h(y)) ** 2 / pi) / big_n) * y.size / max(1, y.size - 1)

    def fit(lm: float) -> tuple[float, float]:
        r = y - lm * fl
        rbar = mean_h(r)
        est = float(lm * f.mean() + rbar)
        var = float(np.sum((1 - pi) * (r - rbar) ** 2 / pi**2)) / big_n**2 + var_y / n_all
        return est, var

    est, var = fit(lam)
    h, h_var = fit(0.0)
    # a judge error on the least-likely-sampled items can be missing from a small
    # sample: count one such error (|r| = lambda at the smallest pi) in the variance, and
    # fall back to the human labels alone when the judge then no longer helps
    p_min = float(np.min(np.asarray(inclusion, float)))
    var += lam**2 * (1 - p_min) / p_min**2 / big_n**2 if p_min < 1 else 0.0
    if var >= h_var:
        lam, est, var = 0.0, h, h_var
    # Kish's effective sample size of the weights (it does not depend on the labels, so
    # it stays put when few positives were drawn), scaled by the variance the judge
    # removes
    kish = float(np.sum(1 / pi) ** 2 / np.sum(1 / pi**2))
    gain = h_var / var if var > 0 and h_var > 0 else 1.0
    return Corrected(min(1.0, max(0.0, est)),
                     wilson_effective(est, kish * max(1.0, gain), level).as_list(),
                     min(1.0, max(0.0, h)), wilson_effective(h, kish, level).as_list(),
                     int(y.size), n_all, lam, level, "importance")
