"""Pairwise verdicts (the order shown, the winner incl. ties, labels optional; both
orders of a pair share its id) and alpaca_eval annotations."""

from __future__ import annotations

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.jsontypes import JSONObject
from judgekit.core.progress import track
from judgekit.methods.verdicts.analysis import (
    agreement_measures,
    fleiss_measure,
    rate_measure,
)
from judgekit.methods.verdicts.config import VerdictsConfig
from judgekit.methods.verdicts.payload import Measure
from judgekit.recorded.items import majority, slot_of
from judgekit.recorded.tables import text_columns
from judgekit.stats.agreement import agreement
from judgekit.stats.bootstrap import percentile_interval
from judgekit.stats.decide import (
    MANY_CLUSTERS,
    family_level,
    paired_difference,
    sign_flip_interval,
)
from judgekit.stats.preference import feature_preference


def pairwise(rows: list[JSONObject], roles: dict[str, str], cfg: VerdictsConfig
             ) -> tuple[list[Measure], list[JSONObject], int, list[str]]:
    """Measures, item records, unreadable count and notes of pairwise rows."""
    items: list[JSONObject] = []
    unread = 0
    annotators = [c for c in roles.get("label", "").split(",") if c]
    shown: dict[str, int] = {}  # rows of each pair so far, readable or not
    texts = text_columns(list(rows[0]) if rows else [], roles)
    conf = texts.get("confidence")
    spent = {k: texts[k] for k in ("cost", "seconds") if k in texts}
    for i, r in enumerate(track(rows, "reading verdicts", len(rows), "rows")):
        first, second = str(r.get(roles["first"], "")), str(r.get(roles["second"], ""))
        w = slot_of(r.get(roles["winner"]))
        pid = str(r.get(roles["pair_id"], i)) if "pair_id" in roles else str(i)
        order = shown.get(pid, 0)
        shown[pid] = order + 1
        if w is None:
            unread += 1
            continue
        people = [slot_of(r.get(c)) for c in annotators if r.get(c) not in (None, "")]
        items.append({"pair_id": pid, "order": order,
                      **({"question": str(r.get(roles["question"]) or "")}
                         if "question" in roles else {}),
                      "first": first, "second": second, "winner": w,
                      "label": majority(people),
                      **({"humans": people} if len(annotators) >= 2 else {}),
                      "chosen": {"first": first, "second": second}.get(w),
                      **({"confidence": r[conf]} if conf and r.get(conf) not in (None, "")
                         else {}),
                      **{k: r[c] for k, c in spent.items() if r.get(c) not in (None, "")},
                      **({"dataset": str(r.get(roles["dataset"]))} if "dataset" in roles
                         else {}),
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
    out = [_position(items, cfg)]
    if both:
        out += _both_orders(list(both.values()), cfg)
    # agreement with the labels in the order as given (the first row of each pair): the
    # two orders of one pair are not two items
    # (the first row of each pair as the file gives it: when that verdict is unreadable
    # the pair has no verdict in the order as given; the other order never stands in)
    given = [x for x in items if x["order"] == 0]
    lab = [x for x in given if x["label"] is not None]
    ag = agreement_measures([x["winner"] for x in lab], [x["label"] for x in lab], cfg,
                            "the labels (order as given)" if both else "the labels")
    out += ag
    out += _win_rate_bias(lab, cfg)
    if len(annotators) >= 2:  # their agreement on the pairs as given
        out.append(fleiss_measure(given, len(annotators), cfg))
    out += _win_rates(items, cfg)
    out.append(_length(items, cfg))
    family = cfg.judge_family or cfg.judge
    own = _self(items, family, cfg) if family else None
    if own is not None:
        out.append(own)
    elif any("models" in x for x in items):
        notes.append("self-preference is measured when the judge's model family is "
                     "known: pass --judge-family (or --judge) naming it")
    return out, items, unread, notes


def _position(items: list[JSONObject], cfg: VerdictsConfig) -> Measure:
    """Position bias: the share of non-tie verdicts for the first-shown answer, minus 1/2,
    with a cluster-robust interval (Student t on clusters - 1 degrees of freedom). The
    cluster is the pair, or the question where several pairs share one: a pair's two
    orders are negatively correlated under a position bias of zero, and the interval
    uses that (no design effect floored at 1); pairs of one question are not
    independent items."""
    decided = [x for x in items if x["winner"] != "tie"]
    what = "share of non-tie verdicts for the first-shown answer, minus 1/2"
    if not decided:
        return Measure(key="position_bias", what=what, units="difference of shares",
                       decision="not measured: no verdict chose a side")
    pairs = {x["pair_id"] for x in decided}
    questions = {x.get("question") for x in decided}
    by_question = None not in questions and "" not in questions and len(questions) < len(pairs)
    groups = [str(x["question"]) if by_question else x["pair_id"] for x in decided]
    values = [float(x["winner"] == "first") - 0.5 for x in decided]
    m = sign_flip_interval(values, groups, cfg.level,
                           seed=streams.integer("verdicts.position", cfg.seed),
                           bounds=(-0.5, 0.5))
    shown = m.ci[0] > 0 or m.ci[1] < 0  # the interval printed beside it decides
    how = ("the interval inverts the sign-flip test over clusters (exact under a "
           f"symmetric null), p at 0 = {m.p_value:.3g}" if m.clusters <= MANY_CLUSTERS
           else "cluster-robust t interval (many clusters)")
    return Measure(key="position_bias", what=what, estimate=m.estimate, ci=m.ci, n=m.n,
                   clusters=m.clusters, baseline=0.0, units="difference of shares",
                   decision="biased" if shown else "no bias shown", finding=shown,
                   note=f"clustered by {'question' if by_question else 'pair'} "
                        f"({m.clusters} clusters); {how}")


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
            rng = np.random.default_rng(streams.integer("verdicts.win_rate", cfg.seed, k))
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


WIN = {"first": 1.0, "tie": 0.5, "second": 0.0}


def _win_rate_bias(lab: list[JSONObject], cfg: VerdictsConfig) -> list[Measure]:
    """Win-rate bias, the pairwise judge's leniency: the share of labelled pairs (order
    as given) whose first answer the judge makes win, minus the share people make it
    win (ties 1/2), a paired difference clustered by question where questions repeat;
    with models named, each model's win rate by the judge minus by people. The rows are
    one family (overall and per model), each with its interval at the level that holds
    over them together (``family_ci``)."""
    if len(lab) < 2:
        return []
    questions = [x.get("question") for x in lab]
    by_q = None not in questions and "" not in questions and len(set(questions)) < len(lab)
    groups = [str(x["question"]) if by_q else str(x["pair_id"]) for x in lab]
    sets: list[tuple[str | None, list[float], list[float], list[str]]] = [
        (None, [WIN[x["winner"]] for x in lab], [WIN[x["label"]] for x in lab], groups)]
    models = sorted({m for x in lab for m in x.get("models", [])})
    for model in models:
        mine = [(x, g) for x, g in zip(lab, groups) if model in x.get("models", [])
                and x["models"][0] != x["models"][1]]
        if len(mine) < 2:
            continue
        flip = [x["models"].index(model) == 1 for x, _ in mine]
        sets.append((model, [abs(f - WIN[x["winner"]]) for (x, _), f in zip(mine, flip)],
                     [abs(f - WIN[x["label"]]) for (x, _), f in zip(mine, flip)],
                     [g for _, g in mine]))
    wide = family_level(cfg.level, len(sets))
    out = []
    for model, j, h, g in sets:
        est, ci, how = paired_difference(j, h, g, cfg.level)
        fam = paired_difference(j, h, g, wide)[1]
        out.append(Measure(
            key="win_rate_bias" if model is None else f"win_rate_bias[{model}]",
            what=("the judge's win rate for the first answer as given minus people's"
                  if model is None else f"{model}'s win rate by the judge minus by people")
            + " (ties 1/2)", estimate=est, ci=ci, family_ci=fam, n=len(j), baseline=0.0,
            units="difference of shares", clusters=len(set(g)),
            decision=("favours it" if ci[0] > 0 else "disfavours it" if ci[1] < 0 else
                      "no bias shown") + f" ({len(j)} labelled pairs)",
            note=how + f"; {len(sets)} rows in the family: together at {wide:.4g} each"))
    return out


SWAPPED = {"first": "second", "second": "first", "tie": "tie"}


def _both_orders(pairs: list[list[JSONObject]], cfg: VerdictsConfig) -> list[Measure]:
    """Order consistency, accuracy counted only when both orders agree on the right
    answer, and Cohen's kappa between the verdicts of the two orders (LLMBar's
    ``equal``, ``correct_both`` and ``kappa_agreement``)."""
    a = [p[0]["winner"] for p in pairs]
    b = [SWAPPED[p[1]["winner"]] for p in pairs]  # the second order's verdict, as the first
    out = [rate_measure("order_consistency", "the same answer (or a tie) chosen in both orders",
                 [x == y for x, y in zip(a, b)], None, cfg.level)]
    labelled = [(p, x, y) for p, x, y in zip(pairs, a, b) if p[0]["label"] is not None]
    if labelled:
        out.append(rate_measure("accuracy_both_orders", "right in both orders (a win counts only "
                         "when both orders agree on it)",
                         [x == y == p[0]["label"] for p, x, y in labelled], None, cfg.level))
    if len(a) >= 2:
        code = {c: i for i, c in enumerate(sorted(set(a) | set(b)))}
        ag = agreement([code[x] for x in a], [code[y] for y in b],
                       seed=streams.integer("verdicts.order_agreement", cfg.seed),
                       resamples=cfg.resamples, level=cfg.level)
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
    """Preference for the longer answer (see ``_preference``)."""
    feature = [_longer(x["first"], x["second"], cfg.min_length_ratio) for x in items]
    return _preference("length_preference", "longer", feature, items, cfg)


def _self(items: list[JSONObject], family: str, cfg: VerdictsConfig) -> Measure | None:
    """Preference for answers of the judge's own model family (rows naming both
    answers' models, exactly one of them the judge's family)."""
    from judgekit.judging.family import family_of

    fam = family.lower()
    rows = [x for x in items if "models" in x]
    if not rows:
        return None
    feature = []
    for x in rows:
        own = [family_of(m) == fam or m.lower() == fam for m in x["models"]]
        feature.append("a" if own == [True, False] else "b" if own == [False, True] else None)
    if not any(feature):
        return Measure(key="self_preference", what="preference for the judge's own model "
                       f"family {family!r}", decision=f"not measured: no pair has exactly "
                       f"one answer from {family!r} (set --judge-family)",
                       units="difference of error rates")
    return _preference("self_preference", f"own-family ({family})", feature, rows, cfg)


def _preference(key: str, name: str, feature: list[str | None], items: list[JSONObject],
                cfg: VerdictsConfig) -> Measure:
    """A preference for the answer with a feature (the longer one, the judge's own
    family's), controlled for quality by the label: the asymmetry of errors toward it
    (``feature_preference``), over every row. Pairs judged in both orders put the
    feature in each position once, so a position bias cancels; the pair is the cluster.
    With one order only the measure can inherit a position bias, and says so. Without
    labels: the feature side's share of decided verdicts minus 1/2 (descriptive)."""
    ab = {"first": "a", "second": "b"}
    chosen = [ab.get(x["winner"]) for x in items]
    better = [ab.get(x["label"] or "") for x in items]
    groups = [x.get("pair_id", str(i)) for i, x in enumerate(items)]
    orders = {g: 0 for g in groups}
    for g in groups:
        orders[g] += 1
    both = any(v >= 2 for v in orders.values())
    order_note = ("both orders of each pair (position cancels; the pair is the cluster)"
                  if both else "one order per pair: a position bias can leak into it "
                  "(record both orders to control it)")
    strata = [x.get("dataset") for x in items]
    pref = feature_preference(feature, better, chosen, cfg.level, groups=groups,
                              strata=strata if len(set(strata) - {None}) > 1 else None)
    what = f"P({name} picked when worse) - P(other picked when {name} is better)" + (
        f", within each of {pref.strata} datasets (Mantel-Haenszel)" if pref.strata > 1
        else "")
    if pref.preference is not None and pref.ci is not None:
        shown = pref.p_value < 1 - cfg.level and (pref.ci[0] > 0 or pref.ci[1] < 0)
        # quality and the feature both vary by dataset: without a dataset column the
        # asymmetry can come from mixing datasets, so it is reported, not claimed
        controlled = all(x is not None for x in strata)
        decision = ("preference shown" if shown and controlled else
                    "a preference appears but is not controlled for the dataset (may be "
                    "confounded): give a dataset column (--map dataset=COLUMN)" if shown
                    else "no preference shown")
        return Measure(key=key, what=what, estimate=pref.preference, ci=pref.ci, n=pref.n,
                       clusters=len({g for g, f, r, c in zip(groups, feature, better, chosen)
                                     if f in ("a", "b") and r in ("a", "b")
                                     and c in ("a", "b")}),
                       baseline=0.0, units="difference of error rates",
                       finding=shown and controlled, decision=decision,
                       note=order_note + ("" if controlled else "; no dataset column: "
                                          "a difference in quality between datasets can "
                                          "show as a preference"))
    flags = [f == c for f, c in zip(feature, chosen) if f and c]
    m = rate_measure(key, f"share of decided verdicts for the {name} answer, minus 1/2 (not "
              "controlled for quality: no labels)", flags, None, cfg.level,
              units="difference of shares", decision="not controlled: descriptive only",
              note=order_note)
    if m.estimate is not None and m.ci is not None:
        m.estimate -= 0.5
        m.ci = [m.ci[0] - 0.5, m.ci[1] - 0.5]
    return m


def alpaca_eval(rows: list[JSONObject], cfg: VerdictsConfig
                ) -> tuple[list[Measure], list[JSONObject], int, list[str]]:
    """Win rates against the baseline (ties 1/2) and the longer answer's win share. A
    ``preference`` is read as the probability that ``generator_2`` wins plus 1 (1: the
    baseline wins, 2: the model wins, a weighted annotator's fraction in between), and
    0, alpaca_eval's draw, as 1.5: a draw counts 1/2 as the leaderboard counts it."""
    items: list[JSONObject] = []
    unread = 0
    for i, r in enumerate(rows):
        try:
            p = float(r["preference"])
        except (TypeError, ValueError):
            p = float("nan")
        if p == 0.0:  # alpaca_eval's own encoding of a draw: counted 1/2
            p = 1.5
        if not 1.0 <= p <= 2.0:
            unread += 1
            continue
        items.append({"index": i, "question": str(r.get("instruction") or ""),
                      "baseline": str(r["generator_1"]),
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
                                     streams.integer("verdicts.recorded_win_rate", cfg.seed, k))
            lo, hi = max(0.0, ci.lo), min(1.0, ci.hi)
            m.ci = [lo, hi]
            m.decision = ("better than the baseline" if lo > 0.5 else
                          "worse than the baseline" if hi < 0.5 else "no difference shown")
        out.append(m)
    out.append(_length(items, cfg))
    notes = ["alpaca_eval records the preference by output, not by the position shown: "
             "position bias is not measurable from these annotations"]
    return out, items, unread, notes
