"""Juries and selective evaluation for ``judgekit choose`` (judgekit.analysis.choose):
several judges' verdicts combined (strict majority with abstentions and ties counted;
the Dawid-Skene weighted vote, its agreement with people measured cross-fitted), how
many independent judges they amount to, and the confidence threshold under which one
judge's verdicts agree with people at a target with a guarantee."""

from __future__ import annotations

import numpy as np

from judgekit.analysis.choose_types import (
    CascadeStage,
    JudgeItems,
    JuryRow,
    Selective,
    SelectiveJudge,
    rate,
)

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


def _confidences(j: JudgeItems, judges: list[JudgeItems]) -> tuple[dict[str, float], str]:
    """The judge's confidence per item: its own column, else the share of the judges
    agreeing with its verdict; and where it came from."""
    if j.confidence:
        return dict(j.confidence), "the judge's own confidence column"
    conf = {k: float(np.mean([o.verdict.get(k) == v for o in judges if k in o.verdict]))
            for k, v in j.verdict.items()}
    return conf, f"agreement among the {len(judges)} judges"


def _shift(conf: dict[str, float], labelled: list[str], level: float) -> str | None:
    """Whether the items decided look like the labelled ones: a two-sample
    Kolmogorov-Smirnov test of the labelled items' confidences against the others'. The
    guarantee holds for items drawn like the labelled ones; a shift is said, not
    hidden (None: nothing to compare, or no shift shown)."""
    from scipy.stats import ks_2samp

    lab = set(labelled)
    a = [conf[k] for k in labelled]
    b = [v for k, v in conf.items() if k not in lab]
    if len(a) < 10 or len(b) < 10:
        return None
    test = ks_2samp(a, b)
    if test.pvalue >= 1 - level:
        return None
    return (f"the unlabelled items' confidences differ from the labelled ones' "
            f"(Kolmogorov-Smirnov D = {test.statistic:.3f}, p = {test.pvalue:.3g}): the "
            "guarantee holds for items drawn like the labelled ones, and these are not; "
            "label a random sample of the items to be decided")


def _one_judge(j: JudgeItems, judges: list[JudgeItems], target: float, risk: float,
               level: float) -> tuple[SelectiveJudge, list[str], dict[str, float], str]:
    """One judge calibrated at ``risk``: (its row, the items it escalates, its
    confidences, where they came from). Items without a usable confidence are
    escalated and counted."""
    from judgekit.stats.selective import calibrate_threshold

    conf, source = _confidences(j, judges)
    lab = [k for k in j.verdict if k in j.human and k in conf]
    sel = calibrate_threshold(np.array([conf[k] for k in lab]),
                              np.array([float(j.verdict[k] == j.human[k]) for k in lab]),
                              target, risk)
    unusable = [k for k in j.verdict if k not in conf]
    kept = [] if sel.threshold is None else \
        [k for k in j.verdict if k in conf and conf[k] >= sel.threshold]
    taken = set(kept)
    left = [k for k in j.verdict if k not in taken]
    kept_lab = [k for k in kept if k in j.human]
    return SelectiveJudge(
        threshold=sel.threshold, coverage=round(len(kept) / max(len(j.verdict), 1), 6),
        agreement=rate([float(j.verdict[k] == j.human[k]) for k in kept_lab], level)
        if kept_lab else None, calibration_items=len(lab), escalated=len(left),
        unusable_confidence=len(unusable)), left, conf, source


def selective_evaluation(judges: list[JudgeItems], target: float, risk: float,
                         level: float) -> Selective:
    """Every judge calibrated on its own at risk / (number of judges), each reported;
    the judge that keeps the most items (the cheaper on a tie) is the one used. By the
    union bound, with probability at least 1 - risk every judge's kept items agree with
    people at least at the target, so the one picked after seeing them does too. One
    judge: the plain single-judge case, at the full risk. Confidence: the judge's own
    (a confidence column), else the share of the judges agreeing with its verdict."""
    each = risk / len(judges)
    got = {j.name: _one_judge(j, judges, target, each, level) for j in judges}
    order = {j.name: (j.cost is None, j.cost or 0.0, i) for i, j in enumerate(judges)}
    best = max(got, key=lambda n: (got[n][0].coverage, tuple(-x for x in order[n][1:]))
               if got[n][0].threshold is not None else (-1.0, 0.0, 0))
    j = next(x for x in judges if x.name == best)
    row, left, conf, source = got[best]
    split = "" if len(judges) == 1 else (f" ({len(judges)} judges calibrated at {each:.3g} "
                                         f"each, = {risk:g} / {len(judges)}: the one keeping "
                                         "the most items is used, and the union bound keeps "
                                         "the guarantee)")
    unusable = (f"; {row.unusable_confidence} item(s) without a usable confidence "
                "(missing, NaN, outside [0, 1] or text) are escalated" if
                row.unusable_confidence else "")
    common = dict(judge=best, confidence=source, target=target, risk=risk,
                  calibration_items=row.calibration_items,
                  judges={n: g[0] for n, g in got.items()},
                  unusable_confidence=row.unusable_confidence,
                  shift=_shift(conf, [k for k in j.verdict if k in j.human and k in conf],
                               level))
    if row.threshold is None:
        return Selective(**common, threshold=None, coverage=0.0, agreement=None,  # type: ignore[arg-type]
                         escalated=len(j.verdict), escalated_ids=list(j.verdict),
                         guarantee=f"no threshold reaches agreement {target:g} with risk "
                         f"{each:g} on these {row.calibration_items} labelled items: "
                         "escalate every item to people (judgekit label), or label more"
                         + split + unusable)
    return Selective(**common, threshold=row.threshold, coverage=row.coverage,  # type: ignore[arg-type]
                     agreement=row.agreement, cost_per_item=j.cost, escalated=len(left),
                     escalated_ids=left,
                     guarantee=f"on items with confidence >= {row.threshold:.3g} ({source}), "
                     f"agreement with people is at least {target:g} with probability at "
                     f"least {1 - risk:g}: the threshold is the lowest that fixed-sequence "
                     f"exact binomial tests accepted at {each:g} on {row.calibration_items} "
                     "labelled items (Trust or Escalate, ICLR 2025), valid for items drawn "
                     "like them; the rest go to people (judgekit label)" + split + unusable)


MAX_CONFIGS = 20_000  # the grid of stage thresholds the path is learned from
LEARN_SHARE = 0.3  # of the labelled items, to learn the path (the rest test it)
MIN_STAGE = 10  # learning items a stage must decide to be judged on its own


def _configs(order: list[JudgeItems], keys: list[str]) -> np.ndarray:
    """Every combination of the stages' candidate thresholds (each stage's confidence
    quantiles over all items, no label read, and "off"): rows of thresholds."""
    from judgekit.stats.selective import STEPS

    steps = max(2, min(STEPS, int(MAX_CONFIGS ** (1 / len(order))) - 1))
    frac = 1 - np.arange(1, steps + 1) / steps
    grids = []
    for j in order:
        seen = [c for k in keys if (c := j.confidence.get(k)) is not None]
        grids.append(np.append(np.unique(np.quantile(seen or [1.0], frac, method="higher")),
                               np.inf))
    mesh = np.meshgrid(*grids, indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def _decided_by(conf: np.ndarray, configs: np.ndarray) -> np.ndarray:
    """The stage deciding each item under each config (-1: none): ``conf`` is stages x
    items (NaN: no usable confidence), ``configs`` configs x stages."""
    out = np.full((configs.shape[0], conf.shape[1]), -1, np.int8)
    for i in range(conf.shape[0] - 1, -1, -1):  # the first stage that clears wins
        with np.errstate(invalid="ignore"):
            clears = conf[i][None, :] >= configs[:, i][:, None]
        out[clears] = i
    return out


def cascade_evaluation(judges: list[JudgeItems], target: float, risk: float,
                       level: float, seed: int = 0) -> Selective:
    """A cascade of the judges that record a confidence, ending with people (cheapest
    first; in the order given when no prices are given): each item goes to the first
    judge whose confidence on it clears that judge's threshold, and to people when none
    does (Trust or Escalate's cascaded selective evaluation).

    The thresholds are chosen together by Learn-then-Test (Angelopoulos et al. 2021):
    30% of the labelled items (a seeded random split) learn a path through the
    grid of every stage's candidate thresholds (each stage's confidence quantiles, or
    off): for each required agreement from 0.99 down to the target, the combination
    that decides the most items with at least that agreement on the learning third. A
    stage alone is one such combination, so the path holds the best single stage
    where it is the best. The other 70% test the path by fixed-sequence exact
    binomial tests at the full risk, from its most conservative step on, and the last
    step accepted is used: with probability at least 1 - risk the decided items
    together agree with people at least at the target (valid for items drawn like the
    labelled ones). A combination joins the path only when every stage it uses agrees
    on its own slice of the learning items (at least MIN_STAGE of them), not only
    pooled. Splitting the risk evenly among the stages (the union bound) kept fewer
    items than the middle stage alone. The 30% share was the best of 0.2-0.5 on
    benchmarks/choose.py's designs."""
    from judgekit.core import seeds
    from judgekit.stats.selective import fixed_sequence

    able = [j for j in judges if j.confidence]
    skipped = [j.name for j in judges if not j.confidence]
    if not able:
        raise ValueError("no judge records a confidence")
    order = sorted(able, key=lambda j: (j.cost is None, j.cost or 0.0))
    keys = sorted(set.intersection(*(set(j.verdict) for j in order)))
    people: dict[str, str] = {}
    for j in order:
        people.update(j.human)
    lab = [k for k in keys if k in people]
    configs = _configs(order, keys)
    conf = np.array([[j.confidence.get(k, np.nan) for k in keys] for j in order])
    right = np.array([[float(j.verdict[k] == people.get(k)) for k in keys] for j in order])
    labelled = np.array([k in people for k in keys])
    learn = np.zeros(len(keys), bool)
    where = np.flatnonzero(labelled)
    pick = seeds.rng("choose.cascade", seed).permutation(where.size)
    learn[where[pick[:int(round(where.size * LEARN_SHARE))]]] = True
    test = labelled & ~learn
    by = _decided_by(conf, configs)
    coverage = (by >= 0).mean(axis=1)
    cols = np.flatnonzero(labelled)  # agreement is read on the labelled items only
    lab_by = by[:, cols]
    hit = (lab_by >= 0) & (right[np.maximum(lab_by, 0), cols[None, :]] == 1.0)

    def counts(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = mask[cols]
        return ((lab_by >= 0) & m).sum(axis=1), (hit & m).sum(axis=1)

    n_learn, k_learn = counts(learn)
    est = np.divide(k_learn, n_learn, out=np.zeros(len(configs)), where=n_learn > 0)
    # each stage's own share on the learning items: a stage whose slice is worse is not
    # let in because the pooled share hides it (the weaker per-stage share of a config)
    m = learn[cols]
    worst = np.ones(len(configs))
    for i in range(len(order)):
        mine = (lab_by == i) & m
        n_i, k_i = mine.sum(axis=1), (hit & mine).sum(axis=1)
        share = np.divide(k_i, n_i, out=np.ones(len(configs)), where=n_i > 0)
        worst = np.minimum(worst, np.where((n_i > 0) & (n_i < MIN_STAGE), 0.0, share))
    path: list[int] = []
    for need in np.linspace(0.99, target, 50):
        ok = np.flatnonzero((est >= need) & (worst >= need) & (n_learn >= 30))
        if ok.size:
            best = int(ok[np.argmax(coverage[ok])])
            if not path or coverage[best] > coverage[path[-1]]:
                path.append(best)
    n_test, k_test = counts(test)
    at, _ = fixed_sequence([(int(n_test[c]), int(k_test[c])) for c in path], target, risk)
    th = [float(x) for x in configs[path[at]]] if at is not None else \
        [float("inf")] * len(order)
    decided = {k: int(s) for k, s in zip(keys, by[path[at]]) if s >= 0} \
        if at is not None else {}
    remaining = [k for k in keys if k not in decided]
    stages: list[CascadeStage] = []
    each: dict[str, SelectiveJudge] = {}
    cost: float | None = 0.0
    reach = 1.0
    for i, j in enumerate(order):
        mine = [k for k, s in decided.items() if s == i]
        mine_lab = [k for k in mine if k in people]
        agreement = rate([float(j.verdict[k] == people[k]) for k in mine_lab], level) \
            if mine_lab else None
        share = round(len(mine) / max(len(keys), 1), 6)
        threshold = None if at is None or not np.isfinite(th[i]) else th[i]
        stages.append(CascadeStage(judge=j.name, threshold=threshold, reached=round(reach, 6),
                                   decided=share, agreement=agreement, cost_per_item=j.cost))
        each[j.name] = SelectiveJudge(
            threshold=threshold, coverage=share, agreement=agreement,
            calibration_items=len(mine_lab), escalated=0,
            unusable_confidence=sum(k not in j.confidence for k in keys))
        cost = None if cost is None or j.cost is None else cost + reach * j.cost
        reach -= len(mine) / max(len(keys), 1)
    kept_lab = [k for k in decided if k in people]
    agree = rate([float(order[decided[k]].verdict[k] == people[k]) for k in kept_lab], level) \
        if kept_lab else None
    note = f"; {', '.join(skipped)} record no confidence and were left out" if skipped \
        else ""
    conf_last = {k: max((j.confidence.get(k, 0.0) for j in order), default=0.0) for k in keys}
    return Selective(
        judge=" -> ".join(j.name for j in order) + " -> people",
        confidence="each judge's own confidence column", threshold=None,
        coverage=round(len(decided) / max(len(keys), 1), 6), agreement=agree,
        target=target, risk=risk, calibration_items=len(lab),
        guarantee=("no step of the cascade reaches agreement " f"{target:g} with risk "
                   f"{risk:g} on these {len(lab)} labelled items: every item goes to people"
                   if at is None else
                   f"items go to the first judge whose confidence clears its threshold, "
                   f"else to people; the thresholds were chosen together by Learn-then-"
                   f"Test: a path learned on {int(learn.sum())} labelled items, tested by "
                   f"fixed-sequence exact binomial tests at risk {risk:g} on the other "
                   f"{int(test.sum())}, so with probability at least {1 - risk:g} the "
                   f"decided items agree with people at least {target:g} (valid for items "
                   f"drawn like the labelled ones; a stage alone is on the path)") + note,
        cascade=stages, cost_per_item=cost, escalated=len(remaining),
        escalated_ids=remaining, judges=each,
        unusable_confidence=sum(all(k not in j.confidence for j in order) for k in keys),
        shift=_shift(conf_last, lab, level))
