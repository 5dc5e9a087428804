"""One exception hierarchy for judgekit.

User-facing failures (bad config, missing dataset, missing key, cassette miss)
derive from :class:`JudgekitError`; the CLI prints them as one line and exits 2.
"""

from __future__ import annotations


class JudgekitError(Exception):
    """Base class of every error judgekit raises on purpose."""


class ConfigError(JudgekitError):
    """An experiment config, override or command-line value is invalid."""


class DataError(JudgekitError):
    """A dataset file is missing or malformed."""


class ProviderError(JudgekitError):
    """A provider could not be reached or answered with an error.

    ``kind`` is the failure kind a call ends with when this error is final:
    ``transport`` (connection, 5xx, 429, bad body), ``http_4xx`` (a request the
    provider rejects), ``timeout``, ``refusal`` or ``truncated``.
    """

    def __init__(self, message: str, *, status: int | None = None,
                 retry_after: float | None = None, retryable: bool = False,
                 kind: str | None = None, fatal: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self._fatal = fatal
        self.retryable = retryable and not self.fatal
        if kind is None:
            kind = "http_4xx" if status is not None and 400 <= status < 500 and not retryable \
                else "transport"
        self.kind = kind

    @property
    def fatal(self) -> bool:
        """Errors that no other call of the run can escape: bad key, billing or quota, no
        access, no model (the provider decides by status or by its error code)."""
        if self._fatal is not None:
            return self._fatal
        return self.status in (401, 402, 403, 404)


class DryRun(JudgekitError):
    """A dry run stopped before paying for anything; the message says what it would cost."""


class RunAborted(JudgekitError):
    """A run-wide problem (bad key, unknown model, failure budget spent): stop at once."""


class OutputError(JudgekitError):
    """An output file could not be written (a read-only folder, a full disk): the run's
    answers are in the cache, the file keeps its previous content; exit 1."""


class MissingKeyError(JudgekitError):
    """A provider needs an API key that is not set in the environment."""


class MissingDependencyError(JudgekitError):
    """An optional dependency is not installed."""


class CassetteMissError(JudgekitError):
    """Replay-only mode met a request the cassette does not hold."""


class TemplateError(JudgekitError):
    """A prompt template is missing, has an undefined variable, or is unsafe."""


class StatsError(JudgekitError, ValueError):
    """Invalid input to a statistical function (empty set, NaN, bad weights...)."""


def invalid_fields(exc: Exception) -> set[str]:
    """The top-level fields a pydantic ValidationError names."""
    return {str(e["loc"][0]) for e in exc.errors() if e["loc"]}  # type: ignore[attr-defined]


def describe_validation(exc: Exception) -> str:
    """'field a.b: message (and N more)' for a pydantic ValidationError."""
    errors = exc.errors()  # type: ignore[attr-defined]
    e = errors[0]
    loc = ".".join(str(x) for x in e["loc"]) or "<root>"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"field {loc}: {e['msg'].removeprefix('Value error, ')}{more}"
