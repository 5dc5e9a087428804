"""The probe's numbers: from verdicts under transforms to consistency rows (flips
against the placebo's noise floor), signed biases (paired Newcombe intervals and exact
McNemar tests, one Benjamini-Hochberg family), accuracy on pairs with a known answer,
repeat reliability, and agreement with human labels (with prediction-powered rates)."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgekit.core import seeds as streams
from judgekit.core.payload import Json
from judgekit.judging.placebo import PLACEBO
from judgekit.methods.probe.config import ProbeConfig
from judgekit.methods.probe.pairs import Pair
from judgekit.stats.agreement import (
    agreement,
    benjamini_hochberg,
    flip_excess,
    flips,
    ppi_mean,
    repeat_reliability,
)
from judgekit.stats.proportions import newcombe_paired, rate_with_interval


def _consistency_row(cfg: ProbeConfig, name: str, base: list[str | None],
                     other: list[str | None], floor: list[str | None], pairs: list[Pair]
                     ) -> dict[str, Any] | None:
    """Flips under a transform against flips under the placebo on the same items."""
    idx, f, g = consistency_inputs(base, other, floor)
    if not idx:
        return None
    e = flip_excess(f, g, level=cfg.level)
    return {"name": name, "question": "consistency", "n": e.n, "flip_rate": e.flip_rate,
            "noise_floor": e.noise_floor, "excess": e.excess, "excess_ci": e.excess_ci,
            "p_value": e.p_value, "discordant": float(np.mean(f != g)),
            "flipped": [pairs[i].id for i, x in zip(idx, f) if x]}


def _bias_row(cfg: ProbeConfig, name: str, what: str, x: list[float], y: list[float],
              scale: float = 1.0) -> dict[str, Any] | None:
    """A signed effect: P(event under the transform) - P(event as given), paired."""
    if not x:
        return None
    d = newcombe_paired(x, y, cfg.level)
    return {"name": name, "question": "direction", "what": what, "bias": d.diff * scale,
            "ci": [c * scale for c in d.ci], "p_value": d.p_value, "n": d.n,
            "discordant": (d.only_first + d.only_second) / d.n, "scale": scale}


def bias_inputs(verdicts: list[dict[str, str | None]], names: list[str], pointwise: bool
                ) -> list[tuple[str, str, list[float], list[float], float]]:
    """Per directional transform: (name, what is measured, event under the transform,
    event as given, scale), one entry per pair where both verdicts were read."""
    out = []
    for t in names:
        have = [v for v in verdicts if v.get(t) and v.get("run0")]
        if t == "swap" and not pointwise:
            have = [v for v in have if v.get("run0:first") and v.get("swap:first")]
            # P(first slot) - 0.5 over both orders = (P(a | a first) - P(a | a second)) / 2
            out.append((t, "P(first slot chosen) - 0.5 (position)",
                        [float(v["run0"] == "a") for v in have],
                        [float(v["swap"] == "a") for v in have], 0.5))
        elif t == "rename" and not pointwise:
            have = [v for v in have if v.get("run0:first") and v.get("rename:first")]
            out.append((t, "change in P(first slot chosen) with labels 1/2",
                        [float(v["rename:first"] == "first") for v in have],
                        [float(v["run0:first"] == "first") for v in have], 1.0))
        elif t == "inject" or (not pointwise and t not in ("swap", "rename")):
            # the verdict the transform pushes toward: the changed answer (pairwise), the
            # planted verdict (pointwise injection)
            have = [v for v in have if v.get(f"{t}:side")]
            what = ("shift toward the planted verdict" if t == "inject" else
                    "change in the changed answer's win rate")
            out.append((t, what, [float(v[t] == v[f"{t}:side"]) for v in have],
                        [float(v["run0"] == v[f"{t}:side"]) for v in have], 1.0))
        else:  # pointwise: the pass rate under the transform against as given
            out.append((t, "change in the pass rate", [float(v[t] == "a") for v in have],
                        [float(v["run0"] == "a") for v in have], 1.0))
    return out


def _biases(cfg: ProbeConfig, verdicts: list[dict[str, str | None]], names: list[str],
            pointwise: bool) -> list[dict[str, Any]]:
    rows = [_bias_row(cfg, *spec) for spec in bias_inputs(verdicts, names, pointwise)]
    return [r for r in rows if r is not None]


def consistency_inputs(base: list[str | None], other: list[str | None],
                       floor: list[str | None]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(items, flips under the transform, flips under the placebo) where all three
    verdicts were read."""
    idx = [i for i in range(len(base)) if base[i] is not None and other[i] is not None
           and floor[i] is not None]
    if not idx:
        return idx, np.zeros(0), np.zeros(0)
    return (idx, flips([str(base[i]) for i in idx], [str(other[i]) for i in idx]),
            flips([str(base[i]) for i in idx], [str(floor[i]) for i in idx]))


def analyse(cfg: ProbeConfig, pairs: list[Pair], verdicts: list[dict[str, str | None]],
            pointwise: bool = False) -> dict[str, Any]:
    """Two questions, two tests. Consistency: does a meaning-preserving transform flip
    verdicts more often than the placebo (an irrelevant reference id, measured exactly
    like the transforms; identical re-runs when the placebo is off)? Direction: does a
    transform move verdicts one way (position, padding, label names)? Both use
    Newcombe's paired interval at ``level`` and the exact McNemar test; the decisions
    share one Benjamini-Hochberg family at 1 - level."""
    n = len(pairs)
    base = [v.get("run0") for v in verdicts]
    keep = [i for i in range(n) if base[i] is not None and verdicts[i].get("run1") is not None]
    rerun: Any = flips([str(base[i]) for i in keep], [str(verdicts[i]["run1"]) for i in keep]) \
        if keep else []
    rerun_rate, rerun_ci, rerun_n = rate_with_interval([bool(x) for x in rerun], cfg.level)
    floor_name = PLACEBO if cfg.placebo else "run1"
    floor = [v.get(floor_name) for v in verdicts]
    f_idx = [i for i in range(n) if base[i] is not None and floor[i] is not None]
    floor_rate, floor_ci, floor_n = rate_with_interval(
        [base[i] != floor[i] for i in f_idx], cfg.level)
    names = list(cfg.transforms or []) + [t.name for t in cfg.template_transforms]
    rows = [r for r in (_consistency_row(cfg, t, base, [v.get(t) for v in verdicts], floor,
                                         pairs) for t in names) if r is not None]
    biases = _biases(cfg, verdicts, names, pointwise)
    natural = {} if pointwise else _natural(
        cfg, pairs, base, [v.get("swap") for v in verdicts] if "swap" in names else None)
    _decide(cfg, rows, biases, [r for r in natural.values()
                                if r and r.get("p_value") is not None])
    by = {b["name"]: b for b in biases}
    pos = None if pointwise else _headline_bias(by, "swap")
    pad = _headline_bias(by, "pad")
    label = None if pointwise else _headline_bias(by, "rename")
    if pos and label and label["verdict"] == "biased":
        # the first slot always carries label A: a preference for the name "A" reads as
        # a position bias; the rename transform (labels 1/2) measures it on its own
        pos["note"] = ("the judge also prefers a label name (label_bias): the first slot "
                       "carries label A, so part of this position bias may be that")
    both = [v for v in verdicts if v.get("run0") and v.get("swap")]
    consistent = [v["run0"] == v["swap"] for v in both]
    acc = _accuracy(cfg, pairs, verdicts)
    reps = np.array([[float(verdicts[i][f"run{d}"] == "a") for d in range(cfg.repeats)]
                     for i in range(n)
                     if all(verdicts[i].get(f"run{d}") for d in range(cfg.repeats))])
    rel = repeat_reliability(reps, cfg.target_reliability, cfg.level) \
        if len(reps) >= 2 else None
    order = rate_with_interval(consistent, cfg.level)
    out = {
        "judge": cfg.models["judge"], "n_pairs": n,
        "repeats": cfg.repeats, "level": cfg.level,
        "noise_floor": {"rate": floor_rate, "ci": floor_ci, "n": floor_n,
                        "source": "placebo" if cfg.placebo else "identical re-runs"},
        "rerun_flips": {"rate": rerun_rate, "ci": rerun_ci, "n": rerun_n},
        "transforms": rows, "biases": biases,
        "position_bias": pos, "padding_bias": pad,
        **({"label_bias": label} if label else {}),
        "order_consistency": dict(zip(("rate", "ci", "n"), order)),
        "accuracy": acc,
        "reliability": None if rel is None else {
            "unstable_share": rel.unstable_share,
            "single_run_reliability": rel.single_run_reliability,
            "k_for_target": rel.k_for_target, "target": cfg.target_reliability,
            "n": len(reps)},
        "human": _human(cfg, pairs, base, [len({verdicts[i].get(f"run{d}")
                                                      for d in range(cfg.repeats)}) > 1
                                                 for i in range(n)]),
        **natural,
        "items": _items(pairs, verdicts, rows),
    }
    from judgekit.methods.probe.bias import plan

    out["plan"] = plan(out, cfg.plan_power)
    return out


def _decide(cfg: ProbeConfig, rows: list[Json], biases: list[Json], tested: list[Json]
            ) -> None:
    """Every decision in one Benjamini-Hochberg family at 1 - level: consistency rows,
    biases and the natural preferences."""
    alpha = 1 - cfg.level
    adj = benjamini_hochberg([r["p_value"] for r in rows + biases + tested])
    for r, p in zip(rows + biases + tested, adj):
        r["p_adjusted"] = p
    for r in tested:
        if r["verdict"] == "preference shown" and r["p_adjusted"] >= alpha:
            r["verdict"] = "no preference shown"
    for r in rows:
        shown = r["p_adjusted"] < alpha and r["excess_ci"][0] > 0
        floor = "the placebo" if cfg.placebo else "identical re-runs"
        r["verdict"] = (f"inconsistent: flips more than {floor}" if shown else
                        consistency_words(r["flip_rate"], r["n"], floor, cfg.level))
    for r in biases:
        shown = r["p_adjusted"] < alpha and (r["ci"][0] > 0 or r["ci"][1] < 0)
        r["verdict"] = "biased" if shown else "no bias shown"


STABLE = 0.10  # "consistent" needs the flip rate's interval below this, too


def consistency_words(flip_rate: float, n: int, floor: str, level: float) -> str:
    """The verdict of a transform not shown to flip more than the noise floor:
    "consistent" only when its flips are also low in absolute terms (the flip rate's
    Wilson interval below STABLE); otherwise "unstable": it flips as often as under an
    irrelevant change, which is no praise when both are 40%."""
    from judgekit.stats.proportions import wilson_interval

    lo, hi = wilson_interval(int(round(flip_rate * n)), n, level) if n else (0.0, 1.0)
    if hi < STABLE:
        return f"consistent: not shown above {floor}, and flips on under {STABLE:.0%}"
    if lo > STABLE:
        return (f"unstable: flips on {flip_rate:.0%} of items, not shown above {floor} "
                "(which flips as often: as unstable under an irrelevant change)")
    return (f"not shown above {floor}; flips on {flip_rate:.0%} of {n} items (up to "
            f"{hi:.0%}): too few to call it consistent")


def _headline_bias(by: dict[str, Json], name: str) -> Json | None:
    """A bias's headline figures (position: swap; padding: pad), if it was measured."""
    if name not in by:
        return None
    return {k: by[name][k] for k in ("bias", "ci", "n", "p_value", "p_adjusted", "verdict")}


def _items(pairs: list[Pair], verdicts: list[dict[str, str | None]], rows: list[Json]
           ) -> list[Json]:
    """One record per pair: its texts, every verdict, the transforms that flipped it."""
    return [{"id": p.id, "question": p.question, "a": p.a, "b": p.b, "correct": p.correct,
             "verdicts": verdicts[i],
             **({"model_a": p.model_a, "model_b": p.model_b} if p.model_a or p.model_b
                else {}),
             **({"human": p.human} if p.human else {}),
             "flipped_under": [r["name"] for r in rows if p.id in r["flipped"]]}
            for i, p in enumerate(pairs)]


def _natural(cfg: ProbeConfig, pairs: list[Pair], base: list[str | None],
             swapped: list[str | None] | None) -> dict[str, dict[str, Any] | None]:
    """Self-preference and length preference of the natural answers (no padding), on
    both orders when the swap transform ran (position controlled), else as given."""
    from judgekit.methods.probe.bias import family_of, length_preference, self_preference

    family = cfg.judge_family or family_of(cfg.models["judge"])
    return {"self_preference": self_preference(pairs, base, family, cfg.level, swapped),
            "length_bias": length_preference(pairs, base, cfg.level, swapped=swapped)}


def _accuracy(cfg: ProbeConfig, pairs: list[Pair], verdicts: list[dict[str, str | None]]
              ) -> dict[str, Any] | None:
    known = [(p, v) for p, v in zip(pairs, verdicts) if p.correct and v.get("run0")]
    if not known:
        return None
    single = rate_with_interval([v["run0"] == p.correct for p, v in known], cfg.level)
    both = [(p, v) for p, v in known if v.get("swap")]
    # a win counts only when both orders agree on it
    strict = rate_with_interval([v["run0"] == v["swap"] == p.correct for p, v in both],
                                cfg.level)
    return {"single_order": dict(zip(("rate", "ci", "n"), single)),
            "both_orders": dict(zip(("rate", "ci", "n"), strict))}


def _human(cfg: ProbeConfig, pairs: list[Pair], base: list[str | None],
           unstable: list[bool] | None = None) -> dict[str, Any] | None:
    """Agreement with human preferences (and the human-human ceiling when items carry
    several annotations), and the prediction-powered rate at which the judge's verdict
    is "a" (pairwise: answer A wins; pointwise: pass): judge verdicts on all N judged
    items, human labels on the n that have one (or a ``human_sample`` drawn from them,
    at random or by importance)."""
    from judgekit.stats.agreement import ceiling, importance_inclusion, ppi_weighted

    judged = [i for i in range(len(pairs)) if base[i]]
    idx = [i for i in judged if pairs[i].human]
    if len(idx) < 2:
        return None
    judge = [int(base[i] == "a") for i in idx]
    human = [int(pairs[i].human == "a") for i in idx]
    ag = agreement(judge, human, seed=streams.integer("probe.agreement", cfg.seed),
                   resamples=cfg.resamples, level=cfg.level)
    out: dict[str, Any] = {"agreement": ag._asdict()}
    multi = [[int(h == "a") for h in p.humans] for p in pairs if p.humans and len(p.humans) > 1]
    if len(multi) >= 2:
        out["human_ceiling"] = ceiling(multi, seed=streams.integer("probe.ceiling", cfg.seed),
                                       resamples=min(cfg.resamples, 1000))
    f_all = np.array([int(base[i] == "a") for i in judged], float)
    pos = {i: k for k, i in enumerate(judged)}
    rng = np.random.default_rng(streams.integer("probe.human_sample", cfg.seed))
    c = None
    if cfg.human_sample and cfg.human_sampling == "importance" and unstable is not None:
        # Poisson sampling favouring items the judge is unsure of, among the labelled
        w = np.array([float(unstable[i]) for i in idx])
        pi = importance_inclusion(w, cfg.human_sample)
        lab = np.flatnonzero(rng.random(len(idx)) < pi)
        if len(lab) >= 2:
            c = ppi_weighted(judge, lab, [human[k] for k in lab], pi, level=cfg.level)
    elif len(idx) < len(judged) or cfg.human_sample:
        pick = list(range(len(idx)))
        if cfg.human_sample and cfg.human_sample < len(idx):
            pick = sorted(rng.choice(len(idx), size=cfg.human_sample, replace=False).tolist())
        f_lab = [float(f_all[pos[idx[k]]]) for k in pick]
        c = ppi_mean(f_all if len(idx) < len(judged) else np.array(judge, float), f_lab,
                     [human[k] for k in pick], level=cfg.level)
    if c is not None:
        c = _label_error(cfg, c, multi)
        out["a_win_rate"] = {**c._asdict(), "labels_for_target": c.labels_for_halfwidth(
            cfg.target_halfwidth), "target_halfwidth": cfg.target_halfwidth}
    return out


def _label_error(cfg: ProbeConfig, c: Any, multi: list[list[int]]) -> Any:
    """The corrected rate corrected for annotator error: a stated flip rate, or one
    estimated from the first two labels of items labelled twice or more."""
    from judgekit.stats.ppi import resolve_label_error, with_label_error

    err = resolve_label_error(cfg.label_error, multi, cfg.level, "the probe's pairs")
    return c if err is None else with_label_error(c, err.rate, err.ci)
