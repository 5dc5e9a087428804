"""Shared fixtures: a loopback HTTP server speaking providers' documented payloads."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from judgekit.llm import Client, ClientSettings
from judgekit.llm.templates import TemplateLibrary

ROOT = Path(__file__).resolve().parent.parent
TEST_PROMPTS = Path(__file__).parent / "prompts"


def pytest_configure(config: Any) -> None:
    """Loopback up: in a network namespace of its own (``unshare -rn``, the network cut)
    the loopback interface starts down, and every test that talks to a local server
    would fail with "Network is unreachable". Bringing it up touches only that
    namespace (where the run holds CAP_NET_ADMIN); an ordinary machine's is up already,
    and nothing outside the machine becomes reachable."""
    import fcntl
    import struct

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            got = fcntl.ioctl(s, siocgifflags, struct.pack("16sh", b"lo", 0))
            flags = struct.unpack("16sh", got[:18])[1]
            if not flags & iff_up:
                fcntl.ioctl(s, siocsifflags, struct.pack("16sh", b"lo", flags | iff_up))
    except OSError:
        pass  # not Linux, or not allowed: the tests then say why they cannot connect


_ENV_PREFIXES = ("JUDGEKIT_", "RAY_")  # RAY_ADDRESS would send ray.init to a cluster
_ENV_SUFFIXES = ("_API_KEY", "_BASE_URL", "_API_BASE", "_AUTH_TOKEN")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path_factory):
    """Every test starts from a clean environment: no provider key, base URL or judgekit
    setting from the shell changes its outcome, and the response cache and data folder
    are the test's own (never the user's). A test that needs a variable sets it."""
    import os

    for name in list(os.environ):
        if name.startswith(_ENV_PREFIXES) or name.endswith(_ENV_SUFFIXES):
            monkeypatch.delenv(name, raising=False)
    home = tmp_path_factory.mktemp("jk-env")
    monkeypatch.setenv("JUDGEKIT_CACHE_DIR", str(home / "cache"))
    monkeypatch.setenv("JUDGEKIT_DATA_DIR", str(home / "data"))
    yield


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def openai_body(content: str, model: str = "gpt-4.1-mini-2025-04-14") -> dict[str, Any]:
    """A chat.completion object as documented in OpenAI's API reference."""
    return {
        "id": "chatcmpl-123", "object": "chat.completion", "created": 1741569952,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                             "refusal": None, "annotations": []},
                     "logprobs": None, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 19, "completion_tokens": 10, "total_tokens": 29},
    }


def anthropic_body(tool_input: dict[str, Any], name: str = "output") -> dict[str, Any]:
    """A Messages API response with a tool_use block, as documented by Anthropic."""
    return {
        "id": "msg_01", "type": "message", "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": name, "input": tool_input}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12},
    }


class FakeAPI:
    """An aiohttp server on 127.0.0.1 in a thread, answering scripted replies."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.default: Reply | None = None
        self.requests: list[dict[str, Any]] = []
        self.loop = asyncio.new_event_loop()
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._ready = threading.Event()
        self._thread.start()
        self._ready.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self.runner = web.AppRunner(app)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"path": request.path, "query": dict(request.query),
                              "headers": dict(request.headers),
                              "json": body})
        reply = self.replies.pop(0) if self.replies else self.default
        assert reply is not None, "FakeAPI ran out of replies"
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake_api():
    api = FakeAPI()
    yield api
    api.stop()


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def make_client(tmp_path, sleeps):
    """Build a Client with tenacity waits recorded instead of slept."""
    made: list[Client] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    def build(providers: dict[str, Any] | None = None, **kw: Any) -> Client:
        kw.setdefault("cache_dir", tmp_path / "cache")
        kw.setdefault("progress", False)
        c = Client(ClientSettings(**kw), templates=TemplateLibrary(TEST_PROMPTS), sleep=fake_sleep,
                   providers=providers)
        made.append(c)
        return c

    yield build
    for c in made:
        c.close()


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
