"""Config of the No-Data experiments (synthetic bitstrings and LLM judge audits)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from judgekit.core.settings import RunSettings
from judgekit.recorded.judged import JudgedInput


class NoDataConfig(RunSettings, JudgedInput):
    """The fields of both No-Data experiments (every field is kept by each, so a run's
    resolved config reads as before); each experiment's config below checks its own."""

    method: Literal["nodata"] = "nodata"
    experiment: Literal["synthetic", "llm"] = "synthetic"
    rounds: int = Field(3, ge=1)
    phi: list[float] = Field(default_factory=lambda: [0.1, 0.4, 0.5, 0.7])
    eps: float = Field(0.0, ge=0.0, le=0.5)
    # synthetic
    data_dir: str | None = None
    evaluators: list[str] = Field(default_factory=lambda: [
        "dt_decimal", "dt_bits", "lie_sigma", "lie_f", "lie_generator"])
    liar_label_noise: float = Field(0.1, ge=0, le=1)
    # Lie 3's per-round lie probability. The authors' run left their function's
    # default, 0.25 (their notebook's "p = 0.1" label is wrong); 0.25 reproduces Table 2.
    generator_lie_p: float = Field(0.25, ge=0, le=1)
    seeds: int = Field(1, ge=1, le=200)  # >1: a seed sweep, mean and range per row
    escape_rounds: list[int] = Field(default_factory=lambda: [1, 2, 3, 4])
    escape_items: int = Field(400, ge=10)
    # LLM judge audit (experiment: llm)
    data_path: str | None = None
    rubric: str = "west_frisian_ip.yaml"
    verifier_rubric: str = "west_frisian_ip.yaml"
    rubric_label: Literal["IP", "OOP"] = "IP"
    sample_size: int = Field(20, ge=1)
    start: int = Field(0, ge=0)
    indices: list[int] | None = None
    criterion_mode: Literal["all", "per_criterion"] = "all"
    # pair: verifier(x) vs verifier(x'); paper: judge's claims vs verifier(x');
    # both (default): claims vs verifier(x) at challenge 0, then pair: C(x') = C(x) = claimed
    check: Literal["paper", "pair", "both"] = "both"
    # thresholds on the success rate relative to what a perfect judge scores under the
    # verifier's measured noise (the verifier re-reads every x: verifier_rereads)
    trust_threshold: float = Field(0.8, gt=0, le=1)  # trust when the interval lies above
    distrust_threshold: float = Field(0.5, ge=0, lt=1)  # do not trust when it lies below
    min_reference: float = Field(0.3, ge=0, lt=1)  # a noisier verifier cannot decide
    verifier_rereads: int = Field(1, ge=0, le=1)
    # the re-read's instruction: reworded (default; a temperature-0 verifier repeats its
    # misreads under the same words) or the same words (as cassettes recorded before)
    reread_instruction: Literal["reworded", "same"] = "reworded"
    # a labels file from `judgekit label RUN` on an earlier audit of these items (ids:
    # the items' positions in the data file): people's pass/fail labels, counted as
    # human values where the data has none (issue 49: items scored by hand)
    human_labels: str | None = None
    level: float = Field(0.95, gt=0, lt=1)
    resamples: int = Field(1000, ge=200)
    ensemble: list[str] = Field(default_factory=list)
    max_tokens: int = Field(256, ge=16)
    generator_max_tokens: int = Field(1024, ge=16)

    @model_validator(mode="after")
    def _check_phi(self) -> NoDataConfig:
        if any(not 0 <= p <= 1 for p in self.phi):
            raise ValueError(f"every phi must lie in [0, 1], got {self.phi}")
        return self


EVALUATORS = ("dt_decimal", "dt_bits", "lie_sigma", "lie_f", "lie_generator")


class SyntheticConfig(NoDataConfig):
    """``experiment: synthetic``: the bit-string study (decision trees and liars)."""

    experiment: Literal["synthetic"] = "synthetic"

    @model_validator(mode="after")
    def _check_evaluators(self) -> SyntheticConfig:
        bad = [e for e in self.evaluators if e not in EVALUATORS]
        if bad:
            raise ValueError(f"unknown evaluator {bad[0]!r}; use {', '.join(sorted(EVALUATORS))}")
        return self


class AuditConfig(NoDataConfig):
    """``experiment: llm``: the audit of an LLM judge against a rubric."""

    experiment: Literal["llm"] = "llm"

    @model_validator(mode="after")
    def _check_roles(self) -> AuditConfig:
        for role in ("evaluator", "verifier"):
            if role not in self.models:
                raise ValueError(f"models.{role} is required for the LLM audit")
        unknown = set(self.models) - {"evaluator", "verifier", "generator", "second_verifier"}
        if unknown:
            raise ValueError(f"unknown role {sorted(unknown)[0]!r}; roles are evaluator, "
                             "verifier, generator and second_verifier")
        if not self.data_path:
            raise ValueError("data_path (the judged-items JSON) is required")
        return self
