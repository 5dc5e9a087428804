"""Config of the No-Data experiments (synthetic bitstrings and LLM judge audits)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from judgekit.config import RunSettings


class NoDataConfig(RunSettings):
    method: Literal["nodata"] = "nodata"
    experiment: Literal["synthetic"] = "synthetic"
    rounds: int = Field(3, ge=1)
    phi: list[float] = Field(default_factory=lambda: [0.1, 0.4, 0.7])
    eps: float = Field(0.0, ge=0.0, le=0.5)
    # synthetic
    data_dir: str | None = None
    evaluators: list[str] = Field(default_factory=lambda: [
        "dt_decimal", "dt_bits", "lie_sigma", "lie_f", "lie_generator"])
    liar_label_noise: float = Field(0.1, ge=0, le=1)
    generator_lie_p: float = Field(0.1, ge=0, le=1)
    escape_rounds: list[int] = Field(default_factory=lambda: [1, 2, 3, 4])
    escape_items: int = Field(400, ge=10)

    @model_validator(mode="after")
    def _check(self) -> NoDataConfig:
        if any(not 0 <= p <= 1 for p in self.phi):
            raise ValueError(f"every phi must lie in [0, 1], got {self.phi}")
        known = {"dt_decimal", "dt_bits", "lie_sigma", "lie_f", "lie_generator"}
        bad = [e for e in self.evaluators if e not in known]
        if bad:
            raise ValueError(f"unknown evaluator {bad[0]!r}; use {', '.join(sorted(known))}")
        return self
