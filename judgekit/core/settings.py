"""The fields every experiment config shares: what the run is (method, name, seed, the
models in each role) on top of how it is carried out (:class:`RunOptions`, declared
once in the client layer). A method's config extends :class:`RunSettings` with what
the method computes with."""

from __future__ import annotations

from pydantic import Field, field_validator

from judgekit.core.options import OPERATIONAL, RunOptions

__all__ = ["OPERATIONAL", "RunOptions", "RunSettings"]


class RunSettings(RunOptions):
    """Fields every experiment config shares."""

    method: str
    name: str = "experiment"
    seed: int = 0
    models: dict[str, str] = Field(default_factory=dict)
    strict: bool = False  # data-check warnings (e.g. labels vs rubric values) become errors

    @field_validator("models")
    @classmethod
    def _check_models(cls, v: dict[str, str]) -> dict[str, str]:
        """The shape of each model string; its provider is checked where the config is
        resolved (judgekit.runs.config), where the providers are known."""
        for role, model in v.items():
            provider, _, name = model.partition("/")
            if not provider or not name:
                raise ValueError(f"role {role}: model {model!r} must look like "
                                 "provider/name (e.g. openai/gpt-4o-mini)")
        return v
