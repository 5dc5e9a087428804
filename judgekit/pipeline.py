"""One run pipeline for every method: resolve a config, execute its method with a
client, build the typed :class:`~judgekit.results.RunResult`; saving the folder
(results.json, JSONL details, failures.jsonl, figures, report.md, report.html) is a
separate step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.errors import JudgekitError, RunAborted
from judgekit.methods import Method, find
from judgekit.results import (
    SCHEMA_VERSION,
    CallSummary,
    DetailFile,
    RunResult,
    headline,
    save,
)

__all__ = ["OPERATIONAL", "client_for", "compute", "headline", "run_and_save", "save"]

# Config fields that change how a run is carried out, not what it computes: left out of
# the resolved config stored in results.json (so results stay byte-identical across
# folders, replay modes and concurrency settings).
OPERATIONAL = frozenset({
    "retry_failed", "out", "cassette_mode", "cache_dir", "use_cache", "concurrency", "timeout",
    "call_deadline", "execution", "batch_fallback", "batch_poll_interval", "dry_run",
    "max_failures", "base_urls", "cassette", "prompts"})


FREE_MODELS = frozenset({"mock/auto", "mock/echo"})


def client_for(cfg: Any, *, progress: bool = True) -> Any:
    """The LLM client a run uses, from the config's operational fields."""
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.templates import TemplateLibrary

    # Built-in mock models answer locally, deterministically and for free: a run that
    # uses only them keeps no cache (and so writes no file unless asked to save).
    local_only = bool(cfg.models) and all(m.split(":")[0] in FREE_MODELS
                                          for m in cfg.models.values())
    return Client(templates=TemplateLibrary(user=cfg.prompts), settings=ClientSettings(
        cache_dir=cfg.cache_dir, use_cache=cfg.use_cache and not local_only, cassette=cfg.cassette,
        cassette_mode=cfg.cassette_mode, retry_failed=cfg.retry_failed,
        concurrency=cfg.concurrency, timeout=cfg.timeout,
        call_deadline=cfg.call_deadline, max_failures=cfg.max_failures,
        base_urls=cfg.base_urls, progress=progress, execution=cfg.execution,
        batch_fallback=cfg.batch_fallback, batch_poll_interval=cfg.batch_poll_interval,
        dry_run=cfg.dry_run,
    ))


def run_and_save(cfg: Any, out: Path) -> dict[str, Any]:
    """Compute ``cfg``'s run and write its folder; return what the console shows
    (headline, failed calls by kind, unused cassette entries)."""
    result = compute(cfg)
    save(result, out, overwrite=True)
    kinds: dict[str, int] = {}
    for f in result.failures:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    return {"headline": headline(result), "failed_calls": kinds,
            "unused_cassette_entries": result.unused_cassette_entries, "result": result}


def method_of(cfg: Any) -> Method:
    return find(cfg.method, getattr(cfg, "experiment", None))


def compute(cfg: Any, client: Any = None) -> RunResult:
    """Execute ``cfg``'s method in memory and return its typed result. With no
    ``client``, one is built from the config and closed at the end; a client passed in
    is used as is (its providers, cache and cassette) and left open."""
    from judgekit.runguard import check_stages, track

    method = method_of(cfg)
    own = client is None and method.uses_client
    if own:
        client = client_for(cfg)
    if client is not None:
        track(client)
    try:
        try:
            payload = method.execute()(cfg, client if method.uses_client else None)
        except JudgekitError as exc:
            # A stage whose every call failed explains what followed (no data to score).
            if client is not None and method.uses_client and not isinstance(exc, RunAborted):
                check_stages(client)
            raise
        if client is not None and method.uses_client:
            check_stages(client)
    finally:
        if own:
            client.close()
    used = client is not None and method.uses_client
    return build(cfg, method, payload, client if used else None)


def build(cfg: Any, method: Method, payload: dict[str, Any], client: Any) -> RunResult:
    details = {k: payload[k] for k in method.details if isinstance(payload.get(k), list)}
    small = {k: v for k, v in payload.items() if k not in details}
    for k, rows in details.items():
        small[k] = DetailFile(file=f"{k}.jsonl", count=len(rows))
    summary = CallSummary.from_summary(client.summary()) if client is not None else \
        CallSummary()
    config = {k: v for k, v in cfg.model_dump(mode="json").items() if k not in OPERATIONAL}
    small.update(schema_version=SCHEMA_VERSION, method=method.name, seed=cfg.seed,
                 config=config, calls=summary)
    if method.experiment is not None:
        small["experiment"] = method.experiment
    from judgekit.runio import clean

    result: RunResult = method.result().model_validate(clean(small))
    result._details = details
    result._settings = cfg
    if client is not None:
        result._failures = list(client.failure_log)
        if client.cassette is not None:
            result._unused = client.cassette.unused()
    return result
