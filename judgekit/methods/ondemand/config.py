"""Config of the on-demand evaluation experiments."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from judgekit.core.settings import RunSettings


class OnDemandConfig(RunSettings):
    """The fields both on-demand experiments share (each experiment's config below)."""

    method: Literal["ondemand"] = "ondemand"
    experiment: Literal["simulation", "label"] = "simulation"
    systems: int = Field(8, ge=2)
    samples_per_system: int = Field(100, ge=2)
    recall_samples: int = Field(200, ge=2)
    repeats: int = Field(500, ge=1)
    resamples: int = Field(300, ge=50)
    level: float = Field(0.9, gt=0, lt=1)
    adaptive_budget: int = Field(100, ge=2)
    adaptive_orders: int = Field(10, ge=1)
    adaptive_rtol: float = Field(0.0, ge=0, lt=1)
    # experiment: label — real system outputs, labelled by an LLM judge or a labels file
    system_outputs: dict[str, str] = Field(default_factory=dict)
    labels_file: str | None = None
    rubric_text: str = "The instance is factually correct."



class SimulationConfig(OnDemandConfig):
    """``experiment: simulation``: the estimators on a synthetic population."""

    experiment: Literal["simulation"] = "simulation"


class LabelConfig(OnDemandConfig):
    """``experiment: label``: precision of real system outputs from sampled labels."""

    experiment: Literal["label"] = "label"

    @model_validator(mode="after")
    def _check(self) -> LabelConfig:
        if len(self.system_outputs) < 1:
            raise ValueError("system_outputs: give at least one name: path/to/outputs.jsonl")
        if self.labels_file is None and "judge" not in self.models:
            raise ValueError("set models.judge (an LLM labeller) or labels_file")
        return self
