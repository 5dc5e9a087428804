"""What recorded verdicts show: every figure the data allows, each with its interval at
the configured level, its n, what the best uninformed judge scores on the same items,
and a decision.

- Pointwise (one verdict per item: pass/fail, 1/0, yes/no, C/I, or a score against a
  threshold): the judge's pass rate; against human labels where rows have them,
  accuracy, Cohen's kappa and Gwet's AC1 (agreement with people is a finding when it is
  not shown above the best uninformed judge: the majority label, or random verdicts at
  the judge's own rate); a prediction-powered pass rate (PPI++) per system and overall.
  Rows sharing a question are one cluster (design-effect-corrected Wilson intervals).
- Pairwise (the order shown, the winner incl. ties, a label optional; both orders of a
  pair share its id): position bias (share of non-tie verdicts for the first-shown
  answer, minus 1/2; the pair is the cluster), order consistency (the same answer, or a
  tie, in both orders), accuracy, kappa and AC1 against the label, and the preference
  for the longer answer controlled for quality by the label and for position by using
  both orders.
- alpaca_eval annotations: each evaluated model's win rate against the baseline with
  ties as 1/2, as leaderboards count it (percentile bootstrap over instructions), and
  the longer answer's win share (descriptive: no reference controls for quality;
  annotations record the preference by output, not by position, so position bias is
  not measurable from them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.jsontypes import JSONObject
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure
from judgekit.stats.agreement import agreement, fleiss_kappa, item_bootstrap
from judgekit.stats.decide import beyond_chance, random_ac1, versus_uninformed
from judgekit.stats.ppi import LabelError
from judgekit.stats.preference import clustered_rate_counts
from judgekit.stats.proportions import wilson_interval


def rate_measure(key: str, what: str, flags: Sequence[bool] | np.ndarray,
                 groups: Sequence[Any] | np.ndarray | None, level: float, **kw: Any
                 ) -> Measure:
    """A share with a Wilson interval, clustered by ``groups`` when several rows share
    one (a question, a pair). ``groups`` may be the rows' keys or, for columnar data,
    their integer codes (:func:`first_codes`)."""
    if not len(flags):
        return Measure(key=key, what=what, n=0, **{**kw, "decision": "not measured: no rows"})
    if groups is not None:
        codes = groups if isinstance(groups, np.ndarray) else first_codes(groups)
        k = int(codes.max()) + 1
        if k < len(codes):
            f = np.asarray(flags, float)
            c = clustered_rate_counts(np.bincount(codes, weights=f, minlength=k),
                                      np.bincount(codes, minlength=k), level)
            return Measure(key=key, what=what, estimate=c.rate, ci=c.ci, n=c.n,
                           clusters=c.clusters, **kw)
    n = len(flags)
    hits = int(np.count_nonzero(np.asarray(flags, bool)))
    return Measure(key=key, what=what, estimate=hits / n,
                   ci=wilson_interval(hits, n, level).as_list(), n=n, **kw)


def sorted_runs(keys: np.ndarray, dtype: type = np.int64) -> tuple[np.ndarray, np.ndarray]:
    """(the stable sort's permutation of ``keys`` as ``dtype``, and which sorted positions
    start a run of equal keys), compared a block at a time: no sorted copy of the keys."""
    n = keys.size
    perm: np.ndarray = np.argsort(keys, kind="stable").astype(dtype, copy=False)
    new = np.empty(n, bool)
    if n:
        new[0] = True
    step = 1 << 20
    for a in range(1, n, step):
        b = min(n, a + step)
        np.not_equal(keys[perm[a:b]], keys[perm[a - 1:b - 1]], out=new[a:b])
    return perm, new


def first_codes(keys: Sequence[Any] | np.ndarray) -> np.ndarray:
    """Integer codes 0..k-1 of ``keys`` in the order each first appears (equal keys, equal
    codes). An integer array (the rows' key hashes, for columnar data) is factorised by
    a stable sort, in about three times its own memory; other keys by a dict."""
    if isinstance(keys, np.ndarray) and keys.dtype.kind in "iu":
        n = keys.size
        if not n:
            return np.zeros(0, np.int32)
        small = np.int32 if n < 2**31 else np.int64
        perm, new = sorted_runs(keys, small)
        del keys  # the caller's array goes here when it passed its only reference
        run = np.cumsum(new, dtype=small) - 1  # each sorted position's key
        first = perm[new]  # where each key first appears (a stable sort)
        del new
        starts = np.zeros(n, bool)
        starts[first] = True
        rank = (np.cumsum(starts, dtype=small) - 1)[first]  # keys in order of appearance
        del starts, first
        codes = np.empty(n, small)
        codes[perm] = rank[run]
        return codes
    seen: dict[Any, int] = {}
    return np.fromiter((seen.setdefault(g, len(seen)) for g in keys), np.int64,
                       count=len(keys))


def _against_uninformed(m: Measure, judge: list[str], human: list[str],
                        groups: list[str] | None, level: float) -> Measure:
    """Accuracy is a claim only against what an uninformed judge scores on the same
    items, compared paired (the baseline's uncertainty included): above both the
    majority label and random verdicts at the judge's rates, shown no better than one
    of them (a finding), or not distinguishable."""
    u = versus_uninformed(judge, human, groups, level)
    m.baseline = max(u.majority, u.random)
    m.decision = {"above": "above the best uninformed judge",
                  "no better": "no better than an uninformed judge",
                  "not distinguishable": "not distinguishable from the best uninformed "
                                         "judge"}[u.decision]
    m.finding = u.decision == "no better"
    m.note = (f"paired on the same items: judge - majority label {u.vs_majority.estimate:+.3f} "
              f"[{u.vs_majority.ci[0]:+.3f}, {u.vs_majority.ci[1]:+.3f}], judge - random at "
              f"its rates {u.vs_random.estimate:+.3f} [{u.vs_random.ci[0]:+.3f}, "
              f"{u.vs_random.ci[1]:+.3f}]" + (m.note and f"; {m.note}" or ""))
    return m


def agreement_measures(judge: list[str], human: list[str], cfg: VerdictsConfig,
                       what: str, groups: list[str] | None = None) -> list[Measure]:
    """Accuracy, Cohen's kappa and Gwet's AC1 of the judge against people; with
    ``groups`` (the question each answer belongs to) the intervals resample questions.
    Agreement beyond chance is decided on each row by the interval printed beside it:
    above 0 for kappa and alpha, above a random judge's AC1 for AC1 (far above 0 under
    skew); accuracy against the best uninformed judge, paired."""
    if len(judge) < 2:
        return []
    if groups is not None and len(set(groups)) == len(groups):
        groups = None
    code = {c: i for i, c in enumerate(sorted(set(judge) | set(human)))}  # nominal classes
    ag = agreement([code[c] for c in judge], [code[c] for c in human],
                   seed=streams.integer("verdicts.agreement", cfg.seed),
                   resamples=cfg.resamples, level=cfg.level, groups=groups)
    acc = _against_uninformed(rate_measure("accuracy", f"accuracy against {what}",
                                           [a == b for a, b in zip(judge, human)], groups,
                                           cfg.level), judge, human, groups, cfg.level)
    out = [acc]
    clusters = None if groups is None else len(set(groups))
    chance = beyond_chance(judge, human, groups,
                           seed=streams.integer("verdicts.beyond_chance", cfg.seed),
                           permutations=PERMUTATIONS if len(judge) <= 20_000 else 500)
    confirmed = chance.p_value < 1 - cfg.level
    for key, value, name in (("kappa", ag.kappa, "Cohen's kappa"), ("ac1", ag.ac, "Gwet's AC1"),
                             ("alpha", ag.alpha, "Krippendorff's alpha (nominal)")):
        ci = ag.cis.get({"ac1": "ac"}.get(key, key))
        base = random_ac1(judge, human) if key == "ac1" else 0.0
        floor = 0.0 if base != base else base
        # one procedure per row: the decision is the interval printed beside it (the
        # bootstrap over questions), against what a judge independent of people scores
        above = ci is not None and ci[0] is not None and ci[0] > floor
        shown = above and confirmed
        out.append(Measure(key=key, what=f"{name} with {what}", estimate=value, ci=ci,
                           n=ag.n, baseline=None if base != base else round(base, 6),
                           clusters=clusters, units="chance-corrected agreement",
                           decision="agrees beyond chance" if shown else
                           "no agreement beyond chance shown" + (
                               f" (the interval lies above {floor:.3g}, but the "
                               f"permutation test does not confirm it: p = "
                               f"{chance.p_value:.3g})" if above else ""),
                           finding=not shown,
                           note="; ".join(x for x in (
                               (ag.undefined or {}).get(key) if key != "ac1" else None,
                               ag.note, f"beyond chance when the interval lies above "
                               f"{floor:.3g}, what a judge independent of people scores, "
                               f"and a permutation test of agreement beyond such a judge "
                               f"confirms it (one-sided p = {chance.p_value:.3g})")
                               if x)))
    return out


PERMUTATIONS = 2000


def fleiss_measure(items: list[JSONObject], m: int, cfg: VerdictsConfig) -> Measure:
    """People's agreement among themselves (Fleiss' kappa over items every annotator
    labelled; percentile bootstrap over items): the ceiling a judge is held to."""
    full = np.array([x["humans"] for x in items if len(x["humans"]) == m
                     and None not in x["humans"]], dtype=object)
    what = f"agreement among the {m} annotators (Fleiss' kappa)"
    if len(full) < 2:
        return Measure(key="fleiss_kappa", what=what, n=len(full),
                       decision="not measured: fewer than 2 items every annotator labelled",
                       units="chance-corrected agreement")
    full = np.unique(full.astype(str), return_inverse=True)[1].reshape(full.shape)
    value = fleiss_kappa(full)
    ci = item_bootstrap(lambda idx: fleiss_kappa(full[idx]), len(full),
                        streams.integer("verdicts.human_ceiling", cfg.seed), cfg.resamples,
                        cfg.level)
    return Measure(key="fleiss_kappa", what=what,
                   estimate=None if not np.isfinite(value) else value,
                   ci=None if not np.isfinite(ci.lo) else [ci.lo, ci.hi], n=len(full),
                   units="chance-corrected agreement",
                   decision="the human ceiling (majority label used as the human label)")


def label_error_measure(err: LabelError) -> Measure:
    """The annotators' flip rate the corrected rows account for, as a row of its own."""
    return Measure(key="label_error", what="the share of labels an annotator flips",
                   estimate=err.rate, ci=err.ci, n=err.items or 0,
                   decision=err.how if err.items is None else
                   f"{err.how} ({err.items} items labelled twice)",
                   note="corrected rates account for it (Rogan-Gladen); two annotators "
                        "disagree with probability 2e(1 - e)")


def label_error_note(err: LabelError | None) -> str:
    """Whether a corrected figure accounts for annotator error."""
    if err is None:
        return ("; human labels taken as error-free (--label-error RATE corrects for "
                "annotators who flip labels)")
    if err.items is None:
        return f"; corrected for annotators flipping {err.rate:.1%} of labels (stated)"
    return (f"; corrected for annotators flipping {err.rate:.1%} of labels [{err.ci[0]:.1%}, "
            f"{err.ci[1]:.1%}] (estimated from {err.items} items labelled twice)"
            if err.ci else f"; corrected for annotators flipping {err.rate:.1%} of labels")
