"""The audit's trust decision, from per-item evidence, against two references.

A success rate means nothing on its own: an always-pass judge "succeeds" on 88% of
items when 88% of them pass, and a perfect judge "fails" half its items when the
verifier misreads each criterion 5% of the time. The decision therefore compares the
judge with

* the **perfect-judge reference**: the success a judge whose claims are all true
  would get under this verifier's misreads (judgekit.methods.nodata.readings: two readings of
  one text differ anywhere on a share d of items, so one reading is wholly right with
  probability q = sqrt(1 - d); where people scored items, the share of readings that
  match their rubric values counts too, as it sees misreads a re-read repeats); the
  relative success rho = success / reference is what the thresholds apply to;
* **uninformed judges on the same items**: the best constant breakdown (the
  verifier's commonest reading) and random claims at the judge's own per-criterion
  rates; the judge's claim agreement must beat the better of them (paired, per item),
  its labels must agree with the verifier's beyond chance (Cohen's kappa interval
  above 0), and where human labels exist its accuracy must beat the majority label;
* **people**, where they scored enough items: the judge's claims must match their
  rubric values (a blind spot the judge shares with the verifier is invisible to the
  verifier); without them, a judge and verifiers of one model family cannot be told
  apart and the audit says so instead of trusting.

Every interval is at the configured level; bootstrap intervals resample items (the
success, the re-reads and the claims of an item stay together).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from judgekit.core import seeds
from judgekit.core.payload import Rate
from judgekit.methods.nodata.payload import (
    Decision,
    LabelAccuracy,
    LabelAgreement,
    Uninformed,
    Verdict,
)
from judgekit.methods.nodata.readings import ItemEvidence, VerifierReadings, rate_of
from judgekit.stats.agreement import agreement
from judgekit.stats.proportions import rate_with_interval, wilson_interval

TRUST: Decision = "trust"
DISTRUST: Decision = "do not trust"
INCONCLUSIVE: Decision = "inconclusive"


@dataclass
class DecisionSettings:
    rounds: int = 3
    check: str = "both"
    level: float = 0.95
    trust_threshold: float = 0.8  # of the perfect-judge reference
    distrust_threshold: float = 0.5
    min_reference: float = 0.3  # below: the verifier is too inconsistent to decide
    self_check: bool = False  # the verifier is the judge itself
    same_family: bool = False  # judge and verifier come from one model family
    resamples: int = 1000
    seed: int = 0
    min_human_items: int = 10  # human rubric values on fewer items are not used
    second_verifier: bool = False  # the re-reads come from another verifier model


def _baselines(items: Sequence[ItemEvidence]) -> tuple[np.ndarray, np.ndarray, str]:
    """Per item, the chance that each uninformed judge's claims match the verifier's
    reading: (best constant, random at the judge's own rates), and which is better."""
    crits = list(items[0].claimed)
    tops = [tuple(it.verifier_top[c] for c in crits) + (it.verifier_label,) for it in items]
    values, counts = np.unique(np.array(tops), axis=0, return_counts=True)
    mode = tuple(values[int(np.argmax(counts))])
    const = np.array([float(t == mode) for t in tops])
    rate = {c: float(np.mean([it.claimed[c] for it in items])) for c in crits}
    lab_rate = float(np.mean([it.judge_label for it in items]))
    rand = np.array([
        np.prod([rate[c] if it.verifier_top[c] else 1 - rate[c] for c in crits])
        * (lab_rate if it.verifier_label else 1 - lab_rate) for it in items])
    return const, rand, "constant" if const.mean() >= rand.mean() else "random"


@dataclass
class _Judged:
    """The evidence a rule reads: the success rate, the verifier's noise, the judge
    against its perfect-judge reference and against uninformed judges, its labels."""

    n: int
    rate: float | None
    ci: list[float] | None
    ref: float
    rho: float
    rho_ci: list[float]
    skill: float
    skill_ci: list[float]
    claims: float
    base: float
    kappa: float | None
    kappa_ci: list[float] | None
    acc_ok: bool | None
    judge_labels: list[int]
    verifier_labels: list[int]
    verifier_totals: set[tuple[int, ...]]
    reread: bool
    disagreement: float | None
    ref_from: str = "rereads"  # which measurement set the reference: rereads or people
    human_match: float | None = None  # share of the verifier's readings matching people
    people: Rate | None = None  # the judge's claims against human rubric values
    human_majority: float = 1.0  # share of people's commonest label (items they labelled)


def _rounds(items: Sequence[ItemEvidence], rounds: int) -> float:
    """A paraphrase repeated across rounds is read once (the same call): the rounds whose
    paraphrases differed, as observed."""
    reached = sum(it.rounds_reached or 0 for it in items)
    distinct = sum(it.distinct_x_primes or 0 for it in items)
    return rounds * distinct / reached if reached else float(rounds)


def _against_references(succ: np.ndarray, claims: np.ndarray, base: np.ndarray,
                        noise: VerifierReadings, ref: float, ci: list[float] | None,
                        s: DecisionSettings, rng: np.random.Generator
                        ) -> tuple[float, list[float], float, list[float]]:
    """rho = success / perfect-judge reference and the claims' excess over the better
    uninformed judge, each with a bootstrap interval over items."""
    n = len(succ)
    rhos, skills = [], []
    for _ in range(s.resamples):
        i = rng.integers(0, n, n)
        r_ref = noise.reference(i)
        rhos.append(succ[i].mean() / r_ref if r_ref > 0 else np.nan)
        skills.append(claims[i].mean() - base[i].mean())
    a = (1 - s.level) / 2
    rho = float(succ.mean() / ref) if ref > 0 else float("nan")
    finite = np.asarray(rhos, float)
    finite = finite[np.isfinite(finite)]
    rho_ci = [float(v) for v in np.quantile(finite, [a, 1 - a])] if finite.size else \
        [float("nan"), float("nan")]
    if rho_ci[0] == rho_ci[1]:  # no spread (every item alike): Wilson on the successes
        rho_ci = [v / ref for v in ci] if ref > 0 and ci else rho_ci
    skill = float(claims.mean() - base.mean())
    skill_ci = [float(v) for v in np.quantile(skills, [a, 1 - a])]
    if skill_ci[0] == skill_ci[1]:
        lo, hi = wilson_interval(int(claims.sum()), n, s.level)
        skill_ci = [lo - float(base.mean()), hi - float(base.mean())]
    return rho, rho_ci, skill, skill_ci


def _label_accuracy(items: Sequence[ItemEvidence], s: DecisionSettings,
                    rng: np.random.Generator) -> LabelAccuracy | None:
    """Accuracy against the human labels (when every item has one) and its excess over
    the best uninformed judge (the majority label, or random at the judge's rate)."""
    n = len(items)
    hl = [(it.judge_label, it.human_label) for it in items if it.human_label is not None]
    if not (len(hl) >= 2 and len(hl) == n):
        return None
    j_, h_ = np.array(hl).T
    acc = float(np.mean(j_ == h_))
    maj = float(max(np.mean(h_), 1 - np.mean(h_)))
    jr, hr = float(np.mean(j_)), float(np.mean(h_))
    rand_acc = jr * hr + (1 - jr) * (1 - hr)
    diffs = []
    for _ in range(s.resamples):
        i = rng.integers(0, n, n)
        hm = h_[i].mean()
        diffs.append(np.mean(j_[i] == h_[i]) - max(hm, 1 - hm, jr * hm + (1 - jr) * (1 - hm)))
    a = (1 - s.level) / 2
    return LabelAccuracy(accuracy=acc, majority_label=maj, random_at_judge_rate=rand_acc,
                         excess_over_best=acc - max(maj, rand_acc),
                         excess_ci=[float(v) for v in np.quantile(diffs, [a, 1 - a])], n=n)


def decide(items: Sequence[ItemEvidence], s: DecisionSettings) -> Verdict:
    """trust / do not trust / inconclusive, the rule that decided, and its evidence."""
    n = len(items)
    if n == 0:
        return Verdict(n_items=0, level=s.level, success_rate=None, success_ci=None,
                       decision=INCONCLUSIVE, rule="no_items",
                       reason="no item completed the protocol")
    succ = np.array([float(it.success) for it in items])
    claims = np.array([float(it.claims_agree) for it in items])
    rate, ci, _ = rate_with_interval([bool(x) for x in succ], s.level)
    # -- the verifier, measured before the judge
    rounds = _rounds(items, s.rounds)
    noise = VerifierReadings(items, rounds, s.check, s.min_human_items, s.second_verifier)
    ver = noise.summary(items, s.level)
    refs = noise.references(np.arange(n))
    ref = min(refs.values(), default=1.0)
    # -- against the references: bootstrap of everything that is a ratio or a difference
    const, rand, which = _baselines(items)
    base = const if which == "constant" else rand
    rng = seeds.rng("nodata.decision", s.seed)
    rho, rho_ci, skill, skill_ci = _against_references(succ, claims, base, noise, ref, ci,
                                                       s, rng)
    jl = [it.judge_label for it in items]
    vl = [it.verifier_label for it in items]
    ag = agreement(jl, vl, seed=s.seed, resamples=s.resamples, level=s.level) if n >= 2 \
        else None
    kappa, kappa_ci = (ag.kappa, ag.cis["kappa"]) if ag else (None, None)
    accuracy = _label_accuracy(items, s, rng)
    judged = _Judged(n=n, rate=rate, ci=ci, ref=ref, rho=rho, rho_ci=rho_ci, skill=skill,
                     skill_ci=skill_ci, claims=float(claims.mean()), base=float(base.mean()),
                     kappa=kappa, kappa_ci=kappa_ci,
                     acc_ok=None if accuracy is None else accuracy.excess_ci[0] > 0,
                     judge_labels=jl, verifier_labels=vl,
                     verifier_totals={tuple(it.verifier_total) for it in items},
                     reread=bool(noise.reread), disagreement=ver.disagreement,
                     people=_claims_vs_people(items, s),
                     human_majority=_majority_share(items),
                     ref_from=min(refs, key=lambda k: refs[k]) if refs else "rereads",
                     human_match=None if noise.human is None else
                     float(np.nanmean(noise.human)))
    decision, rule, reason = _rule(judged, s)
    more = None
    if decision != TRUST:
        people_rate = None if judged.people is None else judged.people.rate
        scored = 0 if judged.people is None else judged.people.n
        planned = items_to_score(judged.claims if people_rate is None else people_rate, s,
                                 scored)
        more = min(planned, max(n - scored, 0))  # never more than the items audited
        reason += ("; the items people scored already settle it against them"
                   if planned == 0 else
                   f"; score {more} {'more ' if judged.people is not None else ''}"
                   "items by hand to settle it against people (rubric values in the data, "
                   "or pass/fail labels from judgekit label RUN, given back as "
                   "human_labels)" + (f"; that will not settle it: about {planned} more "
                                      f"are needed, so audit more items ({n} were audited)"
                                      if planned > more else ""))
    v = Verdict(
        n_items=n, level=s.level, success_rate=rate, success_ci=ci, verifier=ver,
        reference=ref, distinct_rounds=rounds,
        relative_success=rho if math.isfinite(rho) else None,
        relative_success_ci=rho_ci if all(map(math.isfinite, rho_ci)) else None,
        claim_agreement=float(claims.mean()),
        uninformed=Uninformed(constant_claims=float(const.mean()),
                              random_claims=float(rand.mean()), better=which),
        skill=skill, skill_ci=skill_ci,
        label_agreement=LabelAgreement(kappa=kappa, kappa_ci=kappa_ci,
                                       percent=None if ag is None else ag.percent,
                                       undefined=None if ag is None else ag.undefined),
        decision=decision, rule=rule, reason=reason)
    if more is not None:
        v.items_to_score = more
    if accuracy is not None:
        v.label_accuracy = accuracy
    if judged.people is not None:
        v.claims_vs_people = judged.people
    return v


MAX_TO_SCORE = 5000


def items_to_score(rate: float, s: DecisionSettings, scored: int = 0) -> int:
    """How many more items people should score so that the judge's claims against them,
    at the rate expected now, give an interval that clears the trust threshold (or falls
    below the distrust threshold): the smallest such n minus the items already scored,
    at least ``min_human_items`` in all (0: those scored already suffice). A rate
    between the thresholds cannot clear either; the plan then separates the interval
    from the nearer one, and MAX_TO_SCORE means "more than that"."""
    lo_t, hi_t = s.distrust_threshold, s.trust_threshold
    near_hi = rate >= hi_t or (rate >= lo_t and hi_t - rate <= rate - lo_t)
    for n in range(max(s.min_human_items, 1), MAX_TO_SCORE + 1):
        lo, hi = wilson_interval(round(rate * n), n, s.level)
        if rate >= hi_t:
            done = lo >= hi_t
        elif rate < lo_t:
            done = hi < lo_t
        else:  # between: exclude the nearer threshold
            done = hi < hi_t if near_hi else lo > lo_t
        if done:
            return max(n - scored, 0)
    return MAX_TO_SCORE


def _majority_share(items: Sequence[ItemEvidence]) -> float:
    """The share of people's commonest label over the items they labelled (1.0: none)."""
    labels = [it.human_label for it in items if it.human_label is not None]
    if not labels:
        return 1.0
    top = max(set(labels), key=labels.count)
    return labels.count(top) / len(labels)


def _claims_vs_people(items: Sequence[ItemEvidence], s: DecisionSettings) -> Rate | None:
    """Share of items whose human rubric values equal the judge's claims on every shared
    criterion (and the label, where people gave one; the label alone where people gave
    only a label), with its interval; None when
    people scored fewer than ``min_human_items`` items."""
    hits = []
    for it in items:
        shared = [c for c in it.claimed if c in it.human_criteria]
        if not shared:  # a label alone (scored with judgekit label) checks the label
            if it.human_label is not None:
                hits.append(it.human_label == it.judge_label)
            continue
        hits.append(all(it.claimed[c] == it.human_criteria[c] for c in shared)
                    and (it.human_label is None or it.human_label == it.judge_label))
    return rate_of(hits, s.level) if len(hits) >= s.min_human_items else None


def _rule(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str]:
    """The first rule that applies: the verifier cannot decide, the judge is shown
    worse than the references, shown as good as them, or not shown either way."""
    return (_confirmed(e, s) or _cannot_decide(e, s) or _distrust(e, s) or _trust(e, s)
            or _not_shown(e, s))


def _confirmed(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str] | None:
    """People outrank the verifier: when the judge's claims match people's on the items
    they scored, shown at or above the trust threshold and above what always giving
    people's commonest label scores, the judge is trusted whatever the verifier reads
    (a verifier's misreads are its own errors, not the judge's)."""
    p = e.people
    if p is None or p.ci is None or p.ci[0] < s.trust_threshold or e.acc_ok is False:
        return None
    if e.acc_ok is None and p.ci[0] <= e.human_majority:
        return None  # not shown above always giving people's commonest label
    pct = f"{s.level:.0%}"
    return (TRUST, "confirmed_by_people",
            f"people confirm it: its claims match theirs on {p.rate:.3f} of the {p.n} items "
            f"they scored ({pct} interval [{p.ci[0]:.3f}, {p.ci[1]:.3f}], above "
            f"{s.trust_threshold}); people outrank the verifier, whose success "
            f"{e.rate:.3f} against its own readings does not decide")


def _cannot_decide(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str] | None:
    if e.n >= 3 and len(e.verifier_totals) == 1:
        return (INCONCLUSIVE, "verifier_constant",
                f"the verifier gave every item the same scores {sorted(e.verifier_totals)[0]}: "
                "its checks cannot tell texts apart")
    if (e.reread or e.human_match is not None) and e.ref < s.min_reference:
        what = (f"the verifier's readings match the human rubric values on only "
                f"{e.human_match or 0.0:.1%} of items" if e.ref_from == "people" else
                f"the verifier disagrees with itself on {e.disagreement or 0.0:.1%} of "
                "readings of the same text")
        return (INCONCLUSIVE, "verifier_inconsistent",
                f"{what}: even a perfect judge would succeed only "
                f"{e.ref:.0%} of the time (below {s.min_reference:.0%}), too little to "
                "decide; use a stronger verifier or per-criterion mode "
                "(criterion_mode: per_criterion), and give human rubric values for some "
                "items so the reference is measured against people")
    if len(set(e.judge_labels)) == 1 and len(set(e.verifier_labels)) == 1:
        return (INCONCLUSIVE, "one_class",
                f"the judge and the verifier give every item label {e.judge_labels[0]}: the "
                "audit cannot tell an informed judge from a constant one; audit "
                "items of both classes")
    return None


def _distrust(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str] | None:
    pct = f"{s.level:.0%}"
    if len(set(e.judge_labels)) == 1:
        return (DISTRUST, "constant_judge",
                f"the judge gave every item label {e.judge_labels[0]} while the verifier's "
                f"labels vary: its labels carry no information (success "
                f"{e.rate:.3f} is what always saying {e.judge_labels[0]} scores on these "
                "items)")
    if e.rho_ci[1] < s.distrust_threshold:
        return (DISTRUST, "below_reference",
                f"success {e.rate:.3f} is {e.rho:.2f} of a perfect judge's {e.ref:.3f} under "
                f"this verifier ({pct} interval [{e.rho_ci[0]:.2f}, {e.rho_ci[1]:.2f}], "
                f"below {s.distrust_threshold})")
    if e.people is not None and e.people.ci is not None and \
            e.people.ci[1] < s.distrust_threshold:
        return (DISTRUST, "below_people",
                f"its claims match the human rubric values on {e.people.rate:.3f} of the "
                f"{e.people.n} items people scored ({pct} interval [{e.people.ci[0]:.2f}, "
                f"{e.people.ci[1]:.2f}], below {s.distrust_threshold})")
    if e.skill_ci[1] <= 0:
        return (DISTRUST, "no_better_than_uninformed",
                f"its claims agree with the verifier on {e.claims:.3f} of items, no "
                f"more than a judge without information ({e.base:.3f}; {pct} "
                f"interval of the excess [{e.skill_ci[0]:+.3f}, {e.skill_ci[1]:+.3f}])")
    return None


def _informative(e: _Judged) -> bool:
    return e.kappa is not None and e.kappa_ci is not None and e.kappa_ci[0] > 0


def _trust(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str] | None:
    if not (e.rho_ci[0] >= s.trust_threshold and e.skill_ci[0] > 0 and _informative(e)
            and e.acc_ok is not False):
        return None
    if e.people is not None and e.people.ci is not None and \
            e.people.ci[0] < s.trust_threshold:
        return None  # the verifier agrees, people do not (yet): a shared blind spot?
    if s.self_check:
        return (INCONCLUSIVE, "self_check",
                "the success rate is high, but the verifier is the judge itself: a "
                "model checking its own claims cannot establish trust; use another "
                "verifier")
    if s.same_family and e.people is None:
        return (INCONCLUSIVE, "cannot_separate",
                f"cannot separate the judge from the verifier: they come from one model "
                f"family, no human rubric values were given, and they agree on "
                f"{e.claims:.0%} of items, which a blind spot they share would also "
                "give; add a verifier of another family (second_verifier) or human "
                "rubric values for some items")
    if e.people is None:
        return (INCONCLUSIVE, "verifier_only",
                f"consistent with the verifier: success {e.rate:.3f} is {e.rho:.2f} of a "
                f"perfect judge's {e.ref:.3f} under it ({s.level:.0%} interval "
                f"[{e.rho_ci[0]:.2f}, {e.rho_ci[1]:.2f}]) and its claims beat a judge "
                f"without information by {e.skill:+.3f}; but no person scored these "
                "items, so errors the judge shares with the verifier (a blind spot, "
                "copied errors, items the verifier reads easily) are not excluded, and "
                "the verifier's own error rates are not measured (the paper's rule would "
                "trust on this success rate alone; judgekit does not)")
    return (TRUST, "above_reference",
            f"success {e.rate:.3f} is {e.rho:.2f} of a perfect judge's {e.ref:.3f} under "
            f"this verifier ({s.level:.0%} interval [{e.rho_ci[0]:.2f}, {e.rho_ci[1]:.2f}], "
            f"above {s.trust_threshold}), its claims beat a judge without "
            f"information by {e.skill:+.3f}, and its labels agree with the "
            f"verifier's beyond chance (kappa {e.kappa:.2f})")


def _not_shown(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str]:
    pct = f"{s.level:.0%}"
    if not _informative(e):
        why = ("its labels' agreement with the verifier's is undefined" if e.kappa is None
               else f"the {pct} interval of its labels' kappa with the verifier's reaches 0 "
                    f"[{e.kappa_ci[0]:.2f}, {e.kappa_ci[1]:.2f}]" if e.kappa_ci else "")
        return (INCONCLUSIVE, "labels_not_shown_informative",
                f"{why}: not shown to carry information; audit more items")
    if e.people is not None and e.people.ci is not None and \
            e.people.ci[0] < s.trust_threshold:
        return (INCONCLUSIVE, "not_shown_against_people",
                f"the verifier confirms its claims, but they match the human rubric "
                f"values on only {e.people.rate:.3f} of {e.people.n} items ({pct} interval "
                f"[{e.people.ci[0]:.2f}, {e.people.ci[1]:.2f}], not above "
                f"{s.trust_threshold}): errors the judge shares with the verifier are "
                "invisible to the verifier; score more items by hand")
    if e.acc_ok is False:
        return (INCONCLUSIVE, "accuracy_not_above_majority",
                "its accuracy against the human labels is not shown above always "
                "saying the majority label; audit more items")
    return (INCONCLUSIVE, "straddles",
            f"success {e.rate:.3f} is {e.rho:.2f} of a perfect judge's {e.ref:.3f} under this "
            f"verifier; the {pct} interval [{e.rho_ci[0]:.2f}, {e.rho_ci[1]:.2f}] straddles "
            f"{s.distrust_threshold}-{s.trust_threshold}; audit more items")
