"""CSV written by judgekit (export, compare's differences.csv, report tables) is data:
no cell runs as a spreadsheet formula, and a bare carriage return cannot split a row."""

from __future__ import annotations

import csv
import io
import json

import pytest

from judgekit.recorded.csvsafe import cell, rows_text

HOSTILE = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx",
           "line one\rline two", "a\r\nb", "plain"]


@pytest.mark.parametrize("value,want", [
    ("=1+1", "'=1+1"), ("+cmd", "'+cmd"), ("-2+3", "'-2+3"), ("@x", "'@x"), ("\tx", "'\tx"),
    ("\rx", "'\rx"), ("-0.25", "-0.25"), ("+3e-2", "+3e-2"), ("-.5", "-.5"), ("", ""),
    ("a=b", "a=b"), (-1.5, -1.5), (None, None)])
def test_cells_that_would_run_as_formulas_are_prefixed(value, want):
    assert cell(value) == want


def test_rows_read_back_with_the_same_shape_and_text():
    text = rows_text(["id", "text"], [[f"r{i}", v] for i, v in enumerate(HOSTILE)])
    back = list(csv.reader(io.StringIO(text, newline="")))
    assert len(back) == 1 + len(HOSTILE) and all(len(r) == 2 for r in back)
    for (_, got), want in zip(back[1:], HOSTILE):
        assert got == cell(want)
        assert not got.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_export_and_differences_csv_are_safe(tmp_path):
    from judgekit.analysis.comparison import Difference, items_csv
    from judgekit.report.export import write

    rows = [{"id": v, "reason": v, "score": -0.5} for v in HOSTILE]
    path = write(rows, tmp_path / "x.csv", "csv")
    with open(path, encoding="utf-8", newline="") as fh:
        back = list(csv.DictReader(fh))
    assert len(back) == len(HOSTILE)
    assert [r["id"] for r in back] == [cell(v) for v in HOSTILE]
    assert {r["score"] for r in back} == {"-0.5"}
    fields = {k: None for k in Difference.model_fields}
    diff = Difference.model_validate({**{k: v for k, v in fields.items()},
                                      **_minimal(Difference, "=cmd|' /C calc'!A0")})
    text = items_csv([diff])
    got = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(got) == 1 and not any(str(v).startswith("=") for v in got[0].values())
    json.dumps(got)


def _minimal(model, hostile):
    """A value for every required field: text fields carry the hostile string."""
    out = {}
    for name, f in model.model_fields.items():
        ann = str(f.annotation)
        if "str" in ann:
            out[name] = hostile
        elif "float" in ann:
            out[name] = 0.0
        elif "int" in ann:
            out[name] = 0
        elif "bool" in ann:
            out[name] = False
        else:
            out[name] = None
    return out


def test_report_md_escapes_hostile_text_outside_code_spans():
    from judgekit.report.document import Doc, md_text, to_markdown

    d = Doc("t")
    d.h(1, "Judge <img src=x onerror=alert(1)>\nsecond line")
    d.p("reason: <script>alert(1)</script> [click](javascript:alert(1)) `<kept>` **bold**")
    d.table(["id", "text"], [[f"r{i}", v] for i, v in enumerate(
        ["<!--", "a|b", "x\ny", "<script>alert(2)</script>", "ok"])], "rows")
    md = to_markdown(d)
    assert "<script>" not in md and "<img" not in md and "<!--" not in md
    assert "[click](" not in md and "`<kept>`" in md and "**bold**" in md
    assert md.splitlines()[0] == "# Judge &lt;img src=x onerror=alert(1)&gt; second line"
    table = [ln for ln in md.splitlines() if ln.startswith("| r")]
    assert len(table) == 5  # every row survives: none hidden, none split
    assert all(ln.count(" | ") == 1 for ln in table)  # the pipe in "a|b" is escaped
    assert md_text("a & b") == "a &amp; b"


def test_an_inspect_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    import tracemalloc
    import zipfile

    import judgekit
    from judgekit.recorded.inspect_log import read_inspect

    bomb = tmp_path / "bomb.eval"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({"eval": {"task": "t"}}))
        zf.writestr("samples/1_epoch_1.json", b"[" + b" " * (64 << 20) + b"]")
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    with pytest.raises(judgekit.DataError, match="inflates to"):
        read_inspect(bomb, None, 0.5)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20  # refused from the declared sizes, nothing inflated
    bad = tmp_path / "bad.eval"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("header.json", b"\xff\xfe not utf-8")
    with pytest.raises(judgekit.DataError, match="not UTF-8"):
        read_inspect(bad, None, 0.5)
    lst = tmp_path / "list.eval"
    with zipfile.ZipFile(lst, "w") as zf:
        zf.writestr("header.json", "[1, 2]")
    with pytest.raises(judgekit.DataError, match="JSON objects"):
        read_inspect(lst, None, 0.5)


@pytest.mark.parametrize("text,fmt,match", [
    ("prompt,output\nhi,there\nshort\n", "csv", "line 3: 1 cells where the header has 2"),
    ('{"prompt": "a", "output": "b"}\n[1, 2]\n', "jsonl", "line 2: a JSON object"),
])
def test_malformed_judged_tables_are_one_line_errors(tmp_path, text, fmt, match):
    import judgekit
    from judgekit.recorded.judged import read_table

    f = tmp_path / f"t.{fmt}"
    f.write_text(text)
    with pytest.raises(judgekit.DataError, match=match):
        read_table(f, fmt, {"prompt": "prompt", "output": "output"}, 0.5)


@pytest.mark.parametrize("doc,match", [
    ({"results": {"results": [1, 2]}}, "result 0 is a int"),
    ({"results": {"results": [{"gradingResult": [1]}]}}, "not an object"),
])
def test_promptfoo_files_with_non_objects_are_one_line_errors(tmp_path, doc, match):
    import judgekit
    from judgekit.recorded.promptfoo import read_promptfoo

    f = tmp_path / "p.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(judgekit.DataError, match=match):
        read_promptfoo(f, None)


@pytest.mark.parametrize("doc,match", [
    ({"eval": {}, "samples": [1]}, "not a list of objects"),
    ({"eval": {}, "samples": [{"id": 1, "scores": {"x": 3}}]}, "not objects"),
    ({"eval": {}, "samples": [{"id": 1, "epoch": "x", "scores": {}}]}, "epoch"),
])
def test_inspect_json_logs_with_non_objects_are_one_line_errors(tmp_path, doc, match):
    import judgekit
    from judgekit.recorded.inspect_log import read_inspect

    f = tmp_path / "l.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(judgekit.DataError, match=match):
        read_inspect(f, None, 0.5)


def test_a_pairs_line_that_is_a_list_is_a_one_line_error(tmp_path):
    import judgekit
    from judgekit.methods.probe.pairs import load_pairs

    f = tmp_path / "pairs.jsonl"
    f.write_text('{"id": "1", "question": "q", "a": "x", "b": "y"}\n["not", "a", "pair"]\n')
    with pytest.raises(judgekit.DataError, match="line 2: a JSON object per line"):
        load_pairs(str(f))


def test_a_full_disk_while_writing_is_a_clear_exit_1_and_keeps_the_old_file(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "run"
    script = f"""
import errno, os, sys
real = os.fsync
def full(fd):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
import judgekit.cli.commands as cli
os.fsync = full
sys.exit(cli.main(["run", "demo", "--cassette-mode", "none", "--out", {str(out)!r}]))
"""
    env = {"JUDGEKIT_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
           "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and "cannot write" in r.stderr
    assert "No space left on device" in r.stderr
    assert not list(out.glob(".*.tmp"))  # nothing half-written left behind


def test_a_megabyte_cell_is_read_and_a_broken_quote_is_one_line(tmp_path):
    import judgekit
    from judgekit.recorded.csvsafe import read_dicts

    big = "y" * (1 << 20)
    header, rows = read_dicts(f'id,text\n1,"{big}"\n', "big.csv")
    assert header == ["id", "text"] and rows[0]["text"] == big
    with pytest.raises(judgekit.DataError, match=r"bad.csv line \d+: not valid CSV"):
        read_dicts('id,text\n1,"unterminated\n', "bad.csv")
    with pytest.raises(judgekit.DataError, match="not valid CSV"):
        read_dicts('id,text\n1,"x"y\n', "bad.csv")


CORPUS = ["<script>alert(1)</script>", "<!--", "=HYPERLINK(\"http://x\",\"y\")", "@SUM(A1)",
          "+cmd", "| a | b |", "\u202eevil", "[x](javascript:alert(1))", "cr\rinside",
          "\x1b[31mred", "z" * 200_000]


def _jk_env(tmp_path):
    import os
    import shutil
    import sys
    from pathlib import Path

    jk = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["JUDGEKIT_CACHE_DIR"] = str(tmp_path / "cache")
    return jk, env


def _assert_inert(md=(), html=(), csvs=()):
    """Reports and tables hold the hostile corpus as inert text."""
    import csv as _csv
    import re

    for f in md:
        text = f.read_text(encoding="utf-8")
        assert "<script" not in text and "<!--" not in text
        assert not re.search(r"(?<!\\)\]\(javascript", text)  # only escaped \](
    for f in html:
        body = f.read_text(encoding="utf-8")
        assert "<script>alert" not in body and "<!--<" not in body
    _csv.field_size_limit(1 << 24)
    for f in csvs:
        with open(f, encoding="utf-8", newline="") as fh:
            back = list(_csv.DictReader(fh))
        assert back and not any(str(v).startswith(("=", "+", "@", "\t", "\r"))
                                for row in back for v in row.values())


def _run_and_export(tmp_path, cfg, **kw):
    """``judgekit run CFG`` then ``judgekit export``; both must succeed; the run folder."""
    import subprocess

    jk, env = _jk_env(tmp_path)
    out = tmp_path / "run"
    r = subprocess.run([jk, "run", str(cfg), "--out", str(out)], capture_output=True,
                       text=True, env=env, timeout=300, **kw)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    x = subprocess.run([jk, "export", str(out), "--out", str(tmp_path / "x.csv")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert x.returncode == 0, x.stderr
    _assert_inert(md=[out / "report.md"], html=[out / "report.html"],
                  csvs=[tmp_path / "x.csv"])
    return out


def test_the_hostile_corpus_through_analyse_report_export_and_card(tmp_path):
    import csv as _csv
    import subprocess

    jk, env = _jk_env(tmp_path)
    rows = []
    for i in range(44):
        bad = CORPUS[i % len(CORPUS)]
        rows.append([f"{bad}-{i}", f"q{i // 2}", f"{bad[:40]}" if i % 2 else "sys",
                     "pass" if i % 3 else "fail", ("pass" if i % 4 else "fail") if i % 2 else ""])
    f = tmp_path / "hostile.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = _csv.writer(fh)
        w.writerow(["id", "question_id", "system", "judge", "human"])
        w.writerows(rows)
    run = tmp_path / "run"
    for args in (["analyse", str(f), "--out", str(run)],
                 ["export", str(run), "--out", str(tmp_path / "x.csv")],
                 ["card", str(run), "--out", str(tmp_path / "card")]):
        r = subprocess.run([jk, *args], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    _assert_inert(md=[run / "report.md", tmp_path / "card" / "report.md"],
                  html=[run / "report.html", tmp_path / "card" / "report.html"],
                  csvs=[tmp_path / "x.csv"])
    with open(tmp_path / "x.csv", encoding="utf-8", newline="") as fh:
        assert len(list(_csv.DictReader(fh))) == 44


def test_the_hostile_corpus_through_a_probe_its_export_and_a_compare(tmp_path):
    import subprocess

    jk, env = _jk_env(tmp_path)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({
        "id": f"{CORPUS[i % len(CORPUS)][:50]}-{i}", "question": CORPUS[(i + 1) % len(CORPUS)],
        "a": CORPUS[(i + 2) % len(CORPUS)], "b": CORPUS[(i + 3) % len(CORPUS)],
        "correct": "a" if i % 2 else "b"}) + "\n" for i in range(12)), encoding="utf-8")
    import zlib

    import judgekit
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers.mock import FunctionProvider

    def coin(seed):
        def fn(req):
            text = req.messages[-1]["content"]
            pick = (zlib.crc32(text.encode()) + seed) % 2
            return {"winner": "A" if pick else "B", "reason": CORPUS[0]}
        return fn
    runs = []
    for seed in (1, 2):
        out = tmp_path / f"run{seed}"
        with Client(ClientSettings(use_cache=False, progress=False),
                    providers={"mock/coin": FunctionProvider(coin(seed))}) as client:
            judgekit.run({"method": "probe", "data_path": str(pairs), "use_cache": False,
                          "models": {"judge": "mock/coin"}, "transforms": ["swap"],
                          "resamples": 200}, client=client, out=out)
        runs.append(out)
    for args in (["compare", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "cmp")],
                 ["export", str(runs[0]), "--out", str(tmp_path / "x.csv")]):
        r = subprocess.run([jk, *args], capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0 and "Traceback" not in r.stderr, (args, r.stderr)
    _assert_inert(md=[runs[0] / "report.md", tmp_path / "cmp" / "report.md"],
                  html=[runs[0] / "report.html", tmp_path / "cmp" / "report.html"],
                  csvs=[tmp_path / "x.csv", tmp_path / "cmp" / "differences.csv"])


def test_the_hostile_corpus_through_an_audit_report_and_export(tmp_path):
    """Judged items whose prompts, outputs and ids are hostile, audited with mock/auto
    models: report.md, report.html and the CSV export stay inert."""

    from judgekit.core.resources import resource_dir

    src = resource_dir("experiments") / "data" / "west_frisian_excerpt.json"
    items = json.loads(src.read_text(encoding="utf-8"))[:4]
    for k, it in enumerate(items):
        it["Prompt"] = CORPUS[k % len(CORPUS)] + " " + it["Prompt"]
        it["Output"] = it["Output"] + " " + CORPUS[(k + 1) % len(CORPUS)]
        it["Source"] = CORPUS[(k + 2) % len(CORPUS)][:60]
    data = tmp_path / "items.json"
    data.write_text(json.dumps(items), encoding="utf-8")
    rubric = resource_dir("rubrics") / "west_frisian_ip.yaml"
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(
        f"method: nodata\nexperiment: llm\ndata_path: {json.dumps(str(data))}\n"
        f"rubric: {json.dumps(str(rubric))}\nverifier_rubric: {json.dumps(str(rubric))}\n"
        "rubric_label: IP\nrounds: 1\nphi: [0.3]\nsample_size: 4\n"
        "models: {evaluator: mock/auto, verifier: mock/auto, generator: mock/auto}\n",
        encoding="utf-8")
    _run_and_export(tmp_path, cfg)


def test_jsonl_is_read_a_line_at_a_time_with_utf8_errors_named(tmp_path):
    import judgekit
    from judgekit.core.textio import read_lines

    f = tmp_path / "v.jsonl"
    f.write_bytes(b"\xef\xbb\xbf{\"a\": 1}\r\n{\"b\": 2}\n{\"c\": \"\xff\"}\n")
    it = read_lines(f)
    assert next(it) == (1, '{"a": 1}') and next(it) == (2, '{"b": 2}')
    with pytest.raises(judgekit.DataError, match=r"v.jsonl: line 3, column 8: byte 0xff"):
        next(it)
    with pytest.raises(judgekit.DataError, match="file not found"):
        list(read_lines(tmp_path / "missing.jsonl"))


def test_a_csv_file_is_parsed_as_it_is_read(tmp_path):
    import judgekit
    from judgekit.recorded.csvsafe import read_dicts

    f = tmp_path / "big.csv"
    big = "w" * (2 << 20)
    f.write_text(f"id,text\n1,{big}\n2,short\n", encoding="utf-8")
    header, rows = read_dicts(f)
    assert header == ["id", "text"] and rows[0]["text"] == big and rows[1]["id"] == "2"
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"id,text\n1,ok\n2,\xff\n")
    with pytest.raises(judgekit.DataError, match="bad.csv: near line .*not valid UTF-8"):
        read_dicts(bad)


def test_the_hostile_corpus_through_a_vb_score_report_and_export(tmp_path):

    import yaml

    queries = [{"id": f"{CORPUS[k][:40]}-{k}", "query": CORPUS[(k + 1) % len(CORPUS)][:500]}
               for k in range(4)]
    (tmp_path / "q.yaml").write_text(yaml.safe_dump(queries), encoding="utf-8")
    (tmp_path / "vb.yaml").write_text(
        "method: vbscore\ndatasets:\n  - name: demo\n    path: q.yaml\n    n: 4\n"
        "replicas: 2\ninterpretations: 2\nk: 2\nalpha: 0.5\n"
        "models: {system: mock/auto, judge: mock/auto}\n", encoding="utf-8")
    _run_and_export(tmp_path, tmp_path / "vb.yaml", cwd=tmp_path)
