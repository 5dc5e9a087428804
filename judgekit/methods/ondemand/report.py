"""Reports (as :class:`Doc`) and figures of the on-demand estimators."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from judgekit.core.payload import Payload
from judgekit.core.results import RunResult
from judgekit.methods.ondemand.config import LabelConfig, SimulationConfig
from judgekit.methods.ondemand.payload import EstimatorFigures, LabelPayload, SimulationPayload
from judgekit.report.document import Doc, Heading, Para, Table
from judgekit.report.figures import lines

P = TypeVar("P", bound=Payload)


def simulation_figures(cfg: SimulationConfig, result: RunResult[SimulationPayload], out: Path
                       ) -> None:
    r = _payload(result)
    est = r.estimators
    xs = list(range(1, cfg.systems + 1))
    lines(out / "adaptive.png", {"samples asked": (xs, r.adaptive),
                                 "new labels": (xs, r.adaptive_new_labels)},
          xlabel="system (order of arrival)", ylabel="labels", title="Adaptive sampling")
    lines(out / "ci_width.png", {k: ([0, 1], [est[k].precision_ci_width or 0.0,
                                              est[k].recall_ci_width or 0.0])
                                 for k in ("simple", "joint")},
          xlabel="0 = precision, 1 = recall", ylabel=f"median {cfg.level:.0%} CI width",
          title="Interval widths")


def _payload(result: RunResult[P]) -> P:
    assert result.payload is not None
    return result.payload


def build_simulation(cfg: SimulationConfig, result: RunResult[SimulationPayload]) -> Doc:
    r = _payload(result)
    rows = [[k, v.precision_bias, v.max_abs_precision_bias, v.unique_system_precision_bias,
             v.recall_bias, v.max_abs_recall_bias, v.precision_ci_width, v.recall_ci_width,
             v.precision_coverage, v.recall_coverage] for k, v in r.estimators.items()]
    ratio = r.joint_to_simple_width_ratio
    return Doc("On-demand estimators: simulation", [
        Heading(1, "On-demand evaluation: simulation"),
        Para(f"Headline: the joint estimator's median {cfg.level:.0%} interval is "
             f"{ratio.precision:.2f} times as wide as the simple "
             f"one's for precision (coverage {_cov(r.estimators.get('joint'))}, "
             f"{cfg.repeats} repeats) and adaptive sampling asked "
             f"{r.adaptive_total:.0f} labels against {r.fixed_total} at a fixed budget."),
        Para(f"{cfg.systems} systems, {cfg.samples_per_system} samples per system, "
             f"{cfg.recall_samples} recall samples, {cfg.repeats} repeats, seed {cfg.seed}. "
             f"Intervals: {cfg.level:.0%} percentile bootstrap (the {(1 - cfg.level) / 2:.0%} "
             f"and {1 - (1 - cfg.level) / 2:.0%} quantiles). Pooled: leave-one-out pool with "
             "exhaustive labels (no sampling, so no interval)."),
        Table(["estimator", "precision bias", "max abs bias", "bias on unique system",
               "recall bias", "max abs recall bias", "precision CI width", "recall CI width",
               "precision coverage", "recall coverage"], rows, "estimators"),
        Para("Joint / simple median width: precision "
             f"{ratio.precision:.2f} (paper about 0.45), recall "
             f"{ratio.recall:.2f}."),
        Heading(2, "Adaptive sampling"),
        Table(["system #", "samples asked", "new labels"],
              [[i + 1, a, b] for i, (a, b) in enumerate(zip(r.adaptive, r.adaptive_new_labels))],
              "adaptive"),
        Para(f"Adaptive total {r.adaptive_total:.0f} against {r.fixed_total} with a "
             f"fixed budget of {cfg.adaptive_budget} per system."),
    ])


def _cov(v: EstimatorFigures | None) -> str:
    c = v.precision_coverage if v is not None else None
    return "n/a" if c is None else f"{c:.3f}"


def build_labelling(cfg: LabelConfig, result: RunResult[LabelPayload]) -> Doc:
    r = _payload(result)
    rows = [[s, v.simple, v.joint] for s, v in r.estimates.items()]
    return Doc("On-demand precision from sampled labels", [
        Heading(1, "On-demand precision from sampled labels"),
        Para(f"{r.samples_drawn} samples drawn, {r.labels_used} distinct instances "
             "labelled (each at most once across systems)."),
        Table(["system", "simple precision", "joint precision"], rows, "estimates"),
    ])
