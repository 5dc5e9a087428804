"""Cross-process claims: one descriptor per process whatever the number of claims held,
exclusion between processes and between two clients of one process, cleanup."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import pytest

from judgekit.llm.claims import Claims, fcntl

from .conftest import TEST_PROMPTS

pytestmark = pytest.mark.skipif(fcntl is None, reason="record locks are POSIX")


def test_many_claims_share_one_descriptor_and_two_objects_exclude_each_other(tmp_path):
    a, b = Claims(tmp_path / "c", poll=0.01), Claims(tmp_path / "c", poll=0.01)

    async def go():
        before = len(os.listdir("/proc/self/fd"))
        async with contextlib_all([a.hold(f"k{i}") for i in range(200)]):
            held = len(os.listdir("/proc/self/fd"))
            order = []

            async def second():
                async with b.hold("k7") as waited:
                    order.append(("b", waited))

            task = asyncio.create_task(second())
            await asyncio.sleep(0.05)
            assert not order  # k7 is held by a: b waits
        await task
        return before, held, order

    before, held, order = asyncio.run(go())
    assert held - before <= 2  # 200 claims: one file (and its mapping's duplicate)
    assert order == [("b", True)]
    a.close()
    assert (tmp_path / "c" / "claims").exists()  # b still uses it
    b.close()
    assert not (tmp_path / "c").exists()


def test_a_claim_held_by_another_process_is_waited_for(tmp_path):
    code = (
        "import asyncio, sys, time\n"
        "from judgekit.llm.claims import Claims\n"
        "async def main():\n"
        f"    async with Claims({str(tmp_path / 'c')!r}).hold('key'):\n"
        "        print('held', flush=True)\n"
        "        await asyncio.sleep(0.6)\n"
        "asyncio.run(main())\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    mine = Claims(tmp_path / "c", poll=0.01)

    async def take():
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        async with mine.hold("key") as waited:
            return waited, loop.time() - t0
    waited, took = asyncio.run(take())
    p.wait(10)
    assert waited and took > 0.2
    assert asyncio.run(_free(mine, "other")) is False
    mine.close()


async def _free(c, key):
    async with c.hold(key) as waited:
        return waited


class contextlib_all:
    """Enter several async context managers at once (for the test)."""

    def __init__(self, cms):
        self.cms = cms

    async def __aenter__(self):
        for cm in self.cms:
            await cm.__aenter__()

    async def __aexit__(self, *exc):
        for cm in reversed(self.cms):
            await cm.__aexit__(None, None, None)


def test_claims_that_cannot_be_taken_are_said_once_not_dropped_silently(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    c = Claims(blocker / "claims")

    async def go():
        for k in ("a", "b"):
            async with c.hold(k) as waited:
                assert waited is False
    with caplog.at_level("WARNING", logger="judgekit.claims"):
        asyncio.run(go())
    said = [r for r in caplog.records if "without protection" in r.getMessage()]
    assert len(said) == 1


def test_a_user_alone_skips_the_reread_until_another_process_opens_the_storage(tmp_path):
    """The re-read after an unwaited claim is skipped only while nobody else has opened
    the claims file since this user did: a process that opens, stores and exits in
    between (even after we took our claim) makes us re-read from then on."""
    mine = Claims(tmp_path / "c")
    mine.open()
    assert mine.alone()
    code = ("from judgekit.llm.claims import Claims\n"
            f"c = Claims({str(tmp_path / 'c')!r}); c.open(); print(c.alone()); c.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"  # it saw us present
    assert not mine.alone() and mine.shared  # and we saw it come and go
    mine.close()


def test_a_second_user_in_this_process_or_one_already_present_is_not_alone(tmp_path):
    a = Claims(tmp_path / "c")
    a.open()
    b = Claims(tmp_path / "c")
    b.open()
    assert not b.alone() and not a.alone()
    a.close()
    b.close()
    code = ("import sys, time\nfrom judgekit.llm.claims import Claims\n"
            f"c = Claims({str(tmp_path / 'd')!r}); c.open(); print('open', flush=True)\n"
            "sys.stdin.readline(); c.close()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "open"
    late = Claims(tmp_path / "d")
    late.open()
    assert not late.alone()  # the other process was there first
    p.communicate("\n", timeout=10)
    late.close()
    assert not (tmp_path / "d").exists()  # the last user removed it


def test_the_store_rereads_only_when_it_may_have_been_answered_elsewhere(tmp_path):
    """Store.recheck: no cache read for an unwaited claim while alone; after another
    store opened the same cache and answered the key, the answer is found (not paid
    twice)."""
    from pydantic import BaseModel

    from judgekit.llm.stage import Stage
    from judgekit.llm.store import Store

    class Out(BaseModel):
        x: int

    stage = Stage("s", "s.j2", Out)
    rec = {"ok": True, "text": '{"x": 1}', "parsed": {"x": 1}, "attempts": 1,
           "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "model": "m",
           "error": None, "mean_token_entropy": None}
    mine = Store(cache_dir=tmp_path / "cache")
    reads = []
    real_peek = mine.cache.peek
    mine.cache.peek = lambda k: reads.append(k) or real_peek(k)
    assert mine.recheck("k" * 64, {}, stage, waited=False) is None and reads == []
    other = Store(cache_dir=tmp_path / "cache")
    other.save("k" * 64, {}, rec)
    other.close()
    found = mine.recheck("k" * 64, {}, stage, waited=False)
    assert found is not None and found["parsed"] == {"x": 1} and reads == ["k" * 64]
    mine.close()


def test_a_user_alone_takes_no_record_lock_per_claim(tmp_path, monkeypatch):
    """Alone with the file, 200 claims cost a few lock calls in all (the SOLO byte), not
    two each; a second user (here, in this process) makes the first take a record lock
    per claim from then on."""
    import judgekit.llm.claims as claims_mod

    calls = []
    real = claims_mod.fcntl.lockf

    def counted(fd, cmd, length=0, start=0, whence=0):
        calls.append(start)
        return real(fd, cmd, length, start, whence)

    monkeypatch.setattr(claims_mod.fcntl, "lockf", counted)
    a = Claims(tmp_path / "c")
    a.open()

    async def many(c, n, prefix):
        for i in range(n):
            async with c.hold(f"{prefix}{i}") as waited:
                assert not waited
    asyncio.run(many(a, 200, "k"))
    alone = len(calls)
    assert alone <= 2 * 8  # open, presence, generation, and SOLO taken and let go per run
    b = Claims(tmp_path / "c")
    b.open()
    calls.clear()
    asyncio.run(many(a, 50, "m"))
    assert len(calls) >= 2 * 50  # a record lock and its release per claim
    a.close()
    b.close()


def test_a_newcomer_waits_for_a_key_the_user_alone_holds(tmp_path):
    """This process is alone and holds "key" without a record lock; another process that
    comes meanwhile waits at the gate until we have turned our claim into a record lock,
    then waits for the key itself until we let it go (it never gets it while we hold it)."""
    mine = Claims(tmp_path / "c", poll=0.01)
    mine.open()
    code = (
        "import asyncio, time\n"
        "from judgekit.llm.claims import Claims\n"
        f"c = Claims({str(tmp_path / 'c')!r}, poll=0.01)\n"
        "async def main():\n"
        "    c.open(); print('open', flush=True)\n"
        "    async with c.hold('key') as waited:\n"
        "        print('got', waited, time.time(), flush=True)\n"
        "asyncio.run(main()); c.close()\n")

    async def go():
        async with mine.hold("key"):
            assert mine._solo  # alone: no record lock for it
            p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 text=True)
            loop = asyncio.get_running_loop()
            assert (await loop.run_in_executor(None, p.stdout.readline)).strip() == "open"
            await asyncio.sleep(0.8)  # the newcomer is waiting (the loop runs: we notice)
            assert not mine._solo and mine.shared
            released = time.time()
        out = await loop.run_in_executor(None, p.stdout.readline)
        await loop.run_in_executor(None, p.wait, 10)
        return out.split(), released
    (word, waited, at), released = asyncio.run(go())
    assert word == "got" and waited == "True" and float(at) >= released
    mine.close()


def test_two_processes_on_one_cache_pay_for_each_call_once(tmp_path, fake_api):
    """Two clients in two processes map the same 40 calls over one cache, the second
    started while the first (alone until then) is mid-run: each call is paid once."""
    from .conftest import Reply, openai_body

    fake_api.default = Reply(body=openai_body('{"answer": "Paris", "confidence": 0.9}'),
                             delay=0.02)
    code = (
        "import sys\n"
        "from pydantic import BaseModel\n"
        "from judgekit.llm import Call, Client, ClientSettings, Stage\n"
        "from judgekit.llm.templates import TemplateLibrary\n"
        "class Answer(BaseModel):\n"
        "    answer: str\n"
        "    confidence: float\n"
        f"c = Client(ClientSettings(cache_dir={str(tmp_path / 'cache')!r}, concurrency=4, "
        f"progress=False, base_urls={{'openai': {fake_api.url + '/v1'!r}}}), "
        f"templates=TemplateLibrary({str(TEST_PROMPTS)!r}))\n"
        "res = c.map_sync(Stage('answer', 'answer.j2', Answer), [Call({'question': f'q{i}'}, "
        "'openai/gpt-4.1-mini') for i in range(40)])\n"
        "c.close()\n"
        "print(sum(r.ok for r in res), sum(r.source == 'provider' for r in res))\n")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-0000"}
    first = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env=env)
    deadline = time.monotonic() + 30
    while len(fake_api.requests) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    second = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env=env)
    outs = [p.communicate(timeout=60)[0].split() for p in (first, second)]
    assert [o[0] for o in outs] == ["40", "40"]
    asked = [r["json"]["messages"][-1]["content"] for r in fake_api.requests]
    assert len(asked) == len(set(asked)) == 40  # each call paid once, by one of the two
    assert sum(int(o[1]) for o in outs) == 40
