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
from judgekit.llm.providers.base import RETRYABLE_STATUS, Provider, error_message
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


def jsonl_lines(body: bytes) -> list[JSONObject]:
    out = []
    for line in body.decode("utf-8").splitlines():
        if line.strip():
            out.append(json.loads(line))
    return out


def batch_api_for(provider: Provider) -> BatchAPI | None:
    """The batch adapter a provider owns (:meth:`Provider.batch_adapter`), or None
    (LiteLLM, local and mock run online)."""
    return provider.batch_adapter()
