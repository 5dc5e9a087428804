"""The replay path's shortcuts give exactly what the long way gives: memoised renders
(keyed by value and type, each caller with its own copy), request keys built from
precomputed JSON pieces, and replica readings normalised once."""

from __future__ import annotations

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
    from judgekit.vbscore.selfcheck import reading_pairs

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
    from judgekit.llm.identity import request_identity, request_key

    msgs = [{"role": "system", "content": "Ré: \"quoted\" \\ back"},
            {"role": "user", "content": "x\ny\u2028"}]
    schema = {"type": "object", "properties": {"é": {"type": "string"}}}
    ident = request_identity(provider="openai", model="gpt-ü", base_url=base_url,
                             messages=msgs, sampling=sampling, schema=schema,
                             template="t.j2", template_hash="abc", draw=draw)
    assert request_key(ident, canonical_json(schema), canonical_json(msgs)) == \
        identity_key(ident)
    bent = {**ident, "extra": 1}  # not a request identity: the general path
    assert request_key(bent, canonical_json(schema), canonical_json(msgs)) == \
        identity_key(bent)


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

    from judgekit.errors import TemplateError

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
