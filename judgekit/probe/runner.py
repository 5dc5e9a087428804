"""The probe: a pairwise judge's verdicts under meaning-preserving transforms, measured
against the judge's own noise floor (identical re-runs).

Per pair: ``repeats`` verdicts in the original order (draws 0..k-1: the noise floor and
repeat reliability), then one verdict per transform at draw 0: ``swap`` (B first),
``rename`` (labels 1/2 for A/B), ``pad`` (neutral padding appended to one answer,
alternating A and B across pairs), and user template transforms. A transform's flip
rate counts items whose chosen answer changed from the original verdict; the noise
floor is the flip rate between the first two identical runs. Position bias is
P(first slot chosen) - 0.5 over both orders; the padding bias is the change in the
padded answer's win rate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from judgekit.config import run_with_client
from judgekit.llm import Call, Client, Stage
from judgekit.probe.config import ProbeConfig
from judgekit.probe.pairs import Pair, load_pairs, pairs_from_datasets
from judgekit.runio import md_table, publish, write_failures
from judgekit.stats.agreement import (
    agreement,
    benjamini_hochberg,
    flip_excess,
    flips,
    ppi_mean,
    repeat_reliability,
    signed_bias,
)
from judgekit.stats.proportions import rate_with_interval


class Preference(BaseModel):
    winner: str  # first, so a small model's token budget goes to the verdict
    reason: str = ""


def stage(cfg: ProbeConfig) -> Stage:
    return Stage("judge", "probe_pairwise.j2", Preference,
                 sampling={"temperature": cfg.temperature, "max_tokens": cfg.max_tokens})


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence(list(parts)).generate_state(1)[0] % (2**31))


class Variant(BaseModel):
    name: str
    draw: int = 0
    swapped: bool = False
    labels: tuple[str, str] = ("A", "B")
    a: str
    b: str
    padded: Literal["a", "b"] | None = None


def variants(cfg: ProbeConfig, pair: Pair, index: int, render: Any) -> list[Variant]:
    out = [Variant(name=f"run{d}", draw=d, a=pair.a, b=pair.b) for d in range(cfg.repeats)]
    side: Literal["a", "b"] = "a" if index % 2 == 0 else "b"
    for t in cfg.transforms or []:
        if t == "swap":
            out.append(Variant(name="swap", swapped=True, a=pair.a, b=pair.b))
        elif t == "rename":
            out.append(Variant(name="rename", labels=("1", "2"), a=pair.a, b=pair.b))
        elif t == "pad":
            text = cfg.padding.format(answer=getattr(pair, side))
            padded = {"a": pair.a, "b": pair.b, side: f"{getattr(pair, side)} {text}"}
            out.append(Variant(name="pad", a=padded["a"], b=padded["b"], padded=side))
    for tt in cfg.template_transforms:
        which = tt.apply_to if tt.apply_to != "alternate" else side
        texts = {"a": pair.a, "b": pair.b}
        texts[which] = render(tt.template, {"answer": texts[which], "question": pair.question})
        out.append(Variant(name=tt.name, a=texts["a"], b=texts["b"]))
    return out


def _call(cfg: ProbeConfig, pair: Pair, v: Variant) -> Call:
    first, second = (v.b, v.a) if v.swapped else (v.a, v.b)
    return Call({"question": pair.question, "first": first, "second": second,
                 "label_a": v.labels[0], "label_b": v.labels[1]},
                cfg.models["judge"], draw=v.draw,
                sampling={"seed": _seed(cfg.seed, v.draw)})


def chosen(v: Variant, winner: str) -> str | None:
    """Which underlying answer ("a"/"b") a verdict picked, or None if unreadable."""
    w = winner.strip().strip(".").upper()
    slot = {v.labels[0].upper(): 0, v.labels[1].upper(): 1}.get(w)
    if slot is None:
        return None
    if v.swapped:
        slot = 1 - slot
    return "a" if slot == 0 else "b"


async def _collect(cfg: ProbeConfig, client: Client, pairs: list[Pair]
                   ) -> list[dict[str, str | None]]:
    lib = client.templates
    per = [variants(cfg, p, i, lib.render_string) for i, p in enumerate(pairs)]
    flat = [(i, v) for i, vs in enumerate(per) for v in vs]
    res = await client.map(stage(cfg), [_call(cfg, pairs[i], v) for i, v in flat],
                           description="probe judge")
    out: list[dict[str, str | None]] = [{} for _ in pairs]
    for (i, v), r in zip(flat, res):
        out[i][v.name] = chosen(v, r.value.winner) if r.ok else None
        out[i][f"{v.name}:first"] = None if not r.ok else (
            "first" if (out[i][v.name] == "a") != v.swapped else "second")
        if v.padded:
            out[i]["pad:side"] = v.padded
    return out


def run(cfg: ProbeConfig, out: Path) -> dict[str, Any]:
    if cfg.judge_mode == "pointwise":
        return _run_pointwise(cfg, out)
    pairs = (load_pairs(cfg.data_path) if cfg.data_path else
             pairs_from_datasets(list(cfg.pairs_from), cfg.dataset_paths, cfg.n_pairs, cfg.seed))
    client, verdicts = run_with_client(cfg, lambda c: _collect(cfg, c, pairs))
    results = analyse(cfg, pairs, verdicts)
    results["calls"] = {k: client.summary()[k] for k in
                        ("total", "cached", "failed", "provider_calls", "failed_by_kind")}
    out.mkdir(parents=True, exist_ok=True)
    publish(out, results, report(cfg, results), title=f"Probe of {cfg.models['judge']}",
            detail_keys=("items",))
    pos = results["position_bias"] or {"bias": 0.0, "ci": None, "n": 0}
    head = (f"position bias {pos['bias']:+.3f} {_ci(pos['ci'])} over {pos['n']} pairs; "
            f"re-run flip rate {results['noise_floor']['rate']:.3f}")
    return {"headline": head, "failed_calls": write_failures(out, client)}


def _run_pointwise(cfg: ProbeConfig, out: Path) -> dict[str, Any]:
    from judgekit.data.judged import load_judged
    from judgekit.probe.pointwise import collect

    items = load_judged(str(cfg.data_path))
    client, labels = run_with_client(cfg, lambda c: collect(cfg, c, items))
    # a pointwise verdict is a label: reuse the pairwise bookkeeping with "1"/"0" choices
    pairs = [Pair(f"item{i}", it.Prompt, it.Output, "", None,
                  None if it.Label is None else ("a" if it.Label == 1 else "b"))
             for i, it in enumerate(items)]
    verdicts = [{k: (None if v is None else ("a" if v == 1 else "b")) for k, v in lab.items()}
                for lab in labels]
    results = analyse(cfg, pairs, verdicts)
    results["mode"] = "pointwise"
    results["position_bias"] = None
    results["order_consistency"] = None
    results["pass_rate"] = dict(zip(("rate", "ci", "n"), rate_with_interval(
        [v["run0"] == "a" for v in verdicts if v.get("run0")], cfg.level)))
    results["calls"] = {k: client.summary()[k] for k in
                        ("total", "cached", "failed", "provider_calls", "failed_by_kind")}
    out.mkdir(parents=True, exist_ok=True)
    publish(out, results, report(cfg, results), title=f"Probe of {cfg.models['judge']}",
            detail_keys=("items",))
    return {"headline": f"re-run flip rate {results['noise_floor']['rate']:.3f}; "
                        + "; ".join(f"{t['name']} excess {t['excess']:+.3f}"
                                    for t in results["transforms"]),
            "failed_calls": write_failures(out, client)}


def _excess_row(cfg: ProbeConfig, name: str, keep: list[int], base: list[str | None],
                other: list[str | None], rerun: np.ndarray, pairs: list[Pair]
                ) -> dict[str, Any]:
    idx = [i for i in keep if other[i] is not None]
    f = flips([str(base[i]) for i in idx], [str(other[i]) for i in idx])
    e = flip_excess(f, rerun[[keep.index(i) for i in idx]], seed=_seed(cfg.seed, len(name)),
                    resamples=cfg.resamples, level=cfg.level)
    return {"name": name, "n": e.n, "flip_rate": e.flip_rate, "noise_floor": e.noise_floor,
            "excess": e.excess, "excess_ci": e.excess_ci, "p_value": e.p_value,
            "flipped": [pairs[i].id for i, x in zip(idx, f) if x]}


def analyse(cfg: ProbeConfig, pairs: list[Pair], verdicts: list[dict[str, str | None]]
            ) -> dict[str, Any]:
    n = len(pairs)
    base = [v.get("run0") for v in verdicts]
    keep = [i for i in range(n) if base[i] is not None and verdicts[i].get("run1") is not None]
    rerun = flips([str(base[i]) for i in keep], [str(verdicts[i]["run1"]) for i in keep])
    noise_rate, noise_ci, noise_n = rate_with_interval([bool(x) for x in rerun], cfg.level)
    names = list(cfg.transforms or []) + [t.name for t in cfg.template_transforms]
    rows = [_excess_row(cfg, t, keep, base, [v.get(t) for v in verdicts], rerun, pairs)
            for t in names]
    adj = benjamini_hochberg([r["p_value"] for r in rows])
    for r, p in zip(rows, adj):
        r["p_adjusted"] = p
        biased = r["excess_ci"][0] > 0 and p < 0.05
        r["verdict"] = "biased" if biased else "not shown against the noise floor"
    # position: share of verdicts choosing the first slot, over both orders
    first = []
    for v in verdicts:
        slots = [v.get(f"{k}:first") for k in ("run0", "swap") if v.get(f"{k}:first")]
        if len(slots) == 2:
            first.append(sum(s == "first" for s in slots) / 2)
    pos = dict(zip(("bias", "ci", "n"), signed_bias(first, seed=_seed(cfg.seed, 7),
                                                     resamples=cfg.resamples))) \
        if first else None
    pad: dict[str, Any] | None = None
    if "pad" in (cfg.transforms or []):
        delta = [float(v["pad"] == v.get("pad:side", "a"))
                 - float(v["run0"] == v.get("pad:side", "a"))
                 for v in verdicts if v.get("pad") and v.get("run0")]
        if delta and all(d == 0 for d in delta):
            # no verdict moved: bound the share that could move either way (Wilson 0/n)
            from judgekit.stats.proportions import wilson_interval

            hi = wilson_interval(0, len(delta), cfg.level).hi
            pad = {"bias": 0.0, "ci": [-hi, hi], "n": len(delta)}
        elif delta:
            b, ci, m = signed_bias([0.5 + d for d in delta], seed=_seed(cfg.seed, 8),
                                   resamples=cfg.resamples)
            pad = {"bias": b, "ci": ci, "n": m}
    both = [v for v in verdicts if v.get("run0") and v.get("swap")]
    consistent = [v["run0"] == v["swap"] for v in both]
    acc = _accuracy(cfg, pairs, verdicts)
    reps = np.array([[float(verdicts[i][f"run{d}"] == "a") for d in range(cfg.repeats)]
                     for i in range(n)
                     if all(verdicts[i].get(f"run{d}") for d in range(cfg.repeats))])
    rel = repeat_reliability(reps, cfg.target_reliability) if len(reps) >= 2 else None
    order = rate_with_interval(consistent, cfg.level)
    return {
        "method": "probe", "seed": cfg.seed, "judge": cfg.models["judge"], "n_pairs": n,
        "repeats": cfg.repeats,
        "noise_floor": {"rate": noise_rate, "ci": noise_ci, "n": noise_n},
        "transforms": rows,
        "position_bias": pos, "padding_bias": pad,
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
        "items": [{"id": p.id, "question": p.question, "a": p.a, "b": p.b,
                   "correct": p.correct, "verdicts": verdicts[i],
                   "flipped_under": [r["name"] for r in rows if p.id in r["flipped"]]}
                  for i, p in enumerate(pairs)],
    }


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
    several annotations), and the corrected rate at which the judge says "a"."""
    from judgekit.stats.agreement import ceiling, importance_inclusion, ppi_weighted

    idx = [i for i, p in enumerate(pairs) if p.human and base[i]]
    if len(idx) < 2:
        return None
    judge = [int(base[i] == "a") for i in idx]
    human = [int(pairs[i].human == "a") for i in idx]
    ag = agreement(judge, human, seed=_seed(cfg.seed, 9), resamples=cfg.resamples)
    out: dict[str, Any] = {"agreement": ag._asdict()}
    multi = [[int(h == "a") for h in p.humans] for p in pairs if p.humans and len(p.humans) > 1]
    if len(multi) >= 2:
        out["human_ceiling"] = ceiling(multi, seed=_seed(cfg.seed, 11),
                                       resamples=min(cfg.resamples, 1000))
    if cfg.human_sample:
        # the rate at which the judge says "a" (pairwise: answer A wins; pointwise: pass)
        rng = np.random.default_rng(_seed(cfg.seed, 10))
        if cfg.human_sampling == "importance" and unstable is not None:
            w = np.array([float(unstable[i]) for i in idx])
            pi = importance_inclusion(w, cfg.human_sample)
            lab = np.flatnonzero(rng.random(len(idx)) < pi)
            if len(lab) >= 2:
                c = ppi_weighted(judge, lab, [human[k] for k in lab], pi)
                out["a_win_rate"] = {**c._asdict(), "sampling": "importance"}
            return out
        pick = sorted(rng.choice(len(idx), size=min(cfg.human_sample, len(idx)),
                                 replace=False).tolist())
        c = ppi_mean(judge, [judge[k] for k in pick], [human[k] for k in pick])
        out["a_win_rate"] = {**c._asdict(), "sampling": "random"}
    return out


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ci(ci: Any) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def report(cfg: ProbeConfig, r: dict[str, Any]) -> str:
    rows = [[t["name"], _pct(t["flip_rate"]), _pct(t["noise_floor"]),
             f"{t['excess']:+.3f} {_ci(t['excess_ci'])}", f"{t['p_value']:.3g}",
             f"{t['p_adjusted']:.3g}", t["verdict"], t["n"]] for t in r["transforms"]]
    pos, pad, nf = r["position_bias"], r["padding_bias"], r["noise_floor"]
    parts = [
        f"# Probe of `{r['judge']}`",
        f"{r['n_pairs']} pairs, {r['repeats']} identical runs each, then one verdict per "
        f"transform; seed {r['seed']}. Intervals: {cfg.level:.0%} (item bootstrap; Wilson for "
        "rates).",
        f"Noise floor (flip rate between identical re-runs): {_pct(nf['rate'])} "
        f"{_ci(nf['ci'])}, n = {nf['n']}.",
        "## Transforms against the noise floor",
        md_table(["transform", "flip rate", "noise floor", "excess (95% CI)", "p (exact)",
                  "p (BH)", "verdict", "n"], rows),
    ]
    if pos:
        parts.append(f"Position bias P(first slot) - 0.5: {pos['bias']:+.3f} "
                     f"{_ci(pos['ci'])}, n = {pos['n']} pairs judged in both orders.")
    if r.get("pass_rate"):
        pr = r["pass_rate"]
        parts.append(f"Pass rate (as given): {_pct(pr['rate'])} {_ci(pr['ci'])}, "
                     f"n = {pr['n']}.")
    if pad:
        what = "pass rate" if r.get("mode") == "pointwise" else "padded answer's win rate"
        parts.append(f"Padding bias (change in the {what}): "
                     f"{pad['bias']:+.3f} {_ci(pad['ci'])}, n = {pad['n']}.")
    oc = r["order_consistency"]
    if oc:
        parts.append(f"Same winner in both orders: {_pct(oc['rate'])} {_ci(oc['ci'])}, "
                     f"n = {oc['n']}.")
    if r["accuracy"]:
        a1, a2 = r["accuracy"]["single_order"], r["accuracy"]["both_orders"]
        parts.append(f"Accuracy against the known correct answer: one order "
                     f"{_pct(a1['rate'])} {_ci(a1['ci'])} (n = {a1['n']}); a win counted only "
                     f"when both orders agree {_pct(a2['rate'])} {_ci(a2['ci'])} "
                     f"(n = {a2['n']}).")
    rel = r["reliability"]
    if rel:
        parts.append(f"Repeat reliability: {rel['unstable_share']:.1%} of items change "
                     f"verdict across {r['repeats']} runs; single-run reliability "
                     f"{rel['single_run_reliability']:.3f}; runs needed for "
                     f"{rel['target']}: {rel['k_for_target']} (Spearman-Brown), "
                     f"n = {rel['n']}.")
    return "\n\n".join(parts) + "\n"
