"""A loopback server implementing both providers' documented batch endpoints (and their
online endpoints, for fallbacks), for tests and benchmarks: no network, no key.

OpenAI: ``POST /v1/files`` (multipart, purpose=batch), ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``, ``GET /v1/files/{id}/content``,
``POST /v1/chat/completions``. Anthropic: ``POST /v1/messages/batches``,
``GET /v1/messages/batches/{id}``, ``GET /v1/messages/batches/{id}/results``,
``POST /v1/messages/batches/{id}/cancel``, ``POST /v1/messages``.

A batch ends after ``polls_to_end`` status requests. Per request (decided by a hash of
its custom_id, so stable across resubmission): ``error_rate`` errors, ``expire_rate``
expires, and ``bad_first_rate`` answers its first attempt with text that is not JSON
(to exercise re-asks). ``submissions`` counts each (custom_id, body) submitted, so a
request sent twice is visible.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable

from aiohttp import web

from judgekit.core.jsontypes import JSONObject
from judgekit.testing.chaos import default_answer
from judgekit.testing.loopback import LoopbackServer


def _u(text: str, salt: str) -> float:
    return int(hashlib.sha256(f"{salt}|{text}".encode()).hexdigest()[:8], 16) / 2**32


class BatchServer(LoopbackServer):
    client_max_size = 512 * 2**20

    def __init__(self, *, polls_to_end: int = 2, error_rate: float = 0.0,
                 expire_rate: float = 0.0, bad_first_rate: float = 0.0,
                 answer: Callable[[str], JSONObject] = default_answer) -> None:
        self.polls_to_end = polls_to_end
        self.error_rate, self.expire_rate = error_rate, expire_rate
        self.bad_first_rate = bad_first_rate
        self.answer = answer
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, JSONObject] = {}
        self.submissions: Counter[tuple[str, str]] = Counter()
        self.seen: Counter[str] = Counter()
        self.online = 0
        super().__init__()
        self.url = self.base

    @property
    def resubmitted(self) -> int:
        """Requests (same custom_id and body) submitted more than once."""
        return sum(n - 1 for n in self.submissions.values() if n > 1)

    # ---- answers --------------------------------------------------------------------
    def _outcome(self, cid: str, prompt: str) -> str:
        with self.lock:
            self.seen[cid] += 1
            first = self.seen[cid] == 1
        if _u(cid, "error") < self.error_rate:
            return "error"
        if _u(cid, "expire") < self.expire_rate:
            return "expired"
        if first and _u(cid, "bad") < self.bad_first_rate:
            return "bad"
        return "ok"

    def _chat(self, body: JSONObject, text: str | None = None) -> JSONObject:
        prompt = str(body["messages"][-1]["content"])
        content = text if text is not None else json.dumps(self.answer(prompt))
        return {"id": "chatcmpl-b", "object": "chat.completion", "created": 0,
                "model": body.get("model", "m"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content,
                                                     "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32}}

    def _message(self, params: JSONObject, bad: bool = False) -> JSONObject:
        prompt = str(params["messages"][-1]["content"])
        tool = (params.get("tools") or [{"name": "output"}])[0]["name"]
        content = ([{"type": "text", "text": "not json at all"}] if bad else
                   [{"type": "tool_use", "id": "toolu_b", "name": tool,
                     "input": self.answer(prompt)}])
        return {"id": "msg_b", "type": "message", "role": "assistant",
                "model": params.get("model", "m"), "content": content,
                "stop_reason": "end_turn" if bad else "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": 25, "output_tokens": 12}}

    # ---- OpenAI ---------------------------------------------------------------------
    async def _oa_upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        assert form.get("purpose") == "batch", "purpose must be batch"
        f = form["file"]
        data = f.file.read() if hasattr(f, "file") else bytes(str(f), "utf-8")
        fid = f"file-{len(self.files) + 1}"
        self.files[fid] = data
        return web.json_response({"id": fid, "object": "file", "bytes": len(data),
                                  "created_at": 0, "filename": "batch.jsonl",
                                  "purpose": "batch"})

    async def _oa_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        assert body["endpoint"] == "/v1/chat/completions"
        assert body["completion_window"] == "24h"
        lines = [json.loads(x) for x in self.files[body["input_file_id"]].decode().splitlines()
                 if x.strip()]
        bid = f"batch_{len(self.batches) + 1}"
        for ln in lines:
            assert ln["method"] == "POST" and ln["url"] == "/v1/chat/completions"
            self.submissions[(ln["custom_id"], json.dumps(ln["body"], sort_keys=True))] += 1
        self.batches[bid] = {"kind": "openai", "lines": lines, "polls": 0, "status":
                             "validating", "cancelled": False,
                             "metadata": body.get("metadata") or {}}
        return web.json_response(self._oa_obj(bid))

    def _oa_obj(self, bid: str) -> JSONObject:
        b = self.batches[bid]
        n = len(b["lines"])
        obj = {"id": bid, "object": "batch", "endpoint": "/v1/chat/completions",
               "status": b["status"], "completion_window": "24h",
               "metadata": b.get("metadata", {}),
               "request_counts": {"total": n, "completed": 0, "failed": 0}}
        if b["status"] in ("completed", "cancelled", "expired"):
            obj.update(output_file_id=b.get("output"), error_file_id=b.get("errors"),
                       request_counts={"total": n, "completed": b["ok"], "failed": b["bad"]})
        return obj

    def _oa_finish(self, bid: str) -> None:
        b = self.batches[bid]
        out, err = [], []
        for ln in b["lines"]:
            cid = ln["custom_id"]
            what = "cancelled" if b["cancelled"] else self._outcome(cid, "")
            if what == "ok":
                out.append({"id": f"r-{cid[:8]}", "custom_id": cid, "error": None,
                            "response": {"status_code": 200, "body": self._chat(ln["body"])}})
            elif what == "bad":
                out.append({"id": f"r-{cid[:8]}", "custom_id": cid, "error": None,
                            "response": {"status_code": 200,
                                         "body": self._chat(ln["body"], "not json at all")}})
            elif what == "error":
                err.append({"id": f"r-{cid[:8]}", "custom_id": cid, "error": None,
                            "response": {"status_code": 500, "body": {"error": {
                                "message": "internal error", "type": "server_error"}}}})
            else:  # expired or cancelled: the documented error line
                err.append({"id": f"r-{cid[:8]}", "custom_id": cid, "response": None,
                            "error": {"code": "batch_expired",
                                      "message": "This request could not be executed "
                                                 "before the completion window expired."}})
        b["ok"], b["bad"] = len(out), len(err)
        for kind, rows in (("output", out), ("errors", err)):
            if rows:
                fid = f"file-{len(self.files) + 1}"
                self.files[fid] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                b[kind] = fid
        b["status"] = "cancelled" if b["cancelled"] else "completed"

    async def _oa_get(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        b = self.batches[bid]
        b["polls"] += 1
        if b["status"] not in ("completed", "cancelled") and b["polls"] >= self.polls_to_end:
            self._oa_finish(bid)
        elif b["status"] == "validating":
            b["status"] = "in_progress"
        return web.json_response(self._oa_obj(bid))

    async def _oa_list(self, request: web.Request) -> web.Response:
        ids = [b for b in sorted(self.batches, key=lambda x: int(x.split("_")[1]),
                                 reverse=True) if self.batches[b]["kind"] == "openai"]
        after = request.query.get("after")
        if after in ids:
            ids = ids[ids.index(after) + 1:]
        limit = int(request.query.get("limit", "20"))
        page = ids[:limit]
        return web.json_response({"object": "list", "data": [self._oa_obj(b) for b in page],
                                  "has_more": len(ids) > limit})

    async def _oa_cancel(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        self.batches[bid]["cancelled"] = True
        self.batches[bid]["status"] = "cancelling"
        return web.json_response(self._oa_obj(bid))

    async def _oa_content(self, request: web.Request) -> web.Response:
        return web.Response(body=self.files[request.match_info["fid"]],
                            content_type="application/jsonl")

    async def _oa_online(self, request: web.Request) -> web.Response:
        self.online += 1
        return web.json_response(self._chat(await request.json()))

    # ---- Anthropic ------------------------------------------------------------------
    async def _an_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        reqs = body["requests"]
        for r in reqs:
            assert set(r) == {"custom_id", "params"} and len(r["custom_id"]) <= 64
            self.submissions[(r["custom_id"], json.dumps(r["params"], sort_keys=True))] += 1
        bid = f"msgbatch_{len(self.batches) + 1:04d}"
        self.batches[bid] = {"kind": "anthropic", "lines": reqs, "polls": 0,
                             "status": "in_progress", "cancelled": False}
        return web.json_response(self._an_obj(bid, request))

    def _an_obj(self, bid: str, request: web.Request) -> JSONObject:
        b = self.batches[bid]
        ended = b["status"] == "ended"
        counts = {"processing": 0 if ended else len(b["lines"]), "succeeded": b.get("ok", 0),
                  "errored": b.get("errored", 0), "canceled": b.get("canceled", 0),
                  "expired": b.get("expired", 0)}
        return {"id": bid, "type": "message_batch", "processing_status": b["status"],
                "request_counts": counts, "ended_at": None, "created_at": "2026-01-01T00:00Z",
                "expires_at": "2026-01-02T00:00Z",
                "results_url": f"{self.url}/v1/messages/batches/{bid}/results" if ended
                else None}

    async def _an_get(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        b = self.batches[bid]
        b["polls"] += 1
        if b["status"] != "ended" and (b["polls"] >= self.polls_to_end or b["cancelled"]):
            rows = []
            for r in b["lines"]:
                cid = r["custom_id"]
                what = "canceled" if b["cancelled"] else self._outcome(cid, "")
                if what in ("ok", "bad"):
                    res = {"type": "succeeded",
                           "message": self._message(r["params"], bad=what == "bad")}
                    b["ok"] = b.get("ok", 0) + 1
                elif what == "error":
                    res = {"type": "errored", "error": {"type": "error", "error": {
                        "type": "api_error", "message": "Internal server error"}}}
                    b["errored"] = b.get("errored", 0) + 1
                else:
                    res = {"type": what}
                    b[what] = b.get(what, 0) + 1
                rows.append({"custom_id": cid, "result": res})
            b["results"] = "".join(json.dumps(x) + "\n" for x in rows).encode()
            b["status"] = "ended"
        return web.json_response(self._an_obj(bid, request))

    async def _an_results(self, request: web.Request) -> web.Response:
        return web.Response(body=self.batches[request.match_info["bid"]]["results"],
                            content_type="application/binary")

    async def _an_cancel(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        self.batches[bid]["cancelled"] = True
        self.batches[bid]["status"] = "canceling"
        return web.json_response(self._an_obj(bid, request))

    async def _an_online(self, request: web.Request) -> web.Response:
        self.online += 1
        return web.json_response(self._message(await request.json()))

    def routes(self, r: web.UrlDispatcher) -> None:
        r.add_post("/v1/files", self._oa_upload)
        r.add_post("/v1/batches", self._oa_create)
        r.add_get("/v1/batches", self._oa_list)
        r.add_get("/v1/batches/{bid}", self._oa_get)
        r.add_post("/v1/batches/{bid}/cancel", self._oa_cancel)
        r.add_get("/v1/files/{fid}/content", self._oa_content)
        r.add_post("/v1/chat/completions", self._oa_online)
        r.add_post("/v1/messages/batches", self._an_create)
        r.add_get("/v1/messages/batches/{bid}", self._an_get)
        r.add_get("/v1/messages/batches/{bid}/results", self._an_results)
        r.add_post("/v1/messages/batches/{bid}/cancel", self._an_cancel)
        r.add_post("/v1/messages", self._an_online)
