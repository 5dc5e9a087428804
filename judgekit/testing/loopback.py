"""The lifecycle every loopback test server shares: an aiohttp app on 127.0.0.1, on a
free port, served from a background thread; a context manager that stops it."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

from aiohttp import web


class LoopbackServer:
    """Subclasses add their routes in :meth:`routes` and call ``super().__init__()``
    last, once the state their handlers use exists."""

    client_max_size = 2**20

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop = asyncio.new_event_loop()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.base = f"http://127.0.0.1:{self.port}"
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError(f"{type(self).__name__} did not start")

    def routes(self, router: web.UrlDispatcher) -> None:
        raise NotImplementedError  # pragma: no cover - abstract

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        app = web.Application(client_max_size=self.client_max_size)
        self.routes(app.router)
        self.runner = web.AppRunner(app, handle_signals=False)
        self.loop.run_until_complete(self.runner.setup())
        self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
        self._ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
