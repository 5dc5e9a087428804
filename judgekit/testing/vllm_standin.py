"""A stand-in for ``vllm run-batch`` where no GPU is lent: the same command line
(``-i IN -o OUT --model MODEL``), the same input checks and the same output format, with
the answers asked of an OpenAI-compatible server (``--forward URL``, e.g. llama.cpp on
loopback) instead of a model loaded in-process.

Built to vLLM's documented formats (``vllm/entrypoints/openai/run_batch.py``):
- every input line must be a ``BatchRequestInput`` (``custom_id``, ``method``, ``url``,
  ``body``); a line that is not exits non-zero before anything is written, as vLLM's
  pydantic validation does;
- a chat request for another model is answered with an ``ErrorResponse`` (HTTP 404),
  a URL it does not serve with status 400 and an error string, a streamed request
  likewise;
- the output, one ``BatchRequestOutput`` per input line (``id``, ``custom_id``,
  ``response: {status_code, request_id, body}``, ``error``), is written when the whole
  batch is done.

``python -m judgekit.testing.vllm_standin --forward URL run-batch -i IN -o OUT --model M``
(``run-batch`` may be left out). ``--sleep S`` waits before answering (to test resuming).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
import uuid


def _error_line(cid: str, code: int, error: object) -> dict:
    return {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": cid,
            "response": {"status_code": code, "request_id": f"vllm-batch-{uuid.uuid4().hex}",
                         "body": None}, "error": error}


def _answer(forward: str, model: str, req: dict) -> dict:
    cid, body = req["custom_id"], req["body"]
    if req["url"] != "/v1/chat/completions" or req["method"] != "POST":
        return _error_line(cid, 400, f"URL {req['url']} was used. Supported endpoints: "
                                     "/v1/chat/completions")
    if body.get("stream"):
        return _error_line(cid, 400, "Request must not be sent in stream mode")
    if body.get("model") != model:
        return _error_line(cid, 404, {"error": {
            "message": f"The model `{body.get('model')}` does not exist.",
            "type": "NotFoundError", "param": None, "code": 404}})
    data = json.dumps(body).encode()
    r = urllib.request.Request(forward.rstrip("/") + "/chat/completions", data=data,
                               headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(r, timeout=600) as resp:
            out = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        text = exc.read().decode(errors="replace")[:300]
        return _error_line(cid, exc.code, {"error": {"message": text, "type": "BadRequest",
                                                     "param": None, "code": exc.code}})
    return {"id": f"vllm-{uuid.uuid4().hex}", "custom_id": cid,
            "response": {"status_code": 200,
                         "request_id": f"vllm-batch-{uuid.uuid4().hex}", "body": out},
            "error": None}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="vllm run-batch (judgekit stand-in)")
    p.add_argument("command", nargs="?", default="run-batch")
    p.add_argument("--forward", required=True)
    p.add_argument("-i", "--input-file", required=True)
    p.add_argument("-o", "--output-file", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--sleep", type=float, default=0.0)
    a, _unknown = p.parse_known_args(argv)  # vLLM's engine flags are accepted
    reqs = []
    with open(a.input_file, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            req = json.loads(line)
            missing = [k for k in ("custom_id", "method", "url", "body") if k not in req]
            if missing:
                print(f"line {n}: BatchRequestInput is missing {missing}", file=sys.stderr)
                return 1
            reqs.append(req)
    print(f"Running batch: {len(reqs)} requests", file=sys.stderr)
    time.sleep(a.sleep)
    lines = [_answer(a.forward, a.model, r) for r in reqs]
    with open(a.output_file, "w", encoding="utf-8") as fh:
        for x in lines:
            fh.write(json.dumps(x) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
