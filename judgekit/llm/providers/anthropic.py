"""Anthropic Messages API over HTTP; structured output by a forced tool call."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator

from judgekit.core.errors import ProviderError
from judgekit.llm.batch_api import BatchAPI, BatchItem, BatchStatus, jsonl_lines
from judgekit.llm.providers.base import PROVIDERS, Provider, endpoint
from judgekit.llm.secrets import clip, scrub_text
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

    def batch_adapter(self) -> AnthropicBatch:
        """Anthropic's Message Batches, which this provider owns."""
        return AnthropicBatch(self)


class AnthropicBatch(BatchAPI):
    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 2**20

    def _base(self) -> str:
        return str(self.provider.base_url).rstrip("/")

    def _headers(self) -> dict[str, str]:
        key = self.provider.api_key()
        return {"x-api-key": key, "anthropic-version": API_VERSION}

    def line(self, custom_id: str, req: ProviderRequest) -> JSONObject:
        return {"custom_id": custom_id,
                "params": messages_payload(self.provider.resolve_model(), req)}

    async def submit(self, lines: list[JSONObject], submission: str) -> str:
        # Message Batches carry no metadata: a lost id cannot be found again (see find)
        data = await self._json("POST", f"{self._base()}/v1/messages/batches",
                                json_body={"requests": lines})
        return str(data["id"])

    async def status(self, batch_id: str) -> BatchStatus:
        data = await self._json("GET", f"{self._base()}/v1/messages/batches/{batch_id}")
        st = str(data.get("processing_status"))
        return BatchStatus(st == "ended", st, dict(data.get("request_counts") or {}), data)

    async def cancel(self, batch_id: str) -> BatchStatus:
        data = await self._json("POST",
                                f"{self._base()}/v1/messages/batches/{batch_id}/cancel")
        return BatchStatus(False, str(data.get("processing_status")),
                           dict(data.get("request_counts") or {}), data)

    async def results(self, batch_id: str, st: BatchStatus) -> AsyncIterator[BatchItem]:
        url = st.raw.get("results_url") or \
            f"{self._base()}/v1/messages/batches/{batch_id}/results"
        body = await self._request("GET", str(url))
        for rec in jsonl_lines(body):
            yield self._item(rec)

    def _item(self, rec: JSONObject) -> BatchItem:
        cid = str(rec.get("custom_id"))
        result = rec.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            try:
                return BatchItem(cid, completion=parse_messages_response(result["message"]))
            except ProviderError as exc:
                return BatchItem(cid, kind="transport", error=str(exc))
        if kind in ("expired", "canceled"):
            return BatchItem(cid, kind=kind, error=f"anthropic batch request {kind}")
        err = (result.get("error") or {})
        inner = err.get("error", err) if isinstance(err, dict) else {}
        etype = inner.get("type", "") if isinstance(inner, dict) else ""
        msg = scrub_text(str(inner.get("message", inner)) if isinstance(inner, dict)
                         else str(inner))
        # Only the provider's transient types are worth another try; every other type
        # (invalid_request, not_found, permission, authentication, billing...) is final.
        transient = etype in ("api_error", "overloaded_error", "rate_limit_error", "")
        return BatchItem(cid, kind="transport" if transient else "http_4xx",
                         error=f"anthropic batch request errored ({etype or 'unknown'}): {msg}")
