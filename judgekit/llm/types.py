"""Plain data types of the LLM client layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def as_dict(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}


@dataclass
class ProviderRequest:
    """What a provider sees: messages, sampling and an optional JSON schema."""

    model: str
    messages: list[dict[str, str]]
    sampling: dict[str, Any]
    schema: dict[str, Any] | None = None
    schema_name: str = "output"
    base_url: str | None = None
    timeout: float = 60.0
    draw: int = 0  # for scripted mocks only; real providers never send it


@dataclass
class Completion:
    """A provider's answer."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    mean_token_entropy: float | None = None


@dataclass
class StageResult(Generic[T]):
    """The outcome of one structured stage call.

    ``ok`` is False when every parse attempt failed: then ``value`` is None and
    ``error`` says why. A failure is never replaced by a default value.
    """

    stage: str
    key: str
    ok: bool
    value: Any  # an instance of the output model, or None when ok is False
    raw: str
    attempts: int
    usage: Usage
    model: str
    error: str | None = None
    source: str = "provider"  # provider | cache | cassette
    mean_token_entropy: float | None = None

    @property
    def cached(self) -> bool:
        return self.source != "provider"
