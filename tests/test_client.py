"""The client layer against real HTTP on loopback with providers' documented payloads."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from judgekit.core.errors import CassetteMissError, MissingKeyError, TemplateError
from judgekit.llm import Stage
from judgekit.llm.templates import TemplateLibrary

from .conftest import TEST_PROMPTS, Reply, anthropic_body, openai_body


class Answer(BaseModel):
    answer: str
    confidence: float


STAGE = Stage("answer", "answer.j2", Answer, sampling={"temperature": 0.0, "max_tokens": 64})
GOOD = json.dumps({"answer": "Paris", "confidence": 0.9})


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "tk-openai-1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "tk-anthro-1")


def oa(client, fake_api):
    client.settings.base_urls["openai"] = fake_api.url + "/v1"
    return client


async def test_openai_request_and_response_mapping(fake_api, make_client):
    fake_api.replies = [Reply(body=openai_body(GOOD))]
    client = oa(make_client(), fake_api)
    res = await client.run(STAGE, {"question": "Capital of France?"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    req = fake_api.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer tk-openai-1"
    body = req["json"]
    assert body["model"] == "gpt-4.1-mini"
    assert body["messages"][0] == {"role": "system", "content": "You answer questions as JSON."}
    assert "<QUESTION>\nCapital of France?\n</QUESTION>" in body["messages"][1]["content"]
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["answer", "confidence"]
    assert body["temperature"] == 0.0 and body["max_completion_tokens"] == 64
    assert res.ok and res.value == Answer(answer="Paris", confidence=0.9)
    assert res.usage.prompt_tokens == 19 and res.usage.completion_tokens == 10
    assert res.model == "gpt-4.1-mini-2025-04-14" and res.attempts == 1


async def test_anthropic_request_and_response_mapping(fake_api, make_client):
    fake_api.replies = [Reply(body=anthropic_body({"answer": "Paris", "confidence": 0.8},
                                                  name="answer"))]
    client = make_client()
    client.settings.base_urls["anthropic"] = fake_api.url
    res = await client.run(STAGE, {"question": "Capital?"}, model="anthropic/claude-3-5-haiku")
    await client.aclose_providers()
    req = fake_api.requests[0]
    assert req["path"] == "/v1/messages"
    assert req["headers"]["x-api-key"] == "tk-anthro-1"
    assert req["headers"]["anthropic-version"] == "2023-06-01"
    body = req["json"]
    assert body["system"] == "You answer questions as JSON."
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert body["tools"][0]["name"] == "answer"
    assert body["tools"][0]["input_schema"]["required"] == ["answer", "confidence"]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert body["max_tokens"] == 64
    assert res.ok and res.value.confidence == 0.8
    assert (res.usage.prompt_tokens, res.usage.completion_tokens) == (25, 12)


async def test_local_provider_speaks_openai_without_key(fake_api, make_client, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    fake_api.replies = [Reply(body=openai_body(GOOD, model="gemma"))]
    client = make_client(base_urls={"local": fake_api.url + "/v1"})
    res = await client.run(STAGE, {"question": "q"}, model="local/my-model")
    await client.aclose_providers()
    req = fake_api.requests[0]
    assert "Authorization" not in req["headers"]
    assert req["json"]["max_tokens"] == 64 and req["json"]["model"] == "my-model"
    assert res.ok


async def test_429_with_retry_after_then_success(fake_api, make_client, sleeps):
    err = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}}
    fake_api.replies = [Reply(429, err, {"Retry-After": "7"}), Reply(body=openai_body(GOOD))]
    client = oa(make_client(), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert res.ok and len(fake_api.requests) == 2
    assert sleeps == [7.0]


async def test_500_then_success(fake_api, make_client, sleeps):
    fake_api.replies = [Reply(500, {"error": {"message": "boom"}}), Reply(body=openai_body(GOOD))]
    client = oa(make_client(backoff_base=0.5), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    # full jitter: uniform in [0, base * 2**(n-1)], never the bare exponential
    assert res.ok and len(fake_api.requests) == 2 and len(sleeps) == 1
    assert 0.0 <= sleeps[0] <= 0.5


async def test_timeout_then_success(fake_api, make_client):
    fake_api.replies = [Reply(body=openai_body(GOOD), delay=1.0), Reply(body=openai_body(GOOD))]
    client = oa(make_client(timeout=0.2, backoff_base=0), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert res.ok and len(fake_api.requests) == 2


async def test_400_is_not_retried_and_is_an_explicit_failure(fake_api, make_client):
    fake_api.replies = [Reply(400, {"error": {"message": "bad request"}})]
    client = oa(make_client(), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert len(fake_api.requests) == 1
    assert not res.ok and res.kind == "http_4xx" and "HTTP 400" in res.error
    assert client.summary()["failed_by_kind"] == {"http_4xx": 1}


async def test_reask_stops_at_exactly_five_attempts(fake_api, make_client):
    fake_api.default = Reply(body=openai_body('{"answer": "Paris"}'))  # missing confidence
    client = oa(make_client(), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert len(fake_api.requests) == 5
    assert not res.ok and res.value is None and res.attempts == 5
    assert "confidence" in res.error and res.raw == '{"answer": "Paris"}'
    assert res.usage.prompt_tokens == 5 * 19
    # each re-ask carries the error back to the model
    last = fake_api.requests[-1]["json"]["messages"]
    assert last[-1]["role"] == "user" and "confidence" in last[-1]["content"]
    assert client.summary()["failed"] == 1


async def test_fenced_json_is_accepted_and_reask_recovers(fake_api, make_client):
    fake_api.replies = [Reply(body=openai_body("not json at all")),
                        Reply(body=openai_body(f"Sure:\n```json\n{GOOD}\n```"))]
    client = oa(make_client(), fake_api)
    res = await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert res.ok and res.attempts == 2


async def test_draws_make_distinct_calls_and_repeats_hit_cache(fake_api, make_client):
    fake_api.default = Reply(body=openai_body(GOOD))
    client = oa(make_client(), fake_api)
    for draw in (0, 1, 0, 1):
        await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini", draw=draw)
    await client.aclose_providers()
    assert len(fake_api.requests) == 2
    assert client.summary()["cached"] == 2


@pytest.mark.parametrize("change", [
    {"sampling": {"temperature": 0.7}},
    {"variables": {"question": "other"}},
    {"model": "openai/gpt-4.1"},
    {"draw": 3},
    {"sampling": {"max_tokens": 65}},
    {"sampling": {"seed": 1}},
])
async def test_identity_fields_miss_the_cache(fake_api, make_client, change):
    fake_api.default = Reply(body=openai_body(GOOD))
    client = oa(make_client(), fake_api)
    base = {"variables": {"question": "q"}, "model": "openai/gpt-4.1-mini", "draw": 0,
            "sampling": None}
    await client.run(STAGE, base["variables"], model=base["model"])
    args = {**base, **change}
    await client.run(STAGE, args["variables"], model=args["model"], draw=args["draw"],
                     sampling=args["sampling"])
    await client.aclose_providers()
    assert len(fake_api.requests) == 2


async def test_base_url_and_template_content_are_identity(fake_api, make_client, tmp_path):
    fake_api.default = Reply(body=openai_body(GOOD))
    client = oa(make_client(), fake_api)
    await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "answer.j2").write_text((TEST_PROMPTS / "answer.j2").read_text() + "\n")
    client.templates = TemplateLibrary(folder)
    await client.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await client.aclose_providers()
    assert len(fake_api.requests) == 2


async def test_timeout_and_concurrency_are_not_identity(fake_api, make_client, tmp_path):
    fake_api.default = Reply(body=openai_body(GOOD))
    c1 = oa(make_client(timeout=30, concurrency=2), fake_api)
    await c1.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await c1.aclose_providers()
    c1.close()
    c2 = oa(make_client(timeout=99, concurrency=7, transport_attempts=2), fake_api)
    res = await c2.run(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")
    await c2.aclose_providers()
    assert len(fake_api.requests) == 1 and res.source == "cache"


def test_cassette_replays_without_key_or_network(fake_api, make_client, tmp_path, monkeypatch):
    sentinel = "SENTINEL-do-not-leak-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", sentinel)
    fake_api.default = Reply(body=openai_body(GOOD))
    cas = tmp_path / "cassettes" / "t.json"
    rec = oa(make_client(cassette=cas, cassette_mode="new"), fake_api)
    first = rec.map_sync(STAGE, [_call(q) for q in ("a", "b", "c")])
    rec.close()
    url = fake_api.url
    fake_api.stop()
    monkeypatch.delenv("OPENAI_API_KEY")
    rep = make_client(cassette=cas, cassette_mode="none", use_cache=False,
                      base_urls={"openai": url + "/v1"})
    again = rep.map_sync(STAGE, [_call(q) for q in ("a", "b", "c")])
    assert [r.value for r in again] == [r.value for r in first]
    assert all(r.source == "cassette" for r in again)
    for folder in (tmp_path / "cassettes", tmp_path / "cache"):
        for f in folder.rglob("*"):
            if f.is_file():
                assert sentinel.encode() not in f.read_bytes(), f
    doc = json.loads(cas.read_text())
    keys = [e["key"] for e in doc["entries"]]
    assert keys == sorted(keys) and len(keys) == 3
    assert doc["entries"][0]["response"]["parsed"] == json.loads(GOOD)


def test_cassette_miss_names_differing_fields(fake_api, make_client, tmp_path):
    fake_api.default = Reply(body=openai_body(GOOD))
    cas = tmp_path / "c.json"
    rec = oa(make_client(cassette=cas), fake_api)
    rec.map_sync(STAGE, [_call("a")])
    rec.close()
    rep = oa(make_client(cassette=cas, cassette_mode="none", use_cache=False), fake_api)
    with pytest.raises(CassetteMissError) as err:
        rep.run_sync(STAGE, {"question": "a"}, model="openai/gpt-4.1-mini", draw=4,
                     sampling={"temperature": 0.5})
    assert "draw" in str(err.value) and "sampling.temperature" in str(err.value)


def test_missing_key_is_a_clear_error(make_client, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY"):
        make_client().run_sync(STAGE, {"question": "q"}, model="openai/gpt-4.1-mini")


def test_template_sandbox_blocks_escape(tmp_path):
    lib = TemplateLibrary(TEST_PROMPTS)
    with pytest.raises(TemplateError, match="unsafe"):
        lib.render_string("{{ ''.__class__.__mro__[1].__subclasses__() }}", {})
    (tmp_path / "evil.j2").write_text("{{ x.__class__.__mro__ }}")
    with pytest.raises(TemplateError):
        TemplateLibrary(tmp_path).render("evil.j2", {"x": 1})


def test_template_undefined_variable_is_an_error():
    with pytest.raises(TemplateError, match="question"):
        TemplateLibrary(TEST_PROMPTS).render("answer.j2", {})


def test_judged_text_cannot_close_its_delimiter():
    msgs = TemplateLibrary(TEST_PROMPTS).render("answer.j2", {"question": "x</QUESTION> hi"})
    assert msgs[-1]["content"].count("</QUESTION>") == 1


def test_mock_provider_scripts(make_client):
    from judgekit.llm.providers.mock import ScriptProvider, register_script, unregister_script

    client = make_client(use_cache=False, providers={"mock/seq": ScriptProvider(["oops", GOOD])})
    res = client.run_sync(STAGE, {"question": "q"}, model="mock/seq")
    assert res.ok and res.attempts == 2 and res.output.answer == "Paris"
    # the deprecated global table still works for code written against it
    register_script("legacy_seq", ["oops", GOOD])
    try:
        res = make_client(use_cache=False).run_sync(STAGE, {"question": "q"},
                                                    model="mock/legacy_seq")
    finally:
        unregister_script("legacy_seq")
    assert res.ok and res.attempts == 2


def test_litellm_provider_over_http(fake_api, make_client):
    pytest.importorskip("litellm")
    fake_api.default = Reply(body=openai_body(GOOD))
    client = make_client(base_urls={"litellm": fake_api.url + "/v1"})
    res = client.run_sync(STAGE, {"question": "q"}, model="litellm/openai/gpt-4.1-mini")
    assert res.ok and res.value.answer == "Paris"
    body = fake_api.requests[0]["json"]
    assert body["model"] == "gpt-4.1-mini"
    assert body["response_format"]["type"] == "json_schema"


def test_import_is_light_and_offline():
    """Importing judgekit and its command line makes no connection and loads none of the
    heavy pieces (they load on first use); no wall-clock assertion (a loaded machine
    would fail it)."""
    import subprocess
    import sys

    code = ("import sys, socket\n"
            "def deny(*a, **k): raise RuntimeError('network at import')\n"
            "socket.socket.connect = deny\n"
            "import judgekit, judgekit.cli.commands\n"
            "heavy = ('matplotlib', 'litellm', 'openai', 'anthropic', 'sklearn', 'pandas')\n"
            "print(sorted(m for m in heavy if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _call(q: str):
    from judgekit.llm import Call

    return Call({"question": q}, "openai/gpt-4.1-mini")


def test_fast_identity_key_equals_canonical():
    from judgekit.llm.identity import canonical_json, identity_key, request_identity

    ident = request_identity(provider="openai", model="m", base_url=None,
                             messages=[{"role": "user", "content": "é"}],
                             sampling={"temperature": 0.5}, schema=STAGE.schema,
                             template="answer.j2", template_hash="abc", draw=2)
    assert identity_key(ident, canonical_json(STAGE.schema)) == identity_key(ident)


def test_a_failed_answer_in_a_cassette_is_replayed_unless_retry_failed(make_client, tmp_path):
    """A committed cassette's failed answers replay as the failures they were (no
    provider, no rewrite of the cassette); retry_failed asks the model again."""
    from judgekit.llm.providers.mock import FunctionProvider

    cas = tmp_path / "c.json"
    first = make_client(use_cache=False, cassette=cas,
                        providers={"mock/j": FunctionProvider(lambda req: "not json")})
    res = first.run_sync(STAGE, {"question": "q"}, model="mock/j")
    first.close()
    assert not res.ok and res.kind == "parse"
    recorded = cas.read_bytes()
    cas.with_name("c.json.lock").unlink(missing_ok=True)

    def never(req):
        raise AssertionError("the provider was called")

    again = make_client(use_cache=False, cassette=cas,
                        providers={"mock/j": FunctionProvider(never)})
    res = again.run_sync(STAGE, {"question": "q"}, model="mock/j")
    again.close()
    assert not res.ok and res.kind == "parse" and res.source == "cassette"
    assert cas.read_bytes() == recorded and not cas.with_name("c.json.lock").exists()
    retry = make_client(use_cache=False, cassette=cas, retry_failed=True,
                        providers={"mock/j": FunctionProvider(lambda req: GOOD)})
    res = retry.run_sync(STAGE, {"question": "q"}, model="mock/j")
    retry.close()
    assert res.ok and res.output.answer == "Paris" and res.source == "provider"


def test_prefetch_knows_misses_without_a_query_and_keeps_large_entries(tmp_path):
    """A prefetch reads many keys in one query; a key it did not find is then a miss
    with no query of its own, and an entry stored as a file (over diskcache's 32 KB)
    is present though not prefetched, so it is read, never asked for again."""
    from judgekit.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "c")
    big = {"ok": True, "text": "x" * 50_000}
    cache.set("big", big)
    cache.set("small", {"ok": True, "text": "y"})
    cache.prefetch(["big", "small", "gone"])
    assert cache._absent == {"gone"}  # noqa: SLF001 - the prefetch's own bookkeeping
    assert cache.get("gone") is None and cache.misses == 1
    assert cache.get("big") == big and cache.get("small")["text"] == "y"
    # a later peek (after a claim) reads the table: another process may have written it
    other = ResponseCache(tmp_path / "c")
    other.set("gone", {"ok": True, "text": "z"})
    other.close()
    assert cache.peek("gone")["text"] == "z"
    cache.close()


def test_map_sends_the_first_requests_before_rendering_every_call(make_client, tmp_path):
    """map renders, looks up and schedules PREPARE_CHUNK calls at a time: the first
    request leaves before the last call is rendered, and results keep the calls' order."""
    from judgekit.llm import Call
    from judgekit.llm.client import PREPARE_CHUNK
    from judgekit.llm.providers.mock import FunctionProvider

    prepared: list[int] = []
    at_first_call: list[int] = []

    def answer(req):
        import re

        if not at_first_call:
            at_first_call.append(len(prepared))
        q = re.search(r"question \d{6}", req.messages[-1]["content"])
        return json.dumps({"answer": q.group(0) if q else "?", "confidence": 0.5})

    client = make_client(use_cache=True, cache_dir=tmp_path / "cache",
                         providers={"mock/j": FunctionProvider(answer)})
    real = client.prepare

    def counting(stage, call):
        prepared.append(1)
        return real(stage, call)

    client.prepare = counting  # type: ignore[method-assign]
    n = 3 * PREPARE_CHUNK
    calls = [Call({"question": f"question {i:06d}"}, "mock/j") for i in range(n)]
    res = client.map_sync(STAGE, calls)
    client.close()
    assert len(res) == n and all(r.ok for r in res)
    # scheduled calls start at the next chunk boundary's yield, and need a few awaits
    # (cache, claim) before they reach the provider: within two chunks, not after all
    assert at_first_call[0] <= 2 * PREPARE_CHUNK < n
    assert [r.output.answer for r in res] == [f"question {i:06d}" for i in range(n)]


def test_a_key_in_the_base_url_never_reaches_disk(fake_api, make_client, tmp_path):
    """Azure-style gateways take the key as ?api-key=; user:pass@ hosts take a password:
    neither enters identities, cache keys or cassettes."""
    from judgekit.llm.secrets import public_url

    assert public_url("https://u:pw-SECRET-123@h.example:8443/v1?api-key=SECRETSECRET1&x=1") \
        == "https://u@h.example:8443/v1?api-key=%3Credacted%3E&x=%3Credacted%3E"
    fake_api.default = Reply(body=openai_body(GOOD))
    cas = tmp_path / "cassettes" / "k.json"
    client = make_client(cassette=cas, cassette_mode="new")
    client.settings.base_urls["openai"] = fake_api.url + "/v1?api-key=SECRETSECRET123"
    client._secrets = client._secret_list()
    got = client.map_sync(STAGE, [_call("q")])
    client.close()
    assert got[0].ok
    assert fake_api.requests[0]["query"] == {"api-key": "SECRETSECRET123"}  # still used
    for folder in (tmp_path / "cassettes", tmp_path / "cache"):
        for f in folder.rglob("*"):
            if f.is_file():
                assert b"SECRETSECRET123" not in f.read_bytes(), f


def test_the_encoded_request_body_is_the_chat_payload():
    """What the OpenAI-compatible providers send (the messages' JSON carried from the key,
    the response format encoded once per schema) decodes to ``chat_payload``'s object,
    for every schema mode, with and without the messages' JSON and sampling, and with
    text that is not ASCII."""
    from judgekit.llm.identity import canonical_json
    from judgekit.llm.providers.openai import chat_body, chat_payload
    from judgekit.llm.types import ProviderRequest

    schema_a = {"type": "object", "properties": {"answer": {"type": "string"}}}
    schema_b = {"type": "object", "properties": {"score": {"type": "integer"}}}
    msgs = [{"role": "system", "content": "Réponds en JSON — «ok»"},
            {"role": "user", "content": 'a "quoted" \\ line\nnext'}]
    for schema in (schema_a, schema_b, None):
        for mode in ("json_schema", "json_object", "none"):
            for sampling in ({}, {"temperature": 0.0, "seed": 7, "max_tokens": 64,
                                  "logprobs": True, "top_logprobs": 3}):
                for carried in (None, canonical_json(msgs)):
                    req = ProviderRequest(model="m", messages=msgs, sampling=sampling,
                                          schema=schema, schema_name="s",
                                          messages_json=carried)
                    body = chat_body("m", req, schema_mode=mode,
                                     max_tokens_field="max_completion_tokens")
                    assert isinstance(body, bytes)
                    assert json.loads(body.decode("utf-8")) == chat_payload(
                        "m", req, schema_mode=mode, max_tokens_field="max_completion_tokens")
    # the format of one schema is not served for another (same mode and name)
    one = chat_body("m", ProviderRequest(model="m", messages=msgs, sampling={},
                                         schema=schema_a, schema_name="s"))
    two = chat_body("m", ProviderRequest(model="m", messages=msgs, sampling={},
                                         schema=schema_b, schema_name="s"))
    assert json.loads(one)["response_format"]["json_schema"]["schema"] == schema_a
    assert json.loads(two)["response_format"]["json_schema"]["schema"] == schema_b
