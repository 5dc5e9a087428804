"""What the audit knows about its verifier: how often two readings of one text differ
(re-reads, ideally under a reworded instruction or by a second verifier), how often a
reading differs from human rubric values, and the success a perfect judge would have
under those misreads (the reference the judge is held to)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgekit.core.payload import Rate
from judgekit.judging.rubric import Rubric
from judgekit.methods.nodata.payload import VerifierNoise
from judgekit.stats.proportions import rate_with_interval, wilson_interval

__all__ = ["ItemEvidence", "VerifierReadings", "claim_agreement", "perfect_reference",
           "rate_of"]


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


def perfect_reference(d_total: float, d_top: float, rounds: float, check: str) -> float:
    """Success of a perfect judge when two readings of one text differ anywhere on a
    share d_total of the total rubric (d_top of its top-level criteria).

    A reading is wholly right with probability q = sqrt(1 - d) (two independent
    readings agree everywhere with probability about q^2). Counted over the whole
    vector, not as a product of per-criterion misreads: when a reading fails wholesale
    (the verifier loses the whole breakdown) its errors are not independent across
    criteria, and the product put a perfect judge's success at 0.38 where it was 0.81."""
    q_total, q_top = math.sqrt(max(0.0, 1 - d_total)), math.sqrt(max(0.0, 1 - d_top))
    if check == "pair":  # V(x') must equal V(x): two readings agree
        return ((2 - d_total - d_top) / 2) ** rounds
    if check == "paper":  # the claims against V(x') every round
        return q_top ** rounds
    return q_top * ((q_total + q_top) / 2) ** rounds


class VerifierReadings:
    """Per item and criterion, did the verifier's re-read disagree with its reading (NaN
    where the item was not re-read); the perfect-judge reference of any resample."""

    def __init__(self, items: Sequence[ItemEvidence], rounds: float, check: str,
                 min_human: int = 10, second_verifier: bool = False) -> None:
        n = len(items)
        # per item, the distinct paraphrase readings that ran and how many matched the
        # reading of x: the verifier reading texts whose values are known (the judge's
        # confirmed claims), in the same way on x and on each paraphrase
        self.tried = np.array([float(it.distinct_x_primes or 0) for it in items])
        self.passed = np.array([float((it.distinct_x_primes or 0)
                                      - (0 if it.success or not it.rounds_reached else 1))
                                for it in items])
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
        # per item: does the verifier's reading of x match the human rubric values on
        # every criterion people scored (NaN: no human values)
        human = np.full(n, np.nan)
        for r, it in enumerate(items):
            shared = [c for c in self.crits if c in it.human_criteria]
            if shared:
                human[r] = float(all(it.verifier_top[c] == it.human_criteria[c]
                                     for c in shared))
            elif it.human_label is not None:  # a label alone: the verifier's label
                human[r] = float(it.verifier_label == it.human_label)
        self.human = human if np.sum(~np.isnan(human)) >= min_human else None
        # a second verifier's re-reads say how often two readers differ, which is the
        # verifier's error only when both err alike and independently: without human
        # values to measure it, a second verifier is not evidence about the first
        self.rereads_count = not (second_verifier and self.human is None)

    def reference(self, rows: np.ndarray) -> float:
        """The perfect-judge reference of the items ``rows``: from the verifier's
        re-reads, and, where human rubric values exist, from its disagreement with them
        (which also sees misreads a re-read repeats, as a temperature-0 verifier's do):
        the lower of the two, since each only sees some of the verifier's errors."""
        return min(self.references(rows).values(), default=1.0)

    def references(self, rows: np.ndarray) -> dict[str, float]:
        """The reference from each source: ``rereads``, ``paraphrases`` and ``people``.

        ``paraphrases``: of the paraphrase readings that ran, the share p that read as x
        did; a perfect judge's claims meet a reading of x that is right as often, so its
        success is about p ** (rounds + 1). Unlike a re-read, a paraphrase is another
        text, so a temperature-0 verifier's fixed misreads show here. Used only without
        human values (people measure the verifier directly)."""
        refs: dict[str, float] = {}
        tried = float(self.tried[rows].sum())
        if tried > 0 and self.human is None:
            p = float(self.passed[rows].sum()) / tried
            refs["paraphrases"] = p ** (self.rounds + 1)
        if self.reread and self.rereads_count:
            t, p = self.total[rows], self.top[rows]
            keep = ~np.isnan(t[:, 0]) if self.width else np.zeros(len(rows), bool)
            if keep.any():
                d_top = float(np.mean(p[keep].max(axis=1))) if p.shape[1] else 0.0
                refs["rereads"] = perfect_reference(float(np.mean(t[keep].max(axis=1))),
                                                    d_top, self.rounds, self.check)
        if self.human is not None:
            h = self.human[rows]
            h = h[~np.isnan(h)]
            if h.size:
                # one reading wrong with probability 1 - agreement; the clauses are not
                # labelled by people: taken as read as well as the criteria
                d = 1 - float(h.mean()) ** 2  # two such readings differing anywhere
                refs["people"] = perfect_reference(d, d, self.rounds, self.check)
        return refs

    def summary(self, items: Sequence[ItemEvidence], level: float) -> VerifierNoise:
        ver = VerifierNoise(rereads=len(self.reread))
        if self.reread:
            seen = self.total[~np.isnan(self.total[:, 0])] if self.width else np.zeros((0, 0))
            k, m = int(seen.sum()), int(seen.size)
            lo, hi = wilson_interval(k, m, level) if m else (0.0, 1.0)
            tops = self.top[~np.isnan(self.top[:, 0])] if self.crits else np.zeros((0, 0))
            ver = VerifierNoise(rereads=len(self.reread), disagreement=k / m if m else None,
                                disagreement_ci=[lo, hi], readings=m, by_criterion={
                                    c: rate_of([bool(x) for x in tops[:, j]], level)
                                    for j, c in enumerate(self.crits)})
        tried = int(self.tried.sum())
        if tried:
            ok = int(self.passed.sum())
            ver.paraphrase_agreement = rate_of([True] * ok + [False] * (tried - ok), level)
        ver.rereads_counted = self.rereads_count if self.reread else None
        humans = [it for it in items if it.human_criteria]
        if humans:  # each reader's error rates, by criterion, against people
            ver.human_agreement = {c: rate_of(
                [it.verifier_top[c] == it.human_criteria[c] for it in humans
                 if c in it.human_criteria], level) for c in self.crits}
            again = [it for it in humans if it.reread_top is not None]
            if again:
                ver.reread_human_agreement = {c: rate_of(
                    [(it.reread_top or {}).get(c) == it.human_criteria[c] for it in again
                     if c in it.human_criteria], level) for c in self.crits}
        return ver


def rate_of(values: list[bool], level: float) -> Rate:
    return Rate.model_validate(dict(zip(("rate", "ci", "n"), rate_with_interval(values, level))))


def claim_agreement(ev: dict[str, Any], vx: tuple[tuple[int, ...], tuple[int, ...]],
                    ev_rubric: Rubric, ver_rubric: Rubric) -> dict[str, Any]:
    """Does the verifier's reading of x agree with the judge's claimed breakdown and label?

    Compared on the criteria both rubrics share, and on the label under the verifier's
    rubric. This is judgekit's departure from the paper's check (see judgekit.methods.nodata.audit).
    """
    top = dict(zip(ver_rubric.ids(), vx[1]))
    claimed = {c["id"]: int(c["value"]) for c in ev["criteria"]}
    per = {c: claimed[c] == top[c] for c in ev_rubric.ids() if c in top and c in claimed}
    label_ok = int(ev["label"]) == int(ver_rubric.aggregate(list(vx[1])))
    return {"criteria": per, "label": label_ok, "all": label_ok and all(per.values())}
