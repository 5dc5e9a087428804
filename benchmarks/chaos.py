"""Fault-injection benchmark: 2,000 structured calls at concurrency 64 through the public
Client against a loopback OpenAI-compatible server that misbehaves like real APIs, with
one SIGKILL of the run mid-way and a restart.

Faults (per request, seeded): about 2% each of 429 (Retry-After incl. nan, inf, negative,
huge and HTTP dates; retry-after-ms nan/huge), 500, 503, 529, reset before the response,
reset mid-body, a non-JSON (HTML) 200, and a hang past the client timeout; 1% of prompts
get a permanent 400 whose body echoes the request's API key.

The parent process runs the server; each run is a worker subprocess (``--worker``) with a
sentinel OPENAI_API_KEY. The first worker is killed with SIGKILL once 700 answers have been
served; the second resumes from the cache/cassette and finishes.

Figures: calls, ok, failed (explicit failures, by kind), exceptions (calls that raised
instead of returning a result), lost (calls with no result at the end), repaid (provider
requests after the restart for calls whose answer was persisted before the kill),
answered_unpersisted (answers in flight at the kill: served but not yet stored, so
legitimately asked again), secret_leaks (occurrences of the sentinel key in every file
written and in the workers' stderr), scrub_changed (judged texts that differ from what
the server sent), max_call_s (longest single call, from StageResult.elapsed_s).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 2000
CONCURRENCY = 64
SENTINEL = "sk-" + "proj-CHAOSsentinel0123456789abcdefKEY"  # built: no key literal
TEMPLATE = "You answer questions as JSON.\n<<<user>>>\nQuestion: {{ question | data(\"Q\") }}\n"


def worker(url: str, work: Path) -> None:
    from pydantic import BaseModel

    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.templates import TemplateLibrary

    class Answer(BaseModel):
        answer: str
        confidence: float

    stage = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0})
    client = Client(ClientSettings(
        cache_dir=work / "cache", cassette=work / "chaos_cassette.json", cassette_mode="new",
        concurrency=CONCURRENCY, timeout=1.5, backoff_base=0.05, max_wait=0.5,
        call_deadline=30.0, max_failures=0.2, base_urls={"openai": url}, progress=False),
        templates=TemplateLibrary(work / "prompts"))
    calls = [Call({"question": f"item {i}: what is the capital of country {i}?"},
                  "openai/gpt-4.1-mini") for i in range(N)]

    async def go():
        try:
            return await client.map(stage, calls)
        finally:
            await client.aclose_providers()

    results = asyncio.run(go())
    client.close()
    rows = [{"i": i, "ok": r.ok, "kind": r.kind, "answer": r.value.answer if r.ok else None,
             "elapsed_s": r.elapsed_s, "source": r.source} for i, r in enumerate(results)]
    (work / "results.json").write_text(json.dumps(rows))
    (work / "failures.jsonl").write_text("".join(json.dumps(f) + "\n"
                                                 for f in client.failure_log))


def persisted_items(work: Path) -> set[int]:
    """Items whose answer is on disk (cassette file or journal), read independently."""
    from judgekit.llm.cassette import read_all

    cas = work / "chaos_cassette.json"
    found = set()
    for e in read_all(cas, cas.with_name(cas.name + ".journal")).values():
        if e["response"]["ok"]:
            found.add(_item(e["identity"]["messages"][-1]["content"]))
    return found


def _item(prompt: str) -> int:
    return int(prompt.split("item ", 1)[1].split(":", 1)[0])


def main() -> None:
    from judgekit.testing import ChaosServer
    from judgekit.testing.chaos import default_answer

    rates = {f: 0.02 for f in ("429", "500", "503", "529", "reset_before", "reset_mid",
                               "non_json", "hang")}
    work = Path(tempfile.mkdtemp(prefix="judgekit-chaos-"))
    (work / "prompts").mkdir()
    (work / "prompts" / "answer.j2").write_text(TEMPLATE)
    env = {**os.environ, "OPENAI_API_KEY": SENTINEL}
    t0 = time.perf_counter()
    with ChaosServer(rates=rates, permanent_400=0.01, seed=7, hang_s=3.0) as srv:
        cmd = [sys.executable, __file__, "--worker", srv.url, str(work)]
        with open(work / "stderr1.txt", "w") as err1:
            p = subprocess.Popen(cmd, env=env, stderr=err1, stdout=subprocess.DEVNULL)
            while p.poll() is None and srv.counts["ok"] + srv.counts["hang"] < 700:
                time.sleep(0.005)
            killed = p.poll() is None
            p.send_signal(signal.SIGKILL)
            p.wait()
        n_before = len(srv.log)
        served_ok = {_item(pr) for pr, w in srv.log if w in ("ok", "hang")}
        persisted = persisted_items(work)
        with open(work / "stderr2.txt", "w") as err2:
            rc = subprocess.run(cmd, env=env, stderr=err2, stdout=subprocess.DEVNULL,
                                timeout=900).returncode
        after = [(_item(pr), w) for pr, w in srv.log[n_before:]]
        faults = dict(srv.counts)
    wall = time.perf_counter() - t0
    rows = json.loads((work / "results.json").read_text()) if rc == 0 else []
    by_kind: dict[str, int] = {}
    for r in rows:
        if not r["ok"]:
            by_kind[r["kind"]] = by_kind.get(r["kind"], 0) + 1
    expected = {i: default_answer(f"Question: <Q>\nitem {i}: what is the capital of country "
                                  f"{i}?\n</Q>")["answer"] for i in range(N)}
    leaks = sum(f.read_bytes().count(SENTINEL.encode()) for f in work.rglob("*") if f.is_file())
    figures = {
        "calls": N,
        "ok": sum(r["ok"] for r in rows),
        "failed": sum(not r["ok"] for r in rows),
        "failed_by_kind": by_kind,
        "exceptions": 0 if rc == 0 else N,
        "lost": N - len(rows),
        "killed_mid_run": killed,
        "requests_before_kill": n_before,
        "persisted_before_kill": len(persisted),
        "answered_unpersisted": len(served_ok - persisted),
        "repaid": sum(1 for i, _ in after if i in persisted),
        "requests_after_restart": len(after),
        "secret_leaks": leaks,
        "scrub_changed": sum(1 for r in rows if r["ok"] and r["answer"] != expected[r["i"]]),
        "max_call_s": round(max((r["elapsed_s"] for r in rows), default=0.0), 3),
        "server_behaviours": faults,
        "wall_s": round(wall, 2),
    }
    print(f"calls {N}: ok {figures['ok']}, failed {figures['failed']} {by_kind}; "
          f"restart repaid {figures['repaid']}, lost {figures['lost']}, "
          f"leaks {leaks}, max call {figures['max_call_s']} s")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=2, metavar=("URL", "DIR"))
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], Path(a.worker[1]))
    else:
        main()
