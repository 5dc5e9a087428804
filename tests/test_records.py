"""Crash-safe, concurrent-safe cassettes, and the installed `judgekit` command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgekit.core.errors import ConfigError
from judgekit.llm.cassette import Cassette, CassetteError, read_all, verify

from .conftest import ROOT

IDENT = {"provider": "mock", "model": "m", "base_url": None, "messages": [], "sampling": {},
         "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
                    "required": ["a"]},
         "template": {"name": "t.j2", "hash": "h"}}


def entry(i: int) -> tuple[str, dict, dict]:
    from judgekit.llm.identity import identity_key

    ident = {**IDENT, "draw": i}
    resp = {"ok": True, "text": f'{{"a": {i}}}', "parsed": {"a": i}, "attempts": 1,
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "model": "m",
            "error": None}
    return identity_key(ident), ident, resp


def test_entries_survive_a_crash_before_save(tmp_path):
    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    for i in range(5):
        cas.put(*entry(i))
    # no save(): the process "died" here
    assert len(read_all(path, cas.journal)) == 5
    again = Cassette(path, "none")
    assert again.get(entry(3)[0])["parsed"] == {"a": 3}


def test_torn_last_journal_line_is_skipped(tmp_path):
    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    cas.put(*entry(0))
    with open(cas.journal, "a") as fh:
        fh.write('{"key": "abc", "ident')
    assert Cassette(path, "new").keys() == [entry(0)[0]]


def _record_many(path: str, start: int, n: int) -> None:
    cas = Cassette(path, "new")
    for i in range(start, start + n):
        cas.put(*entry(i))
    cas.save()


def test_two_processes_recording_into_one_cassette_keep_every_entry(tmp_path):
    import multiprocessing as mp

    path = str(tmp_path / "c.json")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(path, k * 300, 300)) for k in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    doc = json.loads(Path(path).read_text())
    assert len(doc["entries"]) == 600
    assert not Path(path + ".journal").exists()
    assert verify(Path(path)) == []


def test_hand_edited_response_is_an_error_on_load_and_in_verify(tmp_path):
    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    for i in range(3):
        cas.put(*entry(i))
    cas.save()
    doc = json.loads(path.read_text())
    doc["entries"][1]["response"]["parsed"]["a"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(CassetteError, match=r"entry 1 .*does not match its sha256"):
        Cassette(path, "none")
    assert any("sha256" in p for p in verify(path))


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.pop("identity"), "field identity is missing"),
    (lambda e: e["identity"].pop("draw"), "identity lacks draw"),
    (lambda e: e.__setitem__("key", "zz"), "field key must be"),
    (lambda e: e["response"].__setitem__("parsed", [1]), "response.parsed must be an object"),
    (lambda e: e["response"].pop("text"), "response.text must be a str"),
])
def test_malformed_entries_are_one_line_errors(tmp_path, mutate, message):
    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    cas.put(*entry(0))
    cas.save()
    doc = json.loads(path.read_text())
    mutate(doc["entries"][0])
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as err:
        Cassette(path, "none")
    assert message in str(err.value) and str(path) in str(err.value)
    assert "\n" not in str(err.value)


def test_verify_finds_schema_failures_duplicates_and_secrets(tmp_path):
    from judgekit.llm.cassette import response_hash

    path = tmp_path / "c.json"
    k, ident, resp = entry(0)
    bad = {**resp, "parsed": {"a": "not an int"}}
    secret = {**resp, "text": "sk-" + "proj-AbCdEf0123456789abcdefGHIJ"}
    doc = {"version": 2, "entries": [
        {"key": k, "identity": ident, "response": bad, "sha256": response_hash(bad)},
        {"key": k, "identity": ident, "response": resp, "sha256": response_hash(resp)},
        {"key": "0" * 64, "identity": ident, "response": secret,
         "sha256": response_hash(secret)},
    ]}
    path.write_text(json.dumps(doc))
    problems = "\n".join(verify(path))
    assert "fails the stage schema" in problems and "duplicates" in problems
    assert "shaped like an API key" in problems and "does not match its identity" in problems


# ---- the installed command, in a subprocess ---------------------------------------------
def judgekit(*args: str, cwd: Path = ROOT, timeout: float = 120,
             **kw) -> subprocess.CompletedProcess:
    exe = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, **kw)


@pytest.mark.parametrize("args", [["nosuchcmd"], ["run"], ["run", "x.yaml", "--seed", "abc"],
                                  ["cassette", "verify"], []])
def test_usage_errors_exit_2_without_traceback(args):
    r = judgekit(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stdout + r.stderr
    assert "Usage" in r.stdout + r.stderr


def test_version():
    from judgekit import __version__

    r = judgekit("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"judgekit {__version__}"


def test_input_errors_exit_2_as_one_literal_line(tmp_path):
    r = judgekit("run", str(tmp_path / "missing.yaml"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert r.stderr.startswith("error: config file") and "missing.yaml" in r.stderr
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: nodata\nexperiment: llm\nmodels: {evaluator: 'oops'}\n"
                   "note: \"pip install 'judgekit[local]'\"\n")
    r = judgekit("run", str(cfg))
    assert r.returncode == 2 and "[" not in r.stderr or "'judgekit[" in r.stderr


def test_cassette_verify_exits_1_on_an_edited_response(tmp_path):
    src = ROOT / "cassettes" / "demo.json"
    assert judgekit("cassette", "verify", str(src)).returncode == 0
    doc = json.loads(src.read_text())
    doc["entries"][0]["response"]["text"] += " "
    edited = tmp_path / "demo.json"
    edited.write_text(json.dumps(doc))
    r = judgekit("cassette", "verify", str(edited))
    assert r.returncode == 1 and "sha256" in r.stderr and "Traceback" not in r.stderr


def test_sigint_during_a_run_exits_130(tmp_path):
    exe = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")
    p = subprocess.Popen([exe, "run", "experiments/ondemand_simulation.yaml", "--out",
                          str(tmp_path / "o")], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(3.0)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    # one line says what happened (progress lines of the simulation aside)
    said = [x for x in err.strip().splitlines() if not x.startswith("judgekit: simulation")]
    assert len(said) == 1 and "interrupted" in said[0]
    assert "done in" not in err  # an interrupted loop does not claim it finished


def test_cli_never_writes_the_key(tmp_path, monkeypatch):
    env = {**os.environ, "OPENAI_API_KEY": "sk-" + "proj-LEAK0123456789abcdefABCDEF",
           "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: nodata\nmodels: {evaluator: 'bad model'}\n")
    r = judgekit("run", str(cfg), env=env)
    assert "LEAK0123456789" not in r.stdout + r.stderr


def test_a_run_that_spends_its_failure_budget_exits_1(tmp_path):
    from judgekit.testing import ChaosServer

    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "method: probe\npairs_from: [truthfulqa]\nn_pairs: 12\nrepeats: 2\n"
        f"dataset_paths: {{truthfulqa: {ROOT / 'experiments/data/truthfulqa_excerpt.csv'}}}\n"
        "models: {judge: openai/gpt-4.1-mini}\nmax_failures: 3\nconcurrency: 1\n")
    with ChaosServer(plan={"": ["400"]}) as srv:
        env = {**os.environ, "OPENAI_API_KEY": "test-key-0123456789",
               "OPENAI_BASE_URL": srv.url, "JUDGEKIT_CACHE_DIR": str(tmp_path / "cache")}
        r = judgekit("run", str(cfg), "--out", str(tmp_path / "o"), env=env)
    assert r.returncode == 1, r.stderr
    assert "failure budget" in r.stderr or "budget" in r.stderr
    assert "Traceback" not in r.stderr and "test-key-0123456789" not in r.stderr
