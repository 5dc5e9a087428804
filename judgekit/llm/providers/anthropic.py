"""Anthropic Messages API over HTTP; structured output by a forced tool call."""

from __future__ import annotations

import json
import os

from judgekit.core.errors import ProviderError
from judgekit.llm.providers.base import PROVIDERS, Provider, endpoint
from judgekit.llm.secrets import clip
from judgekit.llm.types import Completion, JSONObject, ProviderRequest, Usage, int_param

API_VERSION = "2023-06-01"
# Anthropic stop reasons in the client's terms: both token limits are a cut-off answer.
STOP_REASONS = {"max_tokens": "length", "model_context_window_exceeded": "length",
                "end_turn": "stop", "stop_sequence": "stop"}


def messages_payload(model: str, req: ProviderRequest) -> JSONObject:
    system = "\n\n".join(m["content"] for m in req.messages if m["role"] == "system")
    turns = [m for m in req.messages if m["role"] != "system"]
    s = req.sampling
    payload: JSONObject = {
        "model": model,
        "max_tokens": int_param(s, "max_tokens", 1024) or 1024,
        "messages": [{"role": m["role"], "content": m["content"]} for m in turns],
    }
    if system:
        payload["system"] = system
    for name in ("temperature", "top_p"):
        if s.get(name) is not None:
            payload[name] = s[name]
    if req.schema is not None:
        payload["tools"] = [{
            "name": req.schema_name,
            "description": "Return the answer in exactly this structure.",
            "input_schema": req.schema,
        }]
        payload["tool_choice"] = {"type": "tool", "name": req.schema_name}
    return payload


def parse_messages_response(data: JSONObject) -> Completion:
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise ProviderError(f"anthropic: response has no content list: {clip(str(data), 200)}",
                            retryable=True)
    text = ""
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use":
            text = json.dumps(block.get("input", {}), ensure_ascii=False)
            break
        if block.get("type") == "text":
            text += block.get("text", "")
    usage = data.get("usage") or {}
    stop = data.get("stop_reason")
    # input_tokens excludes the prompt-cache tokens, which are billed apart.
    write = int(usage.get("cache_creation_input_tokens", 0) or 0)
    read = int(usage.get("cache_read_input_tokens", 0) or 0)
    return Completion(text=text, model=data.get("model", ""),
                      usage=Usage(int(usage.get("input_tokens", 0) or 0) + write + read,
                                  int(usage.get("output_tokens", 0) or 0), write, read),
                      finish_reason=STOP_REASONS.get(str(stop), stop),
                      refusal=(text or "stop_reason refusal") if stop == "refusal" else None)


@PROVIDERS.register
class AnthropicProvider(Provider):
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(self, model: str, base_url: str | None = None) -> None:
        super().__init__(model, base_url or os.environ.get("ANTHROPIC_BASE_URL")
                         or "https://api.anthropic.com")

    async def generate(self, request: ProviderRequest) -> Completion:
        headers = {"x-api-key": self.api_key(), "anthropic-version": API_VERSION}
        url = endpoint(str(self.base_url), "/v1/messages")
        data = await self.post_json(url, messages_payload(self.resolve_model(), request),
                                    headers, request.timeout)
        return parse_messages_response(data)
