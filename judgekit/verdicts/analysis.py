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

from judgekit.data.external import label_of
from judgekit.jsontypes import JSONObject
from judgekit.stats.agreement import agreement, fleiss_kappa, item_bootstrap
from judgekit.stats.bootstrap import derive_seed, percentile_interval
from judgekit.stats.ppi import ppi_mean
from judgekit.stats.preference import clustered_rate, feature_preference
from judgekit.stats.proportions import rate_with_interval
from judgekit.verdicts.config import VerdictsConfig
from judgekit.verdicts.payload import Measure

SLOTS = {"first": "first", "a": "first", "1": "first", "answer_a": "first",
         "output_1": "first", "second": "second", "b": "second", "2": "second",
         "answer_b": "second", "output_2": "second", "tie": "tie", "draw": "tie",
         "equal": "tie", "both": "tie", "0": "tie", "1.5": "tie", "0.5": "tie"}


def slot_of(value: Any) -> str | None:
    """A pairwise verdict or label as the slot it names: first, second or tie."""
    if value is None:
        return None
    return SLOTS.get(str(value).strip().lower())


def _rate(key: str, what: str, flags: list[bool], groups: Sequence[Any] | None,
          level: float, **kw: Any) -> Measure:
    """A share with a Wilson interval, clustered by ``groups`` when several rows share
    one (a question, a pair)."""
    if not flags:
        return Measure(key=key, what=what, n=0, **{**kw, "decision": "not measured: no rows"})
    if groups is not None and len(set(groups)) < len(groups):
        by: dict[Any, list[bool]] = {}
        for g, f in zip(groups, flags):
            by.setdefault(g, []).append(f)
        c = clustered_rate(list(by.values()), level)
        return Measure(key=key, what=what, estimate=c.rate, ci=c.ci, n=c.n,
                       clusters=c.clusters, **kw)
    rate, ci, n = rate_with_interval(flags, level)
    return Measure(key=key, what=what, estimate=rate, ci=ci, n=n, **kw)


def _against_uninformed(m: Measure, baseline: float) -> Measure:
    """Accuracy is a claim only above what an uninformed judge scores on these items."""
    m.baseline = baseline
    above = m.ci is not None and m.ci[0] > baseline
    m.decision = ("above the best uninformed judge" if above else
                  "not above the best uninformed judge")
    m.finding = not above
    return m


def agreement_measures(judge: list[str], human: list[str], cfg: VerdictsConfig,
                       what: str) -> list[Measure]:
    """Accuracy, Cohen's kappa and Gwet's AC1 of the judge against people."""
    if len(judge) < 2:
        return []
    code = {c: i for i, c in enumerate(sorted(set(judge) | set(human)))}  # nominal classes
    ag = agreement([code[c] for c in judge], [code[c] for c in human],
                   seed=derive_seed(cfg.seed, 41), resamples=cfg.resamples, level=cfg.level)
    jr = {c: judge.count(c) / len(judge) for c in set(judge)}
    hr = {c: human.count(c) / len(human) for c in set(human)}
    random_at_rate = sum(jr.get(c, 0.0) * p for c, p in hr.items())
    acc = _against_uninformed(_rate("accuracy", f"accuracy against {what}",
                                    [a == b for a, b in zip(judge, human)], None,
                                    cfg.level),
                              max(ag.majority_baseline, random_at_rate))
    out = [acc]
    for key, value, name in (("kappa", ag.kappa, "Cohen's kappa"), ("ac1", ag.ac, "Gwet's AC1")):
        ci = ag.cis.get("kappa" if key == "kappa" else "ac")
        shown = ci is not None and ci[0] > 0
        out.append(Measure(key=key, what=f"{name} with {what}", estimate=value, ci=ci,
                           n=ag.n, baseline=0.0, units="chance-corrected agreement",
                           decision="agrees beyond chance" if shown else
                           "no agreement beyond chance shown", finding=not shown,
                           note=(ag.undefined or {}).get("kappa") if key == "kappa"
                           else None))
    return out


def pointwise(rows: list[JSONObject], roles: dict[str, str], cfg: VerdictsConfig
              ) -> tuple[list[Measure], list[JSONObject], int]:
    """Measures, item records and the count of unreadable verdicts of pointwise rows.
    Several annotators (``human`` naming several columns): the majority label is the
    human label (a tie gives none), and their Fleiss' kappa is the ceiling reported."""
    humans = [c for c in roles.get("human", "").split(",") if c]
    items: list[JSONObject] = []
    unread = 0
    for i, r in enumerate(rows):
        v = label_of(r.get(roles["judge"]), cfg.pass_threshold)
        people = [label_of(r.get(c), cfg.pass_threshold) for c in humans
                  if r.get(c) not in (None, "")]
        h = _majority(people)
        if v is None:
            unread += 1
            continue
        items.append({"id": str(r.get(roles["id"], i)) if "id" in roles else str(i),
                      "question_id": str(r.get(roles["question_id"]))
                      if "question_id" in roles else None,
                      "system": str(r.get(roles["system"])) if "system" in roles else None,
                      "verdict": v, "human": h, "humans": people,
                      **({"explanation": r["explanation"]} if r.get("explanation") else {})})
    groups = [x["question_id"] or x["id"] for x in items]
    out = [_rate("pass_rate", "the judge's pass rate", [x["verdict"] == 1 for x in items],
                 groups, cfg.level)]
    lab = [x for x in items if x["human"] is not None]
    out += agreement_measures([str(x["verdict"]) for x in lab], [str(x["human"]) for x in lab],
                              cfg, "human labels")
    if len(humans) >= 2:
        out.append(_fleiss(items, len(humans), cfg))
    out += _corrected(items, cfg)
    return out, items, unread


def _majority(labels: list[int | None]) -> int | None:
    got = [x for x in labels if x is not None]
    if not got:
        return None
    ones = sum(got)
    return 1 if 2 * ones > len(got) else 0 if 2 * ones < len(got) else None


def _fleiss(items: list[JSONObject], m: int, cfg: VerdictsConfig) -> Measure:
    """People's agreement among themselves (Fleiss' kappa over items every annotator
    labelled; percentile bootstrap over items): the ceiling a judge is held to."""
    full = np.array([x["humans"] for x in items if len(x["humans"]) == m
                     and None not in x["humans"]], float)
    what = f"agreement among the {m} annotators (Fleiss' kappa)"
    if len(full) < 2:
        return Measure(key="fleiss_kappa", what=what, n=len(full),
                       decision="not measured: fewer than 2 items every annotator labelled",
                       units="chance-corrected agreement")
    value = fleiss_kappa(full)
    ci = item_bootstrap(lambda idx: fleiss_kappa(full[idx]), len(full),
                        derive_seed(cfg.seed, 53), cfg.resamples, cfg.level)
    return Measure(key="fleiss_kappa", what=what,
                   estimate=None if not np.isfinite(value) else value,
                   ci=None if not np.isfinite(ci.lo) else [ci.lo, ci.hi], n=len(full),
                   units="chance-corrected agreement",
                   decision="the human ceiling (majority label used as the human label)")


def _corrected(items: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """The pass rate corrected for the judge's errors by the human labels (PPI++), over
    every item and per system; the labelled items must be a random sample of them."""
    out = []
    systems = sorted({x["system"] for x in items if x["system"] is not None})
    for name in [None, *systems]:
        mine = [x for x in items if name is None or x["system"] == name]
        lab = [x for x in mine if x["human"] is not None]
        if len(lab) < 2:
            continue
        c = ppi_mean([float(x["verdict"]) for x in mine], [float(x["verdict"]) for x in lab],
                     [float(x["human"]) for x in lab], level=cfg.level)
        key = "corrected_pass_rate" if name is None else f"corrected_pass_rate[{name}]"
        out.append(Measure(key=key, what="pass rate corrected by human labels "
                           f"(prediction-powered){'' if name is None else f', {name}'}",
                           estimate=c.estimate, ci=list(c.ci), n=c.n_items,
                           decision=f"{c.n_labelled} human labels",
                           note=f"human labels alone: {c.human_only:.3f} "
                                f"[{c.human_only_ci[0]:.3f}, {c.human_only_ci[1]:.3f}]; "
                                + _plan(c.labels_for_halfwidth(cfg.target_halfwidth),
                                        cfg.target_halfwidth)))
    return out


def _plan(labels: int | None, halfwidth: float) -> str:
    """The label plan: human labels for an interval of +/- ``halfwidth`` (same design)."""
    if labels is None:
        return f"the interval is already within +/- {halfwidth:g}"
    return f"about {labels} human labels for +/- {halfwidth:g} (same design)"


def pairwise(rows: list[JSONObject], roles: dict[str, str], cfg: VerdictsConfig
             ) -> tuple[list[Measure], list[JSONObject], int, list[str]]:
    """Measures, item records, unreadable count and notes of pairwise rows."""
    items: list[JSONObject] = []
    unread = 0
    for i, r in enumerate(rows):
        first, second = str(r.get(roles["first"], "")), str(r.get(roles["second"], ""))
        w = slot_of(r.get(roles["winner"]))
        if w is None:
            unread += 1
            continue
        items.append({"pair_id": str(r.get(roles["pair_id"], i)) if "pair_id" in roles
                      else str(i), "first": first, "second": second, "winner": w,
                      "label": slot_of(r.get(roles["label"])) if "label" in roles else None,
                      "chosen": {"first": first, "second": second}.get(w),
                      **({"models": [str(r.get(roles["model_first"])),
                                     str(r.get(roles["model_second"]))]}
                         if "model_first" in roles and "model_second" in roles else {})})
    pairs: dict[str, list[JSONObject]] = {}
    for x in items:
        pairs.setdefault(x["pair_id"], []).append(x)
    both = {k: v for k, v in pairs.items() if len(v) == 2
            and v[0]["first"] == v[1]["second"] and v[0]["second"] == v[1]["first"]}
    notes = [f"{len(both)} of {len(pairs)} pairs were judged in both orders" +
             ("" if both else "; position bias assumes the order shown was randomised")]
    decided = [x for x in items if x["winner"] != "tie"]
    pos = _rate("position_bias", "share of non-tie verdicts for the first-shown answer, "
                "minus 1/2", [x["winner"] == "first" for x in decided],
                [x["pair_id"] for x in decided], cfg.level, units="difference of shares")
    if pos.estimate is not None and pos.ci is not None:
        pos.estimate -= 0.5
        pos.ci = [pos.ci[0] - 0.5, pos.ci[1] - 0.5]
        shown = pos.ci[0] > 0 or pos.ci[1] < 0
        pos.baseline, pos.decision, pos.finding = 0.0, ("biased" if shown else
                                                        "no bias shown"), shown
    out = [pos]
    if both:
        out += _both_orders(list(both.values()), cfg)
    # agreement with the labels in the order as given (the first row of each pair): the
    # two orders of one pair are not two items
    given = list({x["pair_id"]: x for x in reversed(items)}.values())[::-1]
    lab = [x for x in given if x["label"] is not None]
    ag = agreement_measures([x["winner"] for x in lab], [x["label"] for x in lab], cfg,
                            "the labels (order as given)" if both else "the labels")
    out += ag
    out += _win_rates(items, cfg)
    out.append(_length(items, cfg))
    return out, items, unread, notes


def _win_rates(items: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """Each model's win rate over the verdicts that compare it (against ``baseline``
    only, when one is named), ties counted 1/2 as leaderboards count them; the pair is
    the resampled unit (percentile bootstrap), the interval clipped to [0, 1]."""
    rows = [x for x in items if "models" in x]
    if not rows:
        return []
    models = sorted({m for x in rows for m in x["models"]} - {cfg.baseline or ""})
    out = []
    for k, model in enumerate(models):
        mine = [x for x in rows if model in x["models"] and x["models"][0] != x["models"][1]
                and (cfg.baseline is None or cfg.baseline in x["models"])]
        if not mine:
            continue
        slot = {0: "first", 1: "second"}
        score = [0.5 if x["winner"] == "tie" else
                 float(x["winner"] == slot[x["models"].index(model)]) for x in mine]
        by: dict[str, list[float]] = {}
        for x, v in zip(mine, score):
            by.setdefault(x["pair_id"], []).append(v)
        sums = np.array([[sum(v), len(v)] for v in by.values()], float)
        m = Measure(key="win_rate" if len(models) == 1 else f"win_rate[{model}]",
                    what=f"{model}'s win rate" + (f" against {cfg.baseline}" if cfg.baseline
                                                  else "") + " (ties 1/2)",
                    estimate=float(np.mean(score)), n=len(score), clusters=len(by),
                    baseline=0.5, decision="not measured: fewer than 2 pairs")
        if len(by) >= 2:
            rng = np.random.default_rng(derive_seed(cfg.seed, 59, k))
            idx = rng.integers(0, len(sums), size=(cfg.resamples, len(sums)))
            tot = sums[idx].sum(axis=1)
            a = (1 - cfg.level) / 2
            lo, hi = np.quantile(tot[:, 0] / tot[:, 1], [a, 1 - a])
            m.ci = [max(0.0, float(lo)), min(1.0, float(hi))]
            m.decision = ("better than its opponents" if m.ci[0] > 0.5 else
                          "worse than its opponents" if m.ci[1] < 0.5 else
                          "no difference shown")
        out.append(m)
    return out


SWAPPED = {"first": "second", "second": "first", "tie": "tie"}


def _both_orders(pairs: list[list[JSONObject]], cfg: VerdictsConfig) -> list[Measure]:
    """Order consistency, accuracy counted only when both orders agree on the right
    answer, and Cohen's kappa between the verdicts of the two orders (LLMBar's
    ``equal``, ``correct_both`` and ``kappa_agreement``)."""
    a = [p[0]["winner"] for p in pairs]
    b = [SWAPPED[p[1]["winner"]] for p in pairs]  # the second order's verdict, as the first
    out = [_rate("order_consistency", "the same answer (or a tie) chosen in both orders",
                 [x == y for x, y in zip(a, b)], None, cfg.level)]
    labelled = [(p, x, y) for p, x, y in zip(pairs, a, b) if p[0]["label"] is not None]
    if labelled:
        out.append(_rate("accuracy_both_orders", "right in both orders (a win counts only "
                         "when both orders agree on it)",
                         [x == y == p[0]["label"] for p, x, y in labelled], None, cfg.level))
    if len(a) >= 2:
        code = {c: i for i, c in enumerate(sorted(set(a) | set(b)))}
        ag = agreement([code[x] for x in a], [code[y] for y in b],
                       seed=derive_seed(cfg.seed, 43), resamples=cfg.resamples,
                       level=cfg.level)
        out.append(Measure(key="order_kappa", what="Cohen's kappa between the verdicts of "
                           "the two orders", estimate=ag.kappa, ci=ag.cis.get("kappa"),
                           n=ag.n, units="chance-corrected agreement",
                           note=(ag.undefined or {}).get("kappa")))
    return out


def _longer(first: str, second: str, ratio: float) -> str | None:
    la, lb = len(first.strip()), len(second.strip())
    if la > lb and la >= ratio * max(lb, 1) - 1e-9:
        return "a"
    if lb > la and lb >= ratio * max(la, 1) - 1e-9:
        return "b"
    return None


def _length(items: list[JSONObject], cfg: VerdictsConfig) -> Measure:
    """Preference for the longer answer: with labels, the asymmetry of errors toward
    it, over every row (both orders put the longer answer in each slot, so position is
    balanced); without, the longer answer's win share minus 1/2 (descriptive)."""
    ab = {"first": "a", "second": "b"}
    feature = [_longer(x["first"], x["second"], cfg.min_length_ratio) for x in items]
    chosen = [ab.get(x["winner"]) for x in items]
    better = [ab.get(x["label"] or "") for x in items]
    pref = feature_preference(feature, better, chosen, cfg.level)
    what = "P(longer picked when worse) - P(shorter picked when longer is better)"
    if pref.preference is not None and pref.ci is not None:
        groups = [x.get("pair_id", str(i)) for i, x in enumerate(items)]
        ci, clusters = _pair_bootstrap(feature, better, chosen, groups, cfg)
        shown = ci is not None and (ci[0] > 0 or ci[1] < 0)
        return Measure(key="length_preference", what=what, estimate=pref.preference,
                       ci=ci, n=pref.n, clusters=clusters, baseline=0.0,
                       units="difference of error rates", finding=shown,
                       decision="preference shown" if shown else "no preference shown",
                       note="percentile bootstrap over pairs (both orders of a pair are "
                            "resampled together)")
    flags = [f == c for f, c in zip(feature, chosen) if f and c]
    m = _rate("length_preference", "share of decided verdicts for the longer answer, "
              "minus 1/2 (not controlled for quality: no labels)", flags, None, cfg.level,
              units="difference of shares", decision="not controlled: descriptive only")
    if m.estimate is not None and m.ci is not None:
        m.estimate -= 0.5
        m.ci = [m.ci[0] - 0.5, m.ci[1] - 0.5]
    return m


def _pair_bootstrap(feature: list[str | None], better: list[str | None],
                    chosen: list[str | None], groups: list[str], cfg: VerdictsConfig
                    ) -> tuple[list[float] | None, int]:
    """Percentile interval of the preference with the pair as the resampled unit (the two
    orders of one pair are not independent rows)."""
    keep = [i for i in range(len(feature)) if feature[i] in ("a", "b")
            and better[i] in ("a", "b") and chosen[i] in ("a", "b")]
    by: dict[str, list[tuple[int, int, int, int]]] = {}
    for i in keep:
        f, r, c = feature[i], better[i], chosen[i]
        # (errors toward the feature when it is worse, n worse, away when better, n better)
        by.setdefault(groups[i], []).append(
            (int(c == f), 1, 0, 0) if f != r else (0, 0, int(c != f), 1))
    sums = np.array([np.sum(v, axis=0) for v in by.values()], float)
    if len(sums) < 2:
        return None, len(sums)
    rng = np.random.default_rng(derive_seed(cfg.seed, 47))
    idx = rng.integers(0, len(sums), size=(cfg.resamples, len(sums)))
    tot = sums[idx].sum(axis=1)
    ok = (tot[:, 1] > 0) & (tot[:, 3] > 0)
    stat = tot[ok, 0] / tot[ok, 1] - tot[ok, 2] / tot[ok, 3]
    if stat.size < 0.9 * cfg.resamples:
        return None, len(sums)
    a = (1 - cfg.level) / 2
    lo, hi = np.quantile(stat, [a, 1 - a])
    return [max(-1.0, float(lo)), min(1.0, float(hi))], len(sums)


def alpaca_eval(rows: list[JSONObject], cfg: VerdictsConfig
                ) -> tuple[list[Measure], list[JSONObject], int, list[str]]:
    """Win rates against the baseline (ties 1/2) and the longer answer's win share."""
    items: list[JSONObject] = []
    unread = 0
    for i, r in enumerate(rows):
        try:
            p = float(r["preference"])
        except (TypeError, ValueError):
            p = float("nan")
        if not 1.0 <= p <= 2.0:
            unread += 1
            continue
        items.append({"index": i, "baseline": str(r["generator_1"]),
                      "model": str(r["generator_2"]), "win": p - 1.0,
                      "first": str(r.get("output_1", "")), "second": str(r.get("output_2", "")),
                      "winner": "first" if p == 1.0 else "second" if p == 2.0 else "tie",
                      "label": None})
    models = sorted({str(x["model"]) for x in items})
    out = []
    for k, model in enumerate(models):
        wins = np.array([x["win"] for x in items if x["model"] == model], float)
        base = sorted({str(x["baseline"]) for x in items if x["model"] == model})
        m = Measure(key="win_rate" if len(models) == 1 else f"win_rate[{model}]",
                    what=f"{model}'s win rate against {', '.join(base)} (ties 1/2)",
                    estimate=float(wins.mean()), n=int(wins.size), baseline=0.5,
                    decision="not measured: fewer than 2 annotations")
        if wins.size >= 2:
            ci = percentile_interval(wins, cfg.level, cfg.resamples,
                                     derive_seed(cfg.seed, 51, k))
            lo, hi = max(0.0, ci.lo), min(1.0, ci.hi)
            m.ci = [lo, hi]
            m.decision = ("better than the baseline" if lo > 0.5 else
                          "worse than the baseline" if hi < 0.5 else "no difference shown")
        out.append(m)
    out.append(_length(items, cfg))
    notes = ["alpaca_eval records the preference by output, not by the position shown: "
             "position bias is not measurable from these annotations"]
    return out, items, unread, notes
