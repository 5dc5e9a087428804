"""`judgekit run` for method: ondemand (the synthetic simulation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.ondemand.config import OnDemandConfig
from judgekit.ondemand.simulation import adaptive_curve, simulate
from judgekit.report.figures import lines
from judgekit.runio import md_table, publish, write_failures


def run(cfg: OnDemandConfig, out: Path) -> dict[str, Any]:
    if cfg.experiment == "label":
        return run_labelling(cfg, out)
    sim = simulate(cfg.seed, cfg.repeats, cfg.samples_per_system, cfg.recall_samples,
                   cfg.systems, cfg.resamples, cfg.level)
    ad = adaptive_curve(cfg.seed, cfg.systems, cfg.adaptive_budget, cfg.adaptive_orders,
                        cfg.adaptive_rtol)
    est = sim["estimators"]
    ratio_p = est["joint"]["precision_ci_width"] / est["simple"]["precision_ci_width"]
    ratio_r = est["joint"]["recall_ci_width"] / est["simple"]["recall_ci_width"]
    results = {
        "method": "ondemand", "seed": cfg.seed, "repeats": cfg.repeats, "level": cfg.level,
        "estimators": est, "truth": sim["truth"],
        "joint_to_simple_width_ratio": {"precision": ratio_p, "recall": ratio_r},
        "adaptive": [int(round(v)) for v in ad["samples_per_system"]],
        "adaptive_new_labels": [int(round(v)) for v in ad["new_labels_per_system"]],
        "adaptive_total": ad["adaptive_total"], "fixed_total": ad["fixed_total"],
    }
    out.mkdir(parents=True, exist_ok=True)
    xs = list(range(1, cfg.systems + 1))
    lines(out / "adaptive.png", {"samples asked": (xs, results["adaptive"]),
                                 "new labels": (xs, results["adaptive_new_labels"])},
          xlabel="system (order of arrival)", ylabel="labels", title="Adaptive sampling")
    lines(out / "ci_width.png", {k: ([0, 1], [est[k]["precision_ci_width"],
                                              est[k]["recall_ci_width"]])
                                 for k in ("simple", "joint")},
          xlabel="0 = precision, 1 = recall", ylabel=f"median {cfg.level:.0%} CI width",
          title="Interval widths")
    publish(out, {**results, "experiment": "simulation"}, _report(results, cfg),
            title="On-demand estimators: simulation")
    return {"headline": f"joint/simple CI width: precision {ratio_p:.2f}, recall {ratio_r:.2f}"}


def _report(r: dict[str, Any], cfg: OnDemandConfig) -> str:
    rows = [[k, v["precision_bias"], v["max_abs_precision_bias"],
             v["unique_system_precision_bias"], v["recall_bias"], v["max_abs_recall_bias"],
             v["precision_ci_width"], v["recall_ci_width"], v.get("precision_coverage"),
             v.get("recall_coverage")] for k, v in r["estimators"].items()]
    return "\n\n".join([
        "# On-demand evaluation: simulation",
        f"{cfg.systems} systems, {cfg.samples_per_system} samples per system, "
        f"{cfg.recall_samples} recall samples, {cfg.repeats} repeats, seed {cfg.seed}. "
        f"Intervals: {cfg.level:.0%} percentile bootstrap (the {(1 - cfg.level) / 2:.0%} and "
        f"{1 - (1 - cfg.level) / 2:.0%} quantiles). Pooled: leave-one-out pool with "
        "exhaustive labels (no sampling, so no interval).",
        md_table(["estimator", "precision bias", "max abs bias", "bias on unique system",
                  "recall bias", "max abs recall bias", "precision CI width", "recall CI width",
                  "precision coverage", "recall coverage"], rows),
        "Joint / simple median width: precision "
        f"{r['joint_to_simple_width_ratio']['precision']:.2f} (paper about 0.45), recall "
        f"{r['joint_to_simple_width_ratio']['recall']:.2f}.",
        "## Adaptive sampling",
        md_table(["system #", "samples asked", "new labels"],
                 [[i + 1, a, b] for i, (a, b) in enumerate(zip(r["adaptive"],
                                                               r["adaptive_new_labels"]))]),
        f"Adaptive total {r['adaptive_total']:.0f} against {r['fixed_total']} with a fixed "
        f"budget of {cfg.adaptive_budget} per system.",
    ]) + "\n"


def run_labelling(cfg: OnDemandConfig, out: Path) -> dict[str, Any]:
    """Sample each system's outputs, label only unseen instances, estimate precision."""
    from judgekit.config import client_for
    from judgekit.ondemand.loop import (
        LabellingLoop,
        file_labeller,
        llm_labeller,
        read_system_outputs,
    )

    systems = {name: read_system_outputs(Path(p)) for name, p in cfg.system_outputs.items()}
    client = None
    if cfg.labels_file:
        labeller = file_labeller(Path(cfg.labels_file))
    else:
        client = client_for(cfg)
        labeller = llm_labeller(client, cfg.models["judge"], cfg.rubric_text)
    loop = LabellingLoop(systems, labeller, seed=cfg.seed)
    try:
        for name in systems:
            loop.sample(name, cfg.samples_per_system)
    finally:
        if client is not None:
            client.close()
    est = loop.estimates()
    results = {"method": "ondemand", "experiment": "label", "seed": cfg.seed,
               "samples_per_system": cfg.samples_per_system, "estimates": est,
               "labels_used": len(loop.judged),
               "samples_drawn": sum(len(s) for s in loop.samples.values()),
               "calls": client.summary() if client is not None else None}
    out.mkdir(parents=True, exist_ok=True)
    rows = [[s, v["simple"], v["joint"]] for s, v in est.items()]
    publish(out, results, "\n\n".join([
        "# On-demand precision from sampled labels",
        f"{results['samples_drawn']} samples drawn, {results['labels_used']} distinct "
        "instances labelled (each at most once across systems).",
        md_table(["system", "simple precision", "joint precision"], rows)]) + "\n",
        title="On-demand precision from sampled labels")
    return {"headline": f"{results['labels_used']} labels for {len(systems)} systems",
            "failed_calls": write_failures(out, client) if client is not None else {}}
