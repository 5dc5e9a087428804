"""The provider interface and the registry that maps `provider/model` strings to it."""

from __future__ import annotations

import asyncio
import json
import math
import os
from typing import Any, ClassVar

import aiohttp

from judgekit.errors import ConfigError, MissingKeyError, ProviderError
from judgekit.llm.secrets import scrub_text
from judgekit.llm.types import Completion, ProviderRequest

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class Provider:
    """One LLM backend. Subclasses implement :meth:`generate`.

    ``identity_base_url`` is what enters the request identity: the base URL for
    remote servers, a stable name for managed local servers whose port varies.
    """

    name: ClassVar[str] = ""
    key_env: ClassVar[str | None] = None

    def __init__(self, model: str, base_url: str | None = None) -> None:
        self.model = model
        self.base_url = base_url
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    @property
    def identity_base_url(self) -> str | None:
        return self.base_url

    def resolve_model(self) -> str:
        return self.model

    async def generate(self, request: ProviderRequest) -> Completion:
        raise NotImplementedError  # pragma: no cover - abstract

    def should_retry(self, error: BaseException) -> bool:
        """The one retry rule for every provider: retry what a ProviderError marks
        retryable (providers map their own errors to it), and raw timeouts and
        connection errors from code that does not."""
        if isinstance(error, ProviderError):
            return error.retryable
        return isinstance(error, (asyncio.TimeoutError, aiohttp.ClientError))

    def api_key(self) -> str:
        """Read the key from the environment at call time; it is never stored."""
        if self.key_env is None:
            return ""
        key = os.environ.get(self.key_env, "")
        if not key:
            raise MissingKeyError(
                f"{self.name}/{self.model} needs {self.key_env} in the environment "
                "(or replay a cassette with --cassette-mode none)"
            )
        return key

    def session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        sess = self._sessions.get(id(loop))
        if sess is None or sess.closed:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            sess = aiohttp.ClientSession(connector=connector)
            self._sessions[id(loop)] = sess
        return sess

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        sess = self._sessions.pop(id(loop), None)
        if sess is not None:
            await sess.close()

    async def post_json(self, url: str, payload: dict[str, Any], headers: dict[str, str],
                        timeout: float) -> dict[str, Any]:
        """POST JSON and return the decoded object.

        Every way an HTTP exchange can go wrong becomes a ProviderError: retryable
        for 408/409/425/429/5xx/529, timeouts, connection resets before or during
        the body, and 200s whose body is not a JSON object (an HTML error page, a
        cut-off body); not retryable for other 4xx. Messages are scrubbed of keys,
        since error bodies may echo the request's credentials.
        """
        try:
            async with self.session().post(
                url, json=payload, headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                body = await resp.read()
                status = resp.status
                retry_after = retry_after_seconds(resp.headers)
        except asyncio.TimeoutError as exc:
            raise ProviderError(f"{self.name}: timed out after {timeout:g}s calling {url}",
                                retryable=True, kind="timeout") from exc
        except aiohttp.ClientError as exc:  # resets before or mid-body, payload errors
            raise ProviderError(scrub_text(f"{self.name}: connection to {url} failed: "
                                           f"{type(exc).__name__}: {exc}"),
                                retryable=True) from exc
        text = body.decode("utf-8", errors="replace")
        if status >= 400:
            raise ProviderError(
                scrub_text(f"{self.name}: HTTP {status} from {url}: {_error_message(text)}"),
                status=status, retry_after=retry_after, retryable=status in RETRYABLE_STATUS)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ProviderError(scrub_text(f"{self.name}: HTTP {status} from {url} with a body "
                                           f"that is not a JSON object: {text[:120]!r}"),
                                status=status, retryable=True)
        return data


def _error_message(body: str) -> str:
    try:
        data = json.loads(body)
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message", err))[:300]
        return str(err)[:300]
    except (ValueError, AttributeError):
        return body[:300]


MAX_RETRY_AFTER = 3600.0


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date).

    Only finite, non-negative values count (``nan``, ``inf`` and negatives are
    ignored, falling back to backoff); values are capped at an hour here and at
    the client's ``max_wait`` when waiting.
    """
    ms = _finite(headers.get("retry-after-ms"))
    if ms is not None:
        return min(ms / 1000.0, MAX_RETRY_AFTER)
    ra = headers.get("Retry-After") or headers.get("retry-after")
    if not ra:
        return None
    secs = _finite(ra)
    if secs is not None:
        return min(secs, MAX_RETRY_AFTER)
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(ra)
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return min(max(0.0, (when - datetime.now(timezone.utc)).total_seconds()),
                   MAX_RETRY_AFTER)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _finite(raw: Any) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


_REGISTRY: dict[str, type[Provider]] = {}


def register(cls: type[Provider]) -> type[Provider]:
    _REGISTRY[cls.name] = cls
    return cls


def parse_model_string(model: str) -> tuple[str, str]:
    if "/" not in model:
        raise ConfigError(
            f"model {model!r} must look like provider/name (providers: {', '.join(providers())})"
        )
    provider, name = model.split("/", 1)
    if provider not in _REGISTRY:
        raise ConfigError(
            f"unknown provider {provider!r} in model {model!r}; use one of {', '.join(providers())}"
        )
    if not name:
        raise ConfigError(f"model {model!r} has no model name after the provider")
    return provider, name


def providers() -> list[str]:
    return sorted(_REGISTRY)


def make_provider(model: str, base_url: str | None = None) -> Provider:
    provider, name = parse_model_string(model)
    return _REGISTRY[provider](name, base_url=base_url)
