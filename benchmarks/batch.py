"""Batch mode at volume: 5,000 structured calls per provider (OpenAI Batch API and
Anthropic Message Batches) against a loopback server that implements both providers'
documented batch endpoints, with 2% errored requests, 3% first answers that do not
parse (re-asked in a follow-up batch), and one interruption per provider, then a
restart. OpenAI's run is killed with SIGKILL the moment the server has accepted its first
batch, usually before the reply reaches judgekit's journal: the resumed run finds the
batch again by its metadata tag (GET /v1/batches). Anthropic's Message Batches carry no
metadata, so its run is killed once the accepted batch is in the journal (while polling);
a kill inside the reply-to-journal window there would send those requests again.

The parent runs the server; each run is a worker subprocess. Batches are capped at
2,000 requests so each provider's run spans several batches. Figures: <provider>_ok,
<provider>_failed (explicit failures), resubmitted (requests, same custom_id and body,
submitted more than once across the interruption: must be 0), online_fallbacks
(errored requests answered online instead), batches. The last line is one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import SMOKE, argv, pick

N = pick(5000, 60)  # --smoke: 60 calls a provider (the worker is told too)
MODELS = {"openai": "openai/gpt-4.1-mini", "anthropic": "anthropic/claude-3-5-haiku"}
TEMPLATE = "You answer questions as JSON.\n<<<user>>>\nQuestion: {{ question | data(\"Q\") }}\n"


def worker(url: str, work: Path, provider: str) -> None:
    from pydantic import BaseModel

    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.templates import TemplateLibrary

    class Answer(BaseModel):
        answer: str
        confidence: float

    stage = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0})
    client = Client(ClientSettings(
        cache_dir=work / f"cache-{provider}", execution="batch", batch_poll_interval=0.2,
        batch_max_poll_interval=0.5, batch_max_requests=2000, progress=False,
        base_urls={"openai": url + "/v1", "anthropic": url}, max_failures=None),
        templates=TemplateLibrary(work / "prompts"))

    async def go():
        try:
            return await client.map(stage, [Call({"question": f"item {i}"}, MODELS[provider])
                                            for i in range(N)])
        finally:
            await client.aclose_providers()

    res = asyncio.run(go())
    client.close()
    (work / f"{provider}.json").write_text(json.dumps({
        "ok": sum(r.ok for r in res), "failed": sum(not r.ok for r in res),
        "results": len(res), "fallbacks": client.batch_fallbacks,
        "batches": client.batches_submitted}))


def main() -> None:
    from judgekit.testing.batch_server import BatchServer

    work = Path(tempfile.mkdtemp(prefix="judgekit-batch-"))
    (work / "prompts").mkdir()
    (work / "prompts" / "answer.j2").write_text(TEMPLATE)
    env = {**os.environ, "OPENAI_API_KEY": "sk-" + "proj-BENCH0123456789abcdefABCDEFxyz",
           "ANTHROPIC_API_KEY": "sk-" + "ant-api03-BENCH0123456789abcdefABCDEFxyz"}
    figs: dict[str, object] = {"calls_per_provider": N}
    t0 = time.perf_counter()
    with BatchServer(polls_to_end=3, error_rate=0.02, bad_first_rate=0.03) as srv:
        for provider in MODELS:
            cmd = [sys.executable, __file__, "--worker", srv.url, str(work), provider,
                   *(["--smoke"] if SMOKE else [])]
            journal = work / f"cache-{provider}" / "batches.jsonl"
            before = len(srv.batches)

            def journaled(journal: Path = journal) -> int:
                if not journal.exists():
                    return 0
                return sum('"status": "submitted"' in ln
                           for ln in journal.read_text().splitlines())

            p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            if provider == "openai":  # as soon as the provider accepted a batch
                while p.poll() is None and len(srv.batches) == before:
                    time.sleep(0.0005)
            else:  # once every accepted batch is journaled
                while p.poll() is None and not (journaled() >= 1 and
                                                journaled() == len(srv.batches) - before):
                    time.sleep(0.001)
            p.send_signal(signal.SIGKILL)  # interrupted with a batch accepted and journaled
            p.wait()
            figs[f"{provider}_killed_mid_run"] = p.returncode == -signal.SIGKILL
            second = subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, timeout=900)
            # batches accepted before the kill but never journaled, found again by tag
            figs[f"{provider}_reconciled"] = second.stderr.count("from an interrupted "
                                                                 "submission")
            r = json.loads((work / f"{provider}.json").read_text())
            figs[f"{provider}_ok"] = r["ok"]
            figs[f"{provider}_failed"] = r["failed"]
            figs[f"{provider}_accounted"] = r["ok"] + r["failed"]
            figs[f"{provider}_fallbacks"] = r["fallbacks"]
        figs["resubmitted"] = srv.resubmitted
        figs["online_fallbacks"] = srv.online
        figs["batches"] = len(srv.batches)
    figs["wall_s"] = round(time.perf_counter() - t0, 1)
    print(f"openai ok {figs['openai_ok']}, anthropic ok {figs['anthropic_ok']}, "
          f"resubmitted {figs['resubmitted']}, online fallbacks {figs['online_fallbacks']}")
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    args = argv()
    if len(args) == 4 and args[0] == "--worker":
        worker(args[1], Path(args[2]), args[3])
    else:
        main()
