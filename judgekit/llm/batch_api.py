"""The providers' batch services over HTTP: OpenAI Batch API and Anthropic Message Batches.

Each adapter turns prepared requests into the provider's batch lines, submits them,
reads the batch's status and request counts, and yields one :class:`BatchItem` per
request from the results. Payloads are the documented ones:

- OpenAI: upload a JSONL file (``purpose=batch``) to ``/files``, create the batch with
  ``POST /batches`` (``endpoint=/v1/chat/completions``, ``completion_window=24h``), poll
  ``GET /batches/{id}``, read ``/files/{output_file_id}/content`` and the error file.
- Anthropic: ``POST /v1/messages/batches`` with ``requests: [{custom_id, params}]``, poll
  ``GET /v1/messages/batches/{id}``, read the JSONL at ``results_url``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from judgekit.core.errors import ProviderError
from judgekit.llm.providers.anthropic import API_VERSION, messages_payload, parse_messages_response
from judgekit.llm.providers.base import RETRYABLE_STATUS, Provider, error_message
from judgekit.llm.providers.openai import OpenAIProvider, chat_payload, parse_chat_response
from judgekit.llm.secrets import scrub_text
from judgekit.llm.types import Completion, JSONObject, ProviderRequest


@dataclass
class BatchStatus:
    done: bool
    status: str
    counts: dict[str, int] = field(default_factory=dict)
    raw: JSONObject = field(default_factory=dict)

    @property
    def errors(self) -> str:
        """The batch-level errors a provider reports (OpenAI's ``errors.data``), if any."""
        errs = self.raw.get("errors")
        rows = errs.get("data") if isinstance(errs, dict) else errs
        if not isinstance(rows, list):
            return ""
        parts = []
        for e in rows[:5]:
            if isinstance(e, dict):
                where = f" (line {e['line']})" if e.get("line") is not None else ""
                parts.append(f"{e.get('code') or 'error'}: {e.get('message', '')}{where}")
        more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
        return scrub_text("; ".join(parts)) + more


@dataclass
class BatchItem:
    """One request's outcome: a completion, or an error with a failure kind
    (``http_4xx`` final, ``transport`` transient, ``expired``/``canceled`` never run,
    ``missing`` the batch ended without a result for it)."""

    custom_id: str
    completion: Completion | None = None
    kind: str | None = None
    error: str | None = None


class BatchAPI:
    name = ""
    max_requests = 0
    max_bytes = 0
    poll_interval: float | None = None  # engines on this machine or cluster: poll sooner
    max_poll_interval: float | None = None

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def line(self, custom_id: str, req: ProviderRequest) -> JSONObject:
        raise NotImplementedError  # pragma: no cover - abstract

    async def submit(self, lines: list[JSONObject], submission: str) -> str:
        raise NotImplementedError  # pragma: no cover - abstract

    async def find(self, submission: str) -> str | None:
        """The id of a batch this client submitted with ``submission`` but never heard
        back about (a kill between the provider's reply and the journal), or None when the
        provider cannot say (then the requests are submitted again)."""
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError  # pragma: no cover - abstract

    def results(self, batch_id: str, st: BatchStatus) -> AsyncIterator[BatchItem]:
        raise NotImplementedError  # pragma: no cover - abstract

    async def cancel(self, batch_id: str) -> BatchStatus:
        raise NotImplementedError  # pragma: no cover - abstract

    # ---- HTTP helpers ---------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        raise NotImplementedError  # pragma: no cover - abstract

    async def _request(self, method: str, url: str, *, json_body: Any = None,
                       data: Any = None, timeout: float = 300.0) -> bytes:
        try:
            async with self.provider.session().request(
                method, url, json=json_body, data=data, headers=self._headers(),
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                body = await resp.read()
                if resp.status >= 400:
                    text = body.decode("utf-8", errors="replace")
                    raise ProviderError(
                        scrub_text(f"{self.name} batch: HTTP {resp.status} from {url}: "
                                   f"{error_message(text)}"),
                        status=resp.status, retryable=resp.status in RETRYABLE_STATUS)
                return bytes(body)
        except aiohttp.ClientError as exc:
            raise ProviderError(scrub_text(f"{self.name} batch: {url}: {exc}"),
                                retryable=True) from exc

    async def _json(self, method: str, url: str, **kw: Any) -> JSONObject:
        body = await self._request(method, url, **kw)
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise ProviderError(f"{self.name} batch: {url} answered with a body that is not "
                                "JSON", retryable=True) from exc
        if not isinstance(data, dict):
            raise ProviderError(f"{self.name} batch: {url} answered with no JSON object",
                                retryable=True)
        return data


def _jsonl(body: bytes) -> list[JSONObject]:
    out = []
    for line in body.decode("utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


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
            for rec in _jsonl(body):
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
        for rec in _jsonl(body):
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


def batch_api_for(provider: Provider) -> BatchAPI | None:
    """The batch adapter of a provider, or None (LiteLLM, local and mock run online)."""
    if provider.name == "openai":
        return OpenAIBatch(provider)
    if provider.name == "anthropic":
        return AnthropicBatch(provider)
    return None
