"""judgekit on its own: packaged data, config-relative paths, user prompts, typed
results, report.html, output safety, data fetch, and the small frictions."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .conftest import ROOT

EXE = shutil.which("judgekit") or str(Path(sys.executable).parent / "judgekit")


def jk(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    e = {**os.environ, **(env or {})}
    return subprocess.run([EXE, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=e)


@pytest.fixture
def cache_env(tmp_path):
    return {"JUDGEKIT_CACHE_DIR": str(tmp_path / "cache")}


def test_nothing_points_at_shared():
    r = subprocess.run(["git", "grep", "-n", r"\.\./shared", "--", "README.md", "experiments",
                        "judgekit", "examples"], cwd=ROOT, capture_output=True, text=True)
    assert r.stdout == ""


def test_replay_from_another_folder_with_config_relative_paths(tmp_path, cache_env):
    r = jk("run", str(ROOT / "experiments" / "nodata_west_frisian.yaml"), "--cassette-mode",
           "none", "--out", "wf", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "wf" / "results.json").read_text())
    assert res["verdict"]["decision"] in ("trust", "do not trust", "inconclusive")
    assert res["items"] == {"file": "items.jsonl", "count": 4}
    assert len((tmp_path / "wf" / "items.jsonl").read_text().splitlines()) == 4


def test_packaged_experiment_by_name(tmp_path, cache_env):
    r = jk("run", "demo", "--cassette-mode", "none", "--out", "d", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d" / "report.html").exists()


def test_output_folder_safety(tmp_path, cache_env):
    out = tmp_path / "o"
    args = ("run", str(ROOT / "experiments" / "demo.yaml"), "--cassette-mode", "none",
            "--out", str(out))
    assert jk(*args, cwd=tmp_path, env=cache_env).returncode == 0
    manifest = json.loads((out / ".judgekit-outputs.json").read_text())
    assert manifest["kind"] == "run"
    assert {"results.json", "report.md", "report.html"} <= set(manifest["files"])
    # a figure the previous run wrote that this one will not: stale, so removed
    manifest["files"].append("stale_figure.png")
    (out / ".judgekit-outputs.json").write_text(json.dumps(manifest))
    (out / "stale_figure.png").write_bytes(b"old")
    (out / "holiday.png").write_bytes(b"mine")  # another program's: never touched
    (out / "notes.txt").write_text("mine")
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(outside)  # a planted link is replaced, not followed
    r = jk(*args, cwd=tmp_path, env=cache_env)
    assert r.returncode == 2 and "not empty" in r.stderr and "--overwrite" in r.stderr
    r = jk(*args, "--overwrite", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    assert not (out / "stale_figure.png").exists()
    assert (out / "holiday.png").read_bytes() == b"mine" and (out / "notes.txt").exists()
    assert outside.read_text() == "keep me" and not (out / "report.md").is_symlink()
    assert not list(out.glob("*.tmp")) and not list(out.glob(".*.tmp"))
    again = json.loads((out / ".judgekit-outputs.json").read_text())
    assert "holiday.png" not in again["files"] and "notes.txt" not in again["files"]
    # a card or a comparison never writes into a run's folder, even with --overwrite
    r = jk("compare", str(out), str(out), "--out", str(out), "--overwrite", cwd=tmp_path,
           env=cache_env)
    assert r.returncode == 2 and "holds a judgekit run" in r.stderr
    assert (out / "report.md").read_text().startswith("# ")


def test_vbscore_never_writes_over_its_input(tmp_path):
    src = tmp_path / "t.jsonl"
    shutil.copy(ROOT / "examples" / "tagged.jsonl", src)
    before = src.read_bytes()
    r = jk("vbscore", str(src), "--out", str(src), cwd=tmp_path)
    assert r.returncode == 2 and "input" in r.stderr and src.read_bytes() == before
    r = jk("vbscore", str(src), "--out", str(tmp_path), cwd=tmp_path)
    assert r.returncode == 2 and "directory" in r.stderr
    assert not list(tmp_path.glob("*.tmp"))


def test_edited_prompt_replayed_in_mode_none_names_the_template(tmp_path, cache_env):
    exp = tmp_path / "exp"
    shutil.copytree(ROOT / "experiments", exp)
    (tmp_path / "cassettes").mkdir()
    shutil.copy(ROOT / "cassettes" / "demo.json", tmp_path / "cassettes" / "demo.json")
    r = jk("prompts", "export", str(exp / "my_prompts"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    sysj2 = exp / "my_prompts" / "system.j2"
    sysj2.write_text(sysj2.read_text() + "\nAnswer briefly.\n")
    cfg = exp / "demo.yaml"
    cfg.write_text(cfg.read_text() + "prompts: my_prompts\n")
    r = jk("run", str(cfg), "--cassette-mode", "none", "--out", "o", cwd=tmp_path,
           env=cache_env)
    assert r.returncode == 2, r.stderr
    assert "system.j2" in r.stderr and "Traceback" not in r.stderr
    listing = jk("prompts", "list", "--prompts", str(exp / "my_prompts"), cwd=tmp_path)
    line = next(ln for ln in listing.stdout.splitlines() if ln.startswith("system.j2"))
    digest = hashlib.sha256(sysj2.read_bytes()).hexdigest()[:16]
    assert digest in line and str(sysj2) in line


def test_typed_results_and_schema(tmp_path, cache_env):
    import judgekit

    res = judgekit.run(str(ROOT / "experiments" / "demo.yaml"), cassette_mode="none",
                       out=tmp_path / "o", cache_dir=str(tmp_path / "c"))
    assert isinstance(res, judgekit.RunResult) and res.method == "vbscore"
    assert res.payload.datasets[0].n_queries == 4 and len(res.payload.datasets[0].vb_ci) == 2
    rows = list(res.detail("queries"))
    assert len(rows) == 4 and all("replica_records" in r for r in rows)
    again = judgekit.load_results(tmp_path / "o")
    assert again.model_dump() == res.model_dump()
    r = jk("schema", "nodata/llm", cwd=tmp_path)
    schema = json.loads(r.stdout)
    assert r.returncode == 0 and "verdict" in schema["properties"]
    # the schema describes the file as written (payload fields at the top level)
    import jsonschema

    r = jk("schema", "vbscore", cwd=tmp_path)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    jsonschema.validate(doc, json.loads(r.stdout))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "typo": 1}, json.loads(r.stdout))
    assert jk("schema", "nope", cwd=tmp_path).returncode == 2


def test_report_html_is_self_contained_and_filterable(tmp_path, cache_env):
    r = jk("run", str(ROOT / "experiments" / "nodata_west_frisian.yaml"), "--cassette-mode",
           "none", "--out", "wf", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "wf" / "report.html").read_text()
    assert page.startswith("<!doctype html>")
    assert not re.search(r"(src|href)=['\"]https?://", page)  # no CDN, no network
    assert "data:image/png;base64," in page
    assert "id='jk-q'" in page and "function jkFilter" in page
    assert page.count("<details class='item'") == 4
    assert "Verdict:" in page and "<table>" in page
    assert "Judge&#x27;s criteria" in page or "Judge's criteria" in page


def test_report_html_renders_and_filters_in_a_headless_browser(tmp_path, cache_env):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    r = jk("run", str(ROOT / "experiments" / "nodata_west_frisian.yaml"), "--cassette-mode",
           "none", "--out", "wf", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    page = tmp_path / "wf" / "report.html"
    items = [json.loads(x) for x in (tmp_path / "wf" / "items.jsonl").read_text().splitlines()]
    passed = sum(1 for x in items if x["success"] is True and not x["excluded"])
    # the committed cassette's items all pass: filter on "pass" (the kinds the page
    # offers), then on a search no item matches; dump the DOM after the script ran
    for script, shown in (("document.getElementById('jk-k').value='pass';", passed),
                          ("document.getElementById('jk-q').value='zzqq-nowhere';", 0)):
        probe = tmp_path / "probe.html"
        probe.write_text(page.read_text().replace(
            "</body>", f"<script>{script}jkFilter();document.title='shown='+"
            "document.getElementById('jk-n').textContent;</script></body>"))
        out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                              "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                             timeout=120)
        assert passed == len(items) and f"<title>shown={shown}</title>" in out.stdout


class _Files(BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802
        body = self.files.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        if body is not None:
            self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def file_server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Files.files
    srv.shutdown()


def test_data_fetch_over_loopback_with_checksums(tmp_path, file_server, monkeypatch):
    from judgekit.core.errors import DataError
    from judgekit.data.fetch import fetch
    from judgekit.data.qa import load_dataset_queries

    url, files = file_server
    monkeypatch.setenv("JUDGEKIT_DATA_DIR", str(tmp_path / "data"))
    body = (ROOT / "experiments" / "data" / "truthfulqa_excerpt.csv").read_bytes()
    files["/TruthfulQA.csv"] = body
    path = fetch("truthfulqa", url=url + "/TruthfulQA.csv")
    assert path.read_bytes() == body
    assert len(load_dataset_queries("truthfulqa", None)) == 12  # no path: the fetched file
    files["/TruthfulQA.csv"] = body + b"tampered\n"
    with pytest.raises(DataError, match="sha256"):
        fetch("truthfulqa", url=url + "/TruthfulQA.csv")  # differs from the first fetch
    assert path.read_bytes() == body
    with pytest.raises(DataError, match="expected 00"):
        fetch("truthfulqa", url=url + "/TruthfulQA.csv", sha256="00" * 32)
    with pytest.raises(DataError, match="HTTP 404"):
        fetch("winograd", url=url + "/missing.xml")


def test_arc_zip_member_is_extracted(tmp_path, file_server, monkeypatch):
    import io
    import zipfile

    from judgekit.data.fetch import fetch

    url, files = file_server
    monkeypatch.setenv("JUDGEKIT_DATA_DIR", str(tmp_path / "data"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ARC-V1-Feb2018-2/ARC-Challenge/ARC-Challenge-Test.jsonl",
                    (ROOT / "experiments" / "data" / "arc_challenge_dev_excerpt.jsonl")
                    .read_bytes())
    files["/arc.zip"] = buf.getvalue()
    p = fetch("arc", url=url + "/arc.zip")
    assert p.name == "ARC-Challenge-Test.jsonl" and len(p.read_text().splitlines()) == 12


@pytest.mark.parametrize("args, needle", [
    (["cassette", "unused", "experiments/nodata_synthetic.yaml"], "has no cassette"),
    (["run", "experiments/demo.yaml", "--model", "openai/gpt-4.1-mini"], "ROLE=provider/model"),
])
def test_friendly_errors(args, needle, tmp_path):
    r = jk(*args, cwd=ROOT)
    assert r.returncode == 2 and needle in r.stderr, r.stderr


def test_yaml_errors_keep_line_and_column(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("method: vbscore\ndatasets:\n  - name: demo\n   n: 3\n")
    r = jk("run", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and re.search(r"line \d+, column \d+", r.stderr)


def test_unknown_dataset_name_lists_what_is_accepted(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: vbscore\ndatasets: [{name: squad, path: x}]\n"
                   "models: {system: mock/a, judge: mock/b}\n")
    r = jk("run", str(cfg), cwd=tmp_path)
    assert r.returncode == 2 and "truthfulqa, winograd, arc, demo" in r.stderr


def test_cache_stats_reports_the_whole_cache(tmp_path):
    from judgekit.llm.cache import ResponseCache

    c = ResponseCache(tmp_path / "c")
    for i in range(3):
        c.set(f"{i:064d}", {"ok": True})
    c.close()
    r = jk("cache", "stats", "--dir", str(tmp_path / "c"), cwd=tmp_path)
    stats = json.loads(r.stdout)
    assert stats["entries"] == 3 and stats["bytes"] > 0


def test_default_output_folder_is_fresh_each_run(tmp_path, cache_env):
    cfg = tmp_path / "sim.yaml"
    cfg.write_text((ROOT / "experiments" / "ondemand_simulation.yaml").read_text()
                   .replace("repeats: 500", "repeats: 5").replace("out: runs/ondemand_simulation",
                                                                  f"out: {tmp_path}/runs/sim"))
    for _ in range(2):
        r = jk("run", str(cfg), cwd=tmp_path, env=cache_env)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "runs" / "sim" / "results.json").exists()
    assert (tmp_path / "runs" / "sim-2" / "results.json").exists()


def test_declared_public_surface():
    import judgekit
    import judgekit.methods.ondemand
    import judgekit.methods.vbscore
    import judgekit.testing

    assert set(judgekit.__all__) == {
        "Call", "CassetteMissError", "Client", "ClientSettings", "ConfigError", "DataError",
        "JudgekitError", "MethodSpec", "ProviderError", "RunOptions", "RunResult", "Stage",
        "StageResult", "StatsError",
        "__version__", "audit", "compare", "judge_card", "load_results", "probe_judge",
        "run"}
    for mod in (judgekit, judgekit.methods.vbscore, judgekit.methods.ondemand, judgekit.testing):
        for name in mod.__all__:
            assert getattr(mod, name) is not None, f"{mod.__name__}.{name}"


@pytest.mark.parametrize("name", ["demo", "probe_local", "nodata_west_frisian"])
def test_report_screenshots_in_a_headless_browser(tmp_path, cache_env, name):
    """Where Chromium exists: each packaged report renders to a non-blank screenshot, and
    its DOM after the scripts ran has the headline before the first table."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    r = jk("run", name, "--cassette-mode", "none", "--out", "r", cwd=tmp_path, env=cache_env)
    assert r.returncode == 0, r.stderr
    page = (tmp_path / "r" / "report.html").as_uri()
    shot = tmp_path / "shot.png"
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--window-size=1280,1600", f"--screenshot={shot}", page],
                   capture_output=True, text=True, timeout=120, cwd=tmp_path)
    import matplotlib.image

    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[0] >= 800 and pixels.shape[1] >= 1000
    assert float(pixels[..., :3].std()) > 0.02  # not a blank page
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--dump-dom", page], capture_output=True, text=True, timeout=120)
    body = dom.stdout
    assert "<table" in body and "<h1>" in body
    assert body.index("<h1>") < body.index("<table")
