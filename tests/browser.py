"""A headless Chromium driven over the DevTools protocol (Debian's chromium package; the
websocket is aiohttp's client, already a dependency), for tests that use a page as a
person does: load it, type, press keys, read the DOM."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """``async with Browser() as b: await b.goto(url); await b.eval("...")``."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.dir = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        self.session: aiohttp.ClientSession | None = None
        self.ws: Any = None
        self.n = 0

    async def __aenter__(self) -> Browser:
        exe = chromium()
        assert exe is not None
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=0", f"--user-data-dir={self.dir.name}",
             "--remote-allow-origins=*", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.dir.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("chromium did not start")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as r:
            pages = [p for p in await r.json() if p.get("type") == "page"]
        self.ws = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"],
                                                max_msg_size=0)
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.session is not None:
            await self.session.close()
        if self.proc is not None:  # chromium and its helper processes (one group)
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.dir.cleanup()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.n += 1
        mine = self.n
        await self.ws.send_str(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            msg = json.loads((await self.ws.receive(timeout=60)).data)
            if msg.get("id") == mine:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))

    async def eval(self, expr: str) -> Any:
        got = await self.send("Runtime.evaluate", expression=expr, returnByValue=True,
                              awaitPromise=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"{expr}: {got['exceptionDetails']}")
        return got["result"].get("value")

    async def wait_for(self, expr: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await self.eval(expr)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expr}")
            await asyncio.sleep(0.05)

    async def goto(self, url: str, ready: str = "document.body && "
                   "document.body.dataset.ready === '1'") -> None:
        await self.send("Page.navigate", url=url)
        await self.wait_for(ready)

    async def key(self, key: str) -> None:
        """A key press as a person makes it (keyDown with its text, then keyUp)."""
        await self.send("Input.dispatchKeyEvent", type="keyDown", key=key, text=key)
        await self.send("Input.dispatchKeyEvent", type="keyUp", key=key)

    async def type(self, selector: str, text: str) -> None:
        await self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.send("Input.insertText", text=text)
