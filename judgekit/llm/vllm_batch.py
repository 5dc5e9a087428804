"""vLLM's offline batch runner (``vllm run-batch``) as a batch engine.

``execution: vllm`` sends a stage's cache misses for open-weight models
(``local/<model>``, the name vLLM loads) to vLLM's batch runner instead of a server (other
models run online, with a one-line notice):

- the input is the OpenAI Batch JSONL vLLM documents (``BatchRequestInput``: one
  ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` per line),
  with ``custom_id`` the request's cache key and, for a structured stage,
  ``response_format: {"type": "json_schema", ...}`` from the output model's schema (vLLM's
  structured outputs);
- the runner is started detached (``vllm_command``, default ``vllm run-batch``, plus
  ``-i IN -o OUT --model MODEL`` and ``vllm_args``), through a small supervisor
  (``python -m judgekit.llm.vllm_batch``) that writes the output to a temporary name and
  renames it, then writes the exit code; so a judgekit run that is interrupted finds the
  runner still going, or its finished output, and never starts the same batch twice;
- the output is vLLM's ``BatchRequestOutput`` JSONL (``{"id", "custom_id",
  "response": {"status_code", "request_id", "body"}, "error"}``), read by the same rules
  as a provider batch's results (errors become counted failures);
- parse failures are re-asked online (``vllm_reask: online``, through the model's
  OpenAI-compatible server, e.g. ``vllm serve``) or in a follow-up run (``batch``).

Files live in ``<cache dir>/vllm/``: ``<tag>.input.jsonl``, ``<tag>.output.jsonl``,
``<tag>.rc``, ``<tag>.log`` (the runner's output, read back scrubbed), ``<tag>.pid``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from judgekit.core.errors import ProviderError
from judgekit.llm.batch_api import BatchItem, BatchStatus
from judgekit.llm.providers.base import RETRYABLE_STATUS, Provider
from judgekit.llm.providers.openai import (
    OpenAIBatch,
    OpenAIProvider,
    chat_payload,
    openai_batch_item,
)
from judgekit.llm.secrets import scrub_text
from judgekit.llm.types import JSONObject, ProviderRequest

__all__ = ["VLLMBatch", "read_output_line"]

PREFIX = "vllm:"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:  # a zombie (our own child that exited) is not running
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
        return state != "Z"
    except (OSError, IndexError):
        return True


def read_output_line(rec: JSONObject) -> BatchItem:
    """One line of vLLM's output (``BatchRequestOutput``) as a batch item. vLLM reports
    an error as ``response.status_code`` with no body and ``error`` either a string or
    an ``ErrorResponse`` (``{"error": {"message", "type", "code"}}``, or the older
    ``{"message", "type", "code"}``)."""
    cid = str(rec.get("custom_id"))
    resp = rec.get("response") or {}
    code = resp.get("status_code")
    err = rec.get("error")
    if code == 200 and isinstance(resp.get("body"), dict) and not err:
        return openai_batch_item(rec)
    inner = err.get("error", err) if isinstance(err, dict) else err
    msg = inner.get("message", inner) if isinstance(inner, dict) else inner
    if isinstance(inner, dict) and isinstance(inner.get("code"), int) and code is None:
        code = inner["code"]
    kind = "http_4xx" if isinstance(code, int) and 400 <= code < 500 and \
        code not in RETRYABLE_STATUS else "transport"
    return BatchItem(cid, kind=kind,
                     error=f"vllm run-batch request failed ({code}): "
                           f"{scrub_text(str(msg or 'no error given'))}")


class VLLMBatch(OpenAIBatch):
    """The batch API over vLLM's offline runner (see the module docstring)."""

    name = "vllm"
    max_requests = 1_000_000
    max_bytes = 2**40
    poll_interval = 0.5
    max_poll_interval = 10.0

    def __init__(self, provider: Provider, directory: Path, command: list[str],
                 args: list[str]) -> None:
        super().__init__(provider)
        self.dir = Path(directory) / "vllm"
        self.command = list(command)
        self.args = list(args)

    def line(self, custom_id: str, req: ProviderRequest) -> JSONObject:
        p = self.provider
        assert isinstance(p, OpenAIProvider)
        body = chat_payload(p.resolve_model(), req, schema_mode="json_schema",
                            max_tokens_field="max_tokens")
        return {"custom_id": custom_id, "method": "POST", "url": self.ENDPOINT, "body": body}

    def _path(self, tag: str, suffix: str) -> Path:
        return self.dir / f"{tag}.{suffix}"

    def _start(self, tag: str) -> None:
        cmd = [*self.command, "-i", str(self._path(tag, "input.jsonl")),
               "-o", str(self._path(tag, "output.jsonl.part")),
               "--model", self.provider.resolve_model(), *self.args]
        proc = subprocess.Popen(
            [sys.executable, "-m", "judgekit.llm.vllm_batch", str(self.dir), tag, "--", *cmd],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # an interrupted judgekit leaves the runner going
        _atomic_write(self._path(tag, "pid"), str(proc.pid))

    async def submit(self, lines: list[JSONObject], submission: str) -> str:
        self.dir.mkdir(parents=True, exist_ok=True)
        _atomic_write(self._path(submission, "input.jsonl"),
                      "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines))
        self._start(submission)
        return PREFIX + submission

    async def find(self, submission: str) -> str | None:
        """A batch with these requests written by an earlier run (running, or finished
        with its output kept): poll it instead of running it again."""
        return PREFIX + submission if self._path(submission, "input.jsonl").exists() else None

    async def status(self, batch_id: str) -> BatchStatus:
        tag = batch_id.removeprefix(PREFIX)
        rc_file = self._path(tag, "rc")
        if rc_file.exists():
            rc = rc_file.read_text().strip()
            out = self._path(tag, "output.jsonl")
            if rc == "0" and out.exists():
                n = sum(1 for line in out.open(encoding="utf-8") if line.strip())
                return BatchStatus(True, "completed", {"completed": n})
            if rc == "cancelled":
                return BatchStatus(True, "cancelled")
            return BatchStatus(True, "failed", raw={"errors": {"data": [{
                "code": f"vllm_exit_{rc}", "message": self._log_tail(tag)}]}})
        pid_file = self._path(tag, "pid")
        pid = int(pid_file.read_text()) if pid_file.exists() else 0
        if not pid or not _alive(pid):
            # the supervisor died with the machine (or never started): run it again;
            # the runner writes nothing until it finishes, so nothing was kept
            self._start(tag)
        return BatchStatus(False, "in_progress")

    def _log_tail(self, tag: str) -> str:
        log = self._path(tag, "log")
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        lines = [x for x in text.strip().splitlines() if x.strip()]
        tail = " | ".join(lines[-3:]) or "the runner wrote nothing"
        return scrub_text(f"{' '.join(self.command)} exited: {tail}")[:600]

    async def results(self, batch_id: str, st: BatchStatus) -> AsyncIterator[BatchItem]:
        out = self._path(batch_id.removeprefix(PREFIX), "output.jsonl")
        if not out.exists():
            return
        with out.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise ProviderError(f"{out}: line {n} is not JSON; vLLM's run-batch "
                                        "output should be one BatchRequestOutput per line"
                                        ) from exc
                yield read_output_line(rec)

    async def cancel(self, batch_id: str) -> BatchStatus:
        tag = batch_id.removeprefix(PREFIX)
        pid_file = self._path(tag, "pid")
        if pid_file.exists() and not self._path(tag, "rc").exists():
            pid = int(pid_file.read_text())
            if _alive(pid):
                os.killpg(pid, signal.SIGTERM)
            _atomic_write(self._path(tag, "rc"), "cancelled")
        return await self.status(batch_id)


def _supervise(directory: str, tag: str, cmd: list[str]) -> int:
    """Run the runner; keep its output only when it finished (renamed into place), then
    record its exit code. Run as ``python -m judgekit.llm.vllm_batch DIR TAG -- CMD``."""
    d = Path(directory)
    part = d / f"{tag}.output.jsonl.part"
    with open(d / f"{tag}.log", "ab") as log:
        log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {cmd[0]}\n".encode())
        log.flush()
        try:
            rc = subprocess.call(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        except OSError as exc:
            log.write(f"cannot run {cmd[0]}: {exc}; install vLLM (pip install vllm) or set "
                      "vllm_command\n".encode())
            rc = 127
    if rc == 0 and part.exists():
        with open(part, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(part, d / f"{tag}.output.jsonl")
    elif rc == 0:
        rc = 3  # finished without writing its output file
    _atomic_write(d / f"{tag}.rc", str(rc))
    return rc


if __name__ == "__main__":  # pragma: no cover - run in a subprocess by VLLMBatch
    args = sys.argv[1:]
    sep = args.index("--")
    raise SystemExit(_supervise(args[0], args[1], args[sep + 1:]))
