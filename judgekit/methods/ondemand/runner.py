"""The on-demand method's two experiments: the synthetic simulation, and labelling real
system outputs (by an LLM judge or a labels file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.textio import clean
from judgekit.methods.ondemand.config import LabelConfig, SimulationConfig
from judgekit.methods.ondemand.payload import LabelPayload, SimulationPayload
from judgekit.methods.ondemand.simulation import adaptive_curve, simulate


def execute_simulation(cfg: SimulationConfig, client: Any = None) -> SimulationPayload:
    """The simulation's payload; no LLM call."""
    sim = simulate(cfg.seed, cfg.repeats, cfg.samples_per_system, cfg.recall_samples,
                   cfg.systems, cfg.resamples, cfg.level)
    ad = adaptive_curve(cfg.seed, cfg.systems, cfg.adaptive_budget, cfg.adaptive_orders,
                        cfg.adaptive_rtol)
    est = sim["estimators"]
    ratio_p = est["joint"]["precision_ci_width"] / est["simple"]["precision_ci_width"]
    ratio_r = est["joint"]["recall_ci_width"] / est["simple"]["recall_ci_width"]
    return SimulationPayload.model_validate(clean({
        "repeats": cfg.repeats, "level": cfg.level, "estimators": est, "truth": sim["truth"],
        "joint_to_simple_width_ratio": {"precision": ratio_p, "recall": ratio_r},
        "adaptive": [int(round(v)) for v in ad["samples_per_system"]],
        "adaptive_new_labels": [int(round(v)) for v in ad["new_labels_per_system"]],
        "adaptive_total": ad["adaptive_total"], "fixed_total": ad["fixed_total"],
    }))


def headline_simulation(res: SimulationPayload) -> str:
    r = res.joint_to_simple_width_ratio
    return f"joint/simple CI width: precision {r.precision:.2f}, recall {r.recall:.2f}"


def execute_labelling(cfg: LabelConfig, client: Any) -> LabelPayload:
    """Sample each system's outputs, label only unseen instances, estimate precision.
    With a labels file no call is made (``client`` is then unused)."""
    from judgekit.methods.ondemand.loop import (
        LabellingLoop,
        file_labeller,
        llm_labeller,
        read_system_outputs,
    )

    systems = {name: read_system_outputs(Path(p)) for name, p in cfg.system_outputs.items()}
    if cfg.labels_file:
        labeller = file_labeller(Path(cfg.labels_file))
    else:
        labeller = llm_labeller(client, cfg.models["judge"], cfg.rubric_text)
    loop = LabellingLoop(systems, labeller, seed=cfg.seed)
    for name in systems:
        loop.sample(name, cfg.samples_per_system)
    return LabelPayload.model_validate(clean({
        "samples_per_system": cfg.samples_per_system, "estimates": loop.estimates(),
        "labels_used": len(loop.judged),
        "samples_drawn": sum(len(s) for s in loop.samples.values())}))


def headline_labelling(res: LabelPayload) -> str:
    return f"{res.labels_used} labels for {len(res.estimates)} systems"
