"""The probe's sequential mode: pairs asked in batches in a seeded random order, and
the probe stops at its first finding or once every decision is settled (or every
decision of one question: ``sequential_on``). Each
decision (a transform's flips above the placebo, a directional bias) is a paired
difference per pair in {-1, 0, 1}; its confidence
sequence (:func:`judgekit.stats.sequential.paired_difference_cs`) holds at every
number of pairs at once, so stopping when it is settled keeps the error rates: a
decision is "shown" when the sequence excludes 0, "ruled out" when it lies inside
+-``sequential_margin``. The level is split over the decisions (Bonferroni), since
the probe stops only when all of them are settled."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from judgekit.core import seeds
from judgekit.judging.placebo import PLACEBO
from judgekit.methods.probe.analysis import bias_inputs, consistency_inputs, consistency_words
from judgekit.methods.probe.config import ProbeConfig
from judgekit.stats.sequential import paired_difference_cs

Verdicts = list[dict[str, str | None]]


def differences(cfg: ProbeConfig, verdicts: Verdicts, pointwise: bool
                ) -> dict[str, tuple[str, float, np.ndarray]]:
    """Per decision: (question, scale, per-pair differences in {-1, 0, 1})."""
    names = list(cfg.transforms or []) + [t.name for t in cfg.template_transforms]
    base = [v.get("run0") for v in verdicts]
    floor = [v.get(PLACEBO if cfg.placebo else "run1") for v in verdicts]
    out: dict[str, tuple[str, float, np.ndarray]] = {}
    for t in names:
        idx, f, g = consistency_inputs(base, [v.get(t) for v in verdicts], floor)
        if idx:
            out[f"{t}:consistency"] = ("consistency", 1.0, f - g)
    for name, _what, x, y, scale in bias_inputs(verdicts, names, pointwise):
        if x:
            out[f"{name}:direction"] = ("direction", scale, np.asarray(x) - np.asarray(y))
    return out


def decisions(cfg: ProbeConfig, verdicts: Verdicts, pointwise: bool) -> list[dict[str, Any]]:
    diffs = differences(cfg, verdicts, pointwise)
    level = 1 - (1 - cfg.level) / max(1, len(diffs))
    out = []
    for key, (question, scale, d) in diffs.items():
        s = paired_difference_cs(d, level, cfg.sequential_margin / scale,
                                 greater=question == "consistency")
        counts = cfg.sequential_on in ("all", "finding", question)
        out.append({"name": key.split(":")[0], "question": question, "decision": s.decision,
                    "stops_the_probe": counts,
                    "ci": [c * scale for c in s.ci], "p_value": min(1.0, s.p_value *
                                                                   max(1, len(diffs))),
                    "n": s.n, "level_each": level})
    return out


def settled(rows: list[dict[str, Any]], first_finding: bool = False) -> bool:
    """Every decision the stopping rule waits for (``sequential_on``) is settled; with
    ``first_finding``, or any of them is shown (each sequence holds at every n, and the
    level is split over all of them, so stopping at the first one shown keeps the
    family-wise error rate; the others are reported as left open)."""
    wait = [r for r in rows if r["stops_the_probe"]]
    if first_finding and any(r["decision"] == "shown" for r in wait):
        return True
    return bool(wait) and all(r["decision"] != "open" for r in wait)


async def gather(cfg: ProbeConfig, n: int,
                 ask: Callable[[list[int]], Awaitable[Verdicts]], pointwise: bool
                 ) -> tuple[list[int], Verdicts, dict[str, Any] | None]:
    """The units asked (indices, in file order) and their verdicts: all n at once, or
    (sequential) in batches until every decision is settled, the units drawn in a
    seeded random order. In file order a file sorted by dataset would feed the
    confidence sequences a mean that changes as they go, and they would settle on the
    first dataset's; in random order every prefix is a random sample of the file, and
    the sequences hold for the whole file's mean."""
    if not cfg.sequential:
        return list(range(n)), await ask(list(range(n))), None
    order = seeds.rng("probe.sequential", cfg.seed).permutation(n)
    verdicts: Verdicts = []
    looks = 0
    rows: list[dict[str, Any]] = []
    while len(verdicts) < n:
        batch = [int(i) for i in order[len(verdicts):len(verdicts) + cfg.sequential_batch]]
        verdicts += await ask(batch)
        looks += 1
        rows = decisions(cfg, verdicts, pointwise)
        if settled(rows, cfg.sequential_on == "finding"):
            break
    asked = [int(i) for i in order[:len(verdicts)]]
    back = sorted(range(len(asked)), key=lambda k: asked[k])
    stopped = "settled" if settled(rows) else "first finding" if settled(
        rows, cfg.sequential_on == "finding") else "reached n_pairs"
    return [asked[k] for k in back], [verdicts[k] for k in back], {
        "looks": looks, "units_asked": len(verdicts), "units_max": n, "order": "random",
        "stopped": stopped, "share_saved": 1 - len(verdicts) / n,
        "batch": cfg.sequential_batch, "margin": cfg.sequential_margin, "decisions": rows}


def apply(results: dict[str, Any], seq: dict[str, Any]) -> None:
    """Replace the fixed-n intervals and verdicts by the confidence sequences' (the
    fixed-n ones are not valid after stopping on the data)."""
    by = {(r["name"], r["question"]): r for r in seq["decisions"]}
    early = seq.get("stopped") == "first finding"
    open_ = "not settled: the probe stopped at its first finding"
    for row in results["transforms"]:
        s = by.get((row["name"], "consistency"))
        if s:
            row.update(excess_ci=s["ci"], p_adjusted=s["p_value"], interval="confidence "
                       "sequence", verdict={"shown": "inconsistent: flips more than the "
                                            "placebo", "ruled out": "consistent: excess "
                                            "ruled out beyond the margin"}.get(
                                                s["decision"], open_ if early else
                                                consistency_words(
                                                    row.get("flip_rate", 0.0),
                                                    row.get("n", 0), "the placebo",
                                                    s["level_each"])))
    for row in results["biases"]:
        s = by.get((row["name"], "direction"))
        if s:
            row.update(ci=s["ci"], p_adjusted=s["p_value"], interval="confidence sequence",
                       verdict={"shown": "biased", "ruled out": "no bias beyond the margin"
                                }.get(s["decision"], open_ if early else "no bias shown"))
    for key in ("position_bias", "padding_bias"):
        name = {"position_bias": "swap", "padding_bias": "pad"}[key]
        row = next((b for b in results["biases"] if b["name"] == name), None)
        if results.get(key) and row:
            results[key].update(ci=row["ci"], verdict=row["verdict"],
                                p_adjusted=row["p_adjusted"])
    results["sequential"] = seq
