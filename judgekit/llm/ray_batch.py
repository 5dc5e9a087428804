"""A Ray cluster as a batch engine (``execution: ray``, ``judgekit run --executor ray``).

A stage's cache misses for OpenAI-compatible models (``local/<model>`` servers such as
vLLM, llama.cpp or Ollama, and ``openai/<model>``) are written as OpenAI Batch lines
(``custom_id`` = the cache key) and run as a Ray Data pipeline: ``map_batches`` over a
pool of ``ray_workers`` actors, each keeping ``ray_concurrency`` requests in flight to
the model's ``/chat/completions`` endpoint. Ray Data schedules, streams and restarts;
judgekit adds one thing it does not do, so that no answer is paid for twice:

- every answer goes, the moment it arrives, to a *sink* actor pinned to the driver's
  node, which appends it to ``<cache dir>/ray/<tag>.answers.jsonl`` and fsyncs before it
  acknowledges; a batch that Ray runs again (its actor was killed) asks the sink first
  and sends only the requests it has no answer for (requests in flight at the moment of
  the kill are the only ones sent again);
- the driver reads the answers back through the same rules as a provider batch
  (validation, parse re-asks in a follow-up pass, transport errors online), so the
  cache, the cassette and every later command see no difference from a local run;
- a driver that is interrupted resumes from the journal: the answers file is read and
  only the rest is sent.

Ray Data's ``HttpRequestProcessorConfig`` is not used: it raises on one request that
fails after its retries (stopping the whole dataset) and hands answers back only when a
block is done, so a killed worker would lose answers that were paid for. API keys are
never shipped: each actor reads the key from its own environment (the variable's name
is all that is sent), as a provider's SDK would on that node.
"""

from __future__ import annotations

import asyncio
import collections
import fcntl
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from judgekit.core.errors import MissingDependencyError, ProviderError
from judgekit.llm.batch_api import BatchItem, BatchStatus
from judgekit.llm.providers.base import RETRYABLE_STATUS, Provider, endpoint
from judgekit.llm.providers.openai import OpenAIBatch, openai_batch_item
from judgekit.llm.secrets import scrub_text
from judgekit.llm.types import JSONObject

__all__ = ["AnswerSink", "RayBatch", "RequestActor"]

PREFIX = "ray:"
_RUNS: dict[str, threading.Thread] = {}  # tag -> the pipeline running in this process
_ERRORS: dict[str, str] = {}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("execution: ray needs Ray Data: pip install "
                                     "'judgekit[ray]'") from None
    return ray


class AnswerSink:
    """The answers of one submission, kept durably on the driver's node (a Ray actor)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.seen: set[str] = set()  # ids only: the answers are on disk
        if self.path.exists():
            raw = self.path.read_bytes()
            whole = raw[: raw.rfind(b"\n") + 1]  # a line torn by a kill is dropped
            if len(whole) != len(raw):
                with open(self.path, "r+b") as fh:
                    fh.truncate(len(whole))
            for line in whole.splitlines():
                self.seen.add(str(json.loads(line)["custom_id"]))
        self.fh = open(self.path, "a", encoding="utf-8")

    def known(self, ids: list[str]) -> dict[str, bool]:
        return {i: True for i in ids if i in self.seen}

    def put(self, recs: list[JSONObject]) -> int:
        new = [r for r in recs if str(r["custom_id"]) not in self.seen]
        if new:
            self.fh.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in new))
            self.fh.flush()
            os.fsync(self.fh.fileno())
            self.seen.update(str(r["custom_id"]) for r in new)
        return len(self.seen)

    def count(self) -> int:
        return len(self.seen)


class RequestActor:
    """A Ray Data ``map_batches`` actor: sends a batch's requests, ``concurrency`` at a
    time, and hands each answer to the sink before the batch is done."""

    def __init__(self, url: str, key_env: str | None, sink: str, concurrency: int,
                 timeout: float, attempts: int = 4) -> None:
        import ray

        self.url, self.timeout = url, timeout
        self.sink = ray.get_actor(sink)  # by name: a restarted actor finds it again
        key = os.environ.get(key_env) if key_env else None
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.limit = asyncio.Semaphore(concurrency)
        self.attempts = attempts
        self.session: Any = None
        self.buffer: list[JSONObject] = []
        self.storing = asyncio.Lock()

    async def _store(self, rec: JSONObject) -> None:
        """Group commit: whoever holds the lock hands every buffered answer to the sink
        in one call; an answer is stored once a holder's call that took it returns."""
        self.buffer.append(rec)
        async with self.storing:
            if self.buffer:
                take, self.buffer = self.buffer, []
                await self.sink.put.remote(take)

    async def _post(self, cid: str, body: str) -> JSONObject:
        import aiohttp

        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(
                total=self.timeout))
        error: Any = None
        for attempt in range(self.attempts):
            if attempt:
                await asyncio.sleep(min(8.0, 0.5 * 2 ** attempt))
            try:
                async with self.session.post(
                        self.url, data=body, headers={"Content-Type": "application/json",
                                                      **self.headers}) as resp:
                    # scrubbed before it is written: a server may echo the credential
                    text = scrub_text(await resp.text())
                    if resp.status in RETRYABLE_STATUS:
                        error = {"message": f"HTTP {resp.status}: {text[:300]}"}
                        continue
                    try:
                        data = json.loads(text)
                    except ValueError:  # a proxy's page: transient, as online
                        error = {"message": f"HTTP {resp.status}, not JSON: {text[:200]}"}
                        continue
                    return {"custom_id": cid, "response": {"status_code": resp.status,
                                                           "body": data}}
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                error = {"message": f"{type(exc).__name__}: {exc}"}
        return {"custom_id": cid, "response": None, "error": error}

    async def __call__(self, batch: Mapping[str, Sequence[str]]
                       ) -> AsyncIterator[dict[str, list[str]]]:
        ids = [str(x) for x in batch["custom_id"]]
        bodies = [str(x) for x in batch["body"]]
        known = await self.sink.known.remote(ids)  # answered before this actor died

        async def one(cid: str, body: str) -> None:
            # the slot is held until the answer is durable, so a killed actor has at most
            # ``concurrency`` answers paid for and not stored (a slot freed at the answer
            # let new requests go while a group commit was on its way: 7 of 4 under load)
            async with self.limit:
                await self._store(await self._post(cid, body))

        await asyncio.gather(*(one(c, b) for c, b in zip(ids, bodies) if c not in known))
        yield {"custom_id": ids}


class RayBatch(OpenAIBatch):
    """The batch API over a Ray cluster (see the module docstring)."""

    name = "ray"
    max_requests = 10_000_000
    max_bytes = 2**40
    poll_interval = 0.2
    max_poll_interval = 2.0

    def __init__(self, provider: Provider, directory: Path, settings: Any) -> None:
        super().__init__(provider)
        self.dir = Path(directory) / "ray"
        self.settings = settings

    def _path(self, tag: str, suffix: str) -> Path:
        return self.dir / f"{tag}.{suffix}"

    async def _served(self) -> None:
        """The packaged model (``local/gemma-3-270m`` with no base URL) is served by
        judgekit's managed llama.cpp server: start it, so the actors have its URL."""
        p = self.provider
        if getattr(p, "managed", False):
            from judgekit.local.server import ensure_managed_server

            p.base_url = await ensure_managed_server(p.model)

    async def submit(self, lines: list[JSONObject], submission: str) -> str:
        await self._served()
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self._path(submission, "input.jsonl.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._path(submission, "input.jsonl"))
        connect(self.settings)  # from this thread: Ray sets its signal handlers here
        self._start(submission)
        return PREFIX + submission

    async def find(self, submission: str) -> str | None:
        return PREFIX + submission if self._path(submission, "input.jsonl").exists() else None

    def _start(self, tag: str) -> bool:
        """Run the pipeline of ``tag`` in this process, unless it runs here already or
        another process holds it (an exclusive lock on ``<tag>.lock``, released by the
        kernel if that process dies): False when someone else runs it."""
        running = _RUNS.get(tag)
        if running is not None and running.is_alive():
            return True
        fd = os.open(self._path(tag, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        _ERRORS.pop(tag, None)
        t = threading.Thread(target=self._run, args=(tag, fd), daemon=True,
                             name=f"judgekit-ray-{tag[:8]}")
        _RUNS[tag] = t
        t.start()
        return True

    def _sink(self, tag: str) -> Any:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = ray.get_runtime_context().get_node_id()
        return ray.remote(AnswerSink).options(
            name=f"judgekit-sink-{tag}", get_if_exists=True, num_cpus=0, lifetime=None,
            scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
        ).remote(str(self._path(tag, "answers.jsonl")))

    def _run(self, tag: str, lock: int) -> None:
        try:
            ray = connect(self.settings)
            sink = self._sink(tag)
            done = ray.get(sink.known.remote([r["custom_id"] for r in self._lines(tag)]))
            rows = [{"custom_id": r["custom_id"], "body": json.dumps(r["body"])}
                    for r in self._lines(tag) if r["custom_id"] not in done]
            if rows:
                s = self.settings
                p = self.provider
                # Ray Data restarts a killed actor and runs its batch again (its
                # defaults: max_restarts=-1, max_task_retries=-1)
                ds = ray.data.from_items(rows).map_batches(
                    RequestActor, batch_size=s.ray_batch_size, num_cpus=0.5,
                    compute=ray.data.ActorPoolStrategy(size=s.ray_workers),
                    fn_constructor_kwargs={
                        "url": endpoint(str(p.base_url), "/chat/completions"),
                        "key_env": _key_env(p), "sink": f"judgekit-sink-{tag}",
                        "concurrency": s.ray_concurrency, "timeout": s.timeout})
                # the answers are in the sink's file; the rows out are only their ids
                collections.deque(ds.iter_batches(batch_size=None), maxlen=0)
            ray.get(sink.count.remote())
            self._path(tag, "done").write_text("")  # all answered: another process reads it
        except Exception as exc:  # the batch fails; its requests are failures or online
            _ERRORS[tag] = scrub_text(f"{type(exc).__name__}: {exc}")[:600]
        finally:
            os.close(lock)  # releases the lock

    def _lines(self, tag: str) -> Iterator[JSONObject]:
        with self._path(tag, "input.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)

    async def status(self, batch_id: str) -> BatchStatus:
        tag = batch_id.removeprefix(PREFIX)
        t = _RUNS.get(tag)
        answers = self._path(tag, "answers.jsonl")
        if t is None:
            if self._path(tag, "done").exists():  # another process finished it
                return BatchStatus(True, "completed")
            # submitted by a judgekit process that stopped: run what is left; or
            # running in another process: wait for it
            await self._served()
            connect(self.settings)
            self._start(tag)
            t = _RUNS.get(tag)
        if t is None or t.is_alive():
            n = _count_lines(answers) if answers.exists() else 0
            return BatchStatus(False, "in_progress", {"completed": n})
        if tag in _ERRORS:
            return BatchStatus(True, "failed", raw={"errors": {"data": [{
                "code": "ray", "message": _ERRORS[tag]}]}})
        return BatchStatus(True, "completed")

    async def results(self, batch_id: str, st: BatchStatus) -> AsyncIterator[BatchItem]:
        tag = batch_id.removeprefix(PREFIX)
        _RUNS.pop(tag, None)
        _ERRORS.pop(tag, None)
        path = self._path(tag, "answers.jsonl")
        if not path.exists():
            return
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield _item(json.loads(line))

    async def cancel(self, batch_id: str) -> BatchStatus:
        raise ProviderError("a Ray batch stops with the run that drives it (Ctrl-C); it "
                            "has nothing to cancel at a provider")


def _item(rec: JSONObject) -> BatchItem:
    if rec.get("response") is None:
        err = rec.get("error") or {}
        msg = err.get("message", err) if isinstance(err, dict) else err
        return BatchItem(str(rec.get("custom_id")), kind="transport",
                         error=f"ray: request failed: {scrub_text(str(msg))}")
    return openai_batch_item(rec)


def _key_env(provider: Provider) -> str | None:
    env = getattr(provider, "key_env", None)
    return env if env else ("JUDGEKIT_LOCAL_API_KEY" if provider.name == "local" else None)


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def connect(settings: Any) -> Any:
    """Ray, connected: to ``ray_address`` when set, else a local cluster started here
    (quietly, without the dashboard)."""
    ray = _ray()
    if not ray.is_initialized():
        for name in ("ray", "ray.data"):  # judgekit reports progress and failures itself
            logging.getLogger(name).setLevel(logging.ERROR)
        quiet = {"include_dashboard": False, "log_to_driver": False,
                 "logging_level": logging.WARNING}
        if settings.ray_address:
            ray.init(address=settings.ray_address, **quiet)
        else:
            ray.init(num_cpus=max(2, settings.ray_workers), **quiet)
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # judgekit shows its own
        ctx.print_on_execution_start = False
    return ray
