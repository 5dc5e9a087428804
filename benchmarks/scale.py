"""The VB case study at full size: 2,000 generated queries x 20 replicas (about 140,000
structured calls) through the real runner and the mock provider, three times: a cold
cache, then two reruns served from the cache (rerun_s is the first; the ratios take the
faster of the two against the fastest of three raw reads, best against best).

Each run is a subprocess (peak RSS measured per run). The mock answers every stage
from the prompt and draw (three interpretations, three answers, tags that vary by
replica), so scores, intervals and figures do real work. The last line is one JSON
object: calls, first_s, rerun_s, peak_rss_mb (the largest run's), results_json_mb,
detail_jsonl_mb, queries, selfcheck_call_overhead (the tagger check's re-asks over the
other calls), rerun_over_floor (the cached rerun's replay path, its time inside the
client's map: render, key, read, parse, validate and count every call, over reading and
parsing the same cache entries in one process, the floor; the issue's "3.75x the floor"
compared the same two rates) and rerun_whole_over_floor (the whole rerun process over
that floor: start, replay, statistics with their 10,000-resample bootstraps, detail
files, figures and report).
"""

from __future__ import annotations

import csv
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import pick

QUERIES = pick(2000, 20)  # --smoke: 20 queries of 3 replicas, small memory sizes
REPLICAS = pick(20, 3)


def script(req):  # noqa: ANN001, ANN201 - the mock provider's callable
    user = req.messages[-1]["content"]
    h = int(hashlib.sha256(f"{user}|{req.draw}".encode()).hexdigest()[:8], 16)
    name = req.schema_name
    if name == "interpretations":
        return {"interpretations": [{"label": f"reading {j}", "score": float((h >> j) % 5)}
                                    for j in range(3)]}
    if name == "system":
        return {"answers": [f"answer {(h >> j) % 4}" for j in range(3)]}
    if name == "tagger":
        return {"tags": [("E" + str(1 + (h >> (2 * j)) % 3)) if (h >> (7 + j)) % 4 else "none"
                         for j in range(3)]}
    if name == "correctness":
        return {"correct": h % 3 == 0, "reason": "scripted"}
    raise AssertionError(name)


def cache_floor(folder: Path, rounds: int = 3) -> float:
    """Seconds to read and parse every entry of the response cache in this process (the
    fastest of ``rounds`` reads: the strictest floor to compare with)."""
    import diskcache

    best = float("inf")
    with diskcache.Cache(str(folder)) as cache:
        keys = list(cache.iterkeys())
        for _ in range(rounds):
            t0 = time.perf_counter()
            for k in keys:
                v = cache.get(k)
                if isinstance(v, (str, bytes)):
                    json.loads(v)
            best = min(best, time.perf_counter() - t0)
    return best


def worker(work: Path) -> None:
    import judgekit
    from judgekit.llm import Client
    from judgekit.llm.providers import mock

    mock.register_script("scale", script)
    spent = [0.0]  # wall time inside the client's map (the calls, not the statistics)
    real_map = Client.map

    async def timed_map(self, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        t0 = time.perf_counter()
        try:
            return await real_map(self, *args, **kw)
        finally:
            spent[0] += time.perf_counter() - t0

    Client.map = timed_map  # type: ignore[method-assign]
    t0 = time.perf_counter()
    judgekit.run(work / "cfg.yaml", out=work / "out", overwrite=True)
    print(json.dumps({"map_s": spent[0], "run_s": time.perf_counter() - t0}))


MEMORY_SIZES = pick((5_000, 50_000), (200, 2_000))


def memory_worker(kind: str, n: int, work: Path) -> None:
    """Run ``n`` calls through one client (a cassette recorded, or nothing kept) and print
    this process's peak RSS in KB."""

    from pydantic import BaseModel

    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.providers import mock
    from judgekit.llm.templates import TemplateLibrary

    class Answer(BaseModel):
        answer: str
        confidence: float

    mock.register_script("memory", lambda req: {"answer": req.messages[-1]["content"][-40:],
                                                "confidence": 0.5})
    cassette = str(work / f"{kind}-{n}.json") if kind == "cassette" else None
    client = Client(ClientSettings(use_cache=False, cassette=cassette, cassette_mode="new",
                                   concurrency=64, progress=False),
                    templates=TemplateLibrary(Path(__file__).resolve().parent / "prompts"))
    stage = Stage("bench", "bench.j2", Answer)
    calls = (Call({"i": i, "question": f"capital of country {i}?"}, "mock/memory")
             for i in range(n))
    seen = [0]

    def count(i: int, result: object) -> None:
        seen[0] += 1
    if hasattr(client, "each"):
        client.run_until_complete(client.each(stage, calls, count))
    else:  # the previous version: map keeps every result
        seen[0] = len(client.map_sync(stage, list(calls)))
    client.close()
    assert seen[0] == n, seen
    print(peak_kb())


def peak_kb() -> int:
    """This process's peak resident memory in KB: the high-water mark of its own memory
    map (VmHWM), which starts afresh at exec, where ru_maxrss keeps the parent's peak
    from before the exec (a parent grown past both children made every slope 0)."""
    status = Path("/proc/self/status")
    text = status.read_text(encoding="ascii") if status.exists() else ""
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # no /proc: a parent's peak


def memory_slopes(work: Path) -> dict[str, float]:
    """KB of peak RSS per call, between the two sizes, for each kind."""
    out = {}
    for kind in ("cassette", "map"):
        peaks = []
        for n in MEMORY_SIZES:
            r = subprocess.run([sys.executable, __file__, "--memory", kind, str(n), str(work)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.stderr.write(r.stderr[-3000:])
                raise SystemExit(1)
            peaks.append(int(r.stdout.strip().splitlines()[-1]))
        out[kind] = (peaks[1] - peaks[0]) / (MEMORY_SIZES[1] - MEMORY_SIZES[0])
    return out


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="judgekit-scale-"))
    with open(work / "tqa.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["Type", "Category", "Question", "Best Answer", "Correct Answers",
                    "Incorrect Answers", "Source"])
        for i in range(QUERIES):
            w.writerow(["Adversarial", "Misc", f"Which one is thing {i}?", f"answer {i % 4}",
                        f"answer {i % 4}", "nothing", "generated"])
    cfg = {"method": "vbscore", "seed": 0, "replicas": REPLICAS, "interpretations": 3, "k": 3,
           "alpha": 0.5, "datasets": [{"name": "truthfulqa", "path": str(work / "tqa.csv"),
                                       "n": QUERIES}],
           "models": {"system": "mock/scale", "judge": "mock/scale"}, "concurrency": 64,
           "cache_dir": str(work / "cache"), "out": str(work / "out")}
    (work / "cfg.yaml").write_text(json.dumps(cfg))
    times, rss, inner = [], [], []
    for _ in range(3):  # cold, then two cached reruns (the faster is compared)
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        r = subprocess.run([sys.executable, __file__, "--worker", str(work)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write(r.stderr[-3000:])
            raise SystemExit(1)
        times.append(time.perf_counter() - t0)
        inner.append(json.loads(r.stdout.strip().splitlines()[-1]))
        rss.append(max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
    res = json.loads((work / "out" / "results.json").read_text())
    detail = sum(f.stat().st_size for f in (work / "out").glob("*.jsonl"))
    floor = cache_floor(work / "cache")
    # like with like: the faster of the two cached reruns against the fastest floor read
    calls_s = min(r["map_s"] for r in inner[1:])
    checks = 2 * int(((res.get("self_check") or {}).get("tagger") or {}).get("calls") or 0)
    slopes = memory_slopes(work)
    figs = {"queries": QUERIES, "replicas": REPLICAS, "calls": res["calls"]["total"],
            "first_s": round(times[0], 1), "rerun_s": round(times[1], 1),
            "rerun_cached": res["calls"]["cached"],
            "peak_rss_mb": round(max(rss) / 1024, 1),
            "results_json_mb": round((work / "out" / "results.json").stat().st_size / 2**20, 3),
            "detail_jsonl_mb": round(detail / 2**20, 1),
            # the tagger check's re-asks over the calls the study makes without them
            "selfcheck_call_overhead": round(checks / max(1, res["calls"]["total"] - checks),
                                             4),
            # the cached rerun's replay path (time inside Client.map: render, key, cache
            # read, parse, validation, accounting) over reading and parsing the same
            # cache entries in one process
            "cache_floor_s": round(floor, 2),
            "rerun_calls_s": round(calls_s, 2),
            "rerun_over_floor": round(calls_s / floor, 2) if floor else None,
            # the whole rerun process (start, replay, statistics, detail files, figures,
            # report) over the same floor: the statistics and report are work the floor
            # does not do
            "rerun_whole_over_floor": round(min(times[1:]) / floor, 2) if floor else None,
            # memory per call on the client path (slopes between 5,000 and 50,000 calls)
            "cassette_mb_per_1k_calls": round(slopes["cassette"] * 1000 / 1024, 3),
            "map_kb_per_call": round(slopes["map"], 3)}
    print(f"{figs['calls']} calls: cold {figs['first_s']} s, cached {figs['rerun_s']} s, "
          f"peak RSS {figs['peak_rss_mb']} MB, results.json {figs['results_json_mb']} MB")
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(Path(sys.argv[2]))
    elif len(sys.argv) == 5 and sys.argv[1] == "--memory":
        memory_worker(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
    elif len(sys.argv) == 2 and sys.argv[1] == "--memory-only":
        slopes = memory_slopes(Path(tempfile.mkdtemp(prefix="judgekit-memory-")))
        print(json.dumps({"cassette_mb_per_1k_calls": round(slopes["cassette"] * 1000 / 1024, 3),
                          "map_kb_per_call": round(slopes["map"], 3)}))
    else:
        main()
