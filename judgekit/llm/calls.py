"""The rules of one structured call, shared by online and batch execution.

A call is prepared (rendered and identified, no I/O); each answer the provider gives
is read by :func:`read_answer`, which decides: a value, a final failure (a refusal,
a truncated answer), or a re-ask with the parse error; the :class:`CallState` keeps
what the call has seen so a failure is logged with its transcript; a recorded answer
is served only if it still fits the stage's output model (:func:`check_record`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from judgekit.core.errors import describe_validation
from judgekit.llm.identity import (
    framed_key,
    identity_key,
    request_frame,
    request_identity,
    sampling_json,
)
from judgekit.llm.providers import Provider
from judgekit.llm.secrets import clip, scrub_text
from judgekit.llm.stage import Call, Stage
from judgekit.llm.structured import (
    ParseFailure,
    looks_like_refusal,
    parse_output,
    parse_text,
)
from judgekit.llm.templates import TemplateLibrary
from judgekit.llm.types import (
    FAILURE_KINDS,
    CallRecord,
    Completion,
    Identity,
    ProviderRequest,
    Sampling,
    Usage,
)

REASK = ("Your previous answer could not be used: {error}\n"
         "Answer again with only a JSON object that matches the required schema.")
EMPTY_REASK = ("Your previous answer was empty.\n"
               "Answer with only a JSON object that matches the required schema.")
TEXT_REASK = ("Your previous answer could not be used: {error}\n"
              "Answer again, ending with your grade in the form the instructions ask for.")

__all__ = ["EMPTY_REASK", "REASK", "CallState", "Fixed", "ParseFailure", "Prepared", "Terminal",
           "check_record", "prepare", "prepare_many", "read_answer", "reask", "request_for",
           "validated"]


class Terminal(Exception):
    """An answer that re-asking cannot fix (a refusal, a truncated answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Prepared:
    """One call rendered and identified: what is sent, and the key it is stored under.

    The key is computed at once; the identity (the dict the key hashes, wanted only by
    a miss's error, a cassette's journal and a fresh answer's record) when first read.
    """

    __slots__ = ("model", "provider", "messages", "sampling", "key", "draw", "_fixed",
                 "_identity", "messages_json")

    def __init__(self, model: str, provider: Provider, messages: list[dict[str, str]],
                 sampling: Sampling, key: str, draw: int, fixed: Fixed) -> None:
        self.model, self.provider, self.messages = model, provider, messages
        self.sampling, self.key, self.draw = sampling, key, draw
        self._fixed = fixed
        self._identity: Identity | None = None
        self.messages_json: str | None = None  # the canonical JSON of ``messages``

    def __repr__(self) -> str:
        return f"Prepared(model={self.model!r}, key={self.key[:12]!r}, draw={self.draw!r})"

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            f = self._fixed
            self._identity = request_identity(
                provider=f.provider, model=f.model, base_url=f.base_url,
                messages=self.messages, sampling=self.sampling, schema=f.schema,
                template=f.template, template_hash=f.template_hash, draw=self.draw)
        return self._identity


@dataclass(frozen=True, slots=True)
class Fixed:
    """What a request's identity takes from its stage and model (the same for every
    call of a stage to one model), with the canonical JSON around the per-call parts."""

    provider: str
    model: str
    base_url: str | None
    schema: Any
    template: str
    template_hash: str
    frame: tuple[str, str, str]


def prepare(templates: TemplateLibrary, provider: Provider, stage: Stage, call: Call
            ) -> Prepared:
    """Render and identify one call (no I/O)."""
    return prepare_many(templates, lambda _m: provider, stage, [call])[0]


def prepare_many(templates: TemplateLibrary, provider_of: Callable[[str], Provider],
                 stage: Stage, calls: Sequence[Call]) -> list[Prepared]:
    """:func:`prepare` for each call; what is fixed for the stage and a model is worked
    out once (a cached replay is mostly this loop)."""
    fixed: dict[str, tuple[Provider, Fixed]] = {}
    name, base, schema_json = stage.template, stage.sampling, stage.schema_json
    base_json = sampling_json(base)
    # one render for calls that share their variables' dict (a query's replicas): the
    # dicts are alive and unchanged for this loop, so the same object renders alike
    rendered: dict[int, tuple[list[dict[str, str]], str]] = {}
    out = []
    for call in calls:
        pf = fixed.get(call.model)
        if pf is None:
            prov = provider_of(call.model)
            model, url, thash = (prov.resolve_model(), prov.identity_base_url,
                                 templates.content_hash(name))
            pf = fixed[call.model] = (prov, Fixed(
                prov.name, model, url, stage.schema, name, thash,
                request_frame(url, model, prov.name, name, thash)))
        r = rendered.get(id(call.variables))
        if r is None:
            r = rendered[id(call.variables)] = templates.render_keyed(name, call.variables)
        if call.sampling:
            samp = {**base, **call.sampling}
            samp_json = sampling_json(samp)
        else:
            samp, samp_json = dict(base), base_json
        if type(call.draw) is int:
            key = framed_key(pf[1].frame, call.draw, r[1], samp_json, schema_json)
            prep = Prepared(call.model, pf[0], r[0], samp, key, call.draw, pf[1])
        else:  # not a plain int draw: keyed from the identity itself
            prep = Prepared(call.model, pf[0], r[0], samp, "", call.draw, pf[1])
            prep.key = identity_key(prep.identity, schema_json, r[1])
        prep.messages_json = r[1]
        out.append(prep)
    return out


def request_for(prep: Prepared, stage: Stage, messages: list[dict[str, str]], timeout: float
                ) -> ProviderRequest:
    # the provider gets its own copy (rendered messages are shared with the render memo)
    return ProviderRequest(model=prep.provider.resolve_model(),
                           messages=[dict(m) for m in messages],
                           sampling=prep.sampling, schema=stage.wire_schema,
                           schema_name=stage.name, base_url=prep.provider.base_url,
                           timeout=timeout, draw=prep.draw,
                           messages_json=prep.messages_json if messages is prep.messages
                           else None)


@dataclass
class CallState:
    """What one call has seen so far: kept when it fails, for the failure log."""

    model: str
    messages: list[dict[str, str]]
    attempts: int = 0
    raw: str = ""
    usage: Usage = field(default_factory=Usage)
    entropy: float | None = None
    parsed: Any = None
    error: str | None = None
    kind: str | None = None

    def answer(self, comp: Completion) -> None:
        self.usage.add(comp.usage)
        self.raw, self.entropy = comp.text, comp.mean_token_entropy
        self.model = comp.model or self.model

    def fail(self, kind: str, error: str) -> None:
        assert kind in FAILURE_KINDS
        self.parsed, self.kind, self.error = None, kind, scrub_text(error)

    def record(self) -> CallRecord:
        ok = self.parsed is not None and self.kind is None
        rec: CallRecord = {
            "ok": ok,
            "text": self.raw,
            "parsed": self.parsed.model_dump(mode="json") if ok else None,
            "attempts": self.attempts,
            "usage": self.usage.as_dict(),
            "model": self.model,
            "error": None if ok else (self.error or "no valid answer"),
            "mean_token_entropy": self.entropy,
        }
        if not ok:
            rec["kind"] = self.kind or "parse"
            rec["transcript"] = self.messages
        return rec


def read_answer(comp: Completion, stage: Stage, state: CallState) -> Any:
    """Read one answer of a call: its validated value, or

    - :class:`Terminal` when asking again cannot help (a refusal, in the API's field or
      in plain text, or an answer cut off at the token limit), or
    - :class:`ParseFailure` after setting ``state.messages`` to the re-ask (the
      previous answer and the error), for the caller to send when attempts remain.
    """
    state.answer(comp)
    if comp.refusal is not None or comp.finish_reason == "refusal":
        raise Terminal("refusal", f"the model refused: {clip(comp.refusal or comp.text, 300)}")
    try:
        state.parsed = (parse_output(comp.text, stage.output) if stage.pattern is None
                        else parse_text(comp.text, stage.pattern, stage.output))
        return state.parsed
    except ParseFailure as exc:
        if comp.finish_reason == "length":
            raise Terminal("truncated", "the answer was cut off at the token limit and "
                           f"does not parse: {exc}") from None
        if looks_like_refusal(comp.text):
            # A plain-text refusal: asking again pays for the same answer.
            raise Terminal("refusal", "the model refused in plain text: "
                           f"{clip(comp.text, 300)}") from None
        state.error = str(exc)
        state.messages = reask(state.messages, comp.text, str(exc),
                               REASK if stage.pattern is None else TEXT_REASK)
        raise


def reask(messages: list[dict[str, str]], text: str, error: str, note: str = REASK
          ) -> list[dict[str, str]]:
    """Messages for a re-ask. An empty answer is never sent back as an empty assistant
    turn (Anthropic rejects it); the request is repeated with the note appended."""
    if text.strip():
        return [*messages, {"role": "assistant", "content": text},
                {"role": "user", "content": note.format(error=error)}]
    last = messages[-1]
    if last["role"] == "user":
        note = EMPTY_REASK if EMPTY_REASK not in last["content"] else ""
        return [*messages[:-1], {"role": "user",
                                 "content": last["content"] + ("\n\n" + note if note else "")}]
    return [*messages, {"role": "user", "content": EMPTY_REASK}]


def check_record(rec: CallRecord, stage: Stage) -> tuple[str | None, Any]:
    """(why a recorded answer cannot be served for ``stage`` now, or None; its value,
    validated once against the stage's current output model)."""
    if not isinstance(rec, dict) or not isinstance(rec.get("ok"), bool):
        return "the record is malformed", None
    if not rec["ok"]:
        return None, None
    try:
        # the model's validator itself (model_validate adds a call around it)
        return None, stage.output.__pydantic_validator__.validate_python(rec.get("parsed"))
    except ValidationError as exc:
        return (f"its parsed value no longer fits {stage.output.__name__}: "
                f"{describe_validation(exc)}"), None


def validated(rec: CallRecord, stage: Stage) -> Any:
    """The value of a fresh record (None for a failure)."""
    if not rec.get("ok"):
        return None
    return stage.output.model_validate(rec["parsed"])
