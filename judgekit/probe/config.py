"""Config of the judge reliability probe (pairwise preference judges)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judgekit.config import RunSettings

BUILTIN = ("swap", "rename", "pad")


class TemplateTransform(BaseModel):
    """A user transform: a Jinja template applied to one answer (``answer`` is its text)."""

    model_config = ConfigDict(extra="forbid")
    name: str
    template: str
    apply_to: Literal["a", "b", "alternate"] = "alternate"


class ProbeConfig(RunSettings):
    method: Literal["probe"] = "probe"
    # pairs: a JSONL of {"id", "question", "a", "b", "correct"?: "a"|"b", "human"?: "a"|"b"}
    data_path: str | None = None
    # or pairs built from datasets with objective answers (correct vs an incorrect one)
    pairs_from: list[Literal["truthfulqa", "arc"]] = Field(default_factory=list)
    dataset_paths: dict[str, str] = Field(default_factory=dict)
    n_pairs: int = Field(20, ge=2)
    transforms: list[str] = Field(default_factory=lambda: list(BUILTIN))
    template_transforms: list[TemplateTransform] = Field(default_factory=list)
    repeats: int = Field(2, ge=2, le=20)  # verdicts per item in the original order
    temperature: float = Field(0.7, ge=0)  # > 0 so identical re-runs can differ
    max_tokens: int = Field(128, ge=16)
    padding: str = ("To be thorough, here is the same answer stated once more in other "
                    "words, with no new information: {answer}")
    target_reliability: float = Field(0.8, gt=0, lt=1)
    human_sample: int | None = Field(None, ge=2)  # human labels used by the corrected rate
    level: float = Field(0.95, gt=0, lt=1)
    resamples: int = Field(2000, ge=200)

    @model_validator(mode="after")
    def _check(self) -> ProbeConfig:
        if "judge" not in self.models:
            raise ValueError("models.judge is required")
        bad = [t for t in self.transforms if t not in BUILTIN]
        if bad:
            raise ValueError(f"unknown transform {bad[0]!r}; built-ins are "
                             f"{', '.join(BUILTIN)} (add your own as template_transforms)")
        if not self.data_path and not self.pairs_from:
            raise ValueError("give data_path (a pairs JSONL) or pairs_from")
        return self
