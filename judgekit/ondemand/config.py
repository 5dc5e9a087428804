"""Config of the on-demand evaluation experiments."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judgekit.config import RunSettings


class OnDemandConfig(RunSettings):
    method: Literal["ondemand"] = "ondemand"
    experiment: Literal["simulation"] = "simulation"
    systems: int = Field(8, ge=2)
    samples_per_system: int = Field(100, ge=2)
    recall_samples: int = Field(200, ge=2)
    repeats: int = Field(500, ge=1)
    resamples: int = Field(300, ge=50)
    level: float = Field(0.9, gt=0, lt=1)
    adaptive_budget: int = Field(100, ge=2)
    adaptive_orders: int = Field(10, ge=1)
    adaptive_rtol: float = Field(0.0, ge=0, lt=1)
