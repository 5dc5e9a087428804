"""Reports a researcher reads at a glance: the synthetic item view with search over all
items, plain headings, typed scores with numeric alpha keys."""

from __future__ import annotations

import json
import re

import judgekit
from judgekit.report import html as rhtml


def test_synthetic_report_searches_every_item(tmp_path, monkeypatch):
    monkeypatch.setattr(rhtml, "MAX_ITEMS", 300)  # this small run has 996 items
    res = judgekit.run("nodata_synthetic", evaluators=["dt_decimal"], phi=[0.5],
                       escape_rounds=[1], out=str(tmp_path / "syn"))
    items = [json.loads(x) for x in (tmp_path / "syn" / "items.jsonl").read_text()
             .splitlines()]
    assert len(items) > rhtml.MAX_ITEMS
    page = (tmp_path / "syn" / "report.html").read_text()
    assert page.count("<details class='item'") == rhtml.MAX_ITEMS
    data = re.search(r"<script type='application/json' id='jk-rest-data'>(.*?)</script>",
                     page, re.S).group(1)
    rest = json.loads(data.replace("<\\/", "</"))
    assert len(rest) == len(items) - rhtml.MAX_ITEMS
    kind, summary, search, line = rest[0]
    rec = items[line - 1]
    assert kind == (f"{'success' if rec['success'] else 'failure'} · {rec['phenomenon']} · "
                    f"{rec['evaluator']}")
    assert rec["x"] in search and "<" not in search  # plain text, searchable
    assert f"<option value='{kind}'>" in page
    # plain words beside the paper's names; no empty seed-sweep column at seeds = 1
    assert "Table 3 layout" not in page and "Thm 5.2 bound" not in page
    assert "error bound (Thm 5.2)" in page and "successes over 1 seeds" not in page
    assert res.method == "nodata"


def test_script_json_cannot_close_its_element():
    got = rhtml._script_json(["</script><b>&<!--"])
    assert got == '["\\u003c/script\\u003e\\u003cb\\u003e\\u0026\\u003c!--"]'
    assert "<" not in got and ">" not in got and "&" not in got
    assert __import__("json").loads(got) == ["</script><b>&<!--"]


def test_vbscore_score_is_typed_with_numeric_alpha_keys(tmp_path):
    from judgekit.methods.vbscore.scorefile import score_file

    records = [{"query_id": "q1", "replica": r,
                "interpretations": [{"id": "Paris", "prob": 0.7},
                                    {"id": "Paris, Texas", "prob": 0.3}],
                "outputs": [{"tag": "Paris" if r < 2 else "none"}]} for r in range(3)]
    s = judgekit.methods.vbscore.score(records, alphas=[0.5, 1.0], resamples=200)
    assert isinstance(s, judgekit.methods.vbscore.VBScores)
    assert set(s.collection.vb) == {0.5, 1.0} and set(s.queries[0].vb_ci) == {0.5, 1.0}
    es = (0.7 + 0.7 + 0.0) / 3
    assert abs(s.collection.es - es) < 1e-12
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert s.model_dump(mode="json") == json.loads(json.dumps(score_file(
        path, alphas=[0.5, 1.0], k=None, seed=0, resamples=200)))


def test_run_results_key_alphas_by_number():
    res = judgekit.run("demo", cassette_mode="none", save=False)
    d = res.payload.datasets[0]
    assert set(d.vb_by_alpha) == {0.0, 0.25, 0.5, 0.75, 1.0}
    assert set(res.model_dump(mode="json")["datasets"][0]["vb_by_alpha"]) == {
        "0.0", "0.25", "0.5", "0.75", "1.0"}


def test_demo_report_shows_each_figure_once_and_its_headline_first(tmp_path):
    judgekit.run("demo", cassette_mode="none", out=str(tmp_path / "d"))
    page = (tmp_path / "d" / "report.html").read_text()
    assert page.count("alt='four_panel.png'") == 1 and page.count("alt='forest.png'") == 1
    assert "alt='vb_vs_es.png'" not in page and "alt='vb_vs_alpha.png'" not in page
    assert (tmp_path / "d" / "vb_vs_es.png").exists()  # still saved on its own
    # the warning, then the headline with its interval and n, before any table
    first_table = page.index("<table>")
    # four agreeing queries keep a width (t on 3 df, the range [-0.25, 1]'s ends as
    # half-weight pseudo-observations), not the percentile bootstrap's [1.000, 1.000]
    assert page.index("class='warning'") < page.index("Headline: demo: VB = 1.000 [0.333, "
                                                      "1.000]") < first_table
    assert "n = 4 queries" in page[:first_table]


def test_no_report_shows_literal_markdown(tmp_path):
    """Every report's prose reaches the HTML page without Markdown syntax (the probe's
    said "**Direction**"), and the page of a large run is bounded (the rest is paged by
    `judgekit view`)."""
    from judgekit.report.document import Doc, Para, to_html

    for name in ("probe_local", "nodata_west_frisian", "demo"):
        judgekit.run(name, cassette_mode="none", out=str(tmp_path / name))
        page = (tmp_path / name / "report.html").read_text()
        prose = re.sub(r"<(script|style|code|pre)\b.*?</\1>", "", page, flags=re.S)
        assert "**" not in prose, name
    assert "**" not in to_html(Doc("t", [Para("plain words")]))


def test_a_large_run_keeps_report_html_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(rhtml, "MAX_ITEMS", 50)
    monkeypatch.setattr(rhtml, "MAX_SUMMARISED", 100)
    res = judgekit.run("nodata_synthetic", evaluators=["dt_decimal"], phi=[0.5],
                       escape_rounds=[1], out=str(tmp_path / "syn"))
    page = (tmp_path / "syn" / "report.html").read_text()
    assert page.count("<details class='item'") == 50
    data = re.search(r"<script type='application/json' id='jk-rest-data'>(.*?)</script>",
                     page, re.S).group(1)
    assert len(json.loads(data.replace("<\\/", "</"))) == 100
    n = sum(1 for _ in (tmp_path / "syn" / "items.jsonl").open())
    assert f"The other {n - 150} are in items.jsonl" in page and "judgekit view" in page
    assert res is not None
