"""One run pipeline for every method: execute a validated config's method with a client
and build the typed :class:`~judgekit.core.results.RunResult`; writing the folder is
:mod:`judgekit.runs.folder`'s job."""

from __future__ import annotations

from typing import Any

from judgekit.core.calls import CallSummary
from judgekit.core.errors import JudgekitError, RunAborted
from judgekit.core.methods import find
from judgekit.core.options import OPERATIONAL
from judgekit.core.results import SCHEMA_VERSION, RunResult
from judgekit.core.settings import RunSettings
from judgekit.core.spec import MethodSpec

__all__ = ["OPERATIONAL", "client_for", "compute", "headline", "method_of"]

# Built-in mock models answer locally, deterministically and for free.
FREE_MODELS = frozenset({"mock/auto", "mock/echo"})


def client_for(cfg: RunSettings, *, progress: bool = True) -> Any:
    """The LLM client a run uses: it reads the config's operational options as they are."""
    from judgekit.llm import Client

    # A run that uses only free mock models keeps no cache (and so writes no file unless
    # asked to save).
    local_only = bool(cfg.models) and all(m.split(":")[0] in FREE_MODELS
                                          for m in cfg.models.values())
    options = cfg.options().model_copy(update={
        "use_cache": cfg.use_cache and not local_only, "progress": progress})
    return Client(options)


def method_of(cfg: RunSettings) -> MethodSpec[Any, Any]:
    return find(cfg.method, getattr(cfg, "experiment", None))


def compute(cfg: RunSettings, client: Any = None) -> RunResult[Any]:
    """Execute ``cfg``'s method in memory and return its typed result. With no
    ``client``, one is built from the config and closed at the end; a client passed in
    is used as is (its providers, cache and cassette) and left open."""
    from judgekit.runs.folder import attach
    from judgekit.runs.guard import check_stages, track

    spec = method_of(cfg)
    own = client is None and spec.uses_client
    if own:
        client = client_for(cfg)
    if client is not None:
        track(client)
    try:
        try:
            payload = spec.execute(cfg, client if spec.uses_client else None)
        except JudgekitError as exc:
            # A stage whose every call failed explains what followed (no data to score).
            if client is not None and spec.uses_client and not isinstance(exc, RunAborted):
                check_stages(client)
            raise
        if client is not None and spec.uses_client:
            check_stages(client)
    finally:
        if own:
            client.close()
    used = client if client is not None and spec.uses_client else None
    if not isinstance(payload, spec.payload):
        raise TypeError(f"{spec.key}: execute returned {type(payload).__name__}, not "
                        f"{spec.payload.__name__}")
    config = {k: v for k, v in cfg.model_dump(mode="json").items() if k not in OPERATIONAL}
    from judgekit.core.textio import clean

    result = spec.result_model()(
        schema_version=SCHEMA_VERSION, method=spec.name, experiment=spec.experiment,
        seed=cfg.seed, config=clean(config),
        calls=used.calls() if used is not None else CallSummary(), payload=payload)
    result.bind(spec=spec, settings=cfg,
                failures=list(used.failure_log) if used is not None else None,
                unused=used.cassette.unused() if used is not None and used.cassette else None)
    return attach(result)


def headline(result: RunResult[Any]) -> str:
    """Deprecated: ``result.headline()``."""
    return result.headline()
