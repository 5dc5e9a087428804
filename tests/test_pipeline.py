"""The run pipeline: in-memory runs with provider objects, one call-summary shape, typed
payloads that forbid unknown fields, saving as a separate step, prerequisites checked
before any call, and the schema-filling mock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

import judgekit
from judgekit.llm import Client, ClientSettings
from judgekit.llm.providers.mock import FunctionProvider, ScriptProvider, fill_schema

ROOT = Path(__file__).resolve().parent.parent


def _pairs(folder: Path, n: int = 10) -> Path:
    p = folder / "pairs.jsonl"
    p.write_text("".join(json.dumps({"id": f"p{i}", "question": f"Q{i}?", "a": f"good {i}",
                                     "b": f"bad {i}"}) + "\n" for i in range(n)))
    return p


def test_probe_with_mock_auto_is_typed_and_writes_no_file(tmp_path, monkeypatch):
    data = _pairs(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    cache = Path(os.environ["JUDGEKIT_CACHE_DIR"])
    res = judgekit.run({"method": "probe", "data_path": str(data),
                        "models": {"judge": "mock/auto"}})
    from judgekit.methods.probe import ProbePayload

    assert isinstance(res.payload, ProbePayload) and res.payload.n_pairs == 10
    assert not hasattr(res, "n_pairs")  # fields are the payload's, read typed
    assert res.calls.total == 10 * 7 and res.calls.failed + res.calls.cached >= 0
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert not cache.exists()
    again = judgekit.run({"method": "probe", "data_path": str(data),
                          "models": {"judge": "mock/auto"}})
    assert again.model_dump() == res.model_dump()  # same seed, same numbers


def test_every_method_reports_calls_in_one_shape():
    demo = judgekit.run("demo", cassette_mode="none", save=False)
    audit = judgekit.run("nodata_west_frisian", cassette_mode="none", save=False)
    synthetic = judgekit.run("nodata_synthetic", save=False, evaluators=["dt_decimal"],
                             phi=[0.5], escape_rounds=[1])
    shapes = {frozenset(r.calls.model_dump()) for r in (demo, audit, synthetic)}
    assert len(shapes) == 1
    # 12 tagging calls asked again twice each (rotated, placebo): 36 + 24
    assert demo.calls.total == 60 and demo.calls.cached == 60 and demo.calls.provider_calls == 0
    assert set(demo.calls.per_stage) == {"interpretations", "system", "tagger"}
    assert synthetic.calls.total == 0


def test_a_function_provider_drives_a_method_in_memory(tmp_path):
    seen = []

    def judge(req):
        seen.append(req)
        return {"winner": "A", "reason": "first"}

    with Client(ClientSettings(use_cache=False, progress=False),
                providers={"mock/first": FunctionProvider(judge)}) as client:
        res = judgekit.run({"method": "probe", "data_path": str(_pairs(tmp_path)),
                            "models": {"judge": "mock/first"}}, client=client)
    assert len(seen) == res.calls.total == res.calls.provider_calls == 70
    assert res.payload.position_bias.verdict == "biased" and res.payload.position_bias.bias == 0.5
    assert not (tmp_path / "runs").exists()
    out = res.save(tmp_path / "saved")
    saved = judgekit.load_results(out)
    assert saved.model_dump() == res.model_dump()
    assert len(list(saved.detail("items"))) == 10 == len(list(res.detail("items")))
    assert "| transform |" in (out / "report.md").read_text()
    assert "<table>" in (out / "report.html").read_text()
    # the probe's figure: flips against the noise floor and biases, with intervals
    assert (out / "probe.png").stat().st_size > 5000
    page = (out / "report.html").read_text()
    assert "probe.png" in page
    # per pair readable fields and a filter by what flipped, not a JSON dump
    assert "<option value='flipped under swap'>" in page and "<b>Answer A</b>" in page
    assert '{"id":' not in page
    with pytest.raises(judgekit.ConfigError, match="not empty"):
        res.save(out)


def test_providers_hold_their_own_scripts():
    a, b = ScriptProvider(["x", "y"]), ScriptProvider(["z"])
    assert a.script == ["x", "y"] and b.script == ["z"] and a.calls == b.calls == 0


def test_payload_models_forbid_unknown_fields():
    from judgekit.core.methods import find

    ProbeResults = find("probe").result_model()

    with pytest.raises(ValidationError, match="typo_field"):
        ProbeResults.model_validate({"method": "probe", "judge": "m", "n_pairs": 0,
                                     "transforms": [], "position_bias": None,
                                     "items": {"file": "items.jsonl", "count": 0},
                                     "level": 0.95, "repeats": 2,
                                     "noise_floor": {}, "typo_field": 1})
    # closed all the way down: a typo inside a nested record is refused too
    with pytest.raises(ValidationError, match="reate"):
        ProbeResults.model_validate({"method": "probe", "judge": "m", "n_pairs": 0,
                                     "transforms": [], "position_bias": None,
                                     "items": {"file": "items.jsonl", "count": 0},
                                     "level": 0.95, "repeats": 2,
                                     "noise_floor": {"reate": 0.1}})


@pytest.mark.parametrize("schema,check", [
    ({"type": "object", "properties": {"n": {"type": "integer", "minimum": 2, "maximum": 4}},
      "required": ["n"]}, lambda v: 2 <= v["n"] <= 4),
    ({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2}, lambda v: len(v) >= 2
     and set(v) <= {"a", "b"}),
    ({"anyOf": [{"type": "null"}, {"type": "boolean"}]}, lambda v: isinstance(v, bool)),
    ({"$defs": {"X": {"type": "object", "properties": {"s": {"type": "string",
                                                            "minLength": 5}}}},
      "$ref": "#/$defs/X"}, lambda v: len(v["s"]) >= 5),
])
def test_fill_schema_gives_valid_values(schema, check):
    import random

    for seed in range(20):
        assert check(fill_schema(schema, random.Random(seed)))


def _judgekit(*args: str, env: dict[str, str] | None = None, code: str | None = None
              ) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    if code is None:
        exe = Path(sys.executable).with_name("judgekit")
        return subprocess.run([str(exe), *args], capture_output=True, text=True, env=full,
                              timeout=120)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_a_missing_extra_exits_2_before_any_call(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"method: probe\ndata_path: {_pairs(tmp_path)}\n"
                   "models: {judge: litellm/gpt-4o-mini}\n")
    # litellm made unimportable in the child process, as in an environment without it
    code = ("import sys; sys.modules['litellm'] = None\n"
            "from judgekit.cli.commands import main; main(sys.argv[1:])")
    p = _judgekit("run", str(cfg), "--out", str(tmp_path / "out"), code=code)
    assert p.returncode == 2, p.stderr
    assert "judgekit[litellm]" in p.stderr and "models.judge" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


def test_the_managed_local_model_needs_the_local_extra(monkeypatch):
    import importlib.util

    from judgekit.core.errors import MissingDependencyError
    from judgekit.llm.providers import check_requirements

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"judgekit\[local\]"):
        check_requirements("local/gemma-3-270m")
    check_requirements("local/gemma-3-270m", "http://127.0.0.1:8080/v1")  # a server you run
    check_requirements("mock/auto")


def test_a_dataset_is_one_decorated_loader(tmp_path, monkeypatch):
    """Registering a loader makes the dataset known to config validation, the query
    loader and `judgekit data list`, with no other edit."""
    from judgekit.data import registry
    from judgekit.data.qa import Query, load_dataset_queries
    from judgekit.methods.vbscore.config import DatasetSpec

    registry._loaded()
    monkeypatch.setattr(registry.DATASETS, "_loaded", dict(registry.DATASETS._loaded))

    @registry.dataset("tiny_tsv", formats=("tsv",), rejected=True, licence="CC0-1.0")
    def load_tiny(path):
        """Tab-separated question and answer."""
        rows = [ln.split("\t") for ln in path.read_text().splitlines() if ln]
        return [Query(f"t{i}", q, gold=a, accepted=[a], rejected=["no"])
                for i, (q, a) in enumerate(rows)]

    f = tmp_path / "tiny.tsv"
    f.write_text("Capital of France?\tParis\nTwo plus two?\tfour\n")
    assert DatasetSpec(name="tiny_tsv", path=str(f)).name == "tiny_tsv"
    qs = load_dataset_queries("tiny_tsv", f)
    assert [q.gold for q in qs] == ["Paris", "four"]
    assert registry.get("tiny_tsv").description == "Tab-separated question and answer."
    assert "tiny_tsv" in registry.names("questions")
    with pytest.raises(ValueError, match="unknown dataset 'nope'"):
        DatasetSpec(name="nope")
    with pytest.raises(ValueError, match="already registered"):
        registry.dataset("tiny_tsv", formats=("csv",), licence="x")(load_tiny)


def test_data_list_reads_the_registry():
    from judgekit.core.methods import all_methods
    from judgekit.data.registry import all_datasets, groups

    all_methods()  # the No-Data bit-string sets register with their method's package
    proc = _judgekit("data", "list")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["dataset", "kind", "format", "licence"]
    names = [ln.split()[0] for ln in lines[1:]]
    assert names == [d.name for d in all_datasets()] + list(groups())
    assert "nodata_bitstrings" in names and "west_frisian" in names
    arc = next(ln for ln in lines if ln.startswith("arc "))
    assert "CC BY-SA 4.0" in arc and "allenai/ai2_arc" in arc


def test_two_function_providers_never_share_cached_answers(tmp_path):
    """Provider objects take their model name from the client's key, so one cache holds
    each judge's own answers."""
    from judgekit.methods.probe.config import ProbeConfig
    from judgekit.methods.probe.runner import stage as pairwise_stage

    st = pairwise_stage(ProbeConfig(data_path=str(_pairs(tmp_path)),
                                    models={"judge": "mock/a"}))
    variables = {"question": "q", "first": "x", "second": "y", "label_a": "A",
                 "label_b": "B"}
    settings = ClientSettings(cache_dir=str(tmp_path / "cache"), progress=False)
    with Client(settings, providers={
            "mock/a": FunctionProvider(lambda r: {"winner": "A", "reason": "a"}),
            "mock/b": FunctionProvider(lambda r: {"winner": "B", "reason": "b"})}) as client:
        got = [client.run_sync(st, variables, model=m).output.winner for m in ("mock/a",
                                                                              "mock/b")]
    assert got == ["A", "B"]
