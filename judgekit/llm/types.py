"""Plain data types of the LLM client layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypedDict, TypeVar

from pydantic import BaseModel

from judgekit.core.jsontypes import JSONObject

T = TypeVar("T", bound=BaseModel)

# JSONObject: JSON whose shape another party defines (a provider's request and response
# bodies, a batch file's lines, a batch journal entry, a JSON schema), read and checked
# where it is used. judgekit's own shapes are the typed dicts and models below.
# Sampling parameters as sent (temperature, top_p, max_tokens, seed, stop...).
Sampling = dict[str, float | int | str | bool | list[str] | None]
Message = dict[str, str]  # one chat message: role and content


def int_param(sampling: Sampling, key: str, default: int) -> int:
    """A whole-number sampling parameter (max_tokens, top_logprobs), or ``default``."""
    v = sampling.get(key)
    return int(v) if isinstance(v, (int, float, str)) and not isinstance(v, bool) and v != "" \
        else default


class TemplateRef(TypedDict):
    name: str
    hash: str


class Identity(TypedDict):
    """What a call's answer depends on; the sha256 of its canonical JSON keys the cache
    and the cassette."""

    provider: str
    model: str
    base_url: str | None
    messages: list[Message]
    sampling: Sampling
    schema: JSONObject | None
    template: TemplateRef
    draw: int


class CallRecord(TypedDict, total=False):
    """One call's outcome as the cache and the cassette keep it."""

    ok: bool
    text: str | None
    parsed: Any  # the output model's JSON (None for a failure)
    attempts: int
    usage: dict[str, int]
    model: str | None
    error: str | None
    mean_token_entropy: float | None
    kind: str  # a failure's kind
    transcript: list[Message]  # a failure's messages

# How a call can end without a usable answer.
FAILURE_KINDS = ("transport", "http_4xx", "parse", "refusal", "truncated", "timeout")
# Failures that are the model's own answer (replayable from a cassette); the others
# are accidents of the transport and are never recorded.
ANSWER_FAILURES = frozenset({"parse", "refusal", "truncated"})


MAX_TOKENS = 100_000_000  # more tokens than any single request can use


@dataclass
class Usage:
    """Tokens of one or more requests. ``prompt_tokens`` counts every input token,
    including those written to or read from the provider's prompt cache, which are
    also counted apart (``cache_write_tokens``, ``cache_read_tokens``) because they are
    billed at other rates."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0

    def __post_init__(self) -> None:
        """A provider's token counts must be whole numbers in [0, MAX_TOKENS]: a negative
        count would make a negative cost and 1e30 tokens a cost of $4e23, so a body that
        reports them is a bad response (a provider error), not a price."""
        p, c, w, r = (self.prompt_tokens, self.completion_tokens, self.cache_write_tokens,
                      self.cache_read_tokens)
        if (type(p) is int and type(c) is int and type(w) is int and type(r) is int
                and 0 <= p <= MAX_TOKENS and 0 <= c <= MAX_TOKENS and 0 <= w <= MAX_TOKENS
                and 0 <= r <= MAX_TOKENS):
            return  # the usual case, checked without a loop (every replayed call makes one)
        for name in ("prompt_tokens", "completion_tokens", "cache_write_tokens",
                     "cache_read_tokens"):
            v = getattr(self, name)
            if type(v) is int and 0 <= v <= MAX_TOKENS:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_TOKENS:
                from judgekit.core.errors import ProviderError

                raise ProviderError(f"the provider reported {name} = {v!r}, outside "
                                    f"[0, {MAX_TOKENS}]: not a usable response",
                                    kind="transport")

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.cache_read_tokens += other.cache_read_tokens

    def as_dict(self) -> dict[str, int]:
        out = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        if self.cache_write_tokens:  # only when used: older records keep their shape
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.cache_read_tokens:
            out["cache_read_tokens"] = self.cache_read_tokens
        return out

    @classmethod
    def from_dict(cls, d: dict[str, int] | None) -> Usage:
        if not d:
            return cls()
        get = d.get
        return cls(int(get("prompt_tokens") or 0), int(get("completion_tokens") or 0),
                   int(get("cache_write_tokens") or 0), int(get("cache_read_tokens") or 0))


@dataclass
class ProviderRequest:
    """What a provider sees: messages, sampling and an optional JSON schema."""

    model: str
    messages: list[Message]
    sampling: Sampling
    schema: JSONObject | None = None
    schema_name: str = "output"
    base_url: str | None = None
    timeout: float = 60.0
    draw: int = 0  # for scripted mocks only; real providers never send it
    # the canonical JSON of ``messages`` when known (a rendered prompt's, worked out for
    # its key): a provider may send it as is instead of encoding the messages again
    messages_json: str | None = None


@dataclass
class Completion:
    """A provider's answer."""

    text: str
    model: str
    usage: Usage = field(default_factory=Usage)
    mean_token_entropy: float | None = None
    finish_reason: str | None = None  # normalised: stop | length | refusal | tool_use ...
    refusal: str | None = None  # the provider's refusal text, when it declined


@dataclass
class StageResult(Generic[T]):
    """The outcome of one structured stage call.

    ``ok`` is False when the call failed: then ``value`` is None, ``kind`` is one of
    :data:`FAILURE_KINDS` and ``error`` says why. A failure is never replaced by a
    default value; runs exclude it from scores and count it.
    """

    stage: str
    key: str
    ok: bool
    value: T | None  # an instance of the stage's output model, or None when ok is False
    raw: str
    attempts: int
    usage: Usage
    model: str
    error: str | None = None
    # provider | batch | cache | cassette | inflight (shared in-flight call)
    source: str = "provider"
    mean_token_entropy: float | None = None
    kind: str | None = None  # None when ok, else one of FAILURE_KINDS
    elapsed_s: float = 0.0  # wall time this call took in this run (0 for a replay)

    @property
    def output(self) -> T:
        """The validated output (typed as the stage's model); only for a call that is ok."""
        if not self.ok or self.value is None:
            raise ValueError(f"stage {self.stage} call {self.key[:12]} failed ({self.kind}): "
                             "it has no output; check .ok first")
        return self.value

    @property
    def cached(self) -> bool:
        return self.source not in ("provider", "batch")
