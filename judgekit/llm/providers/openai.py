"""OpenAI Chat Completions over HTTP (aiohttp), with JSON-schema structured output.

The SDK's default httpx transport costs several times the floor at high
concurrency (see benchmarks/client_overhead.py), so judgekit speaks the
documented HTTP API directly.
"""

from __future__ import annotations

import math
import os
from typing import Any, ClassVar

from judgekit.core.errors import ProviderError
from judgekit.llm.identity import canonical_json
from judgekit.llm.providers.base import PROVIDERS, Provider, endpoint
from judgekit.llm.secrets import clip
from judgekit.llm.types import Completion, JSONObject, ProviderRequest, Usage, int_param


def chat_payload(model: str, req: ProviderRequest, *, schema_mode: str = "json_schema",
                 max_tokens_field: str = "max_tokens") -> JSONObject:
    """The /chat/completions request body for ``req``."""
    payload: JSONObject = {"model": model, "messages": req.messages}
    s = req.sampling
    for name in ("temperature", "top_p", "seed"):
        if s.get(name) is not None:
            payload[name] = s[name]
    if s.get("max_tokens") is not None:
        payload[max_tokens_field] = s["max_tokens"]
    if s.get("logprobs"):
        payload["logprobs"] = True
        payload["top_logprobs"] = int_param(s, "top_logprobs", 5) or 5
    if req.schema is not None:
        if schema_mode == "json_schema":
            payload["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": req.schema_name, "schema": req.schema, "strict": False},
            }
        elif schema_mode == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": req.schema}
    return payload


def chat_body(model: str, req: ProviderRequest, *, schema_mode: str = "json_schema",
              max_tokens_field: str = "max_tokens") -> bytes:
    """:func:`chat_payload` encoded as JSON (UTF-8), from the messages' JSON the request
    carries and the response format's, encoded once per schema: encoding the whole
    object on every call (a schema, a prompt) cost as much as the rest of judgekit's
    own work on it at 0 ms latency."""
    payload = chat_payload(model, req, schema_mode=schema_mode,
                           max_tokens_field=max_tokens_field)
    del payload["messages"]
    fmt = payload.pop("response_format", None)
    messages = req.messages_json
    if messages is None:
        messages = canonical_json(req.messages)
    head = canonical_json(payload)  # the model and sampling: "{...}", never empty
    tail = "" if fmt is None else f',"response_format":{_format_json(req, schema_mode, fmt)}'
    return f'{head[:-1]},"messages":{messages}{tail}}}'.encode()


# (id of the schema, schema mode, schema name) -> (the schema, its response format's JSON)
_FORMATS: dict[tuple[int, str, str], tuple[Any, str]] = {}


def _format_json(req: ProviderRequest, schema_mode: str, fmt: JSONObject) -> str:
    key = (id(req.schema), schema_mode, req.schema_name)
    hit = _FORMATS.get(key)
    if hit is not None and hit[0] is req.schema:  # the same schema object (a stage's own)
        return hit[1]
    if len(_FORMATS) >= 256:
        _FORMATS.clear()
    text = canonical_json(fmt)
    _FORMATS[key] = (req.schema, text)
    return text


def parse_chat_response(data: JSONObject, provider: str) -> Completion:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        text = message.get("content") or ""
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        # A 200 without the documented shape: a proxy's page or a cut-off body.
        raise ProviderError(f"{provider}: response has no choices[0].message: "
                            f"{clip(str(data), 200)}", retryable=True) from exc
    usage = data.get("usage") or {}
    finish = choice.get("finish_reason")
    refusal = message.get("refusal") or None
    return Completion(
        text=text,
        model=data.get("model", ""),
        usage=Usage(int(usage.get("prompt_tokens", 0) or 0),
                    int(usage.get("completion_tokens", 0) or 0),
                    cache_read_tokens=int((usage.get("prompt_tokens_details") or {})
                                          .get("cached_tokens", 0) or 0)),
        mean_token_entropy=mean_entropy_bits(choice.get("logprobs")),
        finish_reason="refusal" if refusal or finish == "content_filter" else finish,
        refusal=refusal or ("the provider's content filter stopped the answer"
                            if finish == "content_filter" else None),
    )


def mean_entropy_bits(logprobs: Any) -> float | None:
    """Mean per-token entropy in bits over the returned top-k alternatives."""
    if not logprobs or not logprobs.get("content"):
        return None
    ents = []
    for tok in logprobs["content"]:
        tops = tok.get("top_logprobs") or []
        if not tops:
            continue
        ps = [math.exp(t["logprob"]) for t in tops]
        z = sum(ps)
        ents.append(-sum((p / z) * math.log2(p / z) for p in ps if p > 0))
    return sum(ents) / len(ents) if ents else None


@PROVIDERS.register
class OpenAIProvider(Provider):
    name = "openai"
    key_env: ClassVar[str | None] = "OPENAI_API_KEY"
    schema_mode = "json_schema"
    max_tokens_field = "max_completion_tokens"

    def __init__(self, model: str, base_url: str | None = None) -> None:
        super().__init__(model, base_url or os.environ.get("OPENAI_BASE_URL")
                         or "https://api.openai.com/v1")

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key()}"}

    async def generate(self, request: ProviderRequest) -> Completion:
        body = chat_body(self.resolve_model(), request, schema_mode=self.schema_mode,
                         max_tokens_field=self.max_tokens_field)
        url = endpoint(str(self.base_url), "/chat/completions")
        data = await self.post_json(url, body, self.headers(), request.timeout)
        return parse_chat_response(data, self.name)
