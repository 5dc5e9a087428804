"""A loopback OpenAI-compatible server that injects the faults real APIs produce.

One server, behaviour chosen per request: either from a ``plan`` (a marker found
in the request's last message maps to the behaviours served to its successive
attempts, for deterministic tests) or at random with given ``rates`` and a seed
(for benchmarks). Permanent 400s are decided by a hash of the prompt, so a
retried or resumed request meets the same 400. Error bodies echo the request's
credential, as some real gateways do, to prove judgekit never writes it.

Behaviours: ``ok``, ``429`` (Retry-After values include ``nan``, huge, negative
and HTTP dates), ``500``, ``503``, ``529``, ``reset_before`` (connection closed
before any response), ``reset_mid`` (headers and half a body, then closed),
``non_json`` (a 200 with an HTML page), ``hang`` (no answer for ``hang_s``),
``400`` (permanent), ``400_split`` (a 400 echoing the key past 300 characters, split
over lines and JSON-escaped), ``401``, ``404``, ``refusal``, ``length`` (truncated).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable

from aiohttp import web

from judgekit.core.jsontypes import JSONObject
from judgekit.testing.loopback import LoopbackServer

FAULTS = ("429", "500", "503", "529", "reset_before", "reset_mid", "non_json", "hang")
_RETRY_AFTER = ("1", "nan", "86400", "-5", "inf", "Wed, 21 Oct 2015 07:28:00 GMT", "0.2")


def default_answer(prompt: str) -> JSONObject:
    """The answer the server gives for ``prompt``: ordinary hyphenated text that a
    careless secret scrubber would corrupt."""
    tag = hashlib.sha256(prompt.encode()).hexdigest()[:8]
    return {"answer": f"use task-management-software and risk-based state-of-the-art "
                      f"sk-learn-style tooling ({tag})", "confidence": 0.5}


def split_echo(auth: str) -> str:
    """An error message that echoes a credential the hard ways: past 300 characters,
    split over two lines, and JSON-escaped character by character."""
    key = auth.removeprefix("Bearer ").strip()
    half = len(key) // 2
    escaped = "".join(f"\\u{ord(c):04x}" for c in key)
    return ("request rejected; " + "details " * 40 + f"credential {key[:half]}\n{key[half:]} "
            f"(escaped: {escaped})")


class ChaosServer(LoopbackServer):
    """An OpenAI-compatible server on 127.0.0.1 (``url`` ends in /v1) injecting faults."""

    def __init__(self, *, rates: dict[str, float] | None = None, permanent_400: float = 0.0,
                 plan: dict[str, list[str]] | None = None, seed: int = 0, hang_s: float = 5.0,
                 answer: Callable[[str], JSONObject] = default_answer,
                 delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.rates = dict(rates or {})
        self.permanent_400 = permanent_400
        self.plan = {k: list(v) for k, v in (plan or {}).items()}
        self.hang_s = hang_s
        self.answer = answer
        self.rng = random.Random(seed)
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str]] = []  # (prompt, behaviour), in arrival order
        super().__init__()
        self.url = f"{self.base}/v1"

    # ---- behaviour ----------------------------------------------------------------
    def choose(self, prompt: str) -> str:
        with self.lock:
            for marker, seq in self.plan.items():
                if marker in prompt:
                    return seq.pop(0) if len(seq) > 1 else seq[0]
            h = int(hashlib.sha256(prompt.encode()).hexdigest()[:8], 16) / 2**32
            if h < self.permanent_400:
                return "400"
            u, acc = self.rng.random(), 0.0
            for fault, rate in self.rates.items():
                acc += rate
                if u < acc:
                    return fault
            return "ok"

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        prompt = str(body["messages"][-1]["content"])
        auth = request.headers.get("Authorization", "")
        what = self.choose(prompt)
        with self.lock:
            self.counts[what] += 1
            self.log.append((prompt, what))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if what == "ok":
            return web.json_response(_chat(json.dumps(self.answer(prompt)), "stop"))
        if what == "400_split":
            return web.json_response({"error": {"message": split_echo(auth), "type": "chaos"}},
                                     status=400)
        if what == "refusal":
            return web.json_response(_chat("", "stop", refusal="I can't help with that."))
        if what == "length":
            return web.json_response(_chat('{"answer": "cut o', "length"))
        if what in ("429", "500", "503", "529", "400", "401", "404"):
            headers = {"Retry-After": self.rng.choice(_RETRY_AFTER)} if what == "429" else {}
            if what == "429" and self.rng.random() < 0.3:
                headers = {"retry-after-ms": self.rng.choice(("nan", "250", "1e12"))}
            msg = f"error {what} for request with credential {auth}"  # echoes the key
            return web.json_response({"error": {"message": msg, "type": "chaos"}},
                                     status=int(what), headers=headers)
        if what == "non_json":
            return web.Response(text="<html><body>502 Bad Gateway</body></html>",
                                content_type="text/html")
        if what == "hang":
            await asyncio.sleep(self.hang_s)
            return web.json_response(_chat(json.dumps(self.answer(prompt)), "stop"))
        if what == "reset_before":
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        # reset_mid: headers and half the body, then the connection drops
        payload = json.dumps(_chat(json.dumps(self.answer(prompt)), "stop")).encode()
        resp = web.StreamResponse(headers={"Content-Type": "application/json",
                                           "Content-Length": str(len(payload))})
        await resp.prepare(request)
        await resp.write(payload[: len(payload) // 2])
        assert request.transport is not None
        request.transport.abort()
        return resp

    async def _stats(self, request: web.Request) -> web.Response:
        with self.lock:
            return web.json_response(dict(self.counts))

    def routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self._handle)
        router.add_get("/stats", self._stats)


def _chat(content: str, finish: str, refusal: str | None = None) -> JSONObject:
    """A chat.completion object as documented in OpenAI's API reference."""
    return {
        "id": "chatcmpl-chaos", "object": "chat.completion", "created": 1741569952,
        "model": "chaos-1",
        "choices": [{"index": 0, "message": {"role": "assistant",
                                             "content": content or None, "refusal": refusal},
                     "logprobs": None, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32},
    }
