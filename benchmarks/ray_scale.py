"""The Ray executor against the local one, on the same calls to a loopback
OpenAI-compatible server (each answer after DELAY seconds), and a worker killed mid-run.

- local: ``Client.map`` online, with as many requests in flight as the Ray pool keeps
  (``ray_workers`` x ``ray_concurrency``), a fresh cache;
- ray: ``execution: ray`` on a local Ray cluster (started before the clock starts: a
  cluster is something users already run), a fresh cache; ``identical`` compares every
  value and failure kind with the local run's;
- kill: ``execution: ray`` again with a fresh cache; once a quarter of the answers are
  stored, one of Ray Data's request actors is killed (SIGKILL). Ray restarts it and
  runs its batch again. ``repaid_after_worker_kill`` counts requests the server received
  again although their answer was already stored when the worker died (must be 0);
  ``resent_in_flight`` counts those that were in flight in the killed worker (sent
  again: a provider may bill them twice; at most ``ray_concurrency``).

Usage: python benchmarks/ray_scale.py [CALLS] [DELAY]
Last line: one JSON object (calls, local_s, ray_s, ray_over_local, ray_start_s,
identical, repaid_after_worker_kill, resent_in_flight, killed_pid, kill_s).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _smoke import argv, pick  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from judgekit.llm import Call, Client, ClientSettings, Stage  # noqa: E402
from judgekit.llm.ray_batch import connect  # noqa: E402
from judgekit.llm.templates import TemplateLibrary  # noqa: E402
from judgekit.testing.chaos import ChaosServer  # noqa: E402
from judgekit.testing.processes import pids_titled  # noqa: E402

ARGS = argv()
CALLS = int(ARGS[0]) if ARGS else pick(8000, 64)  # --smoke: 64 calls
DELAY = float(ARGS[1]) if len(ARGS) > 1 else 0.02
WORKERS, PER_ACTOR = 2, 16
PROMPTS = ROOT / "benchmarks" / "prompts"


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("bench", "bench.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})


def settings(cache: Path, execution: str, url: str) -> ClientSettings:
    return ClientSettings(cache_dir=cache, execution=execution, progress=False,
                          base_urls={"local": url}, backoff_base=0.0,
                          concurrency=WORKERS * PER_ACTOR, ray_workers=WORKERS,
                          ray_concurrency=PER_ACTOR, ray_batch_size=64)


async def run(s: ClientSettings) -> tuple[float, list]:
    c = Client(s, templates=TemplateLibrary(PROMPTS))
    t0 = time.perf_counter()
    try:
        res = await c.map(STAGE, [Call({"question": f"Q-{i}", "i": i}, "local/bench")
                                  for i in range(CALLS)])
    finally:
        await c.aclose_providers()
    return time.perf_counter() - t0, [(r.ok, r.kind, r.value) for r in res]


def killer(cache: Path, out: dict) -> None:
    """Once a quarter of the answers are stored, SIGKILL one request actor."""
    folder = cache / "ray"
    deadline = time.time() + 600
    while time.time() < deadline:
        files = list(folder.glob("*.answers.jsonl")) if folder.exists() else []
        if files:
            lines = files[0].read_text(encoding="utf-8").splitlines()
            if len(lines) >= CALLS // 4:
                pids = pids_titled("RequestActor")
                if pids:
                    stored = {json.loads(x)["custom_id"] for x in lines if x.strip()}
                    os.kill(pids[0], signal.SIGKILL)
                    out.update(pid=pids[0], stored=stored, at=time.time(),
                               input=files[0].with_name(files[0].name.replace(
                                   "answers", "input")))
                    return
        time.sleep(0.02)


def main() -> None:
    srv = ChaosServer(delay_s=DELAY)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        local_s, local = asyncio.run(run(settings(root / "local", "online", srv.url)))
        t0 = time.perf_counter()
        connect(settings(root / "ray", "ray", srv.url))
        start_s = time.perf_counter() - t0
        ray_s, ray = asyncio.run(run(settings(root / "ray", "ray", srv.url)))
        srv.log.clear()
        got: dict = {}
        th = threading.Thread(target=killer, args=(root / "kill", got), daemon=True)
        th.start()
        t1 = time.perf_counter()
        _, killed = asyncio.run(run(settings(root / "kill", "ray", srv.url)))
        kill_s = time.perf_counter() - t1
        th.join(5)
        sent = Counter(p for p, _ in srv.log)
        repaid = resent = 0
        if got:
            prompt_of = {}
            for line in got["input"].read_text(encoding="utf-8").splitlines():
                rec = json.loads(line)
                prompt_of[rec["custom_id"]] = rec["body"]["messages"][-1]["content"]
            for key, prompt in prompt_of.items():
                if sent[prompt] > 1:
                    if key in got["stored"]:
                        repaid += 1
                    else:
                        resent += 1
    srv.stop()
    out = {"calls": CALLS, "delay_s": DELAY, "workers": WORKERS,
           "in_flight": WORKERS * PER_ACTOR, "local_s": round(local_s, 2),
           "ray_s": round(ray_s, 2), "ray_over_local": round(ray_s / local_s, 2),
           "ray_start_s": round(start_s, 2),
           "identical": local == ray and local == killed,
           "all_ok": all(ok for ok, _, _ in killed),
           "repaid_after_worker_kill": repaid, "resent_in_flight": resent,
           "killed_pid": got.get("pid"), "kill_s": round(kill_s, 2)}
    import ray

    ray.shutdown()  # its log monitor prints to stdout: stopped before the figures
    sys.stdout.flush()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
