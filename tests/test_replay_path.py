"""The replay path's shortcuts give exactly what the long way gives: memoised renders
(keyed by value and type; ``render``'s caller and the provider get their own copy),
calls prepared together, request keys built from precomputed JSON pieces, entries
parsed by pydantic-core's reader, answers looked up together, and replica readings
normalised once."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgekit.llm.identity import canonical_json, identity_key
from judgekit.llm.templates import TemplateLibrary

from .conftest import TEST_PROMPTS


def test_memoised_renders_are_keyed_by_type_and_never_shared(tmp_path):
    (tmp_path / "v.j2").write_text("Value: {{ v }}\n<<<user>>>\n{{ v }}|{{ w }}")
    lib = TemplateLibrary(tmp_path)
    seen = set()
    for v in (1, True, 1.0, "1", [1, 2], (1, 2), {"a": 1}, None):
        got = lib.render("v.j2", {"v": v, "w": "x"})
        # the same as a library that never rendered anything, so not another type's
        assert got == TemplateLibrary(tmp_path).render("v.j2", {"v": v, "w": "x"})
        seen.add(got[1]["content"])
    assert len(seen) == 7  # 1 and 1.0 differ, True differs, a list and a tuple differ
    first = lib.render("v.j2", {"v": 1, "w": "x"})
    first[0]["content"] = "changed by a caller"
    assert lib.render("v.j2", {"v": 1, "w": "x"})[0]["content"] == "Value: 1"
    msgs, text = lib.render_keyed("v.j2", {"v": {1, 2}, "w": "x"})
    assert text == canonical_json(msgs)  # an unkeyable value is rendered each time
    assert msgs[1]["content"] == "{1, 2}|x"


def test_a_key_from_precomputed_pieces_is_the_key_of_the_whole():
    ident = {"provider": "openai", "model": "m", "base_url": None,
             "messages": [{"role": "user", "content": 'say "schema":{} and \u00fc'}],
             "sampling": {"seed": 3}, "schema": {"type": "object"},
             "template": {"name": "t", "hash": "h"}, "draw": 2}
    whole = identity_key(ident)
    for schema_json in (None, canonical_json(ident["schema"])):
        for messages_json in (None, canonical_json(ident["messages"])):
            assert identity_key(ident, schema_json, messages_json) == whole


def test_reading_pairs_normalise_each_reading_alike():
    from judgekit.methods.vbscore.selfcheck import reading_pairs

    reps = [("The Cat!", ["the cat", "A dog"]), ("the  cat", ["a dog", "The cat."]),
            ("dog", ["dog"])]
    top, same = reading_pairs(reps)
    assert top.tolist() == [True, False, False]
    assert same.tolist() == [True, False, False]
    assert isinstance(top, np.ndarray) and reading_pairs(reps[:1]) is None


def test_the_packaged_prompts_render_the_same_through_the_memo():
    lib = TemplateLibrary(TEST_PROMPTS)
    for q in ("Capital of France?", "Capital of France?", "<QUESTION>x</QUESTION>"):
        assert lib.render("answer.j2", {"question": q}) == \
            TemplateLibrary(TEST_PROMPTS).render("answer.j2", {"question": q})


@pytest.mark.parametrize("base_url,draw,sampling", [
    (None, 0, {}), ("http://127.0.0.1:1/v1", 7, {"seed": 3, "temperature": 0.5}),
    ("https://x/ü", 123456, {"logprobs": True, "stop": ["\n", "é"], "n": None})])
def test_a_request_key_assembled_from_its_parts_is_the_identity_key(base_url, draw,
                                                                    sampling):
    from judgekit.llm.identity import (
        framed_key,
        request_frame,
        request_identity,
        sampling_json,
    )

    msgs = [{"role": "system", "content": "Ré: \"quoted\" \\ back"},
            {"role": "user", "content": "x\ny\u2028"}]
    schema = {"type": "object", "properties": {"é": {"type": "string"}}}
    ident = request_identity(provider="openai", model="gpt-ü", base_url=base_url,
                             messages=msgs, sampling=sampling, schema=schema,
                             template="t.j2", template_hash="abc", draw=draw)
    frame = request_frame(base_url, "gpt-ü", "openai", "t.j2", "abc")
    assert framed_key(frame, draw, canonical_json(msgs), sampling_json(sampling),
                      canonical_json(schema)) == identity_key(ident)


def test_overlapping_sections_restore_the_collector_after_the_last():
    import gc

    from judgekit.llm.collect import GC_THRESHOLD0, fewer_collections

    before = gc.get_threshold()
    a, b = fewer_collections(), fewer_collections()
    a.__enter__()
    assert gc.get_threshold()[0] == max(before[0], GC_THRESHOLD0) and gc.get_freeze_count() > 0
    b.__enter__()
    a.__exit__(None, None, None)  # the first ends while the second still runs
    assert gc.get_threshold()[0] == max(before[0], GC_THRESHOLD0)
    b.__exit__(None, None, None)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_program_that_froze_objects_itself_keeps_them_frozen():
    """A pre-fork server freezes its objects to keep pages shared: a run inside it must
    not unfreeze them when it ends, so the sections then freeze nothing."""
    import gc

    from judgekit.llm.collect import fewer_collections, unscanned

    gc.freeze()
    try:
        mine = gc.get_freeze_count()
        with fewer_collections():
            assert gc.get_freeze_count() <= mine  # nothing more frozen
            with unscanned() as block:
                kept = [[i] for i in range(100)]
            assert not block.freeze and gc.get_freeze_count() <= mine
        assert gc.get_freeze_count() > 0 and len(kept) == 100  # still the program's
    finally:
        gc.unfreeze()


async def test_a_replayed_chunk_is_frozen_not_scanned_and_holds_no_garbage(
        fake_api, make_client, monkeypatch):
    """A chunk answered from the cache runs with no collection and freezes what it made;
    the same answers come back, the collector is as it was after the map, and unfreezing
    everything it froze finds no garbage (nothing on that path makes a cycle)."""
    import gc

    from judgekit.llm import Call
    from judgekit.llm import client as client_module
    from judgekit.llm.collect import fewer_collections

    from .conftest import Reply, openai_body
    from .test_client import GOOD, STAGE

    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    monkeypatch.setattr(client_module, "PREPARE_CHUNK", 40)
    fake_api.default = Reply(body=openai_body(GOOD))
    calls = [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini", draw=i % 3) for i in range(120)]
    cold = make_client(base_urls={"openai": fake_api.url + "/v1"})
    first = await cold.map(STAGE, calls)
    await cold.aclose_providers()
    cold.close()
    sent = len(fake_api.requests)
    warm = make_client(base_urls={"openai": fake_api.url + "/v1"})
    gc.collect()
    frozen_before, threshold = gc.get_freeze_count(), gc.get_threshold()
    collections = []

    def seen(phase, info):
        if phase == "start":
            collections.append(info["generation"])
    with fewer_collections():
        gc.callbacks.append(seen)
        try:
            again = await warm.map(STAGE, calls)
        finally:
            gc.callbacks.remove(seen)
        frozen = gc.get_freeze_count() - frozen_before
        gc.unfreeze()
        garbage = gc.collect()
    await warm.aclose_providers()
    assert len(fake_api.requests) == sent  # every call replayed
    assert [r.output for r in again] == [r.output for r in first]
    assert {r.source for r in again} == {"cache"}
    assert collections == [] and frozen > 120  # nothing scanned; the results were frozen
    assert garbage == 0
    assert gc.isenabled() and gc.get_threshold() == threshold
    assert gc.get_freeze_count() == 0 or gc.get_freeze_count() == frozen_before


async def test_a_chunk_that_calls_a_provider_is_not_frozen(fake_api, make_client,
                                                           monkeypatch):
    import gc

    from judgekit.llm import Call
    from judgekit.llm.collect import fewer_collections

    from .conftest import Reply, openai_body
    from .test_client import GOOD, STAGE

    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client(base_urls={"openai": fake_api.url + "/v1"})
    gc.collect()
    with fewer_collections():
        start = gc.get_freeze_count()  # what the section froze when it opened
        got = await client.map(STAGE, [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini")
                                       for i in range(5)])
        assert gc.get_freeze_count() <= start  # tasks were started: nothing frozen
    await client.aclose_providers()
    assert [r.source for r in got] == ["provider"] * 5 and gc.isenabled()


def test_a_template_whose_prompts_never_repeat_stops_being_keyed(tmp_path, monkeypatch):
    from judgekit.llm import templates

    (tmp_path / "u.j2").write_text("Q: {{ q }}\n<<<user>>>\n{{ xs | join(',') }}")
    (tmp_path / "r.j2").write_text("Same {{ q }}")
    lib = TemplateLibrary(tmp_path)
    keyed = []
    real = templates._freeze
    monkeypatch.setattr(templates, "_freeze",  # count the top-level keyings only
                        lambda v: (keyed.append(1) if isinstance(v, dict) and "q" in v
                                   else None) or real(v))
    monkeypatch.setattr(templates, "MEMO_TRIAL", 50)
    fresh = TemplateLibrary(tmp_path)
    for i in range(120):  # every prompt new: keyed for the trial's 50, then not
        v = {"q": f"q{i}", "xs": [str(i), "b"]}
        assert lib.render_keyed("u.j2", v) == fresh.render_keyed("u.j2", v)
        assert lib.render_keyed("r.j2", {"q": i % 3}) == fresh.render_keyed("r.j2", {"q": i % 3})
    # u.j2 keyed 50 times in lib (and 50 in fresh); r.j2 keyed on every call in both
    assert len(keyed) == 2 * 50 + 2 * 120


def test_loop_counters_read_directly_render_as_the_plain_sandbox_does(tmp_path):
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    from judgekit.core.errors import TemplateError

    body = ("{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/"
            "{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}/"
            "{{ loop.depth }}/{{ loop.depth0 }}/{{ loop.previtem | default('-') }}/"
            "{{ loop.nextitem | default('-') }};"
            "{% endfor %}")
    (tmp_path / "loop.j2").write_text(body)
    got = TemplateLibrary(tmp_path).render("loop.j2", {"xs": ["a", "b", "c"]})
    plain = SandboxedEnvironment(undefined=StrictUndefined).from_string(body)
    assert got[0]["content"] == plain.render(xs=["a", "b", "c"])
    assert got[0]["content"].startswith("1/0/3/2/True/False/3/1/0/")
    # anything else on a loop still goes through the sandbox's checks
    (tmp_path / "escape.j2").write_text("{% for x in xs %}{{ loop.__class__.__mro__ }}"
                                        "{% endfor %}")
    with pytest.raises(TemplateError):
        TemplateLibrary(tmp_path).render("escape.j2", {"xs": [1]})


def _independent_identity(provider, stage, lib, call):
    """A call's identity worked out the long way: one render, one identity, one key."""
    from judgekit.llm.identity import request_identity

    return request_identity(
        provider=provider.name, model=provider.resolve_model(),
        base_url=provider.identity_base_url,
        messages=TemplateLibrary(TEST_PROMPTS).render(stage.template, call.variables),
        sampling={**stage.sampling, **(call.sampling or {})}, schema=stage.schema,
        template=stage.template, template_hash=lib.content_hash(stage.template),
        draw=call.draw)


def test_calls_prepared_together_have_each_calls_own_key_and_identity(monkeypatch):
    """Shared variables, shared and per-call sampling (None values left out), two models
    in one chunk, and a draw that is not a plain int all key as one call alone does."""
    from judgekit.llm import Call
    from judgekit.llm.calls import prepare, prepare_many
    from judgekit.llm.providers import make_provider

    from .test_client import STAGE

    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "tk-anthropic-1")
    providers = {m: make_provider(m, None)
                 for m in ("openai/gpt-4.1-mini", "anthropic/claude-x")}
    shared = {"question": "Capital of France?"}
    calls = [Call(shared, "openai/gpt-4.1-mini", draw=0),
             Call(shared, "anthropic/claude-x", draw=0),
             Call(shared, "openai/gpt-4.1-mini", draw=1, sampling={"seed": 7}),
             Call({"question": "Capital of France?"}, "openai/gpt-4.1-mini", draw=1,
                  sampling={"seed": 7, "top_p": None}),
             Call({"question": "ü \"q\""}, "openai/gpt-4.1-mini", draw=True),
             Call(shared, "openai/gpt-4.1-mini", draw=2, sampling={"temperature": 0.5})]
    lib = TemplateLibrary(TEST_PROMPTS)
    preps = prepare_many(lib, providers.__getitem__, STAGE, calls)
    keys = []
    for call, prep in zip(calls, preps):
        ident = _independent_identity(providers[call.model], STAGE, lib, call)
        assert prep.identity == ident
        assert prep.key == identity_key(ident)
        assert prep.key == prepare(TemplateLibrary(TEST_PROMPTS), providers[call.model],
                                   STAGE, call).key
        keys.append(prep.key)
    assert keys[2] == keys[3]  # a None sampling value is not part of the request
    assert len(set(keys)) == 5
    assert preps[1].identity["provider"] == "anthropic"
    assert preps[5].identity["sampling"] == {"max_tokens": 64, "temperature": 0.5}


async def test_the_provider_gets_its_own_copy_of_messages_the_memo_shares(make_client):
    """Renders are shared with the memo; a provider (here a script) that changes the
    messages it is sent changes neither the next call's prompt nor its key."""
    from judgekit.llm import Call
    from judgekit.llm.providers import mock

    from .test_client import GOOD, STAGE

    seen = []

    def script(req):
        seen.append(req.messages[-1]["content"])
        req.messages[-1]["content"] = "changed by the provider"
        req.messages.append({"role": "user", "content": "and more"})
        return json.loads(GOOD)

    mock.register_script("mutating", script)
    try:
        client = make_client(use_cache=False)
        same = {"question": "Capital of France?"}
        first = await client.map(STAGE, [Call(same, "mock/mutating", draw=0)])
        second = await client.map(STAGE, [Call(same, "mock/mutating", draw=0),
                                          Call(dict(same), "mock/mutating", draw=1)])
    finally:
        mock.unregister_script("mutating")
    assert len(set(seen)) == 1 and "Capital of France?" in seen[0] and len(seen) == 3
    assert first[0].key == second[0].key != second[1].key
    assert client.templates.render("answer.j2", same)[-1]["content"] == seen[0]


@pytest.mark.parametrize("text", [
    '{"a":1}', ' {"a": [1, 2.5, null, true]} ', '"x"', "1", "[NaN, Infinity, -Infinity]",
    '"\\ud800"', '{"a":1,"a":2}', "1e400", "123456789012345678901234567890", "-0.0",
    '"\\u00e9\\n\\t\\""', "[1.7976931348623157e308, 5e-324, 0.1, 1e22, 123456789.123456789]",
    '{"k": {"deep": [[[{"x": "y"}]]]}}', '"' + "é" * 300 + '"', '"\ud800"',
    '"\udc00 \ud83d\ude00"', "[" * 300 + "]" * 300])
def test_cache_entries_parse_to_what_json_loads_gives(text):
    from judgekit.core.textio import json_loads as _loads

    got, want = _loads(text), json.loads(text)
    assert repr(got) == repr(want) and type(got) is type(want)


@pytest.mark.parametrize("text", ['{"a":1}x', "", "{", "\ufeff{}", "nan", "[1,]", "{'a': 1}"])
def test_what_json_loads_refuses_is_refused_with_its_error(text):
    from judgekit.core.textio import json_loads as _loads

    with pytest.raises(json.JSONDecodeError) as got:
        _loads(text)
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    assert str(got.value) == str(want.value)


def test_answers_looked_up_together_are_those_looked_up_one_by_one(tmp_path, caplog):
    """A good answer, the model's own failure, an answer that no longer fits, text that is
    not JSON, JSON that is not a record, a pickle, an absent key and a key asked twice:
    the same results, counts and warnings either way."""
    import logging

    import diskcache

    from judgekit.llm import Call
    from judgekit.llm.calls import prepare_many
    from judgekit.llm.providers import make_provider
    from judgekit.llm.store import Store

    from .test_client import STAGE

    prov = make_provider("mock/x", None)
    calls = [Call({"question": f"q{i}"}, "mock/x") for i in range(8)]
    preps = prepare_many(TemplateLibrary(TEST_PROMPTS), lambda _m: prov, STAGE, calls)
    preps.append(preps[0])  # asked twice
    good = {"ok": True, "text": "{}", "parsed": {"answer": "Paris", "confidence": 0.9},
            "attempts": 1, "usage": {"prompt_tokens": 3, "completion_tokens": 2},
            "model": "x", "error": None, "mean_token_entropy": None}
    raw = diskcache.Cache(str(tmp_path / "c"))
    raw.set(preps[0].key, json.dumps(good))
    raw.set(preps[1].key, json.dumps({**good, "ok": False, "parsed": None, "error": "e"}))
    raw.set(preps[2].key, json.dumps({**good, "parsed": {"answer": 3}}))
    raw.set(preps[3].key, "not json {")
    raw.set(preps[4].key, "[1, 2]")
    raw.set(preps[5].key, {"a pickled": "object"})
    raw.set(preps[6].key, json.dumps({**good, "parsed": {"answer": "Rome",
                                                         "confidence": 0.5}}))
    raw.close()

    def run(together):
        caplog.clear()
        store = Store(cache_dir=tmp_path / "c")
        with caplog.at_level(logging.WARNING, logger="judgekit.llm"):
            if together:
                got = store.lookup_many(preps, STAGE)
            else:
                store.prefetch([p.key for p in preps])
                got = [store.lookup(p, STAGE) for p in preps]
        c = store.cache
        counts = (c.hits, c.misses, c.refused)
        store.cache.close()
        return ([(r, None if v is None else v.model_dump(), s) for r, v, s in got], counts,
                sorted(m.getMessage() for m in caplog.records))

    one_by_one, together = run(False), run(True)
    assert together == one_by_one
    results, counts, warnings = together
    assert [s for _r, _v, s in results] == ["cache", "provider", "provider", "provider",
                                            "provider", "provider", "cache", "provider",
                                            "cache"]
    assert results[6][1] == {"answer": "Rome", "confidence": 0.5}
    # hits: every record read (the good one twice, the failure, the misfit, Rome);
    # misses: not JSON and the pickle (both refused too), JSON not a record, absent
    assert counts == (5, 4, 2)
    assert len(warnings) == 2  # the failed call and the answer that no longer fits


def test_with_a_cassette_answers_looked_up_together_are_those_one_by_one(tmp_path):
    """The cassette answers first; the cache the calls it lacks; the rest are misses."""
    from judgekit.llm import Call
    from judgekit.llm.calls import prepare_many
    from judgekit.llm.providers import make_provider
    from judgekit.llm.store import Store

    from .test_client import STAGE

    prov = make_provider("mock/x", None)
    preps = prepare_many(TemplateLibrary(TEST_PROMPTS), lambda _m: prov, STAGE,
                         [Call({"question": f"q{i}"}, "mock/x") for i in range(3)])
    rec = {"ok": True, "text": "{}", "parsed": {"answer": "Paris", "confidence": 0.9},
           "attempts": 1, "usage": {"prompt_tokens": 3, "completion_tokens": 2},
           "model": "x", "error": None, "mean_token_entropy": None}
    first = Store(cache_dir=tmp_path / "c", cassette=tmp_path / "k.json")
    first.cassette.put(preps[0].key, preps[0].identity, rec)
    first.cassette.save()
    first.cache.set(preps[0].key, {**rec, "parsed": {"answer": "Rome", "confidence": 0.5}})
    first.cache.set(preps[1].key, rec)
    first.cache.close()

    def run(together):  # each on its own copy: a cache hit is journalled to the cassette
        import shutil

        d = tmp_path / f"run{together}"
        shutil.copytree(tmp_path / "c", d / "c")
        shutil.copy(tmp_path / "k.json", d / "k.json")
        store = Store(cache_dir=d / "c", cassette=d / "k.json")
        got = (store.lookup_many(preps, STAGE) if together
               else [store.lookup(p, STAGE) for p in preps])
        store.cache.close()
        return [(s, None if v is None else v.answer) for _r, v, s in got]

    assert run(True) == run(False) == [("cassette", "Paris"), ("cache", "Paris"),
                                       ("provider", None)]


def test_a_paused_block_runs_no_collection_and_leaves_the_collector_as_it_was():
    import gc

    from judgekit.llm.collect import paused

    runs = []

    def seen(phase, info):
        if phase == "start":
            runs.append(info["generation"])
    gc.callbacks.append(seen)
    try:
        with paused():
            runs.clear()  # (one may have run on the way in)
            kept = [{"i": [i]} for i in range(50_000)]  # many times the young threshold
            inside = list(runs)
        assert inside == [] and gc.isenabled() and len(kept) == 50_000
        gc.disable()
        try:
            with paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # off before: still off
        finally:
            gc.enable()
        with pytest.raises(KeyError), paused():
            raise KeyError("x")
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(seen)


async def test_a_replayed_answer_took_no_time_and_an_asked_one_its_wall_time(
        fake_api, make_client, monkeypatch):
    from judgekit.llm import Call

    from .conftest import Reply, openai_body
    from .test_client import GOOD, STAGE

    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    fake_api.default = Reply(body=openai_body(GOOD), delay=0.05)
    calls = [Call({"question": f"q{i}"}, "openai/gpt-4.1-mini") for i in range(3)]
    client = make_client(base_urls={"openai": fake_api.url + "/v1"})
    asked = await client.map(STAGE, calls)
    again = await client.map(STAGE, calls)
    await client.aclose_providers()
    assert [r.source for r in asked] == ["provider"] * 3
    assert all(0.05 <= r.elapsed_s < 5 for r in asked)
    assert [(r.source, r.elapsed_s) for r in again] == [("cache", 0.0)] * 3


@pytest.mark.parametrize("bad", [-1, 100_000_001, 1.0, True, "3", None])
def test_token_counts_outside_whole_numbers_in_range_are_a_provider_error(bad):
    from judgekit.core.errors import ProviderError
    from judgekit.llm.types import Usage

    for field in ("prompt_tokens", "completion_tokens", "cache_write_tokens",
                  "cache_read_tokens"):
        with pytest.raises(ProviderError, match=f"{field} = "):
            Usage(**{field: bad})
    assert Usage(100_000_000, 0, 0, 100_000_000).prompt_tokens == 100_000_000
