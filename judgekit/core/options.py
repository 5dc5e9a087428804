"""Everything operational about a run, declared once: how calls are carried out (cache,
cassette, concurrency, timeouts, retries, execution, failure budget, base URLs), never
what they compute. The client reads a :class:`RunOptions` as it is; an experiment config
is a :class:`RunOptions` plus the fields its method computes with, and none of these
enter results file or a request's identity.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judgekit.core.errors import ConfigError, describe_validation

__all__ = ["OPERATIONAL", "RunOptions", "normalise_budget"]


class RunOptions(BaseModel):
    """How a run is carried out. ``max_failures`` is the failure budget per stage: a
    whole number is a count, a fraction in (0, 1) a share of the stage's calls, checked
    once the stage has made ``failure_budget_min_calls`` calls; None disables it."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    out: str = "runs/{name}"  # the run's folder ({name}: the config's name)
    cache_dir: str | Path | None = None
    use_cache: bool = True
    cassette: str | Path | None = None
    cassette_mode: Literal["none", "new", "all"] = "new"
    retry_failed: bool = False  # ask again where the cassette recorded a failed answer
    prompts: str | None = None  # a folder of templates searched before the packaged ones
    concurrency: int = Field(8, ge=1)
    timeout: float = Field(120.0, gt=0)
    call_deadline: float = Field(600.0, gt=0)
    transport_attempts: int = Field(6, ge=1)
    max_parse_attempts: int = Field(5, ge=1)
    backoff_base: float = Field(1.0, ge=0)
    max_wait: float = Field(60.0, ge=0)
    max_failures: int | float | None = 0.25
    failure_budget_min_calls: int = Field(50, ge=0)
    base_urls: dict[str, str] = Field(default_factory=dict)
    progress: bool = True
    # online | batch (providers' batch services) | ray (a Ray cluster; judgekit.llm.ray_batch)
    # | vllm (vLLM's offline batch runner; judgekit.llm.vllm_batch)
    execution: Literal["online", "batch", "ray", "vllm"] = "online"
    ray_address: str | None = None  # None: a local Ray cluster; "auto" or ray://host:10001
    ray_workers: int = Field(2, ge=1)  # actors sending requests
    ray_batch_size: int = Field(32, ge=1)  # requests per Ray Data batch
    ray_concurrency: int = Field(8, ge=1)  # requests in flight per actor
    vllm_command: list[str] = Field(default_factory=lambda: ["vllm", "run-batch"])
    vllm_args: list[str] = Field(default_factory=list)  # e.g. ["--tensor-parallel-size", "2"]
    vllm_reask: Literal["online", "batch"] = "online"  # where parse failures are asked again
    batch_fallback: Literal["online", "fail"] = "online"  # errored/expired batch requests
    batch_poll_interval: float = Field(10.0, gt=0)
    batch_max_poll_interval: float = Field(300.0, gt=0)
    batch_max_requests: int | None = None  # below the provider's limit, e.g. for tests
    batch_stuck_deadline: float = Field(3600.0, gt=0)  # longest wait in cancelling/finalizing
    dry_run: bool = False  # price a stage's uncached calls, then stop before any is sent

    def __init__(self, **data: Any) -> None:
        # Built in Python (not from a config file): a bad value is a one-line ConfigError.
        # (Experiment configs extending these options report through their config file.)
        if type(self) is not RunOptions:
            super().__init__(**data)
            return
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigError(f"run options: {describe_validation(exc)}") from None

    @field_validator("max_failures")
    @classmethod
    def _check_budget(cls, v: Any) -> Any:
        try:
            return normalise_budget(v)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc

    def options(self) -> RunOptions:
        """Only the operational fields (of a config that extends these options)."""
        if type(self) is RunOptions:
            return self
        return RunOptions.model_construct(**{k: getattr(self, k) for k in OPERATIONAL})


# Left out of the resolved config stored in results file: results stay byte-identical
# across folders, replay modes and concurrency settings.
OPERATIONAL = frozenset(RunOptions.model_fields)


def normalise_budget(budget: Any) -> int | float | None:
    """A failure budget as a count (int >= 0), a fraction in (0, 1), or None."""
    if budget is None:
        return None
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) \
            and math.isfinite(budget) and budget >= 0:
        if 0 < budget < 1:
            return float(budget)
        if budget == int(budget):
            return int(budget)
    raise ConfigError(f"max_failures {budget!r} must be a whole number of calls, a fraction "
                      "between 0 and 1 (e.g. 0.25), or null for no budget")
