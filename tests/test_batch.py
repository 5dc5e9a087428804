"""Batch execution against a loopback server speaking both providers' batch APIs."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from judgekit.llm import Call, Client, ClientSettings, Stage
from judgekit.llm.batch import BatchJournal
from judgekit.llm.templates import TemplateLibrary
from judgekit.testing.batch_server import BatchServer
from judgekit.testing.chaos import default_answer

from .conftest import TEST_PROMPTS

KEY = "sk-" + "proj-BATCHsentinel0123456789abcdefXYZ"  # built: no key literal


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})
MODELS = {"openai": "openai/gpt-4.1-mini", "anthropic": "anthropic/claude-3-5-haiku"}


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.fixture
def server():
    servers = []

    def make(**kw):
        s = BatchServer(**kw)
        servers.append(s)
        return s
    yield make
    for s in servers:
        s.stop()


def client(tmp_path, srv, *, pause: float = 0.0, providers=None, **kw):
    import asyncio

    async def no_sleep(_s: float) -> None:
        await asyncio.sleep(pause)

    settings = ClientSettings(cache_dir=tmp_path / "cache", execution="batch", progress=False,
                              base_urls={"openai": srv.url + "/v1", "anthropic": srv.url},
                              backoff_base=0.0, **kw)
    return Client(settings, templates=TemplateLibrary(TEST_PROMPTS), sleep=no_sleep,
                  providers=providers)


def calls(provider, n):
    return [Call({"question": f"Q-{i}"}, MODELS[provider]) for i in range(n)]


async def go(c, cs):
    try:
        return await c.map(STAGE, cs)
    finally:
        await c.aclose_providers()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_batch_answers_match_online_and_are_cached(tmp_path, server, provider):
    srv = server()
    c = client(tmp_path, srv)
    res = await go(c, calls(provider, 30))
    assert all(r.ok and r.source == "batch" for r in res)
    assert res[3].value == Answer(**default_answer("Question: <QUESTION>\nQ-3\n</QUESTION>"))
    assert c.batches_submitted == 1 and srv.online == 0
    c.close()
    # an online client with the same identity is served from the cache: interchangeable
    online = client(tmp_path, srv)
    online.settings.execution = "online"
    again = await go(online, calls(provider, 30))
    assert [r.source for r in again] == ["cache"] * 30 and srv.online == 0
    assert [r.value for r in again] == [r.value for r in res]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_parse_failures_are_reasked_in_a_follow_up_batch(tmp_path, server, provider):
    srv = server(bad_first_rate=0.3)
    c = client(tmp_path, srv)
    res = await go(c, calls(provider, 40))
    assert all(r.ok for r in res)
    reasked = [r for r in res if r.attempts == 2]
    assert reasked and c.batches_submitted == 2
    batch2 = srv.batches[sorted(srv.batches)[-1]]["lines"]
    assert len(batch2) == len(reasked)
    body = batch2[0].get("body") or batch2[0].get("params")
    assert "could not be used" in body["messages"][-1]["content"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("fallback", ["online", "fail"])
async def test_errored_and_expired_requests_fall_back_or_fail(tmp_path, server, provider,
                                                              fallback):
    srv = server(error_rate=0.1, expire_rate=0.1)
    c = client(tmp_path, srv, batch_fallback=fallback, max_failures=None)
    res = await go(c, calls(provider, 60))
    n_bad = sum(1 for r in res if not r.ok)
    if fallback == "online":
        assert n_bad == 0 and srv.online == c.batch_fallbacks > 0
        assert {r.source for r in res} == {"batch", "provider"}
    else:
        assert n_bad > 0 and srv.online == 0
        assert {r.kind for r in res if not r.ok} <= {"transport", "timeout"}
        assert KEY not in json.dumps([r.error for r in res])


async def test_limits_split_batches(tmp_path, server):
    srv = server()
    c = client(tmp_path, srv, batch_max_requests=7)
    res = await go(c, calls("openai", 30))
    assert all(r.ok for r in res) and c.batches_submitted == 5


@pytest.mark.parametrize("provider, when", [("anthropic", "journaled"),
                                             ("openai", "journaled"),
                                             ("openai", "accepted")])
async def test_interrupted_run_resumes_polling_without_resubmitting(tmp_path, server,
                                                                    provider, when):
    """Ctrl-C while polling (journaled); for OpenAI also right after the provider accepted
    the batch, before its id reached the journal: found again by its metadata tag."""
    import asyncio

    srv = server(polls_to_end=20)
    first = client(tmp_path, srv, pause=0.05)
    journal = BatchJournal(tmp_path / "cache")

    def ready() -> bool:
        if when == "accepted":
            return bool(srv.batches)
        return any(e.get("status") == "submitted" for e in journal.entries().values())

    task = asyncio.ensure_future(first.map(STAGE, calls(provider, 25)))
    while not ready():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await first.aclose_providers()
    again = client(tmp_path, srv)
    res = await go(again, calls(provider, 25))
    assert all(r.ok for r in res) and again.batches_submitted == 0
    assert srv.resubmitted == 0 and len(srv.batches) == 1
    statuses = {e["id"]: e["status"] for e in journal.entries().values()}
    assert [v for k, v in statuses.items() if not k.startswith("pending:")] == ["collected"]


async def test_local_and_mock_models_run_online_in_batch_mode(tmp_path, server, caplog):
    from judgekit.llm.providers.mock import FunctionProvider

    srv = server()
    c = client(tmp_path, srv, providers={
        "mock/b": FunctionProvider(lambda req: {"answer": "x", "confidence": 1.0})})
    res = await go(c, [Call({"question": "q"}, "mock/b")])
    assert res[0].ok and res[0].source == "provider"
    assert any("no batch service" in r.message for r in caplog.records)


async def test_batch_cost_is_half_price(tmp_path, server):
    srv = server()
    c = client(tmp_path, srv)
    await go(c, calls("openai", 4))
    from judgekit.llm.pricing import cost_usd

    full = cost_usd("openai/gpt-4.1-mini", 20 * 4, 12 * 4)
    assert c.summary()["cost_usd"] == pytest.approx(full / 2)


def test_batches_list_and_cancel_cli(tmp_path, server, monkeypatch):
    import asyncio

    from typer.testing import CliRunner

    from judgekit.cli.commands import app

    srv = server(polls_to_end=100)
    c = client(tmp_path, srv, pause=0.05)

    async def submit_only():
        task = asyncio.ensure_future(c.map(STAGE, calls("openai", 5)))
        journal = tmp_path / "cache" / "batches.jsonl"
        # Cancel once the accepted batch is journaled (the server accepting it is earlier).
        while not (journal.exists() and '"batch_1"' in journal.read_text()):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await c.aclose_providers()

    asyncio.run(submit_only())
    r = CliRunner().invoke(app, ["batches", "list", "--dir", str(tmp_path / "cache")])
    assert "batch_1" in r.output and "submitted" in r.output
    r = CliRunner().invoke(app, ["batches", "cancel", "batch_1", "--dir",
                                 str(tmp_path / "cache")])
    assert r.exit_code == 0 and "cancelling" in r.output
    assert srv.batches["batch_1"]["cancelled"]


def test_dry_run_prices_and_sends_nothing(tmp_path, server):
    srv = server()
    c = client(tmp_path, srv, dry_run=True)
    from judgekit.core.errors import DryRun

    with pytest.raises(DryRun, match=r"30 call\(s\) to openai/gpt-4.1-mini: .*batch price"):
        import asyncio

        asyncio.run(go(c, calls("openai", 30)))
    assert srv.batches == {} and srv.online == 0


def test_dry_run_cli_exits_0(tmp_path):
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from .conftest import ROOT

    exe = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")
    r = subprocess.run([exe, "run", str(ROOT / "experiments" / "case_study.yaml"), "--dry-run",
                        "--execution", "batch", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "JUDGEKIT_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    assert "dry run, stage interpretations" in r.stdout and "Nothing was sent" in r.stdout
