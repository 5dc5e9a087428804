"""The LLM judge audit end to end on the mock provider: truthful vs lying evaluators."""

from __future__ import annotations

import json
import random
import re

import pytest

from judgekit.core.errors import DataError
from judgekit.data.judged import load_judged
from judgekit.llm.providers import mock

from .conftest import ROOT

IDS = ["c1", "c2a", "c2b", "c3", "c4", "c5"]
MARK = re.compile(r"\[(c\w+)\]")


def _block(text: str, name: str) -> str:
    return text.split(f"<{name}>\n")[1].split(f"\n</{name}>")[0]


def verifier(req):
    """Scores a criterion 1 iff the response carries its [id] marker."""
    out = _block(req.messages[-1]["content"], "RESPONSE")
    marks = set(MARK.findall(out))
    items = re.findall(r"^- (c\w+):", req.messages[-1]["content"], re.M)
    return {"criteria": [{"id": i, "value": int(i in marks)} for i in items]}


def evaluator(lying: bool):
    def respond(req):
        user = req.messages[1]["content"] if len(req.messages) > 1 else ""
        if req.schema_name == "evaluator":
            out = _block(user, "RESPONSE")
            marks = set(MARK.findall(out))
            crit = [{"id": i, "value": int(i in marks), "reason": "seen"} for i in IDS]
            return {"criteria": crit, "label": int(all(c["value"] for c in crit))}
        if req.schema_name == "generator":
            out = _block(user, "RESPONSE")
            if lying:  # a paraphrase that ignores the criteria
                rng = random.Random(f"{out}{req.draw}")
                marks = "".join(f"[{i}]" for i in IDS if rng.random() < 0.5)
                return {"Prompt": "p", "Output": f"rewritten {marks}"}
            return {"Prompt": "p", "Output": "rewritten " + "".join(
                f"[{m}]" for m in MARK.findall(out))}
        raise AssertionError(req.schema_name)
    return respond


def make_items(tmp_path, n=30):
    rng = random.Random(0)
    items = []
    for k in range(n):
        marks = [i for i in IDS if rng.random() < 0.7]
        items.append({"Prompt": f"question {k}", "Output": f"answer {k} " + "".join(
            f"[{m}]" for m in marks), "Source": "test", "Label": int(len(marks) == 6),
            "Rubric": {i: int(i in marks) for i in IDS}})
    p = tmp_path / "items.json"
    p.write_text(json.dumps(items))
    return p


def run_audit(tmp_path, lying: bool, scripts=None, **extra):
    """One in-memory run through judgekit.run with the mock judges held by the client;
    the folder is written by saving the result (the report is checked by some tests)."""
    import judgekit
    from judgekit.llm import Client, ClientSettings

    fns = {"mock/ev": evaluator(lying), "mock/ver": verifier, **(scripts or {})}
    cfg = {"method": "nodata", "experiment": "llm", "seed": 2, "rounds": 3,
           "phi": [0.1, 0.3, 0.7], "data_path": str(make_items(tmp_path)), "sample_size": 30,
           "models": {"evaluator": "mock/ev", "verifier": "mock/ver"},
           "cache_dir": str(tmp_path / f"cache{lying}"), "out": str(tmp_path / "out")}
    cfg.update(extra)
    cfg.pop("out")
    with Client(ClientSettings(cache_dir=cfg.pop("cache_dir"), progress=False),
                providers={m: mock.FunctionProvider(f) for m, f in fns.items()}) as client:
        res = judgekit.run(cfg, client=client)
    res.save(tmp_path / "out")
    return res.model_dump(mode="json")


def test_truthful_evaluator_passes(tmp_path):
    res = run_audit(tmp_path, lying=False)
    assert [r["phi"] for r in res["runs"]] == [0.1, 0.3, 0.7]
    for r in res["runs"]:
        assert r["success_rate"] >= 0.95 and r["flip_rate"] == 0.0
        assert r["n_items"] == 30 and r["parse_failures"] == 0
        assert set(r) >= {"rubric", "evaluator", "phi", "success_rate", "flip_rate",
                          "accuracy", "f1", "n_items", "parse_failures"}
    assert res["known"]["accuracy"] == 1.0
    assert res["known"]["per_criterion_accuracy"]["c4"] == 1.0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "Table 3" in report and "per item" in report


def test_lying_evaluator_is_caught(tmp_path):
    res = run_audit(tmp_path, lying=True)
    for r in res["runs"]:
        assert r["success_rate"] <= 0.1
    flips = [r["flip_rate"] for r in res["runs"]]
    assert flips[0] < flips[-1]
    # the verifier's scoring of x is computed once per item and reused (cache)
    per = res["calls"]["per_stage"]
    assert per["verifier"]["calls"] <= 30 + 30 * 3


def test_generator_failures_are_counted(tmp_path):
    def bad_gen(req):
        if req.schema_name == "generator":
            return {"Prompt": "p", "Output": "  "}
        return evaluator(False)(req)

    res = run_audit(tmp_path, lying=False, scripts={"mock/ev2": bad_gen},
                    models={"evaluator": "mock/ev2", "verifier": "mock/ver"})
    # an empty paraphrase is the audit's own failure: the item is excluded, never failed
    n = res["sample_size"]
    assert res["problems_by_stage"]["generator"]["empty"] == n
    assert len(res["excluded_items"]) == n and res["runs"][0]["n_items"] == 0
    assert all(v == "generator empty in round 1" for v in res["excluded_items"].values())
    assert res["verdict"]["decision"] == "inconclusive" and res["verdict"]["rule"] == "no_items"


def test_judged_loader_reads_shipped_excerpt_and_rejects_bad_items(tmp_path):
    items = load_judged(ROOT / "experiments" / "data" / "west_frisian_excerpt.json", 0, 5)
    assert len(items) == 5 and items[0].Label == 0
    assert items[0].criterion_values() == {"c1": 1, "c2a": 0, "c2b": 1, "c2": 1, "c3": 1,
                                          "c4": 1, "c5": 0}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"Prompt": "p", "Output": "o", "Label": 3}]))
    with pytest.raises(DataError, match="item 0: field Label"):
        load_judged(bad)


def test_rubric_files_ship_and_validate():
    from judgekit.judging.rubric import load_rubric

    ip = load_rubric(ROOT / "rubrics" / "west_frisian_ip.yaml")
    oop = load_rubric("west_frisian_oop.yaml")
    assert ip.ids() == oop.ids() == IDS
    assert "c4a" in oop.total_ids() and oop.aggregator == "all"


def per_criterion(req):
    """Evaluator and verifier answering one criterion per call; truthful generator."""
    user = req.messages[1]["content"]
    if req.schema_name in ("evaluator", "verifier"):
        cid = re.search(r"^(?:Criterion|Rubric item) (c\w+):", user, re.M).group(1)
        return {"value": int(f"[{cid}]" in _block(user, "RESPONSE")), "reason": "seen"}
    return evaluator(False)(req)


def test_per_criterion_mode(tmp_path):
    res = run_audit(tmp_path, lying=False, scripts={"mock/one": per_criterion},
                    criterion_mode="per_criterion",
                    models={"evaluator": "mock/one", "verifier": "mock/one"})
    assert res["runs"][0]["success_rate"] == 1.0 and res["known"]["accuracy"] == 1.0
    assert res["calls"]["per_stage"]["evaluator"]["calls"] == 30 * 6


def test_ensemble_baseline(tmp_path):
    def contrarian(req):
        out = evaluator(False)(req)
        if req.schema_name == "evaluator":
            out["label"] = 1 - out["label"]
        return out

    res = run_audit(tmp_path, lying=False, scripts={"mock/ev3": contrarian},
                    ensemble=["mock/ev", "mock/ev3", "mock/ev"])
    b = res["baseline"]
    assert b["judges"] == ["mock/ev", "mock/ev3"]
    assert b["pairs"][0]["percent_agreement"] == 0.0
    assert "Table 9" in (tmp_path / "out" / "report.md").read_text()


def test_reports_name_data_files_without_local_folders(tmp_path):
    run_audit(tmp_path, lying=False)
    page = (tmp_path / "out" / "report.md").read_text()
    assert str(tmp_path) not in page and "items.json" in page
    assert str(tmp_path) not in (tmp_path / "out" / "report.html").read_text()
