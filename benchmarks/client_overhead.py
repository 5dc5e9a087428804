"""Client overhead: N structured calls at concurrency C against a loopback server with a
fixed delay, through judgekit (cache off), bare aiohttp (the floor), the default
AsyncOpenAI client and litellm.acompletion; judgekit's default path (disk cache and
cross-process claims on, a cold cache: default_path_over_aiohttp, cpu_ms_per_call of
this process and writer_cpu_ms_per_call of the cache's writer process, first_request_s:
from the start to the server's first request) and recording a cassette
(recording_over_aiohttp); then cached replay throughput.

default_path_over_aiohttp_0ms: the default path (cache and claims on, a cold cache) over
bare aiohttp for --n0 calls (10,000) against a second server that answers at once (a fast
local judge), where judgekit's own work per call is all that separates the two; each is
run ROUNDS_0MS times, interleaved, and the fastest runs are compared (the floor's time
varies by a third from run to run on a 2-core machine, where client and server share the
cores: with two runs, a slow floor in both made the ratio look 0.3 better than it is);
the floor's rounds run with the objects alive frozen out of the collector's scans, as
judgekit's map runs its own calls (see frozen_floor); this runs first, in a process that
has not yet imported the SDKs.

Usage: python benchmarks/client_overhead.py [--n 2000] [--concurrency 64] [--delay 0.05]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
HERE = Path(__file__).resolve().parent
ROUNDS_0MS = 4


def children_cpu() -> float:
    """CPU seconds of this process's children that have ended and been waited for."""
    t = os.times()
    return t.children_user + t.children_system


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, delay: float) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, str(HERE / "_fake_server.py"), str(port), str(delay)])
    for _ in range(200):
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                         data=b"{}", method="POST")
            urllib.request.urlopen(req, timeout=1).read()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("benchmark server did not start")


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer with JSON."},
            {"role": "user", "content": f"Question {i}: capital of France?"}]


async def bare_aiohttp(url: str, n: int, conc: int) -> float:
    import aiohttp

    sem = asyncio.Semaphore(conc)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as sess:
        async def one(i: int) -> None:
            async with sem, sess.post(f"{url}/chat/completions",
                                      json={"model": "bench", "messages": messages(i)}) as r:
                data = await r.json()
                json.loads(data["choices"][0]["message"]["content"])

        t = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - t


async def openai_default(url: str, n: int, conc: int) -> float | None:
    try:
        from openai import AsyncOpenAI
    except ImportError:
        return None
    client = AsyncOpenAI(base_url=url, api_key="not-needed", max_retries=0)
    sem = asyncio.Semaphore(conc)

    async def one(i: int) -> None:
        async with sem:
            r = await client.chat.completions.create(model="bench", messages=messages(i))
            json.loads(r.choices[0].message.content or "")

    t = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    dt = time.perf_counter() - t
    await client.close()
    return dt


async def litellm_calls(url: str, n: int, conc: int) -> float | None:
    try:
        import litellm
    except ImportError:
        return None
    sem = asyncio.Semaphore(conc)

    async def one(i: int) -> None:
        async with sem:
            r = await litellm.acompletion(model="openai/bench", messages=messages(i),
                                          api_base=url, api_key="not-needed", num_retries=0)
            json.loads(r.choices[0].message.content)

    t = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return time.perf_counter() - t


class _Models:
    answer: type | None = None


def answer_model() -> type:
    if _Models.answer is None:
        from pydantic import BaseModel

        class Answer(BaseModel):
            answer: str
            confidence: float

        _Models.answer = Answer
    return _Models.answer


def cache_floor(cache_dir: str, keys: list[str]) -> float:
    """The raw cache floor: diskcache get + JSON parse + output-model validation of the
    same entries, in this process (what any replay must at least do)."""
    import diskcache

    Answer = answer_model()
    cache = diskcache.Cache(str(Path(cache_dir)), disk=diskcache.Disk)
    try:
        t = time.perf_counter()
        for k in keys:
            rec = json.loads(cache.get(k))
            Answer.model_validate(rec["parsed"])
        return time.perf_counter() - t
    finally:
        cache.close()


def first_seen(url: str, reset: bool = False) -> float | None:
    """The server's wall clock at its first request since the last reset."""
    req = urllib.request.Request(f"{url}/first", data=b"{}" if reset else None,
                                 method="POST" if reset else "GET")
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())["t"]


def judgekit_calls(url: str, n: int, conc: int, cache_dir: str | None,
                   cassette: str | None = None) -> tuple[float, object, list[str]]:
    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.templates import TemplateLibrary

    Answer = answer_model()
    stage = Stage("bench", "bench.j2", Answer)
    client = Client(ClientSettings(use_cache=cache_dir is not None, cache_dir=cache_dir,
                                   concurrency=conc, base_urls={"local": url}, progress=False,
                                   cassette=cassette, cassette_mode="new"),
                    templates=TemplateLibrary(HERE / "prompts"))
    calls = [Call({"i": i, "question": "capital of France?"}, "local/bench") for i in range(n)]
    t = time.perf_counter()
    res = client.map_sync(stage, calls)
    dt = time.perf_counter() - t
    assert all(r.ok for r in res)
    return dt, client, [r.key for r in res]


def frozen_floor(url: str, n: int, conc: int) -> float:
    """Bare aiohttp with the objects alive before it frozen out of the collector's scans,
    as judgekit's map does for its own calls: otherwise the floor slows as the process
    holds more (1.60 s fresh, 1.67 s once judgekit was imported, 1.79 s after a judgekit
    run; 1.58-1.66 s frozen), and its first round, run before judgekit was imported,
    was the minimum: a floor from another process state than judgekit's rounds."""
    gc.freeze()
    try:
        return asyncio.run(bare_aiohttp(url, n, conc))
    finally:
        gc.unfreeze()


def zero_latency(n: int, conc: int) -> tuple[float, float]:
    """(bare aiohttp, judgekit's default path) seconds for ``n`` calls against a server
    with no delay: the fastest of ROUNDS_0MS interleaved runs each."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    proc = start_server(port, 0.0)
    floor, default = [], []
    try:
        asyncio.run(bare_aiohttp(url, 500, conc))  # warm-up
        for _ in range(ROUNDS_0MS):
            floor.append(frozen_floor(url, n, conc))
            with tempfile.TemporaryDirectory() as tmp:
                dt, client, _ = judgekit_calls(url, n, conc, str(Path(tmp) / "d"))
                client.close()  # type: ignore[attr-defined]
            default.append(dt)
    finally:
        proc.terminate()
        proc.wait(10)
    return min(floor), min(default)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="a few calls, in seconds")
    smoke = "--smoke" in sys.argv[1:]
    ap.add_argument("--n", type=int, default=100 if smoke else 2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--n0", type=int, default=300 if smoke else 10_000)
    a = ap.parse_args()
    # first, before the SDKs are imported: litellm's import leaves some 375,000 objects
    # for the collector to scan, which slowed bare aiohttp's floor by about a sixth (a
    # judgekit map freezes them out of collection), and the ratio then read 1.41
    at_0ms = zero_latency(a.n0, a.concurrency)
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    proc = start_server(port, a.delay)
    try:
        ideal = a.n / a.concurrency * a.delay
        asyncio.run(bare_aiohttp(url, min(200, a.n), a.concurrency))  # warm-up
        jk, _, _ = judgekit_calls(url, a.n, a.concurrency, None)
        floor = asyncio.run(bare_aiohttp(url, a.n, a.concurrency))
        with tempfile.TemporaryDirectory() as tmp:
            # the default path as users run it: disk cache and claims on, a cold cache
            first_seen(url, reset=True)
            cpu0, wall0, kids0 = time.process_time(), time.time(), children_cpu()
            default, c0, _ = judgekit_calls(url, a.n, a.concurrency, str(Path(tmp) / "d"))
            cpu = time.process_time() - cpu0
            first = (first_seen(url) or wall0) - wall0
            c0.close()  # type: ignore[attr-defined]
            writer_cpu = children_cpu() - kids0  # the cache's writer process, reaped
            # recording a cassette (mode new), cache off
            rec, c1, _ = judgekit_calls(url, a.n, a.concurrency, None,
                                        cassette=str(Path(tmp) / "cassette.json"))
            c1.close()  # type: ignore[attr-defined]
            # the SDKs after judgekit's own figures: litellm leaves threads running that
            # would count in this process's CPU time
            oa = asyncio.run(openai_default(url, a.n, a.concurrency))
            ll = asyncio.run(litellm_calls(url, a.n, a.concurrency))
            judgekit_calls(url, a.n, a.concurrency, tmp)[1].close()  # fill the cache
            replay, client, keys = judgekit_calls(url, a.n, a.concurrency, tmp)
            client.close()
            cache_floor(tmp, keys)  # warm the page cache as the replay did
            raw = min(cache_floor(tmp, keys) for _ in range(3))
    finally:
        proc.terminate()
        proc.wait(10)
    figures = {
        "n": a.n, "concurrency": a.concurrency, "delay_s": a.delay, "ideal_s": ideal,
        "judgekit_s": round(jk, 3), "aiohttp_s": round(floor, 3),
        "openai_default_s": None if oa is None else round(oa, 3),
        "litellm_s": None if ll is None else round(ll, 3),
        "judgekit_over_aiohttp": round(jk / floor, 3),
        "replay_calls_per_s": round(a.n / replay, 1),
        "cache_floor_calls_per_s": round(a.n / raw, 1),
        # replay time per call / raw cache floor time per call (same entries, same process)
        "replay_over_floor": round(replay / raw, 3),
        "default_path_s": round(default, 3),
        "default_path_over_aiohttp": round(default / floor, 3),
        "recording_over_aiohttp": round(rec / floor, 3),
        "cpu_ms_per_call": round(1000 * cpu / a.n, 3),
        "writer_cpu_ms_per_call": round(1000 * writer_cpu / a.n, 3),
        "first_request_s": round(first, 3),
        "n_0ms": a.n0,
        "default_path_0ms_s": round(at_0ms[1], 3),
        "aiohttp_0ms_s": round(at_0ms[0], 3),
        "default_path_over_aiohttp_0ms": round(at_0ms[1] / at_0ms[0], 3),
    }
    for k, v in figures.items():
        print(f"{k:>24}: {v}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
