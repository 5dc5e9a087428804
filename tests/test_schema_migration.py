"""results.json moved to schema 2 (closed all the way down, typed payloads): a folder
written by judgekit 0.1 (schema 1) still loads, reads the same and reports the same; the
packaged experiments give the same bytes as schema 1 did apart from the version."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import judgekit
from judgekit.runs.folder import report_doc

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "schema1"


@pytest.mark.parametrize("name", ["demo", "probe_local", "nodata_west_frisian"])
def test_a_schema_1_folder_loads_and_reads_the_same(tmp_path, name):
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    old = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    res = judgekit.load_results(folder)
    assert old["schema_version"] == 1 and res.schema_version == 1
    again = res.model_dump(mode="json")
    assert again == old  # every field read back, none added, none lost
    assert res.headline()
    assert report_doc(res).title
    name_of = next(iter(res.details()))
    with open(folder / f"{name_of}.jsonl", encoding="utf-8") as fh:
        assert len(list(res.detail(name_of))) == sum(1 for ln in fh if ln.strip())


@pytest.mark.parametrize("name", ["demo", "probe_local", "nodata_west_frisian"])
def test_the_packaged_experiments_give_schema_1_bytes_but_the_version(tmp_path, name):
    res = judgekit.run(name, out=tmp_path / name, cassette_mode="none",
                       cache_dir=str(tmp_path / "cache"))
    assert res.schema_version == judgekit.RunResult.model_fields["schema_version"].default == 2
    new = (tmp_path / name / "results.json").read_text(encoding="utf-8")
    old = (FIXTURES / name / "results.json").read_text(encoding="utf-8")
    # the fixtures were written from a checkout at /work/main; the packaged experiments'
    # data paths resolve to wherever judgekit is installed now
    from judgekit.core.resources import resource_dir

    old = old.replace("/work/main/experiments", str(resource_dir("experiments")))
    old = old.replace('"schema_version": 1,', '"schema_version": 2,')
    if name == "probe_local":
        # issue 31 changed one figure on purpose: the natural length preference now uses
        # both orders (the swap transform's verdicts), so a position bias cancels instead
        # of leaking in; everything else keeps its bytes
        n, o = json.loads(new), json.loads(old)
        assert o["length_bias"]["n"] == 10 and n["length_bias"]["n"] == 20
        assert n["length_bias"]["orders"].startswith("both orders")
        assert n["length_bias"]["preference"] == 0.0  # was -0.238: the position bias
        assert n["config"].pop("grader") == "judgekit"  # a new option, at its default
        assert n["config"].pop("label_error") is None  # issue 33's, at its default
        assert n["config"].pop("labels_file") is None  # issue 35's, at its default
        # issue 34 made stopping at the first finding the sequential default
        assert n["config"].pop("sequential_on") == "finding"
        assert o["config"].pop("sequential_on") == "all"
        # issue 34: the label-name effect (rename) has its own headline row
        lab = n.pop("label_bias")
        assert lab == {k: next(b for b in n["biases"] if b["name"] == "rename")[k]
                       for k in lab}
        # issue 34: "consistent" only when flips are also low in absolute terms
        from judgekit.methods.probe.analysis import consistency_words

        for tn, to in zip(n["transforms"], o["transforms"], strict=True):
            if to["verdict"].startswith("consistent: not shown above"):
                assert tn["verdict"] == consistency_words(tn["flip_rate"], tn["n"],
                                                          "the placebo", 0.95)
                assert not tn["verdict"].startswith("consistent")  # 10 pairs: too few
            else:
                assert tn["verdict"] == to["verdict"]
            tn.pop("verdict"), to.pop("verdict")
        for doc in (n, o):
            doc.pop("length_bias")
        assert n == o
    elif name == "demo":
        n, o = json.loads(new), json.loads(old)
        # issue 36's option, at its default (the demo's 12 tagging calls are all checked)
        assert n["config"].pop("tagger_check_calls") == 200
        _issue_33_vb(n, o, res)
        assert n == o
    elif name == "nodata_west_frisian":
        n, o = json.loads(new), json.loads(old)
        _issue_33_agreement(n["known"]["agreement"], o["known"]["agreement"])
        # issue 34's option, pinned by the experiment: its cassette's re-reads used the
        # verifier's own words
        assert n["config"].pop("reread_instruction") == "same"
        assert n["config"].pop("labels_file") is None  # issue 35's, at its default
        # issue 49: people's labels read back (an option, at its default); every decision
        # but trust names the items to score by hand; the verifier's paraphrase readings
        assert n["config"].pop("human_labels") is None
        v, ov = n["verdict"], o["verdict"]
        assert isinstance(v.pop("items_to_score"), int)
        assert v["reason"].startswith(ov.pop("reason")) and "by hand" in v.pop("reason")
        for key in ("paraphrase_agreement", "rereads_counted", "reread_human_agreement"):
            v["verifier"].pop(key, None)
        # issue 49: one class seen, kappa undefined, but its population interval stands
        lo, hi = v["label_agreement"].pop("kappa_ci")
        assert lo < 0 < hi <= 1 and ov["label_agreement"].pop("kappa_ci") is None
        assert n == o
    else:
        assert new == old
    for detail in res.details().values():
        got = (tmp_path / name / detail.file).read_bytes()
        want = (FIXTURES / name / detail.file).read_bytes()
        if name == "demo" and detail.file == "queries.jsonl":
            for a, b in zip(got.splitlines(), want.splitlines(), strict=True):
                row, old_row = json.loads(a), json.loads(b)
                # the per-query interval is judgekit's (Wilson for 0/1 replica scores,
                # else t); the percentile bootstrap only with >= 20 graded replicas
                assert row.pop("vb_ci") == row["vb_ci_normal"] and \
                    row.pop("vb_ci_bootstrap") is None
                assert row.pop("es_ci")[1] == old_row.pop("es_ci")[1]
                old_row.pop("vb_ci")
                # issue 49: the per-query interval is the bounded-mean betting interval
                # (VB on [-alpha/2, 1]): it holds the estimate and stays in the range
                for a, (lo, hi) in row.pop("vb_ci_normal").items():
                    assert -float(a) / 2 <= lo <= row["vb"][a] <= hi <= 1.0
                old_row.pop("vb_ci_normal")
                assert row == old_row
        else:
            assert got == want


def _issue_33_vb(n: dict, o: dict, res: judgekit.RunResult) -> None:
    """Issue 33: the dataset headline is Student t over queries with the range's ends as
    pseudo-observations (4 agreeing queries: [0.333, 1], not [1, 1]); the self-checks'
    Wilson limits changed where the continuity shift crossed 0 or 1 (the old closed form
    gave a limit beyond the estimate there)."""
    import numpy as np

    from judgekit.stats.bootstrap import bounded_mean_interval

    d, od = n["datasets"][0], o["datasets"][0]
    vbs = [q["vb"]["0.5"] for q in res.detail("queries")]
    assert d.pop("vb_ci") == list(bounded_mean_interval(np.array(vbs), -0.25, 1.0, 0.95))
    assert od.pop("vb_ci") == [1.0, 1.0] and d["vb"] == 1.0
    for key in ("es_ci", "vb_ci_by_alpha"):
        d.pop(key), od.pop(key)
    for check in (n["self_check"], o["self_check"]):
        check["interpretations"]["top_reading_agreement"].pop("ci")
        check["tagger"]["content_agreement"].pop("ci")


def _issue_33_agreement(n: dict, o: dict) -> None:
    """Issue 33: kappa, alpha and AC1 take Dirichlet-posterior intervals (percent keeps
    its Wilson interval); a ``note`` slot says when n is too small."""
    assert n.pop("note").startswith(f"only {n['n']} items: below 30 the agreement")
    assert n["cis"]["percent"] == o["cis"]["percent"]
    for k in ("kappa", "alpha", "ac"):
        lo, hi = n["cis"].pop(k)
        o["cis"].pop(k)
        assert lo <= n[k] <= hi


def test_a_newer_schema_is_refused_with_a_clear_line(tmp_path):
    folder = tmp_path / "future"
    shutil.copytree(FIXTURES / "probe_local", folder)
    doc = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    doc["schema_version"] = 3
    (folder / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(judgekit.DataError, match="schema_version 3"):
        judgekit.load_results(folder)
