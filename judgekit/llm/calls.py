"""The rules of one structured call, shared by online and batch execution.

A call is prepared (rendered and identified, no I/O); each answer the provider gives
is read by :func:`read_answer`, which decides: a value, a final failure (a refusal,
a truncated answer), or a re-ask with the parse error; the :class:`CallState` keeps
what the call has seen so a failure is logged with its transcript; a recorded answer
is served only if it still fits the stage's output model (:func:`check_record`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from judgekit.errors import describe_validation
from judgekit.llm.identity import request_identity, request_key
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

__all__ = ["EMPTY_REASK", "REASK", "CallState", "ParseFailure", "Prepared", "Terminal",
           "check_record", "prepare", "read_answer", "reask", "request_for", "validated"]


class Terminal(Exception):
    """An answer that re-asking cannot fix (a refusal, a truncated answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(slots=True)
class Prepared:
    """One call rendered and identified: what is sent, and the key it is stored under."""

    model: str
    provider: Provider
    messages: list[dict[str, str]]
    sampling: Sampling
    identity: Identity
    key: str
    draw: int


def prepare(templates: TemplateLibrary, provider: Provider, stage: Stage, call: Call
            ) -> Prepared:
    """Render and identify one call (no I/O)."""
    messages, messages_json = templates.render_keyed(stage.template, call.variables)
    samp = {**stage.sampling, **(call.sampling or {})}
    identity = request_identity(
        provider=provider.name, model=provider.resolve_model(),
        base_url=provider.identity_base_url, messages=messages, sampling=samp,
        schema=stage.schema, template=stage.template,
        template_hash=templates.content_hash(stage.template), draw=call.draw,
    )
    return Prepared(call.model, provider, messages, samp, identity,
                    request_key(identity, stage.schema_json, messages_json), call.draw)


def request_for(prep: Prepared, stage: Stage, messages: list[dict[str, str]], timeout: float
                ) -> ProviderRequest:
    return ProviderRequest(model=prep.provider.resolve_model(), messages=messages,
                           sampling=prep.sampling, schema=stage.wire_schema,
                           schema_name=stage.name, base_url=prep.provider.base_url,
                           timeout=timeout, draw=prep.draw)


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
        return None, stage.output.model_validate(rec.get("parsed"))
    except ValidationError as exc:
        return (f"its parsed value no longer fits {stage.output.__name__}: "
                f"{describe_validation(exc)}"), None


def validated(rec: CallRecord, stage: Stage) -> Any:
    """The value of a fresh record (None for a failure)."""
    if not rec.get("ok"):
        return None
    return stage.output.model_validate(rec["parsed"])
