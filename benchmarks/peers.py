"""judgekit beside Inspect AI and promptfoo: the same judging work (N structured
judgements of one prompt template, concurrency C) against one loopback
OpenAI-compatible server with a fixed delay, each tool a whole process of its own (start,
N calls, its own disk cache on, exit), run interleaved: round r runs the tools in a
rotated order, so a slow moment of the machine does not fall on one tool. Then each tool
runs again from its cache.

Measured per tool: wall time of the first (cold) and second (cached) run, peak RSS of
each process (os.wait4), and the requests the server saw on each run: a tool must send
exactly N on its first run for its time to count (``requests_first``), and should send
none on the rerun.

Inspect AI (``pip install inspect-ai``, the ``peers`` extra; or INSPECT_PYTHON naming
an interpreter that has it, since Inspect may want a newer openai package than the one
installed beside judgekit) and promptfoo (a ``promptfoo`` command on PATH, or in
PROMPTFOO_BIN; ``npm install promptfoo``) are optional: a tool that is absent, or that
fails, is reported as skipped with the reason.

Usage: python benchmarks/peers.py [--n 2000] [--concurrency 64] [--delay 0.05]
                                   [--rounds 1] [--tools judgekit,inspect,promptfoo]
The last line is one JSON object: per tool its medians over rounds, and the ratios of
each peer's first-run and rerun time to judgekit's (``inspect_over_judgekit``, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from client_overhead import free_port, start_server  # noqa: E402

QUESTION = "Question {i}: is Paris the capital of France? Answer as JSON."

JUDGEKIT = """
import sys
from pathlib import Path
from pydantic import BaseModel
from judgekit.llm import Call, Client, ClientSettings, Stage
from judgekit.llm.templates import TemplateLibrary

class Answer(BaseModel):
    answer: str
    confidence: float

url, n, conc, cache, prompts = sys.argv[1:6]
n, conc = int(n), int(conc)
client = Client(ClientSettings(cache_dir=cache, concurrency=conc, base_urls={"local": url},
                               progress=False), templates=TemplateLibrary(Path(prompts)))
res = client.map_sync(Stage("bench", "bench.j2", Answer),
                      [Call({"i": i, "question": "capital of France?"}, "local/bench")
                       for i in range(n)])
client.close()
assert sum(r.ok for r in res) == n, "not every judgement parsed"
"""

INSPECT_TASK = """
import json, os
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, system_message

@scorer(metrics=[accuracy()])
def parsed():
    async def score(state: TaskState, target: Target) -> Score:
        try:
            ok = json.loads(state.output.completion)["answer"] == target.text
        except (ValueError, KeyError, TypeError):
            ok = False
        return Score(value=1 if ok else 0)
    return score

@task
def bench():
    n = int(os.environ["PEERS_N"])
    return Task(dataset=[Sample(input=QUESTION.format(i=i), target="Paris") for i in range(n)],
                solver=[system_message("Answer with JSON."), generate(cache=True)],
                scorer=parsed())
"""

PROMPTFOO_CONFIG = """
description: judgekit peers benchmark
prompts:
  - file://{prompt}
providers:
  - id: openai:chat:bench
    config:
      apiBaseUrl: {url}
      apiKey: not-needed
tests: file://{tests}
defaultTest:
  assert:
    - type: is-json
"""


def server_seen(url: str, reset: bool = False) -> int:
    req = urllib.request.Request(f"{url}/first", data=b"{}" if reset else None,
                                 method="POST" if reset else "GET")
    with urllib.request.urlopen(req, timeout=5) as r:
        return int(json.loads(r.read())["n"] or 0)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process; exits on its failure."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.strip()]
        sys.stderr.write("\n".join(lines[-40:]) + "\n")
        raise RuntimeError(f"exit {proc.returncode}: {' '.join(lines[-3:])[-300:]}")
    return wall, usage.ru_maxrss / 1024


def base_env(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(work / "home"), PYTHONUNBUFFERED="1", OPENAI_API_KEY="not-needed")
    (work / "home").mkdir(exist_ok=True)
    return env


def judgekit_cmd(url: str, a: argparse.Namespace, work: Path
                 ) -> tuple[list[str], dict[str, str]]:
    prompts = work / "prompts"
    prompts.mkdir(exist_ok=True)
    (prompts / "bench.j2").write_text("Answer with JSON.\n<<<user>>>\n"
                                      "Question {{ i }}: is Paris the capital of France? "
                                      "Answer as JSON.\n")
    script = work / "judgekit_bench.py"
    script.write_text(JUDGEKIT)
    return ([sys.executable, str(script), url, str(a.n), str(a.concurrency),
             str(work / "judgekit-cache"), str(prompts)], base_env(work))


def inspect_cmd(url: str, a: argparse.Namespace, work: Path
                ) -> tuple[list[str], dict[str, str]] | str:
    python = os.environ.get("INSPECT_PYTHON", sys.executable)
    probe = subprocess.run([python, "-c", "import inspect_ai"], capture_output=True)
    if probe.returncode != 0:
        return (f"Inspect AI is not importable by {python} (pip install inspect-ai, or set "
                "INSPECT_PYTHON to an interpreter that has it)")
    task = work / "inspect_task.py"
    task.write_text(f"QUESTION = {QUESTION!r}\n" + INSPECT_TASK)
    env = base_env(work)
    env.update(OPENAI_BASE_URL=url, PEERS_N=str(a.n), INSPECT_CACHE_DIR=str(work / "inspect-cache"),
               INSPECT_LOG_DIR=str(work / "inspect-logs"), INSPECT_DISPLAY="none")
    # the Chat Completions API, as the other tools use (Inspect defaults to Responses)
    return ([python, "-m", "inspect_ai", "eval", task.name, "--model", "openai/bench",
             "-M", "responses_api=false", "--max-connections", str(a.concurrency),
             "--display", "none"], env)


def promptfoo_cmd(url: str, a: argparse.Namespace, work: Path
                  ) -> tuple[list[str], dict[str, str]] | str:
    binary = os.environ.get("PROMPTFOO_BIN") or shutil.which("promptfoo")
    if binary is None:
        return "promptfoo is not installed (npm install -g promptfoo, or set PROMPTFOO_BIN)"
    tests = work / "promptfoo_tests.csv"
    tests.write_text("question\n" + "".join(QUESTION.format(i=i) + "\n" for i in range(a.n)))
    prompt = work / "promptfoo_prompt.json"  # a chat prompt: the messages as JSON
    prompt.write_text(json.dumps([{"role": "system", "content": "Answer with JSON."},
                                  {"role": "user", "content": "{{question}}"}]))
    cfg = work / "promptfooconfig.yaml"
    cfg.write_text(PROMPTFOO_CONFIG.format(url=url, tests=tests, prompt=prompt))
    env = base_env(work)
    # as npx runs it: the binary's folder first on PATH (a node_modules/.bin may hold the
    # Node.js that promptfoo wants: npm install node@22 beside it)
    env["PATH"] = str(Path(binary).parent) + os.pathsep + env.get("PATH", "")
    env.update(PROMPTFOO_CACHE_PATH=str(work / "promptfoo-cache"),
               PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-config"),
               PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
               PROMPTFOO_DISABLE_SHARING="1", PROMPTFOO_CACHE_ENABLED="true")
    return ([binary, "eval", "-c", str(cfg), "-j", str(a.concurrency), "--no-progress-bar",
             "--no-table", "-o", str(work / "promptfoo-out.json")], env)


TOOLS = {"judgekit": judgekit_cmd, "inspect": inspect_cmd, "promptfoo": promptfoo_cmd}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true", help="a few calls, in seconds")
    ap.add_argument("--n", type=int, default=60 if "--smoke" in sys.argv[1:] else 2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--delay", type=float, default=0.05)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="which tools, comma-separated (default: all)")
    a = ap.parse_args()
    unknown = set(a.tools.split(",")) - set(TOOLS)
    if unknown:
        ap.error(f"unknown tool(s) {', '.join(sorted(unknown))}; choose from {', '.join(TOOLS)}")
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = start_server(port, a.delay)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in a.tools.split(",")}
    skipped: dict[str, str] = {}
    try:
        names = list(runs)
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                if name in skipped:
                    continue
                work = Path(tempfile.mkdtemp(prefix=f"judgekit-peers-{name}-"))
                try:
                    made = TOOLS[name](url, a, work)
                    if isinstance(made, str):
                        skipped[name] = made
                        continue
                    cmd, env = made
                    fig: dict[str, float] = {}
                    try:
                        for run in ("first", "rerun"):
                            server_seen(url, reset=True)
                            wall, rss = timed(cmd, env, work)
                            fig[f"{run}_s"] = round(wall, 3)
                            fig[f"{run}_rss_mb"] = round(rss, 1)
                            fig[f"requests_{run}"] = server_seen(url)
                    except RuntimeError as exc:  # a peer that fails here is reported
                        skipped[name] = f"failed: {exc}"
                        print(f"round {r + 1} {name}: {skipped[name]}", flush=True)
                        continue
                    runs[name].append(fig)
                    print(f"round {r + 1} {name}: {fig}", flush=True)
                finally:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(10)
    out: dict[str, object] = {"n": a.n, "concurrency": a.concurrency, "delay_s": a.delay,
                              "rounds": a.rounds, "ideal_s": round(a.n / a.concurrency * a.delay,
                                                                   3)}
    med: dict[str, dict[str, float]] = {}
    for name, figs in runs.items():
        if name in skipped or not figs:
            out[name] = {"skipped": skipped.get(name, "no run")}
            continue
        med[name] = {k: round(statistics.median(f[k] for f in figs), 3) for k in figs[0]}
        med[name]["exact_first"] = all(f["requests_first"] == a.n for f in figs)
        out[name] = med[name]
    jk = med.get("judgekit")
    for name in ("inspect", "promptfoo"):
        if jk and name in med:
            out[f"{name}_over_judgekit"] = round(med[name]["first_s"] / jk["first_s"], 2)
            out[f"{name}_rerun_over_judgekit"] = round(med[name]["rerun_s"] / jk["rerun_s"], 2)
            out[f"{name}_rss_over_judgekit"] = round(
                med[name]["first_rss_mb"] / jk["first_rss_mb"], 2)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
