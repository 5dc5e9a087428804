"""An OpenAI-compatible chat server on 127.0.0.1 answering valid structured JSON
after a fixed delay. Run as a separate process by the benchmarks. ``/v1/first`` tells
the wall-clock time of the first request and how many requests came since it was last
POSTed to (a reset)."""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aiohttp import web

BODY = {
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant",
                             "content": json.dumps({"answer": "Paris", "confidence": 0.9})}}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
}


def main(port: int, delay: float) -> None:
    # wall clock of the first request, and the requests since the last reset
    first: dict[str, float | None] = {"t": None, "n": 0}

    async def handle(request: web.Request) -> web.Response:
        if first["t"] is None:
            first["t"] = time.time()
        first["n"] = (first["n"] or 0) + 1
        await request.read()
        await asyncio.sleep(delay)
        return web.json_response(BODY)

    async def first_seen(request: web.Request) -> web.Response:
        """The time of the first request since the last reset (POST resets)."""
        if request.method == "POST":
            first["t"], first["n"] = None, 0
        return web.json_response(first)

    async def other(request: web.Request) -> web.Response:
        sys.stderr.write(f"fake server: no route for {request.method} {request.path}\n")
        return web.json_response({"error": {"message": f"no route {request.path}"}},
                                 status=404)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    app.router.add_post("/chat/completions", handle)
    app.router.add_route("*", "/v1/first", first_seen)
    app.router.add_get("/v1/models", lambda r: web.json_response(
        {"object": "list", "data": [{"id": "bench", "object": "model"}]}))
    app.router.add_route("*", "/{tail:.*}", other)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
