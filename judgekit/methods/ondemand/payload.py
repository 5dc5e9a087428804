"""The on-demand experiments' payloads (closed all the way down)."""

from __future__ import annotations

from judgekit.core.payload import Payload, Record


class EstimatorFigures(Record):
    """One estimator's bias, interval width and coverage over the simulated repeats."""

    precision_bias: float | None = None
    recall_bias: float | None = None
    precision_ci_width: float | None = None
    recall_ci_width: float | None = None
    precision_coverage: float | None = None
    recall_coverage: float | None = None
    max_abs_precision_bias: float | None = None
    max_abs_recall_bias: float | None = None
    per_system_precision_bias: list[float] | None = None
    per_system_recall_bias: list[float] | None = None
    unique_system_precision_bias: float | None = None
    unique_system_recall_bias: float | None = None


class Truth(Record):
    precision: list[float]
    recall: list[float]


class WidthRatio(Record):
    precision: float
    recall: float


class SimulationPayload(Payload):
    """``ondemand/simulation``: estimators by name, the population's truth, the adaptive
    sampling curve."""

    repeats: int
    level: float
    estimators: dict[str, EstimatorFigures]
    truth: Truth
    joint_to_simple_width_ratio: WidthRatio
    adaptive: list[int]
    adaptive_new_labels: list[int]
    adaptive_total: float
    fixed_total: int


class SystemEstimate(Record):
    simple: float | None = None
    joint: float | None = None


class LabelPayload(Payload):
    """``ondemand/label``: each system's precision (simple and joint estimators)."""

    samples_per_system: int
    estimates: dict[str, SystemEstimate]
    labels_used: int
    samples_drawn: int

