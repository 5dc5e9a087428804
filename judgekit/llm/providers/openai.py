"""OpenAI Chat Completions over HTTP (aiohttp), with JSON-schema structured output.

The SDK's default httpx transport costs several times the floor at high
concurrency (see benchmarks/client_overhead.py), so judgekit speaks the
documented HTTP API directly.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import aiohttp

from judgekit.core.errors import ProviderError
from judgekit.llm.batch_api import BatchAPI, BatchItem, BatchStatus, jsonl_lines
from judgekit.llm.identity import canonical_json
from judgekit.llm.providers.base import PROVIDERS, RETRYABLE_STATUS, Provider, endpoint
from judgekit.llm.secrets import clip, scrub_text
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

    def batch_adapter(self) -> OpenAIBatch | None:
        """OpenAI's Batch API, which this provider owns."""
        return OpenAIBatch(self)


class OpenAIBatch(BatchAPI):
    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * 2**20
    ENDPOINT = "/v1/chat/completions"

    def _base(self) -> str:
        return str(self.provider.base_url).rstrip("/")

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.provider.api_key()}"}

    def line(self, custom_id: str, req: ProviderRequest) -> JSONObject:
        p = self.provider
        assert isinstance(p, OpenAIProvider)
        body = chat_payload(p.resolve_model(), req, schema_mode=p.schema_mode,
                            max_tokens_field=p.max_tokens_field)
        return {"custom_id": custom_id, "method": "POST", "url": self.ENDPOINT, "body": body}

    async def submit(self, lines: list[JSONObject], submission: str) -> str:
        content = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", content.encode("utf-8"), filename="judgekit_batch.jsonl",
                       content_type="application/jsonl")
        upload = await self._json("POST", f"{self._base()}/files", data=form)
        batch = await self._json("POST", f"{self._base()}/batches", json_body={
            "input_file_id": upload["id"], "endpoint": self.ENDPOINT,
            "completion_window": "24h",
            "metadata": {"created_by": "judgekit", "judgekit_submission": submission}})
        return str(batch["id"])

    async def find(self, submission: str) -> str | None:
        """Search recent batches (GET /batches, newest first) for our submission tag; a
        batch that failed, expired or was cancelled does not count (it is sent again)."""
        after: str | None = None
        for _ in range(20):  # up to 2,000 recent batches
            url = f"{self._base()}/batches?limit=100" + (f"&after={after}" if after else "")
            page = await self._json("GET", url)
            for b in page.get("data") or []:
                if (b.get("metadata") or {}).get("judgekit_submission") == submission and \
                        b.get("status") not in ("failed", "expired", "cancelled"):
                    return str(b["id"])
            if not page.get("has_more") or not page.get("data"):
                return None
            after = str(page["data"][-1]["id"])
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        data = await self._json("GET", f"{self._base()}/batches/{batch_id}")
        st = str(data.get("status"))
        return BatchStatus(st in ("completed", "failed", "expired", "cancelled"), st,
                           dict(data.get("request_counts") or {}), data)

    async def cancel(self, batch_id: str) -> BatchStatus:
        data = await self._json("POST", f"{self._base()}/batches/{batch_id}/cancel")
        return BatchStatus(False, str(data.get("status")), dict(data.get("request_counts") or {}),
                           data)

    async def results(self, batch_id: str, st: BatchStatus) -> AsyncIterator[BatchItem]:
        for field_name in ("output_file_id", "error_file_id"):
            file_id = st.raw.get(field_name)
            if not file_id:
                continue
            body = await self._request("GET", f"{self._base()}/files/{file_id}/content")
            for rec in jsonl_lines(body):
                yield self._item(rec)

    def _item(self, rec: JSONObject) -> BatchItem:
        return openai_batch_item(rec)


def openai_batch_item(rec: JSONObject) -> BatchItem:
    """One line of an OpenAI Batch output or error file (the format vLLM's runner also
    writes) as a batch item."""
    cid = str(rec.get("custom_id"))
    resp = rec.get("response") or {}
    code = resp.get("status_code")
    if code == 200 and isinstance(resp.get("body"), dict):
        try:
            return BatchItem(cid, completion=parse_chat_response(resp["body"], "openai"))
        except ProviderError as exc:
            return BatchItem(cid, kind="transport", error=str(exc))
    err = rec.get("error") or (resp.get("body") or {}).get("error") or {}
    msg = scrub_text(str(err.get("message", err)) if isinstance(err, dict) else str(err))
    kind = "http_4xx" if isinstance(code, int) and 400 <= code < 500 and \
        code not in RETRYABLE_STATUS else "transport"
    if isinstance(err, dict) and err.get("code") == "batch_expired":
        kind = "expired"
    return BatchItem(cid, kind=kind, error=f"openai batch request failed ({code}): {msg}")
