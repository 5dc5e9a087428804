"""Readers of untrusted structure have limits (issue 51): JSON and YAML nested past the
reader's depth, duplicate YAML keys and CSV columns, loosely typed promptfoo files, and
templates that recurse, loop or build huge values end in one line each, never a
traceback or a render that runs until killed."""

from __future__ import annotations

import json

import pytest

from judgekit.core.errors import TemplateError
from judgekit.llm.templates import MAX_RENDER_CHARS, STEP_BUDGET, TemplateLibrary

from .test_standalone import jk

DEEP = "[" * 100_000 + "]" * 100_000


def _one_line(r, *words: str) -> None:
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = [x for x in r.stderr.strip().splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("name,body", [
    ("deep.json", DEEP),
    ("deep.jsonl", '{"id": "a", "judge": 1, "x": ' + DEEP + "}\n"),
])
def test_json_nested_past_the_readers_depth_is_one_line(tmp_path, name, body):
    (tmp_path / name).write_text(body)
    r = jk("analyse", name, "--out", "out", cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, name, "nested more than")


def test_yaml_nested_too_deep_or_with_a_key_twice_is_one_line(tmp_path):
    (tmp_path / "deep.yaml").write_text("method: probe\nx: " + DEEP + "\n")
    r = jk("run", "deep.yaml", cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, "deep.yaml", "nested more than")
    (tmp_path / "twice.yaml").write_text("method: probe\ndata_path: a.jsonl\n"
                                         "data_path: b.jsonl\nmodels: {judge: mock/auto}\n")
    r = jk("run", "twice.yaml", cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, "twice.yaml", "key 'data_path' appears twice", "line 3")


def test_a_csv_column_given_twice_is_refused(tmp_path):
    (tmp_path / "v.csv").write_text("id,judge,judge,human\n1,1,0,1\n2,0,1,0\n")
    r = jk("analyse", "v.csv", "--out", "out", cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, "v.csv", "column 'judge' appears twice")


def test_promptfoo_prompt_and_provider_as_plain_strings(tmp_path):
    rows = [{"prompt": f"Is {i} even?", "provider": "openai:gpt-4o", "testIdx": i,
             "response": {"output": "yes" if i % 2 == 0 else "no"},
             "gradingResult": {"componentResults": [{
                 "assertion": {"type": "llm-rubric", "value": "correct"},
                 "pass": i % 3 != 0, "reason": "ok"}]}} for i in range(6)]
    (tmp_path / "pf.json").write_text(json.dumps({"results": {"results": rows}}))
    r = jk("analyse", "pf.json", "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    items = [json.loads(x) for x in (tmp_path / "out" / "items.jsonl").read_text()
             .splitlines()]
    assert len(items) == 6 and items[0]["input"] == "Is 0 even?"
    rows[2]["gradingResult"]["componentResults"] = "not a list"
    (tmp_path / "pf.json").write_text(json.dumps({"results": {"results": rows}}))
    r = jk("analyse", "pf.json", "--out", "out2", cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, "pf.json", "result 2", "componentResults is not a list")


@pytest.mark.parametrize("source,why", [
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
     f"more than {STEP_BUDGET:,} loop steps"),
    ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recurses too deeply"),
    ("{{ 'x' * 10000000000 }}", "repeating a value 10,000,000,000 times"),
    ("{{ 9 ** 9999999 }}", "a power of 9999999"),
    ("{% for i in range(99999) %}{{ 'y' * 99 }}{% endfor %}",
     f"more than {MAX_RENDER_CHARS:,} characters"),
])
def test_a_template_past_its_budget_stops_with_one_line(tmp_path, source, why):
    lib = TemplateLibrary()
    with pytest.raises(TemplateError, match=why):
        lib.render_string(source, {})
    (tmp_path / "bad.j2").write_text(source)
    with pytest.raises(TemplateError, match=rf"template 'bad.j2'.*{why}"):
        TemplateLibrary(tmp_path).render("bad.j2", {})
    # the budget is per render: a fresh render has all of it again
    assert lib.render_string("{% for i in range(10) %}{{ i }}{% endfor %}", {}) == \
        "0123456789"


def test_an_unexpected_error_is_one_line_and_status_1(monkeypatch, capsys):
    from judgekit.cli import commands

    def boom(**kwargs):
        raise TypeError("something judgekit did not foresee")

    monkeypatch.setattr(commands, "app", boom)
    monkeypatch.delenv("JUDGEKIT_DEBUG", raising=False)
    assert commands._main(["schema", "probe"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unexpected TypeError: something")


@pytest.mark.parametrize("field,value", [("probability", 0), ("probability", "abc"),
                                         ("probability", float("nan")), ("draw", -2),
                                         ("share", float("inf"))])
def test_a_forged_draw_line_is_named_in_one_line(tmp_path, field, value):
    from .test_labelling import _file

    path, _ = _file(tmp_path, n=60)
    r = jk("label", str(path), "--out", "next.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    labels = path.with_name("verdicts.labels.jsonl")
    lines = labels.read_text().splitlines()
    row = json.loads(lines[0])
    assert row["kind"] == "draw"
    row[field] = value
    lines[0] = json.dumps(row)  # NaN and Infinity as Python's json writes them
    labels.write_text("\n".join(lines) + "\n")
    r = jk("label", str(path), cwd=tmp_path)
    assert r.returncode == 2
    _one_line(r, "verdicts.labels.jsonl:1", field)


def _write_rows(path, rows):
    import csv

    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_a_label_given_to_another_text_does_not_count(tmp_path):

    from judgekit.labelling import session
    from judgekit.recorded import labels as store

    rows = [{"id": str(i), "question": f"question {i}", "judge": i % 2} for i in range(40)]
    path = tmp_path / "v.csv"

    def write(rs):
        _write_rows(path, rs)

    write(rows)
    session.add_label(path, "3", "pass", "kim")
    session.add_label(path, "7", "fail", "kim")
    got = store.read(path.with_name("v.labels.jsonl"))
    assert all(isinstance(r.item_sha, str) for r in got.history)
    # the file is re-exported with row-number ids shifted by one: id 3 now names the
    # question that was 2, id 7 the one that was 6
    write([{**r, "question": f"question {int(r['id']) - 1}"} for r in rows])
    from judgekit.analysis.label_terms import state_of
    from judgekit.analysis.source import load

    state = state_of(load(path), "pass_rate")
    assert "3" not in state.y and "7" not in state.y
    # labelled again on the new text, it counts
    session.add_label(path, "3", "pass", "kim")
    assert state_of(load(path), "pass_rate").y["3"] == 1.0


def test_the_labels_file_records_its_source_and_a_change_is_told_in_one_line(tmp_path, caplog):
    import logging

    from judgekit.analysis.label_terms import state_of
    from judgekit.analysis.source import load
    from judgekit.core.errors import DataError
    from judgekit.labelling import session
    from judgekit.recorded import labels as store

    rows = [{"id": f"r{i}", "question": f"question {i}", "judge": i % 2} for i in range(30)]
    path = tmp_path / "v.csv"

    def write(rs):
        _write_rows(path, rs)

    write(rows)
    labels_path = path.with_name("v.labels.jsonl")
    session.add_label(path, "r3", "pass", "kim")
    session.add_label(path, "r7", "fail", "kim")
    session.add_label(path, "r9", "fail", "kim")
    lines = [json.loads(x) for x in labels_path.read_text().splitlines()]
    assert [x.get("kind") for x in lines] == ["label"] * 3
    assert lines[0]["source"] == store.fingerprint(load(path).items)
    assert lines[0]["source"]["items"] == 30 and "source" not in lines[1]
    # unchanged: nothing said, every label counts
    with caplog.at_level(logging.WARNING, logger="judgekit.labels"):
        assert set(state_of(load(path), "pass_rate").y) == {"r3", "r7", "r9"}
    assert not caplog.records
    # the source loses r7 and r9's text changes: one line says so and what still counts
    write([{**r, "question": "edited" if r["id"] == "r9" else r["question"]}
           for r in rows if r["id"] != "r7"])
    with caplog.at_level(logging.WARNING, logger="judgekit.labels"):
        y = state_of(load(path), "pass_rate").y
    assert set(y) == {"r3"}
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "\n" not in said[0]
    assert "30 items then, 29 now" in said[0] and "ids changed" in said[0]
    assert "1 label(s) of items still present" in said[0] and "1 given to a text that " \
        "changed and 1 of ids no longer present do not (r7)" in said[0]
    # without a fingerprint (a hand-made file), an unknown id is still an error
    labels_path.write_text(json.dumps({"id": "r7", "label": "pass"}) + "\n")
    with pytest.raises(DataError, match="'r7' matches no item"):
        state_of(load(path), "pass_rate")


def test_draws_on_a_source_that_lost_items_are_refused_in_one_line(tmp_path):

    from judgekit.analysis.label_terms import state_of
    from judgekit.analysis.source import load
    from judgekit.core.errors import DataError
    from judgekit.labelling import session

    rows = [{"id": f"r{i}", "question": f"q {i}", "judge": i % 2, "score": (i % 7) / 7}
            for i in range(60)]
    path = tmp_path / "v.csv"
    _write_rows(path, rows)
    st = session.propose(path, batch=4, seed=2)
    drawn = {p.id for p in st.pending}
    _write_rows(path, [r for r in rows if r["id"] not in drawn])
    with pytest.raises(DataError) as got:
        state_of(load(path), "pass_rate")
    msg = str(got.value)
    assert "\n" not in msg and "60 items then, 56 now" in msg
    assert "4 draw(s) name items no longer in it" in msg
