"""Juries and selective evaluation for ``judgekit choose`` (judgekit.report.choice):
several judges' verdicts combined (strict majority with abstentions and ties counted;
the Dawid-Skene weighted vote, its agreement with people measured cross-fitted), how
many independent judges they amount to, and the confidence threshold under which one
judge's verdicts agree with people at a target with a guarantee."""

from __future__ import annotations

import numpy as np

from judgekit.report.choice_types import CascadeStage, JudgeItems, JuryRow, Selective, rate

__all__ = ["cascade_evaluation", "juries", "selective_evaluation"]


# ---- juries ------------------------------------------------------------------------------
def juries(judges: list[JudgeItems], level: float) -> dict[str, JuryRow]:
    from judgekit.stats.jury import dawid_skene, effective_judges, majority_vote

    keys = sorted(set().union(*(j.verdict for j in judges)))
    classes = sorted({v for j in judges for v in j.verdict.values()} |
                     {v for j in judges for v in j.human.values()})
    code = {c: i for i, c in enumerate(classes)}
    votes = np.array([[code[j.verdict[k]] if k in j.verdict else -1 for j in judges]
                      for k in keys], int)
    people = {}
    for j in judges:
        people.update(j.human)
    truth = np.array([code[people[k]] if k in people else -1 for k in keys], int)
    lab = truth != -1
    errors = np.where(votes[lab] == -1, np.nan,
                      (votes[lab] != truth[lab][:, None]).astype(float))
    eff = effective_judges(errors) if lab.sum() >= 3 else float(len(judges))
    out = {}
    maj = majority_vote(votes, len(classes))
    # the weighted vote learns each judge's reliability from the verdicts and people's
    # labels; its agreement with people is measured cross-fitted (each half of the
    # labelled items predicted by a fit that saw only the other half's labels)
    ds = dawid_skene(votes, len(classes), truth)
    crossed = ds.labels.copy()
    fold = np.zeros(len(keys), bool)
    fold[np.flatnonzero(lab)[::2]] = True
    for held in (fold, lab & ~fold):
        seen = truth.copy()
        seen[held] = -1
        crossed[held] = dawid_skene(votes, len(classes), seen).labels[held]
    for name, vote, got in (("majority", maj, maj.labels), ("weighted", ds, crossed)):
        decided = lab & (got != -1)
        agree = [float(v == t) for v, t in zip(got[decided], truth[decided])]
        out[name] = JuryRow(agreement=rate(agree, level) if agree else None,
                            effective_judges=round(eff, 3), ties=vote.ties,
                            no_verdict=int(np.sum(vote.labels == -1)))
    return out


def selective_evaluation(judges: list[JudgeItems], best: str, target: float, risk: float,
               level: float) -> Selective:
    """The chosen judge's verdicts kept where its confidence clears a calibrated
    threshold. Confidence: the judge's own (a confidence column), else the share of
    the judges agreeing with its verdict."""
    from judgekit.stats.selective import calibrate_threshold

    j = next(x for x in judges if x.name == best)
    if j.confidence:
        conf, source = dict(j.confidence), "the judge's own confidence column"
    else:
        conf = {k: float(np.mean([o.verdict.get(k) == v for o in judges if k in o.verdict]))
                for k, v in j.verdict.items()}
        source = f"agreement among the {len(judges)} judges"
    lab = [k for k in j.verdict if k in j.human and k in conf]
    sel = calibrate_threshold(np.array([conf[k] for k in lab]),
                              np.array([float(j.verdict[k] == j.human[k]) for k in lab]),
                              target, risk)
    keys = [k for k in j.verdict if k in conf]
    if sel.threshold is None:
        return Selective(judge=best, confidence=source, threshold=None, coverage=0.0,
                         agreement=None, target=target, risk=risk, calibration_items=len(lab),
                         guarantee=f"no threshold reaches agreement {target:g} with risk "
                         f"{risk:g} on these {len(lab)} labelled items: escalate every item "
                         "to people (judgekit label), or label more")
    kept = [k for k in keys if conf[k] >= sel.threshold]
    kept_lab = [k for k in kept if k in j.human]
    agree = rate([float(j.verdict[k] == j.human[k]) for k in kept_lab], level)
    left = [k for k in keys if conf[k] < sel.threshold]
    return Selective(judge=best, confidence=source, threshold=sel.threshold,
                     coverage=len(kept) / max(len(keys), 1), agreement=agree, target=target,
                     risk=risk, calibration_items=len(lab), cost_per_item=j.cost,
                     escalated=len(left), escalated_ids=left,
                     guarantee=f"on items with confidence >= {sel.threshold:.3g} ({source}), "
                     f"agreement with people is at least {target:g} with probability at "
                     f"least {1 - risk:g}: the threshold is the lowest that fixed-sequence "
                     f"exact binomial tests accepted at {risk:g} on {len(lab)} labelled "
                     "items (Trust or Escalate, ICLR 2025), valid for items drawn like them; "
                     "the rest go to people (judgekit label)")


def cascade_evaluation(judges: list[JudgeItems], target: float, risk: float,
                       level: float) -> Selective:
    """A cheapest-first cascade of the judges that record a confidence, ending with
    people: each item goes to the first judge whose confidence on it clears that
    judge's threshold, and to people when none does (Trust or Escalate's cascaded
    selective evaluation). Each threshold is calibrated by fixed-sequence testing on the
    labelled items that reach its stage, at risk / (number of stages): by the union
    bound, with probability at least 1 - risk every stage's decided items agree with
    people at least at the target, and so do all the decided items together (a mixture
    of sets that each do). Judges without a confidence column cannot tell their sure
    items from the rest and are left out (named in the guarantee)."""
    from judgekit.stats.selective import calibrate_threshold

    able = [j for j in judges if j.confidence]
    skipped = [j.name for j in judges if not j.confidence]
    if not able:
        raise ValueError("no judge records a confidence")
    order = sorted(able, key=lambda j: (j.cost is None, j.cost or 0.0))
    keys = sorted(set.intersection(*(set(j.verdict) & set(j.confidence) for j in order)))
    people: dict[str, str] = {}
    for j in order:
        people.update(j.human)
    each = risk / len(order)
    remaining = list(keys)
    stages: list[CascadeStage] = []
    decided: dict[str, str] = {}  # item -> the verdict of the stage that decided it
    cost: float | None = 0.0
    for j in order:
        reach = len(remaining) / max(len(keys), 1)
        lab = [k for k in remaining if k in people]
        sel = calibrate_threshold(np.array([j.confidence[k] for k in lab], float),
                                  np.array([float(j.verdict[k] == people[k]) for k in lab]),
                                  target, each)
        mine = [] if sel.threshold is None else \
            [k for k in remaining if j.confidence[k] >= sel.threshold]
        for k in mine:
            decided[k] = j.verdict[k]
        mine_lab = [k for k in mine if k in people]
        stages.append(CascadeStage(
            judge=j.name, threshold=sel.threshold, reached=round(reach, 6),
            decided=round(len(mine) / max(len(keys), 1), 6),
            agreement=rate([float(j.verdict[k] == people[k]) for k in mine_lab], level)
            if mine_lab else None, cost_per_item=j.cost))
        cost = None if cost is None or j.cost is None else cost + reach * j.cost
        taken = set(mine)
        remaining = [k for k in remaining if k not in taken]
    kept_lab = [k for k in decided if k in people]
    agree = rate([float(decided[k] == people[k]) for k in kept_lab], level) \
        if kept_lab else None
    note = f"; {', '.join(skipped)} record no confidence and were left out" if skipped \
        else ""
    return Selective(
        judge=" -> ".join(j.name for j in order) + " -> people",
        confidence="each judge's own confidence column", threshold=None,
        coverage=round(len(decided) / max(len(keys), 1), 6), agreement=agree,
        target=target, risk=risk, calibration_items=sum(k in people for k in keys),
        guarantee=f"items go to the cheapest judge whose confidence clears its threshold, "
        f"else to people; every threshold was calibrated by fixed-sequence exact binomial "
        f"tests at risk {each:.3g} (= {risk:g} / {len(order)} stages) on the labelled items "
        f"reaching it, so with probability at least {1 - risk:g} the decided items agree "
        f"with people at least {target:g} (Trust or Escalate, ICLR 2025; valid for items "
        f"drawn like the labelled ones){note}",
        cascade=stages, cost_per_item=cost, escalated=len(remaining),
        escalated_ids=remaining)
