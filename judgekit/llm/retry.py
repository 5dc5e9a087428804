"""The one retry policy: which errors are retried (the provider's ``should_retry``) and
how long to wait (Retry-After when the provider gives one, capped; else exponential
backoff with full jitter, so callers that failed together do not come back together).
Online calls and the batch service's HTTP requests (submit, status, results) use it.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from judgekit.core.errors import ProviderError, RunAborted
from judgekit.llm.secrets import scrub_text

T = TypeVar("T")
log = logging.getLogger("judgekit.llm")

__all__ = ["RetryPolicy"]


class RetryPolicy:
    def __init__(self, *, attempts: int = 6, backoff_base: float = 1.0, max_wait: float = 60.0,
                 sleep: Callable[[float], Awaitable[None]] | None = None,
                 rng: random.Random | None = None) -> None:
        import asyncio

        self.attempts = attempts
        self.backoff_base = backoff_base
        self.max_wait = max_wait
        self.sleep = sleep or asyncio.sleep
        self.rng = rng or random.Random()  # timing only: never changes an answer

    def wait(self, attempt: int, error: BaseException | None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        if isinstance(error, ProviderError) and error.retry_after is not None:
            return float(min(error.retry_after, self.max_wait))
        cap = min(self.backoff_base * 2 ** (attempt - 1), self.max_wait)
        return self.rng.uniform(0.0, cap)

    async def call(self, fn: Callable[[], Awaitable[T]],
                   should_retry: Callable[[BaseException], bool], what: str = "request") -> T:
        """Run an idempotent request, retrying what ``should_retry`` accepts. A run-wide
        provider error (bad key, no credit) stops the run as :class:`RunAborted`."""
        for attempt in range(1, self.attempts + 1):
            try:
                return await fn()
            except ProviderError as exc:
                if exc.fatal:
                    raise RunAborted(scrub_text(str(exc))) from None
                if not should_retry(exc) or attempt == self.attempts:
                    raise
                log.warning("judgekit: %s: %s; retrying (%d of %d)", what, exc, attempt,
                            self.attempts - 1)
                await self.sleep(self.wait(attempt, exc))
            except Exception as exc:
                if not should_retry(exc) or attempt == self.attempts:
                    raise
                await self.sleep(self.wait(attempt, exc))
        raise AssertionError("unreachable")  # pragma: no cover
