"""A prompt stage: template + input variables + Pydantic output model."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from judgekit.llm.types import JSONObject, Sampling

OutT = TypeVar("OutT", bound=BaseModel)


@dataclass(frozen=True)
class Stage(Generic[OutT]):
    """One structured LLM step, generic in its output model: a ``Stage[Tags]`` call
    returns a ``StageResult[Tags]`` whose ``value`` is a ``Tags`` (or None on failure).

    Args:
        name: stage name used in statistics and reports.
        template: file name under prompts/ (e.g. "tagger.j2").
        output: the Pydantic model the answer must validate against.
        sampling: default sampling parameters (temperature, max_tokens, ...).
        variables: the names every call of the stage passes; with them the template is
            checked (syntax, undefined names) before the run pays for any call.
    """

    name: str
    template: str
    output: type[OutT]
    sampling: Sampling = field(default_factory=dict, hash=False, compare=False)
    variables: tuple[str, ...] = field(default=(), hash=False, compare=False)

    @cached_property
    def schema(self) -> JSONObject:
        return self.output.model_json_schema()

    @cached_property
    def schema_json(self) -> str:
        from judgekit.llm.identity import canonical_json

        return canonical_json(self.schema)


@dataclass
class Call:
    """One invocation of a stage: variables, model string, draw index, sampling."""

    variables: Mapping[str, Any]
    model: str
    draw: int = 0
    sampling: Sampling | None = None
