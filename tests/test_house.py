"""The one-house layout: the top of judgekit/ is the public surface, every registry is
one generic Registry[T], run folders are read only through judgekit/runs, recorded
formats are one file each and readable by every surface, and old module names still
import (for one release)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from judgekit.core.errors import ConfigError, DataError
from judgekit.core.registry import Registry, RegistryCollision, did_you_mean

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "judgekit"


def test_top_level_holds_only_the_public_surface():
    assert sorted(p.name for p in PKG.glob("*.py")) == ["__init__.py", "api.py"]
    for d in ("core", "runs", "recorded", "methods", "report", "labelling", "view", "cli",
              "llm", "stats", "judging", "data"):
        assert (PKG / d / "__init__.py").is_file(), d


def test_no_module_outside_runs_names_the_results_file():
    out = subprocess.run(["git", "grep", "-l", r"results\.json", "--", "judgekit"],
                         cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert [f for f in out if not f.startswith("judgekit/runs/")] == []


def test_every_registry_is_a_generic_registry():
    from judgekit.core.methods import METHODS
    from judgekit.data.registry import DATASETS
    from judgekit.llm.providers.base import PROVIDERS
    from judgekit.llm.providers.mock import SCRIPTS
    from judgekit.recorded.base import FORMATS

    for reg in (METHODS, DATASETS, PROVIDERS, SCRIPTS, FORMATS):
        assert isinstance(reg, Registry)
    assert {"vbscore", "nodata/llm", "verdicts"} <= set(METHODS.names())
    assert {"openai", "anthropic", "litellm", "local", "mock"} <= set(PROVIDERS.names())
    import judgekit.recorded  # noqa: F401

    assert set(FORMATS.names()) == {"csv", "jsonl", "json", "inspect", "promptfoo",
                                    "llmbar", "alpaca_eval", "xlsx", "parquet"}


def test_registry_lazy_entries_collisions_and_did_you_mean():
    reg: Registry[object] = Registry("widget", kind=dict)
    reg.add_lazy("seeds", "judgekit.core.seeds:STREAMS")
    assert "seeds" in reg and reg.get("seeds")["probe.pairs"].id == 404
    reg.add("plain", {"a": 1})
    assert reg.add("plain", {"a": 1}) == {"a": 1}  # the same entry again is no collision
    with pytest.raises(RegistryCollision, match="widget 'plain' is already registered"):
        reg.add("plain", {"a": 2})
    with pytest.raises(RegistryCollision):
        reg.add_lazy("seeds", "judgekit.core.seeds:other")
    with pytest.raises(ConfigError, match=r"unknown widget 'plian'; did you mean 'plain'\?"):
        reg.get("plian")
    with pytest.raises(ConfigError, match=r"unknown widget 'zzz' \(known: seeds, plain\)"):
        reg.get("zzz")
    with pytest.raises(ConfigError, match="is a list, not a dict"):
        reg.add("bad", [1])
    deco = reg.register("via_decorator")
    assert deco({"b": 2}) == {"b": 2} and reg.get("via_decorator") == {"b": 2}
    assert did_you_mean("vbscor", ["vbscore", "probe"]) == "; did you mean 'vbscore'?"
    assert did_you_mean("x", ["vbscore"]) == ""


def test_a_built_in_name_is_never_silently_replaced():
    """Registering a method, format or provider under a built-in name raises unless
    ``replace=True`` (and the built-in is back afterwards)."""
    import dataclasses

    import judgekit.recorded  # noqa: F401
    from judgekit.core import methods
    from judgekit.llm.providers.base import PROVIDERS, Provider
    from judgekit.recorded.base import FORMATS

    fake = dataclasses.replace(methods.find("probe"), name="vbscore", experiment=None)
    with pytest.raises(RegistryCollision, match="method 'vbscore' is already registered"):
        methods.register(fake)
    assert methods.find("vbscore") is not fake and methods.find("vbscore").name == "vbscore"
    csv = FORMATS.get("csv")
    with pytest.raises(RegistryCollision, match="recorded format 'csv'"):
        FORMATS.add("csv", FORMATS.get("jsonl"))

    class Impostor(Provider):
        name = "openai"

    with pytest.raises(RegistryCollision, match="provider 'openai'"):
        PROVIDERS.register(Impostor)
    original = PROVIDERS.get("openai")
    try:
        assert PROVIDERS.register(Impostor, replace=True) is Impostor
        assert PROVIDERS.get("openai") is Impostor
        FORMATS.add("csv", FORMATS.get("jsonl"), replace=True)
        assert FORMATS.get("csv") is FORMATS.get("jsonl")
    finally:
        PROVIDERS.add("openai", original, replace=True)
        FORMATS.add("csv", csv, replace=True)
    assert PROVIDERS.get("openai") is original and FORMATS.get("csv") is csv


def test_unknown_method_provider_and_format_suggest_the_near_name():
    from judgekit.core.methods import find
    from judgekit.llm.providers.base import parse_model_string
    from judgekit.recorded.tables import read

    with pytest.raises(ConfigError, match="did you mean 'vbscore'"):
        find("vbscor")
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        parse_model_string("opneai/gpt-4o")
    with pytest.raises(DataError, match="did you mean 'llmbar'"):
        read(Path("x.json"), "llmbr", {})


def test_a_recorded_format_is_one_registration_read_by_every_surface(tmp_path):
    """A format that supplies only a table is read by analyse, the audit's reader and
    label (judged items derived from the table)."""
    from judgekit.analysis.source import load
    from judgekit.recorded.base import FORMATS, RecordedFormat, Table
    from judgekit.recorded.judged import JudgedInput, read_records
    from judgekit.recorded.tables import read

    def table(path: Path, roles: dict[str, str]) -> Table:
        rows = [dict(zip(("id", "input", "output", "judge"), ln.split("|"), strict=True))
                for ln in path.read_text().splitlines()]
        return Table("pointwise", rows, {"id": "id", "judge": "judge"})

    FORMATS.add("pipes", RecordedFormat("pipes", suffixes=(".pipes",), table=table))
    try:
        f = tmp_path / "v.pipes"
        f.write_text("a|2+2?|4|pass\nb|3+3?|7|pass\nc|1+1?|2|fail\n")
        t = read(f, "auto", {})
        assert t.shape == "pointwise" and [r["judge"] for r in t.rows] == ["pass"] * 2 + [
            "fail"]
        items = read_records(f, JudgedInput(data_format="pipes"))
        assert [(i["Prompt"], i["Output"], i["Label"], i["Source"]) for i in items] == [
            ("2+2?", "4", 1, "a"), ("3+3?", "7", 1, "b"), ("1+1?", "2", 0, "c")]
        src = load(f)
        assert [(x.id, x.verdict) for x in src.items] == [("a", 1), ("b", 1),
                                                               ("c", 0)]
    finally:
        FORMATS.remove("pipes")


def test_json_formats_are_told_apart_by_their_sniffers(tmp_path):
    from judgekit.recorded.tables import format_of

    cases = {
        "llm.json": [{"input": "q", "output_1": "a", "output_2": "b", "label": 1,
                      "results": []}],
        "ae.json": [{"generator_1": "x", "generator_2": "y", "preference": 1.0}],
        "insp.json": {"eval": {"task": "t"}, "samples": []},
        "pf.json": {"results": {"results": []}},
        "own.json": [{"Prompt": "p", "Output": "o", "Label": 1}],
    }
    want = {"llm.json": "llmbar", "ae.json": "alpaca_eval", "insp.json": "inspect",
            "pf.json": "promptfoo", "own.json": "json"}
    for name, doc in cases.items():
        (tmp_path / name).write_text(json.dumps(doc))
        assert format_of(tmp_path / name, "auto") == want[name], name
    assert format_of(tmp_path / "a.csv", "auto") == "csv"
    assert format_of(tmp_path / "a.eval", "auto") == "inspect"
    (tmp_path / "other.json").write_text("[1, 2]")
    with pytest.raises(DataError, match="none of the JSON formats"):
        format_of(tmp_path / "other.json", "auto")
    with pytest.raises(DataError, match=r"cannot tell the format from the suffix \.xyz"):
        format_of(tmp_path / "a.xyz", "auto")


def test_old_module_names_import_the_new_modules_with_a_warning():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    import judgekit.spec\nexcept DeprecationWarning as e:\n"
            "    print('warned:', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "warned: judgekit.spec is now judgekit.core.spec" in out.stdout
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import judgekit.spec as old
        import judgekit.vbscore.metric as metric_old
        from judgekit.data.external import JudgedInput
        from judgekit.verdicts.read import read

        import judgekit.core.spec as new
        import judgekit.methods.vbscore.metric as metric_new
    assert old is new and metric_old is metric_new
    assert old.__spec__.name == "judgekit.core.spec"
    from judgekit.recorded.judged import JudgedInput as J2
    from judgekit.recorded.tables import read as r2

    assert JudgedInput is J2 and read is r2
    from judgekit import moved

    assert moved("judgekit.probe.pairs") == "judgekit.methods.probe.pairs"
    assert moved("judgekit.llm.client") is None


def test_labelling_and_the_viewer_read_items_through_the_spec(tmp_path):
    """An analyse run's items come from the verdicts spec's items hook; a method with no
    hook cannot be labelled, and the viewer does not offer it."""
    import judgekit
    from judgekit.labelling.sources import label_source as load
    from judgekit.view.runs import discover, item_file

    f = tmp_path / "v.csv"
    f.write_text("id,judge,human\na,1,1\nb,0,\nc,1,0\n")
    judgekit.run({"method": "verdicts", "data_path": str(f)}, out=tmp_path / "runs" / "an")
    src = load(tmp_path / "runs" / "an")
    assert src.shape == "pointwise" and [x.id for x in src.items] == ["a", "b", "c"]
    judgekit.run({"method": "ondemand", "experiment": "simulation", "repeats": 2,
                  "systems": 2, "resamples": 50}, out=tmp_path / "runs" / "od")
    with pytest.raises(DataError, match="no item a judge gave a verdict on"):
        load(tmp_path / "runs" / "od")
    runs = {r.name: r for r in discover(tmp_path / "runs")}
    assert runs["an"].labelable and not runs["od"].labelable
    assert item_file(runs["an"]) == tmp_path / "runs" / "an" / "items.jsonl"
    assert runs["an"].judge == "v"  # a column called "judge" names no one: the file does


def test_an_old_module_path_never_shadows_a_public_function():
    """``import judgekit.compare`` (the old path of judgekit.analysis.comparison) warns and
    imports the module, and ``judgekit.compare`` stays the public function (a fresh
    process: the import is process state)."""
    code = ("import warnings; warnings.simplefilter('ignore')\n"
            "import judgekit.compare, judgekit, sys\n"
            "assert callable(judgekit.compare) and judgekit.compare.__name__ == 'compare'\n"
            "assert sys.modules['judgekit.compare'].__name__ == 'judgekit.analysis.comparison'\n"
            "from judgekit.compare import compare\n"
            "assert compare is judgekit.compare\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
