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
Scenarios each with their own server: a torn journal, two concurrent runs, one of two
sharers killed (``killed_run_repaid``), a full disk, a split key, open files, hostile
exports, and the viewer under hostile requests (benchmarks/chaos_viewer.py:
``viewer_5xx``, ``outside_root_files_served``, ``get_requests_changed_state``,
``concurrent_label_posts_duplicate_draws``).
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _smoke import SMOKE, pick

N = pick(2000, 90)  # --smoke: 90 calls (the worker is told too)
CONCURRENCY = 64
SENTINEL = "sk-" + "proj-CHAOSsentinel0123456789abcdefKEY"  # built: no key literal
TEMPLATE = "You answer questions as JSON.\n<<<user>>>\nQuestion: {{ question | data(\"Q\") }}\n"


def worker(url: str, work: Path, n: int = N) -> None:
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
                  "openai/gpt-4.1-mini") for i in range(n)]

    async def go():
        try:
            return await client.map(stage, calls)
        finally:
            await client.aclose_providers()

    from judgekit.core.errors import JudgekitError

    try:
        results = asyncio.run(go())
    except JudgekitError as exc:  # as the CLI does: one line, exit 1, no traceback
        client.close()
        (work / "failures.jsonl").write_text("".join(json.dumps(f) + "\n"
                                                     for f in client.failure_log))
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(1)
    client.close()
    rows = [{"i": i, "ok": r.ok, "kind": r.kind, "answer": r.value.answer if r.ok else None,
             "elapsed_s": r.elapsed_s, "source": r.source} for i, r in enumerate(results)]
    (work / "results.json").write_text(json.dumps(rows))
    (work / "failures.jsonl").write_text("".join(json.dumps(f) + "\n"
                                                 for f in client.failure_log))


def _cmd(url: str, work: Path, n: int) -> list[str]:
    return [sys.executable, __file__, "--worker", url, str(work), "--n", str(n)]


def _fresh(root: Path, name: str) -> Path:
    work = root / name
    (work / "prompts").mkdir(parents=True)
    (work / "prompts" / "answer.j2").write_text(TEMPLATE)
    return work


# The scenarios below each run their own workers against their own server.


def torn_journal(root: Path, env: dict[str, str]) -> dict[str, object]:
    """Kill a run mid-way, tear the journal's last line as a full disk or a kill during a
    write would, then resume: recorded calls are not paid again and the cassette
    verifies."""
    from judgekit.llm.cassette import verify
    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "torn"), 300
    with ChaosServer(seed=1, delay_s=0.02) as srv:
        p = subprocess.Popen(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL)
        while p.poll() is None and srv.counts["ok"] < 120:
            time.sleep(0.005)
        p.send_signal(signal.SIGKILL)
        p.wait()
        journal = work / "chaos_cassette.json.journal"
        lines = journal.read_bytes().rstrip(b"\n").split(b"\n")
        with open(journal, "ab") as fh:  # half of a line, no newline: a torn write
            fh.write(lines[-1][: len(lines[-1]) // 2])
        persisted = persisted_items(work)
        n_before = len(srv.log)
        rc = subprocess.run(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, timeout=600).returncode
        repaid = sum(1 for pr, _ in srv.log[n_before:] if _item(pr) in persisted)
    problems = verify(work / "chaos_cassette.json")
    return {"torn_journal_recovered": rc == 0 and repaid == 0 and not problems
            and len(persisted) > 0,
            "torn_journal_repaid": repaid, "torn_journal_persisted": len(persisted)}


def concurrent_runs(root: Path, env: dict[str, str]) -> dict[str, object]:
    """Two runs of one config and cache started together: each call is paid once."""
    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "concurrent"), 300
    with ChaosServer(seed=2, delay_s=0.05) as srv:
        procs = [subprocess.Popen(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL) for _ in range(2)]
        rcs = [p.wait(600) for p in procs]
        per_item: dict[int, int] = {}
        for pr, _ in srv.log:
            per_item[_item(pr)] = per_item.get(_item(pr), 0) + 1
    return {"concurrent_runs_repaid": sum(c - 1 for c in per_item.values()),
            "concurrent_runs_requests": sum(per_item.values()),
            "concurrent_runs_calls": n, "concurrent_runs_ok": rcs == [0, 0]}


def killed_sharer(root: Path, env: dict[str, str]) -> dict[str, object]:
    """Two runs of one config and cache started together; one is killed (SIGKILL)
    mid-way and the other finishes: no answer persisted before the kill is paid again
    (``killed_run_repaid``; answers in flight at the kill may be asked again)."""
    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "killed_sharer"), 360
    with ChaosServer(seed=3, delay_s=0.03) as srv:
        procs = [subprocess.Popen(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL) for _ in range(2)]
        while procs[0].poll() is None and srv.counts["ok"] < 120:
            time.sleep(0.005)
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        persisted = persisted_items(work)
        n_before = len(srv.log)
        rc = procs[1].wait(600)
        repaid = sum(1 for pr, _ in srv.log[n_before:] if _item(pr) in persisted)
    return {"killed_run_repaid": repaid, "killed_run_survivor_ok": rc == 0,
            "killed_run_persisted": len(persisted)}


def disk_full(root: Path, env: dict[str, str]) -> dict[str, object]:
    """The disk fills mid-run (a file-size limit: writes past it fail with EFBIG, as a
    full disk fails them with ENOSPC): the run stops with one line, exit 1; answers
    recorded before are kept and not paid again when the run resumes."""
    import resource

    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "diskfull"), 400

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))

    with ChaosServer(seed=3) as srv:
        first = subprocess.run(_cmd(srv.url, work, n), env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, preexec_fn=limit, timeout=600)
        persisted = persisted_items(work)
        n_before = len(srv.log)
        rc = subprocess.run(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, timeout=600).returncode
        repaid = {_item(pr) for pr, _ in srv.log[n_before:]} & persisted
    rows = json.loads((work / "results.json").read_text()) if rc == 0 else []
    kept = {r["i"] for r in rows if r["ok"]}
    err = first.stderr.decode(errors="replace")
    return {"disk_full_lost": len(persisted - kept) + len(repaid),
            "disk_full_persisted": len(persisted),
            "disk_full_exit": first.returncode,
            "disk_full_traceback": "Traceback" in err,
            "disk_full_message": err.strip().splitlines()[-1][:160] if err.strip() else ""}


def split_key(root: Path, env: dict[str, str]) -> dict[str, object]:
    """Every call meets a 400 whose message echoes the key past 300 characters, split over
    two lines and JSON-escaped; nothing written may hold any part of it."""
    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "splitkey"), 40
    with ChaosServer(plan={"item": ["400_split"]}) as srv:
        proc = subprocess.run(_cmd(srv.url, work, n), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=600)
    (work / "stderr.txt").write_bytes(proc.stderr)
    half = len(SENTINEL) // 2
    pieces = [SENTINEL, SENTINEL[:half], SENTINEL[half:],
              "".join(f"\\u{ord(c):04x}" for c in SENTINEL[:8])]
    leaks = sum(f.read_bytes().count(p.encode()) for f in work.rglob("*") if f.is_file()
                for p in pieces)
    logged = (work / "failures.jsonl").exists() and \
        (work / "failures.jsonl").read_text().count("\n") > 0
    return {"split_key_leaks": leaks, "split_key_failures_logged": logged}


def open_files(root: Path, env: dict[str, str]) -> dict[str, object]:
    """A 20,000-call map at concurrency 64 against a fast loopback server: the most file
    descriptors the worker held at once (polled from /proc), which must stay bounded by
    the concurrency (claims are taken inside the limit), not by the queue."""
    from judgekit.testing import ChaosServer

    work, n = _fresh(root, "open_files"), 20000
    peak = 0
    with ChaosServer(seed=3) as srv:
        p = subprocess.Popen(_cmd(srv.url, work, n), env=env, stderr=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL)
        fd_dir = Path(f"/proc/{p.pid}/fd")
        while p.poll() is None:
            try:
                peak = max(peak, len(os.listdir(fd_dir)))
            except OSError:
                pass
            time.sleep(0.01)
        rc = p.wait()
    return {"max_open_files": peak, "open_files_calls": n, "open_files_ok": rc == 0,
            "open_files_limit": CONCURRENCY + 64}


HOSTILE = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tlead tab",
           "\rlead cr", "mid\rcr", "crlf\r\nrow", "lf\nrow", "<script>alert(1)</script>",
           "<!--", "| a | b |", "\u202eRTL override", "\x00\x01\x1b[31m control",
           "x" * (1 << 20), "-0.25", "plain"]


def hostile_exports(root: Path) -> dict[str, object]:
    """The hostile corpus through judgekit's CSV writers (export and compare's
    differences.csv) and back: every cell reads back as written (text a spreadsheet
    would evaluate carries its leading "'"), and no cell begins a formula."""
    import csv

    from judgekit.analysis.comparison import Difference, items_csv
    from judgekit.recorded.csvsafe import cell
    from judgekit.report.export import write

    root.mkdir(parents=True, exist_ok=True)
    csv.field_size_limit(1 << 24)  # a reader of megabyte cells must allow them
    rows = [{"id": f"r{k}", "text": v, "reason": v} for k, v in enumerate(HOSTILE)]
    path = write(rows, root / "hostile.csv", "csv")
    with open(path, encoding="utf-8", newline="") as fh:
        back = list(csv.DictReader(fh))
    same = len(back) == len(rows) and all(
        b["text"] == cell(r["text"]) and b["reason"] == cell(r["reason"])
        for b, r in zip(back, rows))
    numbers = {"-0.25"}
    safe = all(not b[k].startswith(("=", "+", "-", "@", "\t", "\r")) or b[k] in numbers
               for b in back for k in ("text", "reason"))
    fields = {}
    for name, f in Difference.model_fields.items():
        ann = str(f.annotation)
        fields[name] = ("=cmd|' /C calc'!A0" if "str" in ann else 0.0 if "float" in ann
                        else 0 if "int" in ann else False if "bool" in ann else None)
    diff_rows = list(csv.DictReader(__import__("io").StringIO(
        items_csv([Difference.model_validate(fields)]), newline="")))
    safe = safe and len(diff_rows) == 1 and not any(
        str(v).startswith("=") for v in diff_rows[0].values())
    return {"hostile_exports_ok": bool(same and safe), "hostile_cells": 2 * len(rows)}


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
        cmd = [sys.executable, __file__, "--worker", srv.url, str(work),
               *(["--smoke"] if SMOKE else [])]
        with open(work / "stderr1.txt", "w") as err1:
            p = subprocess.Popen(cmd, env=env, stderr=err1, stdout=subprocess.DEVNULL)
            while p.poll() is None and srv.counts["ok"] + srv.counts["hang"] < 7 * N // 20:
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
    extra: dict[str, object] = {}
    for scenario in (torn_journal, concurrent_runs, killed_sharer, disk_full, split_key,
                     open_files):
        extra.update(scenario(work / "scenarios", env))
    extra.update(hostile_exports(work / "scenarios" / "hostile"))
    spec = importlib.util.spec_from_file_location("chaos_viewer",
                                                  Path(__file__).with_name("chaos_viewer.py"))
    assert spec is not None and spec.loader is not None
    viewer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(viewer)
    extra.update(viewer.viewer_scenarios(work / "scenarios" / "viewer"))
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
        **extra,
    }
    print(f"calls {N}: ok {figures['ok']}, failed {figures['failed']} {by_kind}; "
          f"restart repaid {figures['repaid']}, lost {figures['lost']}, "
          f"leaks {leaks}, max call {figures['max_call_s']} s")
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=2, metavar=("URL", "DIR"))
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--smoke", action="store_true", help="a few calls, in seconds")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], Path(a.worker[1]), a.n)
    else:
        main()
