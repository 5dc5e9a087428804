"""The VB-Score case study end to end on the mock provider, loaders and config errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from judgekit.data.qa import load_arc, load_truthfulqa, load_winograd, winograd_letter
from judgekit.llm.providers import mock

from .conftest import ROOT

CSV = ("Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"
       "Adversarial,Misc,Who is Q1?,ansA,ansA; A answer,wrong,src\n"
       "Adversarial,Misc,Who is Q2?,ansZ,ansZ,x,src\n")


def script(req):
    user = req.messages[-1]["content"]
    name = req.schema_name
    if name == "interpretations":
        return {"interpretations": [{"label": "A", "score": 1.0}, {"label": "B", "score": 0.0}]}
    if name == "system":
        return {"answers": ["ansA", "ansB"] if "Q1" in user else ["x", "y"]}
    if name == "tagger":
        table = {("Q1", 0): ["E1", "E2"], ("Q1", 1): ["E1", "none"],
                 ("Q2", 0): ["E2", "none"], ("Q2", 1): ["E1", "none"]}
        return {"tags": table[("Q1" if "Q1" in user else "Q2", req.draw)]}
    if name == "correctness":
        return {"correct": "<ANSWER>\nansA\n</ANSWER>" in user, "reason": "compared"}
    raise AssertionError(name)


def run_case(tmp_path, fn, out="out"):
    """The case study in memory with ``fn`` as mock/cs, saved to tmp_path/out."""
    import judgekit
    from judgekit.llm import Client, ClientSettings

    with Client(ClientSettings(cache_dir=tmp_path / "cache", progress=False),
                providers={"mock/cs": mock.FunctionProvider(fn)}) as client:
        res = judgekit.run(write_config(tmp_path), client=client)
    res.save(tmp_path / out)
    return res.model_dump(mode="json")


def write_config(tmp_path, **extra):
    data = tmp_path / "tqa.csv"
    data.write_text(CSV)
    cfg = {"method": "vbscore", "seed": 1, "replicas": 2, "interpretations": 2, "k": 2,
           "alpha": 0.5, "resamples": 500,
           "datasets": [{"name": "truthfulqa", "path": str(data), "n": 2}],
           "models": {"system": "mock/cs", "judge": "mock/cs"},
           "cache_dir": str(tmp_path / "cache"), "out": str(tmp_path / "out")}
    cfg.update(extra)
    path = tmp_path / "cfg.yaml"
    path.write_text(json.dumps(cfg))
    return path


def test_tiny_case_study_table_1_by_hand(tmp_path):
    res = run_case(tmp_path, script)
    pa = math.e / (1 + math.e)
    pb = 1 - pa

    def vb(es):
        return es - 0.5 * math.sqrt(es * (1 - es))

    q1 = [1.0, pa]
    q2 = [pb, pa]
    vb1, vb2 = np.mean([vb(e) for e in q1]), np.mean([vb(e) for e in q2])
    es1, es2 = np.mean(q1), np.mean(q2)
    row = res["datasets"][0]
    assert row["name"] == "truthfulqa" and row["n_queries"] == 2 and row["replicas"] == 2
    assert row["es"] == pytest.approx((es1 + es2) / 2)
    assert row["vb"] == pytest.approx((vb1 + vb2) / 2)
    assert row["accuracy"] == pytest.approx(0.5)
    d = np.array([vb1 - es1, vb2 - es2])
    t = d.mean() / (d.std(ddof=1) / math.sqrt(2))
    from scipy.stats import t as tdist

    assert row["p_value"] == pytest.approx(2 * tdist.sf(abs(t), 1))
    assert row["vb_ci"][0] <= row["vb"] <= row["vb_ci"][1]
    # 14 calls, and the 4 tagging calls asked again rotated and with a placebo id
    assert res["calls"] == {**res["calls"], "total": 22, "cached": 0, "failed": 0}
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| dataset | VB (alpha=0.5) | 95% CI | ES |" in report
    for fig in ("vb_vs_es.png", "vb_vs_alpha.png", "four_panel.png", "forest.png"):
        assert (tmp_path / "out" / fig).stat().st_size > 1000
    # rerun: every call is served from the cache and the results are identical
    first = (tmp_path / "out" / "results.json").read_bytes()
    run_case(tmp_path, script, out="again")
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["calls"]["provider_calls"] == 0 and again["calls"]["cached"] == 22
    assert {k: v for k, v in again.items() if k != "calls"} == \
        {k: v for k, v in json.loads(first).items() if k != "calls"}


def test_parse_failures_are_listed_not_scored(tmp_path):

    def broken(req):
        if req.schema_name == "tagger" and "Q2" in req.messages[1]["content"]:
            return "not json"
        return script(req)

    res = run_case(tmp_path, broken)
    assert res["failures_by_stage"] == {"tagger": 2}
    assert res["datasets"][0]["n_queries"] == 1 and res["calls"]["failed"] == 2
    assert "tagger: 2" in (tmp_path / "out" / "report.md").read_text()


def test_loaders_read_shipped_excerpts():
    tq = load_truthfulqa(ROOT / "experiments" / "data" / "truthfulqa_excerpt.csv")
    assert len(tq) == 12 and tq[0].text.startswith("What happens to you if you eat watermelon")
    assert tq[0].gold == "The watermelon seeds pass through your digestive system"
    assert "Nothing happens" in tq[0].accepted and "You die" in tq[0].rejected
    wsc = load_winograd(ROOT / "experiments" / "data" / "wsc_excerpt.xml")
    assert len(wsc) == 12
    assert wsc[0].gold == "The city councilmen" and wsc[1].gold == "the demonstrators"
    assert '"they"' in wsc[0].text and "feared violence" in wsc[0].text
    arc = load_arc(ROOT / "experiments" / "data" / "arc_challenge_dev_excerpt.jsonl")
    assert arc[0].id == "Mercury_SC_407695"
    assert arc[0].gold == "Record the details of the investigation."
    assert "D) Record the details" in arc[0].context


@pytest.mark.parametrize("raw,idx", [(" A  ", 0), ("B.", 1), (" B. ", 1), ("A.  ", 0)])
def test_winograd_letters(raw, idx):
    assert winograd_letter(raw) == idx


@pytest.mark.parametrize("change,needle", [
    ({"datasets": [{"name": "squad", "path": "x", "n": 1}]}, "datasets.0.name"),
    ({"datasets": [{"name": "truthfulqa", "path": "/nope.csv", "n": 1}]}, "/nope.csv"),
    ({"datasets": [{"name": "truthfulqa", "path": "@CSV", "n": 50}]}, "larger than"),
    ({"replicas": 1}, "replicas"),
    ({"alphas": [-0.5, 0.5]}, "alpha"),
    ({"models": {"system": "mock/cs", "judge": "mock/cs", "critic": "mock/cs"}}, "critic"),
    ({"models": {"system": "nowhere/m", "judge": "mock/cs"}}, "unknown provider"),
])
def test_bad_configs_exit_2_with_one_line(tmp_path, change, needle):
    path = write_config(tmp_path)
    doc = json.loads(path.read_text())
    if "datasets" in change and change["datasets"][0].get("path") == "@CSV":
        change["datasets"][0]["path"] = str(tmp_path / "tqa.csv")
    doc.update(change)
    path.write_text(json.dumps(doc))
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", str(path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], r.stderr


def test_unknown_role_on_command_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", str(write_config(tmp_path)),
                        "--model", "critic=mock/x"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "unknown role 'critic'" in r.stderr


def test_the_tagger_check_asks_a_seeded_sample_of_the_tagging_calls(tmp_path):
    """More tagging calls than tagger_check_calls: only that many are asked again (two
    re-asks each), the same ones for the same seed."""
    import hashlib

    import judgekit
    from judgekit.llm import Client, ClientSettings

    asked: list[str] = []

    def varied(req):
        user = req.messages[-1]["content"]
        h = int(hashlib.sha256(f"{user}|{req.draw}".encode()).hexdigest()[:8], 16)
        if req.schema_name == "tagger":
            asked.append(user)
            return {"tags": ["E" + str(1 + (h >> (2 * j)) % 2) for j in range(2)]}
        if req.schema_name == "system":
            return {"answers": [f"answer {(h >> j) % 5}" for j in range(2)]}
        return script(req)

    def run(folder):
        asked.clear()
        with Client(ClientSettings(use_cache=False, progress=False),
                    providers={"mock/cs": mock.FunctionProvider(varied)}) as client:
            res = judgekit.run(write_config(folder, replicas=10, tagger_check_calls=12),
                               client=client)
        return res.model_dump(mode="json"), list(asked)

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    doc, first = run(tmp_path / "a")
    assert doc["replica_failures"]["count"] == 0
    assert doc["self_check"]["tagger"]["calls"] == 12
    assert len(first) == 2 * 10 + 2 * 12  # every tagging call, then 12 asked twice more
    _, again = run(tmp_path / "b")
    assert sorted(again) == sorted(first)  # the same sample for the same seed
