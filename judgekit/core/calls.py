"""What a run's calls came to, the same shape for every method: how many, from where,
how they ended and what they used (the client's ledger counts them; results files carry
them)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CallSummary", "StageCalls"]


class _Counted(BaseModel):
    """How calls ended and what they used (a stage's, or a run's)."""

    model_config = ConfigDict(extra="forbid")
    provider_calls: int = 0
    cached: int = 0
    failed: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    failed_by_kind: dict[str, int] = Field(default_factory=dict)


class StageCalls(_Counted):
    """One stage's calls: how many, from where, how they ended, what they used."""

    calls: int = 0


class CallSummary(_Counted):
    """A run's calls, the same shape for every method (all zero for a method that makes
    no call); the ledger counts them and results file carries them. ``cost_usd`` counts
    what this run paid a provider for (None: a price is unknown)."""

    total: int = 0
    per_stage: dict[str, StageCalls] = Field(default_factory=dict)
