"""Constant memory per call on the client path: cassettes are indexed and read back from
their files, and ``Client.each`` holds only the calls in flight."""

from __future__ import annotations

import asyncio
import json
import re
import tracemalloc

from pydantic import BaseModel

from judgekit.llm import Call, Stage
from judgekit.llm.cassette import Cassette, read_all, response_hash, verify
from judgekit.llm.cassette_file import HEAD, TAIL
from judgekit.llm.client import PREPARE_CHUNK
from judgekit.llm.providers.mock import FunctionProvider

from .test_records import entry


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})


def _big(i: int, size: int = 10_000) -> tuple[str, dict, dict]:
    key, ident, resp = entry(i)
    return key, ident, {**resp, "text": f'{{"a": {i}}}' + " " * size}


def test_opening_a_cassette_keeps_an_index_not_its_entries(tmp_path):
    path = tmp_path / "c.json"
    rec = Cassette(path, "new")
    for i in range(400):
        rec.put(*_big(i))
    rec.save()
    rec.close()
    assert path.stat().st_size > 400 * 10_000  # 4 MB of responses on disk
    tracemalloc.start()
    try:
        cas = Cassette(path, "none")
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 400 * 1_000  # under 1 KB an entry: the 10 KB texts stay on disk
    got = cas.get(_big(123)[0])
    assert got is not None and got["text"].startswith('{"a": 123}') and len(got["text"]) > 10_000
    assert len(cas) == 400 and cas.unused() == sorted(k for k in cas.keys() if k != _big(123)[0])
    cas.close()


def test_the_committed_file_is_one_json_document_one_entry_per_line(tmp_path):
    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    for i in (3, 1, 2):
        cas.put(*entry(i))
    cas.save()
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    # the previous version's reader: the whole file is JSON, entries sorted by key
    doc = json.loads(raw)
    assert doc["version"] == 2
    assert [e["key"] for e in doc["entries"]] == sorted(entry(i)[0] for i in (1, 2, 3))
    assert raw.startswith(HEAD) and raw.endswith(TAIL)
    assert len(lines) == 6 and lines[1].endswith(b",") and lines[3].startswith(b'{"identity"')
    assert json.loads(lines[3]) == doc["entries"][2]
    assert verify(path) == []


def test_an_indented_cassette_is_read_and_rewritten_one_entry_per_line(tmp_path):
    path = tmp_path / "c.json"
    old = {"version": 2, "entries": [{"key": k, "identity": ident, "response": resp,
                                      "sha256": response_hash(resp)}
                                     for k, ident, resp in (entry(0), entry(1))]}
    path.write_text(json.dumps(old, indent=1, sort_keys=True))
    cas = Cassette(path, "new")
    assert cas.get(entry(1)[0])["parsed"] == {"a": 1}
    cas.put(*entry(2))
    cas.save()
    assert path.read_bytes().startswith(HEAD)
    assert sorted(read_all(path, cas.journal)) == sorted(entry(i)[0] for i in range(3))
    assert Cassette(path, "none").get(entry(0)[0])["parsed"] == {"a": 0}


def test_entries_read_back_after_another_process_compacts_the_journal(tmp_path):
    path = tmp_path / "c.json"
    a, b = Cassette(path, "new"), Cassette(path, "new")
    a.put(*entry(0))
    b.put(*entry(1))
    b.save()  # b merges a's journal line into the file and removes the journal
    assert not a.journal.exists()
    assert a.get(entry(0)[0])["parsed"] == {"a": 0}  # a still reads its own line
    a.put(*entry(2))  # into a new journal
    assert a.get(entry(2)[0])["parsed"] == {"a": 2}
    a.save()
    assert sorted(Cassette(path, "none").keys()) == sorted(entry(i)[0] for i in range(3))


def test_a_cut_off_cassette_is_a_one_line_error(tmp_path):
    from judgekit.llm.cassette import CassetteError

    path = tmp_path / "c.json"
    cas = Cassette(path, "new")
    cas.put(*entry(0))
    cas.put(*entry(1))
    cas.save()
    path.write_bytes(path.read_bytes()[:-len(TAIL)])
    try:
        Cassette(path, "none")
    except CassetteError as exc:
        assert "ends before its closing line" in str(exc) and str(path) in str(exc)
    else:
        raise AssertionError("a cut-off cassette was read")


def test_each_streams_calls_and_holds_only_a_window_in_flight(make_client):
    """A generator of 3,000 calls: every result reaches the sink once, and the tasks
    alive at any moment stay within the window, not 3,000."""
    most = [0]

    async def answer(req):  # noqa: ANN001, ANN202 - a provider that yields to the loop
        most[0] = max(most[0], len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        number = re.search(r"question (\d{5})", req.messages[-1]["content"]).group(1)
        return json.dumps({"answer": number, "confidence": 0.5})

    client = make_client(use_cache=False, concurrency=16,
                         providers={"mock/j": FunctionProvider(answer)})
    got: dict[int, str] = {}

    def sink(i: int, result) -> None:  # noqa: ANN001
        assert i not in got and result.ok
        got[i] = result.value.answer

    calls = (Call({"question": f"question {i:05d}"}, "mock/j") for i in range(3000))
    n = client.run_until_complete(client.each(STAGE, calls, sink))
    assert n == 3000 and sorted(got) == list(range(3000))
    assert got[1234] == "01234"
    # the window (two chunks at this concurrency), one chunk scheduled before the window
    # is checked, and the loop's own task: not the 3,000 calls
    assert 16 <= most[0] <= 3 * PREPARE_CHUNK + 8 < 3000


def test_map_still_returns_results_in_order(make_client):
    client = make_client(use_cache=False, providers={"mock/j": FunctionProvider(
        lambda req: json.dumps({"answer": re.search(r"q\d\d", req.messages[-1]["content"])
                                .group(0), "confidence": 0.1}))})
    res = client.map_sync(STAGE, [Call({"question": f"q{i:02d}"}, "mock/j") for i in range(40)])
    assert [r.value.answer for r in res] == [f"q{i:02d}" for i in range(40)]


def test_the_pool_runs_two_workers_per_slot_of_the_limit(make_client):
    """A map makes no task per call: two workers per slot of the provider's concurrency
    limit (one asks while another's answer is written), whatever the number of calls."""
    most = [0]

    async def answer(req):  # noqa: ANN001, ANN202 - a provider that yields to the loop
        most[0] = max(most[0], len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return json.dumps({"answer": "a", "confidence": 0.5})

    client = make_client(use_cache=False, concurrency=4,
                         providers={"mock/j": FunctionProvider(answer)})
    calls = [Call({"question": f"question {i:05d}"}, "mock/j") for i in range(600)]
    res = client.map_sync(STAGE, calls)
    assert len(res) == 600 and all(r.ok for r in res)
    assert most[0] == 2 * 4 + 1  # the workers, and the task running the map
