"""Graded verdicts: a judge's score on a scale (1-5, 1-10, 0-3) or its probability for
each grade (``p_<grade>`` columns), against people who rate the same items on the same
scale, often several raters an item.

Each figure is the one the meta-evaluation literature reports, with its interval and n:
item-level Spearman, Kendall tau-b and Pearson of the judge's score against the mean of
the raters; quadratic-weighted kappa and Krippendorff's alpha (interval, ordinal) of the
judge against the raters' consensus (their mean, rounded half up to a grade); mean
absolute error; score bias in points (judge minus people, overall and per system); the
human ceiling (each rater against the mean of the others, the judge against the same
others); system-level Kendall of the system means; the mean score people would give,
corrected with the judge's scores (PPI++ on the scale mapped to [0, 1]); and, for
answer distributions, ECE and the Brier score. Every interval treats a question with
all its answers (else an item) as one unit, so ratings of one question are not counted
as independent: the correlations, kappa and alpha by a leave-one-cluster-out jackknife
with Student's t (on Fisher's z for the correlations), which held 0.94-0.96 at n = 30
where a percentile bootstrap held 0.83-0.85 (benchmarks/graded.py); the rest by a
percentile bootstrap over clusters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.jsontypes import JSONObject
from judgekit.methods.verdicts.analysis import rate_measure
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure
from judgekit.recorded.graded import Graded, is_graded, read
from judgekit.stats.decide import family_level
from judgekit.stats.graded import (
    ClusterBootstrap,
    jackknife_interval,
    kendall,
    krippendorff_alpha,
    pearson,
    spearman,
    weighted_kappa,
)
from judgekit.stats.ppi import ppi_mean

__all__ = ["graded", "is_graded"]

BINS = 10  # ECE's equal-width confidence bins
MIN_ITEMS = 3  # items people rated that a figure needs

def _alpha(a: np.ndarray, b: np.ndarray, metric: str, i: np.ndarray) -> float:
    return krippendorff_alpha(np.vstack([a[i], b[i]]), metric)


def _mean_of(d: np.ndarray, i: np.ndarray) -> float:
    return float(np.mean(d[i]))


def _consensus(people: list[float | None]) -> float | None:
    got = [v for v in people if v is not None]
    return float(np.mean(got)) if got else None


def _grade(v: np.ndarray) -> np.ndarray:
    return np.floor(v + 0.5)  # half up, as people's mean is rounded to a grade


def _boot(cluster: np.ndarray, cfg: VerdictsConfig, level: float | None = None
          ) -> ClusterBootstrap:
    """The run's cluster bootstrap (its seed's ``verdicts.graded`` stream)."""
    return ClusterBootstrap(cluster, cfg.level if level is None else level, cfg.resamples,
                            streams.rng("verdicts.graded", cfg.seed))


def graded(rows: Iterable[JSONObject], roles: dict[str, str], cfg: VerdictsConfig,
           write: Callable[[JSONObject], None]) -> tuple[list[Measure], Graded]:
    """The measures of graded verdicts (see the module docstring)."""
    g = read(rows, roles, cfg.scale, cfg.data_path, write)
    people = [_consensus(h) for h in g.humans]
    lab = np.array([p is not None for p in people])
    y = np.array([p if p is not None else np.nan for p in people], float)
    x = g.score
    n_lab = int(lab.sum())
    out: list[Measure] = []
    boot = _boot(g.cluster[lab], cfg) if n_lab >= MIN_ITEMS else None
    xl, yl = x[lab], y[lab]
    units = f"points on the {g.scale.text()} scale"

    def row(key: str, what: str, fn: Callable[[np.ndarray], float], lo: float = -1.0,
            hi: float = 1.0, jackknife: str | None = None, **kw: Any) -> Measure:
        if boot is None:
            return Measure(key=key, what=what, n=n_lab,
                           decision=f"not measured: {n_lab} item(s) people rated "
                                    f"(need {MIN_ITEMS})", **kw)
        with np.errstate(all="ignore"):
            est = fn(np.arange(n_lab))
        ci = boot.interval(fn, lo, hi) if jackknife is None else jackknife_interval(
            fn, g.cluster[lab], cfg.level, jackknife == "fisher", lo, hi)
        return Measure(key=key, what=what, estimate=est if math.isfinite(est) else None,
                       ci=ci, n=n_lab,
                       clusters=int(np.unique(g.cluster[lab]).size),
                       decision=f"{n_lab} items people rated", **kw)

    out.append(row("spearman", "Spearman correlation of the judge's score with people's "
                   "(mean of the raters), item level", lambda i: spearman(xl[i], yl[i]),
                   jackknife="fisher", units="correlation"))
    out.append(row("kendall_tau_b", "Kendall's tau-b of the judge's score with people's, "
                   "item level", lambda i: kendall(xl[i], yl[i]), jackknife="fisher",
                   units="correlation"))
    out.append(row("pearson", "Pearson correlation of the judge's score with people's, "
                   "item level", lambda i: pearson(xl[i], yl[i]), jackknife="fisher",
                   units="correlation"))
    gx, gy = _grade(xl), _grade(yl)
    out.append(row("weighted_kappa", "quadratic-weighted kappa of the judge against "
                   "people's consensus grade", lambda i: weighted_kappa(gx[i], gy[i]),
                   jackknife="raw", units="chance-corrected agreement"))
    for metric in ("interval", "ordinal"):
        out.append(row(f"krippendorff_alpha_{metric}", f"Krippendorff's alpha ({metric}) "
                       "of the judge and people's consensus grade",
                       partial(_alpha, gx, gy, metric), jackknife="raw",
                       units="chance-corrected agreement"))
    span = g.scale.hi - g.scale.lo
    out.append(row("mae", "mean absolute difference of the judge's score from people's",
                   lambda i: float(np.mean(np.abs(xl[i] - yl[i]))), 0.0, span,
                   units=units))
    out += _bias(g, x, y, lab, cfg, units)
    out += _decidable(g, x, y, lab, cfg)
    out.append(_ceiling(g, x, lab, cfg))
    out.append(_system_kendall(g, x, y, lab, cfg))
    out += _corrected(g, x, y, lab, cfg)
    if g.probs is not None:
        out += _calibration(g, y, lab, boot, n_lab)
    return out, g


def _by_system(g: Graded, lab: np.ndarray) -> list[tuple[str | None, np.ndarray]]:
    names = sorted({s for s in g.system if s is not None})
    out: list[tuple[str | None, np.ndarray]] = [(None, np.ones(len(g.system), bool))]
    out += [(s, np.array([v == s for v in g.system])) for s in names] if len(names) > 1 \
        else []
    return out


def _bias(g: Graded, x: np.ndarray, y: np.ndarray, lab: np.ndarray, cfg: VerdictsConfig,
          units: str) -> list[Measure]:
    """Score bias in points, overall and per system: the judge's mean score minus
    people's on the items people rated (cluster bootstrap)."""
    out = []
    for name, mask in _by_system(g, lab):
        m = mask & lab
        key = "score_bias" if name is None else f"score_bias[{name}]"
        what = "the judge's score minus people's, in points" + (f", {name}" if name else "")
        if m.sum() < MIN_ITEMS:
            out.append(Measure(key=key, what=what, n=int(m.sum()), units=units,
                               decision=f"not measured: {int(m.sum())} rated item(s)"))
            continue
        d = (x - y)[m]
        boot = _boot(g.cluster[m], cfg)
        def mean(i: np.ndarray, d: np.ndarray = d) -> float:
            return float(np.mean(d[i]))

        ci = boot.interval(mean)
        out.append(Measure(
            key=key, what=what, estimate=float(d.mean()), ci=ci, n=int(m.sum()),
            baseline=0.0, units=units, finding=bool(ci and (ci[0] > 0 or ci[1] < 0)),
            decision=("lenient" if ci and ci[0] > 0 else "severe" if ci and ci[1] < 0
                      else "no bias shown") + f" ({int(m.sum())} rated items)"))
    return out


def _decidable(g: Graded, x: np.ndarray, y: np.ndarray, lab: np.ndarray,
               cfg: VerdictsConfig) -> list[Measure]:
    """The rows the card decides on, as for pass/fail judges: ``leniency`` (the score
    bias as a share of the scale's range, overall and per system, with the family's
    simultaneous intervals: ``rate`` and ``rank``), and ``accuracy``, the share of items
    within one point of people's consensus (``items``), against the best uninformed
    judge: the constant grade that is most often within one point."""
    span = g.scale.hi - g.scale.lo
    family = [(n, m & lab) for n, m in _by_system(g, lab) if (m & lab).sum() >= MIN_ITEMS]
    wide = family_level(cfg.level, len(family))
    out = []
    for name, m in family:
        d = (x - y)[m] / span
        est = float(d.mean())
        cis = []
        for lv in (cfg.level, wide):
            boot = _boot(g.cluster[m], cfg, lv)
            cis.append(boot.interval(partial(_mean_of, d), -1.0, 1.0))
        ci, fam = cis
        key = "leniency" if name is None else f"leniency[{name}]"
        out.append(Measure(
            key=key, what="the judge's score minus people's, as a share of the scale's "
            f"range ({g.scale.lo:g}-{g.scale.hi:g})" + (f", {name}" if name else ""),
            estimate=est, ci=ci, family_ci=fam, n=int(m.sum()), baseline=0.0,
            units="difference of shares", finding=bool(ci and (ci[0] > 0 or ci[1] < 0)),
            decision=("lenient" if ci and ci[0] > 0 else "severe" if ci and ci[1] < 0
                      else "no leniency shown") + f" ({int(m.sum())} rated items)",
            note=f"{len(family)} rows in the family: together at {wide:.4g} each"))
    if lab.sum() >= MIN_ITEMS:
        yl, xl = y[lab], x[lab]
        near = np.abs(xl - yl) <= 1.0
        acc = rate_measure("accuracy", "share of items the judge scores within one point "
                           "of people's consensus", near, g.cluster[lab], cfg.level)
        grades = np.arange(math.ceil(g.scale.lo), math.floor(g.scale.hi) + 1, 1.0) \
            if g.scale.integer else np.unique(_grade(yl))
        base = max(float(np.mean(np.abs(c - yl) <= 1.0)) for c in grades)
        lo_, hi_ = acc.ci if acc.ci else (None, None)
        acc.baseline = base
        acc.decision = (f"above an uninformed judge ({base:.3f}: the best constant grade)"
                        if lo_ is not None and lo_ > base else
                        f"no better than an uninformed judge ({base:.3f}: the best "
                        "constant grade)" if hi_ is not None and hi_ <= base else
                        f"not shown above an uninformed judge ({base:.3f})")
        out.append(acc)
    return out


def _ceiling(g: Graded, x: np.ndarray, lab: np.ndarray, cfg: VerdictsConfig) -> Measure:
    """Leave one rater out: each rater's Spearman with the mean of the others (the
    human ceiling, averaged over raters), and the judge's with the same others."""
    k = max((len(h) for h in g.humans), default=0)
    what = "the human ceiling: each rater against the mean of the others (Spearman)"
    if k < 2:
        return Measure(key="human_ceiling", what=what, units="correlation",
                       decision="not measured: one rater a item")
    h = np.array([[v if v is not None else np.nan for v in row] for row in g.humans], float)

    def pairs(idx: np.ndarray) -> tuple[float, float]:
        hs, js = [], []
        for r in range(k):
            others = np.delete(h[idx], r, axis=1)
            with np.errstate(all="ignore"):
                rest = np.nanmean(others, axis=1)
            ok = ~np.isnan(h[idx, r]) & ~np.isnan(rest)
            if ok.sum() >= MIN_ITEMS:
                hs.append(spearman(h[idx, r][ok], rest[ok]))
                js.append(spearman(x[idx][ok], rest[ok]))
        return (float(np.nanmean(hs)), float(np.nanmean(js))) if hs else (math.nan, math.nan)

    all_idx = np.arange(len(x))
    human, judge = pairs(all_idx)
    if not math.isfinite(human):
        return Measure(key="human_ceiling", what=what, units="correlation",
                       decision="not measured: too few items two raters rated")
    boot = _boot(g.cluster, cfg)
    ci = boot.interval(lambda i: pairs(i)[0], -1, 1)
    diff = boot.interval(lambda i: pairs(i)[1] - pairs(i)[0], -2, 2)
    better = diff is not None and diff[0] > 0
    worse = diff is not None and diff[1] < 0
    return Measure(
        key="human_ceiling", what=what, estimate=human, ci=ci, n=len(x),
        clusters=int(np.unique(g.cluster).size), units="correlation",
        decision=("the judge tracks people better than one more rater would" if better
                  else "the judge tracks people worse than one more rater would" if worse
                  else "the judge is not shown apart from one more rater"),
        finding=better or worse,
        note=f"the judge against the same others: {judge:.3f}; judge minus rater "
             f"{judge - human:+.3f}" + (f" [{diff[0]:+.3f}, {diff[1]:+.3f}]" if diff
                                         else "") + f"; {k} raters")


def _system_kendall(g: Graded, x: np.ndarray, y: np.ndarray, lab: np.ndarray,
                    cfg: VerdictsConfig) -> Measure:
    """Kendall's tau-b of the systems' mean scores (judge against people), with a
    bootstrap over the rated items (clustered by question)."""
    names = sorted({s for s in g.system if s is not None})
    what = "Kendall's tau-b of the systems' mean scores, judge against people"
    if len(names) < 3:
        return Measure(key="system_kendall", what=what, n=len(names), units="correlation",
                       decision=f"not measured: {len(names)} system(s) (need 3)")
    sys_idx = np.array([names.index(s) if s is not None else -1 for s in g.system])
    rated = np.flatnonzero(lab & (sys_idx >= 0))

    def tau(idx: np.ndarray) -> float:
        s = sys_idx[idx]
        jm = np.array([x[idx][s == k].mean() if (s == k).any() else np.nan
                       for k in range(len(names))])
        hm = np.array([y[idx][s == k].mean() if (s == k).any() else np.nan
                       for k in range(len(names))])
        ok = ~np.isnan(jm) & ~np.isnan(hm)
        return kendall(jm[ok], hm[ok]) if ok.sum() >= 3 else math.nan

    boot = _boot(g.cluster[rated], cfg)
    est = tau(rated)
    ci = boot.interval(lambda i: tau(rated[i]), -1, 1)
    return Measure(key="system_kendall", what=what, estimate=est if math.isfinite(est)
                   else None, ci=ci, n=len(names), units="correlation",
                   decision=f"{len(names)} systems, {rated.size} rated items")


def _corrected(g: Graded, x: np.ndarray, y: np.ndarray, lab: np.ndarray,
               cfg: VerdictsConfig) -> list[Measure]:
    """The mean score people would give, corrected with the judge's scores on every item
    (PPI++ for a mean on the scale mapped to [0, 1]), overall and per system."""
    lo, span = g.scale.lo, g.scale.hi - g.scale.lo
    out = []
    for name, mask in _by_system(g, lab):
        key = "corrected_mean_score" if name is None else f"corrected_mean_score[{name}]"
        what = "the mean score people would give, corrected with the judge's scores " \
               "(prediction-powered)" + (f", {name}" if name else "")
        m = mask & lab
        if m.sum() < 2 or mask.sum() < 2:
            out.append(Measure(key=key, what=what, n=int(mask.sum()),
                               units=f"points on the {g.scale.text()} scale",
                               decision=f"not measured: {int(m.sum())} rated item(s)"))
            continue
        f = (x[mask] - lo) / span
        c = ppi_mean(f, (x[m] - lo) / span, (y[m] - lo) / span, level=cfg.level)
        out.append(Measure(
            key=key, what=what, estimate=lo + span * c.estimate,
            ci=[lo + span * c.ci[0], lo + span * c.ci[1]], n=int(mask.sum()),
            labelled=int(m.sum()), units=f"points on the {g.scale.text()} scale",
            decision=f"{int(m.sum())} items people rated",
            note=f"people's ratings alone: {lo + span * c.human_only:.3f} "
                 f"[{lo + span * c.human_only_ci[0]:.3f}, "
                 f"{lo + span * c.human_only_ci[1]:.3f}]; the judge's mean "
                 f"{float(x[mask].mean()):.3f}"))
    return out


def _calibration(g: Graded, y: np.ndarray, lab: np.ndarray, boot: ClusterBootstrap | None,
                 n_lab: int) -> list[Measure]:
    """ECE (top grade, 10 equal-width bins) and the multi-class Brier score of the
    judge's grade distribution against people's consensus grade."""
    assert g.probs is not None and g.grades is not None
    p, grades = g.probs[lab], g.grades
    yg = _grade(y[lab])
    onehot = (grades[None, :] == yg[:, None]).astype(float)

    def brier(i: np.ndarray) -> float:
        return float(np.mean(np.sum((p[i] - onehot[i]) ** 2, axis=1)))

    def ece(i: np.ndarray) -> float:
        conf = p[i].max(1)
        right = (grades[p[i].argmax(1)] == yg[i]).astype(float)
        b = np.minimum((conf * BINS).astype(int), BINS - 1)
        tot = 0.0
        for k in range(BINS):
            sel = b == k
            if sel.any():
                tot += sel.mean() * abs(right[sel].mean() - conf[sel].mean())
        return tot

    out = []
    for key, what, fn, hi in (
            ("ece", "expected calibration error of the judge's top grade (10 bins)", ece,
             1.0),
            ("brier", "Brier score of the judge's grade distribution (0 is perfect)", brier,
             2.0)):
        if boot is None:
            out.append(Measure(key=key, what=what, n=n_lab,
                               decision="not measured: too few items people rated"))
            continue
        out.append(Measure(key=key, what=what, estimate=fn(np.arange(n_lab)),
                           ci=boot.interval(fn, 0.0, hi), n=n_lab, units="share",
                           decision=f"{n_lab} items people rated"))
    return out
