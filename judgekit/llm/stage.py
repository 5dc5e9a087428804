"""A prompt stage: template + input variables + Pydantic output model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
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
        pattern: a free-text stage (a grader that answers in prose, e.g. Inspect's
            "GRADE: C"): no schema is sent, and the answer is read by this regular
            expression (its named groups, or group 1 as the output's first field) and
            validated by ``output``; a miss is re-asked like a parse failure.
    """

    name: str
    template: str
    output: type[OutT]
    sampling: Sampling = field(default_factory=dict, hash=False, compare=False)
    variables: tuple[str, ...] = field(default=(), hash=False, compare=False)
    pattern: str | None = None

    @cached_property
    def schema(self) -> JSONObject:
        """What identifies the answer's form in the cache key: the output schema, or
        for a free-text stage its pattern."""
        if self.pattern is not None:
            return {"text_pattern": self.pattern}
        return json.loads(_schema_json(self.output))  # this stage's own copy

    @property
    def wire_schema(self) -> JSONObject | None:
        """The schema sent to the provider (none for a free-text stage)."""
        return None if self.pattern is not None else self.schema

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


@lru_cache(maxsize=256)
def _schema_json(output: type[BaseModel]) -> str:
    """An output model's JSON schema, generated once per model (a runner makes a stage
    per chunk, and each generation left a few dozen objects in reference cycles)."""
    return json.dumps(output.model_json_schema())
