"""The audit's trust decision, from per-item evidence, against two references.

A success rate means nothing on its own: an always-pass judge "succeeds" on 88% of
items when 88% of them pass, and a perfect judge "fails" half its items when the
verifier misreads each criterion 5% of the time. The decision therefore compares the
judge with

* the **perfect-judge reference**: the success a judge whose claims are all true
  would get under this verifier's measured inconsistency (the verifier re-reads each
  x; criterion c disagrees with itself on a share d_c of items, so one reading is
  wrong with probability p_c = (1 - sqrt(1 - 2 d_c)) / 2, and a perfect judge
  passes challenge 0 with probability q_top = prod_c (1 - p_c) and each round with
  (q_total + q_top) / 2); the relative success rho = success / reference is what the
  thresholds apply to;
* **uninformed judges on the same items**: the best constant breakdown (the
  verifier's commonest reading) and random claims at the judge's own per-criterion
  rates; the judge's claim agreement must beat the better of them (paired, per item),
  its labels must agree with the verifier's beyond chance (Cohen's kappa interval
  above 0), and where human labels exist its accuracy must beat the majority label.

Every interval is at the configured level; bootstrap intervals resample items (the
success, the re-reads and the claims of an item stay together).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from judgekit.nodata.payload import (
    Decision,
    LabelAccuracy,
    LabelAgreement,
    Uninformed,
    Verdict,
    VerifierNoise,
)
from judgekit.payload import Rate
from judgekit.stats.agreement import agreement
from judgekit.stats.proportions import rate_with_interval, wilson_interval

TRUST: Decision = "trust"
DISTRUST: Decision = "do not trust"
INCONCLUSIVE: Decision = "inconclusive"


@dataclass
class ItemEvidence:
    """What one audited item contributes (all 0/1)."""

    success: bool
    judge_label: int
    verifier_label: int  # the verifier's rubric aggregated over its reading of x
    claimed: dict[str, int]  # the judge's claimed value per shared criterion
    verifier_top: dict[str, int]  # the verifier's reading of x, top-level criteria
    verifier_total: tuple[int, ...]  # ... and of every clause (C-bar)
    reread_total: tuple[int, ...] | None = None  # a second reading of the same x
    reread_top: dict[str, int] | None = None
    human_label: int | None = None
    human_criteria: dict[str, int] = field(default_factory=dict)
    rounds_reached: int | None = None  # rounds whose paraphrase was read
    distinct_x_primes: int | None = None  # how many of those paraphrases differed

    @property
    def claims_agree(self) -> bool:
        return (self.judge_label == self.verifier_label
                and all(self.claimed[c] == self.verifier_top[c] for c in self.claimed))


@dataclass
class DecisionSettings:
    rounds: int = 3
    check: str = "both"
    level: float = 0.95
    trust_threshold: float = 0.8  # of the perfect-judge reference
    distrust_threshold: float = 0.5
    min_reference: float = 0.3  # below: the verifier is too inconsistent to decide
    self_check: bool = False  # the verifier is the judge itself
    resamples: int = 1000
    seed: int = 0


def _p_misread(d: float) -> float:
    """Per-reading error probability from the disagreement rate of two independent
    readings, d = 2 p (1 - p)."""
    return 0.5 * (1.0 - math.sqrt(max(0.0, 1.0 - 2.0 * min(d, 0.5))))


def _reference(dis_total: np.ndarray, dis_top: np.ndarray, rounds: float, check: str
               ) -> float:
    """Success of a perfect judge under per-criterion disagreement rates."""
    if dis_total.size == 0:
        return 1.0
    q_total = float(np.prod([1 - _p_misread(d) for d in dis_total]))
    q_top = float(np.prod([1 - _p_misread(d) for d in dis_top])) if dis_top.size else 1.0
    if check == "pair":  # V(x') must equal V(x): two readings agree
        a_total, a_top = float(np.prod(1 - dis_total)), float(np.prod(1 - dis_top))
        return ((a_total + a_top) / 2) ** rounds
    if check == "paper":  # the claims against V(x') every round
        return q_top ** rounds
    return q_top * ((q_total + q_top) / 2) ** rounds


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


class _Noise:
    """Per item and criterion, did the verifier's re-read disagree with its reading (NaN
    where the item was not re-read); the perfect-judge reference of any resample."""

    def __init__(self, items: Sequence[ItemEvidence], rounds: float, check: str) -> None:
        n = len(items)
        self.crits = list(items[0].verifier_top)
        self.width = len(items[0].verifier_total)
        self.reread = [it for it in items if it.reread_total is not None]
        self.total = np.full((n, self.width), np.nan)
        self.top = np.full((n, len(self.crits)), np.nan)
        for r, it in enumerate(items):
            if it.reread_total is not None:
                self.total[r] = [float(a != b) for a, b in zip(it.verifier_total,
                                                               it.reread_total)]
                self.top[r] = [float(it.verifier_top[c] != (it.reread_top or {}).get(c))
                               for c in self.crits]
        self.rounds, self.check = rounds, check

    def reference(self, rows: np.ndarray) -> float:
        if not self.reread:
            return 1.0
        t, p = self.total[rows], self.top[rows]
        keep = ~np.isnan(t[:, 0]) if self.width else np.zeros(len(rows), bool)
        if not keep.any():
            return 1.0
        return _reference(t[keep].mean(0), p[keep].mean(0), self.rounds, self.check)

    def summary(self, items: Sequence[ItemEvidence], level: float) -> VerifierNoise:
        ver = VerifierNoise(rereads=len(self.reread))
        if self.reread:
            seen = self.total[~np.isnan(self.total[:, 0])] if self.width else np.zeros((0, 0))
            k, m = int(seen.sum()), int(seen.size)
            lo, hi = wilson_interval(k, m, level) if m else (0.0, 1.0)
            tops = self.top[~np.isnan(self.top[:, 0])] if self.crits else np.zeros((0, 0))
            ver = VerifierNoise(rereads=len(self.reread), disagreement=k / m if m else None,
                                disagreement_ci=[lo, hi], readings=m, by_criterion={
                                    c: _rate([bool(x) for x in tops[:, j]], level)
                                    for j, c in enumerate(self.crits)})
        humans = [it for it in items if it.human_criteria]
        if humans:
            ver.human_agreement = {c: _rate(
                [it.verifier_top[c] == it.human_criteria[c] for it in humans
                 if c in it.human_criteria], level) for c in self.crits}
        return ver


def _rate(values: list[bool], level: float) -> Rate:
    return Rate.model_validate(dict(zip(("rate", "ci", "n"), rate_with_interval(values, level))))


def _rounds(items: Sequence[ItemEvidence], rounds: int) -> float:
    """A paraphrase repeated across rounds is read once (the same call): the rounds whose
    paraphrases differed, as observed."""
    reached = sum(it.rounds_reached or 0 for it in items)
    distinct = sum(it.distinct_x_primes or 0 for it in items)
    return rounds * distinct / reached if reached else float(rounds)


def _against_references(succ: np.ndarray, claims: np.ndarray, base: np.ndarray,
                        noise: _Noise, ref: float, ci: list[float] | None,
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
    rho_ci = [float(v) for v in np.nanquantile(rhos, [a, 1 - a])]
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
    noise = _Noise(items, rounds, s.check)
    ver = noise.summary(items, s.level)
    ref = noise.reference(np.arange(n))
    # -- against the references: bootstrap of everything that is a ratio or a difference
    const, rand, which = _baselines(items)
    base = const if which == "constant" else rand
    rng = np.random.default_rng(np.random.SeedSequence([s.seed, 18]))
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
                     reread=bool(noise.reread), disagreement=ver.disagreement)
    decision, rule, reason = _rule(judged, s)
    v = Verdict(
        n_items=n, level=s.level, success_rate=rate, success_ci=ci, verifier=ver,
        reference=ref, distinct_rounds=rounds, relative_success=rho,
        relative_success_ci=rho_ci, claim_agreement=float(claims.mean()),
        uninformed=Uninformed(constant_claims=float(const.mean()),
                              random_claims=float(rand.mean()), better=which),
        skill=skill, skill_ci=skill_ci,
        label_agreement=LabelAgreement(kappa=kappa, kappa_ci=kappa_ci,
                                       percent=None if ag is None else ag.percent,
                                       undefined=None if ag is None else ag.undefined),
        decision=decision, rule=rule, reason=reason)
    if accuracy is not None:
        v.label_accuracy = accuracy
    return v


def _rule(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str]:
    """The first rule that applies: the verifier cannot decide, the judge is shown
    worse than the references, shown as good as them, or not shown either way."""
    return _cannot_decide(e, s) or _distrust(e, s) or _trust(e, s) or _not_shown(e, s)


def _cannot_decide(e: _Judged, s: DecisionSettings) -> tuple[Decision, str, str] | None:
    if e.n >= 3 and len(e.verifier_totals) == 1:
        return (INCONCLUSIVE, "verifier_constant",
                f"the verifier gave every item the same scores {sorted(e.verifier_totals)[0]}: "
                "its checks cannot tell texts apart")
    if e.reread and e.ref < s.min_reference:
        return (INCONCLUSIVE, "verifier_inconsistent",
                f"the verifier disagrees with itself on {e.disagreement or 0.0:.1%} of "
                f"readings of the same text: even a perfect judge would succeed only "
                f"{e.ref:.0%} of the time (below {s.min_reference:.0%}), too little to "
                "decide; use a steadier verifier (temperature 0, per-criterion mode)")
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
    if s.self_check:
        return (INCONCLUSIVE, "self_check",
                "the success rate is high, but the verifier is the judge itself: a "
                "model checking its own claims cannot establish trust; use another "
                "verifier")
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
    if e.acc_ok is False:
        return (INCONCLUSIVE, "accuracy_not_above_majority",
                "its accuracy against the human labels is not shown above always "
                "saying the majority label; audit more items")
    return (INCONCLUSIVE, "straddles",
            f"success {e.rate:.3f} is {e.rho:.2f} of a perfect judge's {e.ref:.3f} under this "
            f"verifier; the {pct} interval [{e.rho_ci[0]:.2f}, {e.rho_ci[1]:.2f}] straddles "
            f"{s.distrust_threshold}-{s.trust_threshold}; audit more items")
