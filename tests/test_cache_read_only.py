"""A cache that can be read but not written (issue 51): its answers are served, new
answers are not stored, with one warning; a rerun of a cached run pays nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from judgekit.llm.cache import ResponseCache

WORKER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from pydantic import BaseModel
    from judgekit.llm import Call, Client, ClientSettings, Stage
    from judgekit.llm.templates import TemplateLibrary

    class Answer(BaseModel):
        answer: str
        confidence: float

    url, work = sys.argv[1], Path(sys.argv[2])
    (work / "prompts").mkdir(parents=True, exist_ok=True)
    (work / "prompts" / "answer.j2").write_text(
        'You answer as JSON.\\n<<<user>>>\\nQuestion: {{ question | data("Q") }}\\n')
    stage = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0})
    client = Client(ClientSettings(cache_dir=work / "cache", concurrency=8,
                                   base_urls={"openai": url}, progress=False),
                    templates=TemplateLibrary(work / "prompts"))
    res = client.map_sync(stage, [Call({"question": f"item {i}?"}, "openai/gpt-4.1-mini")
                                  for i in range(40)])
    print(sum(r.ok for r in res))
    client.close()
''')


def _env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUDGEKIT_", "OPENAI_"))}
    env["OPENAI_API_KEY"] = "sk-test-read-only"
    return env


def test_a_cache_on_a_read_only_file_system_still_answers(tmp_path):
    if not shutil.which("unshare") or subprocess.run(
            ["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs unshare -rm (user and mount namespaces) for a read-only mount")
    from judgekit.testing import ChaosServer

    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    work = tmp_path / "work"
    env = _env(tmp_path)
    with ChaosServer(seed=1) as srv:
        first = subprocess.run([sys.executable, str(worker), srv.url, str(work)], env=env,
                               capture_output=True, text=True, timeout=300)
        assert first.returncode == 0 and first.stdout.strip() == "40", first.stderr
        paid = len(srv.log)
        assert paid == 40
        cache = work / "cache"
        script = (f"mount --bind {cache} {cache} && mount -o remount,bind,ro {cache} && "
                  f"{sys.executable} {worker} {srv.url} {work}")
        again = subprocess.run(["unshare", "-rm", "sh", "-c", script], env=env,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert again.stdout.strip() == "40"
        assert len(srv.log) == paid  # not one request: every answer came from the cache
        assert again.stderr.count("cannot be written") == 1


def test_the_read_only_view_serves_what_diskcache_stored_and_stores_nothing(tmp_path,
                                                                            monkeypatch):
    import diskcache

    rc = ResponseCache(tmp_path)
    rc.set_many([("k1", {"ok": True, "text": "a" * 10}), ("k2", {"ok": True,
                                                                 "text": "b" * 200_000})])
    rc.close()
    real = diskcache.Cache

    def refuse(*a, **k):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(diskcache, "Cache", refuse)
    ro = ResponseCache(tmp_path)
    assert ro.available and ro.read_only
    assert ro.get("k1")["text"] == "a" * 10
    assert ro.get("k2")["text"] == "b" * 200_000  # a large value kept in its own file
    assert ro.get("nope") is None and (ro.hits, ro.misses) == (2, 1)
    ro.set_many([("k3", {"ok": True, "text": "c"})])
    assert ro.get("k3") is None
    ro.close()
    monkeypatch.setattr(diskcache, "Cache", real)
    assert ResponseCache(tmp_path).get("k3") is None
