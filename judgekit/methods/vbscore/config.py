"""Config of the VB-Score case study (validated by Pydantic)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from judgekit.core.settings import RunSettings


class DatasetSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    path: str | None = None
    hf: bool = False
    n: int = Field(10, ge=1)

    @field_validator("name")
    @classmethod
    def _known(cls, v: str) -> str:
        from judgekit.data.registry import names

        known = names("questions")
        if v not in known:
            raise ValueError(f"unknown dataset {v!r}: judgekit loads {', '.join(known)} "
                             "(name says which format the file is in; `judgekit data list`)")
        return v


class VBScoreConfig(RunSettings):
    method: Literal["vbscore"] = "vbscore"
    datasets: list[DatasetSpec] = Field(min_length=1)
    replicas: int = Field(20, ge=2, description="B, Monte Carlo replicas per query")
    interpretations: int = Field(3, ge=1, le=10)
    k: int = Field(3, ge=1, le=20)
    alpha: float = Field(0.5, ge=0)
    alphas: list[float] = Field(default_factory=lambda: [0.0, 0.25, 0.5, 0.75, 1.0])
    variance: Literal["bernoulli", "spread"] = "bernoulli"
    softmax_temperature: float = Field(1.0, gt=0)
    interpretation_temperature: float = Field(1.0, ge=0)
    system_temperature: float = Field(0.7, ge=0)
    max_tokens: int = Field(256, ge=16)
    logprobs: bool = False
    # ask every tagging call again with its answers rotated, and with a placebo id: does
    # the tagger follow content or position (judgekit.methods.vbscore.selfcheck)
    check_tagger: bool = True
    # ... on a seeded random sample of at most this many tagging calls per dataset (all of
    # them when there are fewer): 200 calls keep the check's power (a positional tagger is
    # caught from 12 calls, one positional in 40% of calls from 12-40 in 91% of runs)
    # at 2 x 200 extra calls, where checking all 40,000 calls of the case study cost +62%
    tagger_check_calls: int = Field(200, ge=12)
    resamples: int = Field(10_000, ge=100)
    level: float = Field(0.95, gt=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> VBScoreConfig:
        if any(a < 0 for a in self.alphas):
            raise ValueError(f"alpha values must be >= 0, got {self.alphas}")
        if self.alpha not in self.alphas:
            self.alphas = sorted({*self.alphas, self.alpha})
        roles = set(self.models)
        unknown = roles - {"system", "judge"}
        if unknown:
            raise ValueError(f"unknown role {sorted(unknown)[0]!r}; roles are system and judge")
        for role in ("system", "judge"):
            if role not in roles:
                raise ValueError(f"models.{role} is required")
        return self
