"""`judgekit view`: the installed command serving on 127.0.0.1, its API, and the pages
used as a person uses them in headless Chromium (tests/browser.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from .browser import Browser, chromium
from .test_labelling import _file
from .test_standalone import EXE, jk
from .viewer import free_port, viewer

_port = free_port


@pytest.fixture
def runs(tmp_path):
    """Two recorded-verdicts runs (one with several systems) and a replayed VB run."""
    path, truth = _file(tmp_path, n=300)
    assert jk("analyse", str(path), "--out", "runs/verdicts_a", cwd=tmp_path).returncode == 0
    (tmp_path / "b").mkdir()
    path2, _ = _file(tmp_path / "b", n=300, seed=5)
    assert jk("analyse", str(path2), "--out", "runs/verdicts_b", cwd=tmp_path).returncode == 0
    env = {"JUDGEKIT_CACHE_DIR": str(tmp_path / "cache")}
    r = jk("run", "demo", "--out", "runs/nested/demo", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    r = jk("choose", "runs/verdicts_a", "runs/verdicts_b", "--out", "runs/pick",
           cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return tmp_path / "runs", truth


@pytest.fixture
def server(runs):
    folder, truth = runs
    with viewer(folder) as (base, proc):
        yield base, folder, truth, proc


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _post(url: str, body: object, ctype: str = "application/json") -> tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_view_lists_runs_and_labels_append_one_line(server):
    base, folder, truth, _ = server
    status, page = _get(base + "/")
    assert status == 200
    for name in ("verdicts_a", "verdicts_b", "nested/demo"):
        assert f">{name}</a>" in page
    assert "vbscore" in page and "pass_rate" in page
    # a `judgekit choose` folder: its judges side by side, its decision, its report
    assert ">pick</a>" in page and "Choosing a judge" in page
    # both judges, told apart (their files share a name: "verdicts#1", "verdicts#2")
    assert "verdicts#1" in page and "verdicts#2" in page
    status, text = _get(base + "/report?choice=pick")
    assert status == 200 and "Choosing a judge" in text
    assert _get(base + "/report?choice=nope")[0] == 404
    # nothing leaves the machine: no page names another host
    for path in ("/", "/run?name=verdicts_a", "/compare?a=verdicts_a&b=verdicts_b",
                 "/label?name=verdicts_a", "/cards?run=verdicts_a"):
        status, text = _get(base + path)
        assert status == 200 and "http:" not in text and "https:" not in text, path
    labels = folder / "verdicts_a" / "labels.jsonl"
    status, body = _get(base + "/api/next?run=verdicts_a")  # a GET changes nothing
    assert status == 200 and json.loads(body)["pending"] == [] and not labels.exists()
    status, body = _post(base + "/api/next", {"run": "verdicts_a"})
    nxt = json.loads(body)
    assert status == 200 and nxt["pending"] and nxt["draws"] == 0
    again = json.loads(_get(base + "/api/next?run=verdicts_a")[1])
    assert again["pending"] == nxt["pending"]  # the same items, drawn once
    item = nxt["next"][0]["id"]
    labels = folder / "verdicts_a" / "labels.jsonl"
    before = labels.read_text().splitlines()
    results_before = (folder / "verdicts_a" / "results.json").read_bytes()
    status, body = _post(base + "/api/label", {"run": "verdicts_a", "id": item,
                                               "label": truth[item], "annotator": "ann"})
    assert status == 200, body
    after = labels.read_text().splitlines()
    assert len(after) == len(before) + 1
    line = json.loads(after[-1])
    assert line["id"] == item and line["label"] == truth[item] and line["annotator"] == "ann"
    got = json.loads(body)
    assert got["labels"] == 1
    fig = got["figures"][0]
    assert fig["estimate"] is not None and fig["ci"][0] <= fig["estimate"] <= fig["ci"][1]
    assert fig["draws_needed"] > 0 and 0 < fig["labels_needed"] <= got["items"] - 1
    assert 0 < got["labels_needed"] <= got["items"] and got["interval"].startswith("fixed-n")
    assert fig["sequential_ci"][0] <= fig["sequential_estimate"] <= fig["sequential_ci"][1]
    assert (folder / "verdicts_a" / "results.json").read_bytes() == results_before
    # bad requests: one clear line each, nothing appended
    assert _post(base + "/api/label", {"run": "verdicts_a", "id": "nope", "label": 1})[0] \
        == 400
    assert _post(base + "/api/label", {"run": "verdicts_a", "id": item, "label": 1},
                 "text/plain")[0] == 415
    assert _post(base + "/api/label", {"run": "nested/demo", "id": "x", "label": 1})[0] == 400
    assert len(labels.read_text().splitlines()) == len(after)
    # a page elsewhere cannot reach the server through another host name
    assert _get(base + "/", {"Host": "attacker.example:80"})[0] == 403
    status, body = _get(base + "/api/items?run=verdicts_a")
    d = json.loads(body)
    assert len(d["items"]) == 300 and {"_id", "verdict", "system"} <= set(d["columns"])
    assert sum("_label" in x for x in d["items"]) == 1
    status, body = _get(base + "/api/item?run=nested/demo&id=jordan")
    d = json.loads(body)
    assert status == 200 and d["transcripts"] and d["transcripts"][0]["messages"]
    # a run's report (possibly copied from elsewhere) is sandboxed away from the API
    req = urllib.request.Request(base + "/report?name=verdicts_a")
    with urllib.request.urlopen(req, timeout=60) as r:
        assert r.headers["Content-Security-Policy"] == "sandbox allow-scripts"
    status, page = _get(base + "/cards?run=verdicts_a&run=verdicts_b")
    assert status == 200 and "verdicts_a" in page and "verdicts_b" in page


def test_view_usage_errors(tmp_path):
    r = subprocess.run([EXE, "view", str(tmp_path / "nowhere"), "--no-browser"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no such folder" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        r = subprocess.run([EXE, "view", str(tmp_path), "--port", str(busy), "--no-browser"],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and f"--port {busy}" in r.stderr
    assert r.stderr.strip().count("\n") == 0


def test_view_reads_20000_items(tmp_path):
    """(Its speed is measured by benchmarks/view_pages.py, never asserted by a test.)"""
    from judgekit.view import runs as runmod

    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({"method": "verdicts"}))
    (folder / "items.jsonl").write_text("".join(
        json.dumps({"id": f"i{i}", "verdict": i % 2, "system": "AB"[i % 2],
                    "explanation": "x" * 200}) + "\n" for i in range(20000)))
    run = runmod.find(tmp_path, "big")
    got = runmod.items(run)
    assert len(got) == 20000 and got[19999]["_id"] == "i19999"
    assert got[5]["explanation"] == "x" * 200


needs_chromium = pytest.mark.skipif(chromium() is None,
                                    reason="no chromium on this machine "
                                    "(apt-get install chromium)")


@needs_chromium
def test_a_person_filters_sorts_searches_reads_a_transcript_and_labels(server):
    base, folder, truth, _ = server

    async def session() -> None:
        async with Browser() as b:
            await b.goto(base + "/", "document.querySelectorAll('a.run').length >= 3")
            names = await b.eval("[...document.querySelectorAll('a.run')]"
                                 ".map(a => a.textContent)")
            assert {"verdicts_a", "verdicts_b", "nested/demo"} <= set(names)
            # the sample grid: 300 items, filter on failures, sort, search
            await b.goto(base + "/run?name=verdicts_a")
            await b.wait_for("document.getElementById('count').textContent === "
                             "'300 of 300 items'")
            await b.eval("{ const f = document.getElementById('filter'); f.value = 'fail';"
                         "f.dispatchEvent(new Event('change')) }")
            fails = sum(1 for x in json.loads(_get(base + "/api/items?run=verdicts_a")[1])
                        ["items"] if x["verdict"] == 0)
            await b.wait_for(f"document.getElementById('count').textContent === "
                             f"'{fails} of 300 items'")
            await b.eval("document.querySelector('th[data-col=\"_id\"]').click()")
            await b.wait_for("document.querySelector('th[data-col=\"_id\"]')"
                             ".textContent.includes('\u25b2')")
            await b.eval("document.querySelector('th[data-col=\"_id\"]').click()")
            await b.wait_for("document.querySelector('th[data-col=\"_id\"]')"
                             ".textContent.includes('\u25bc') && document.getElementById("
                             "'count').textContent.includes(' of 300')")
            first = await b.eval("document.querySelector('#body tr').dataset.id")
            ids = sorted((x["_id"] for x in json.loads(_get(
                base + "/api/items?run=verdicts_a")[1])["items"] if x["verdict"] == 0),
                key=lambda s: int(s[1:]), reverse=True)
            assert first == ids[0]
            await b.eval("{ const f = document.getElementById('filter'); f.value = '';"
                         "f.dispatchEvent(new Event('change')) }")
            await b.type("#search", "i123")
            await b.wait_for("document.getElementById('count').textContent === "
                             "'1 of 300 items'")
            # a transcript: the VB run's item opens its recorded calls
            await b.goto(base + "/run?name=nested%2Fdemo",
                         "document.querySelector('#body tr[data-id=\"jordan\"]') !== null")
            await b.eval("document.querySelector('#body tr[data-id=\"jordan\"]').click()")
            await b.wait_for("document.querySelectorAll('.transcript').length > 0")
            text = await b.eval("document.getElementById('dbody').textContent")
            assert "Who is Michael Jordan?" in text and "raw answer" in text
            # label three items with the keyboard and watch the interval change
            await b.goto(base + "/label?name=verdicts_a",
                         "document.querySelectorAll('.figure').length > 0")
            await b.eval("document.getElementById('who').value = 'kim';"
                         "document.getElementById('who').dispatchEvent(new Event('change'))")
            assert await b.eval("document.getElementById('verdict').className") == "hidden"
            shown = []
            for _ in range(3):
                item = await b.eval("document.getElementById('itemid').textContent")
                await b.key("p" if truth[item] else "f")
                await b.wait_for(f"document.getElementById('itemid').textContent !== "
                                 f"{json.dumps(item)}")
                shown.append(await b.eval("document.querySelector('.figure').textContent"))
            assert len(set(shown)) == 3  # the estimate and its interval moved each time
            assert "no labelled draw" not in shown[-1] and "[" in shown[-1]
            await b.key("u")  # undo the last label
            await b.wait_for("document.getElementById('status').textContent"
                             ".includes('2 of ') && document.getElementById('status')"
                             ".textContent.includes('items labelled')")
    asyncio.run(session())
    lines = [json.loads(x) for x in (folder / "verdicts_a" / "labels.jsonl").read_text()
             .splitlines()]
    assert sum(x["kind"] == "label" and x["annotator"] == "kim" for x in lines) == 3
    assert sum(x["kind"] == "undo" for x in lines) == 1


def test_items_are_paged_searched_filtered_and_sorted_on_the_server(server):
    base, folder, truth, _ = server
    full = json.loads(_get(base + "/api/items?run=verdicts_a")[1])["items"]
    status, body = _get(base + "/api/items?run=verdicts_a&offset=100&limit=50")
    assert status == 200
    got = json.loads(body)
    assert (got["total"], got["matched"], got["offset"], len(got["items"])) == (300, 300, 100, 50)
    assert [x["_id"] for x in got["items"]] == [x["_id"] for x in full[100:150]]
    assert [x["_row"] for x in got["items"]] == list(range(100, 150))
    # texts travel with the page
    assert all(x.get("system") in ("A", "B") for x in got["items"])
    fails = [x["_id"] for x in full if x["verdict"] == 0]
    got = json.loads(_get(base + "/api/items?run=verdicts_a&offset=0&limit=1000"
                                 "&filter=fail")[1])
    assert got["matched"] == len(fails) and [x["_id"] for x in got["items"]] == fails
    got = json.loads(_get(base + "/api/items?run=verdicts_a&limit=5&sort=_row&dir=desc")[1])
    got = json.loads(_get(base + "/api/items?run=verdicts_a&limit=3&sort=id&dir=desc")[1])
    ids = sorted((x["id"] for x in full), key=str, reverse=True)
    assert [x["id"] for x in got["items"]] == ids[:3]
    # search matches values, not keys: every row has a "verdict" key
    assert json.loads(_get(base + "/api/items?run=verdicts_a&limit=10&q=verdict")[1])[
        "matched"] == 0
    row = json.loads(_get(base + "/api/item?run=verdicts_a&row=7")[1])["item"]
    assert row["id"] == full[7]["id"]
    for bad in ("limit=0", "limit=5000", "offset=-1", "limit=x", "filter=nope"):
        status, text = _get(base + f"/api/items?run=verdicts_a&{bad}")
        assert status == 400 and text, bad
    assert _get(base + "/api/item?run=verdicts_a&row=99999")[0] == 404
    assert _get(base + "/api/item?run=verdicts_a&row=-3")[0] == 400


def test_a_page_of_a_hundred_thousand_items_reads_only_its_rows(tmp_path, monkeypatch):
    """The index scans bytes once; a page parses only its own lines (the speed is
    measured in benchmarks/view_pages.py, not asserted here)."""
    from judgekit.view import pages

    path = tmp_path / "items.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(100_000):
            fh.write(json.dumps({"id": f"q{i}", "input": f"question {i}", "output": f"a{i}",
                                 "verdict": i % 2}) + "\n")
    calls = []
    real = pages.Index.line

    def counted(self, k):
        calls.append(k)
        return real(self, k)

    # the viewer also parses every row in the background for search and filters; here
    # only what the page itself reads is counted
    monkeypatch.setattr(pages.Index, "start_facts", lambda self: None)
    pages.Index.line = counted
    try:
        got = pages.page(path, {}, offset=99_900, limit=100)
    finally:
        pages.Index.line = real
    assert got.total == 100_000 and len(got.items) == 100
    assert got.items[0]["input"] == "question 99900" and got.items[-1]["_row"] == 99_999
    assert sorted(set(calls)) == list(range(200)) + list(range(99_900, 100_000))


@needs_chromium
def test_one_grid_holds_every_runs_items_with_the_run_as_a_column(server):
    base, folder, truth, _ = server
    got = json.loads(_get(base + "/api/samples?offset=0&limit=1000")[1])
    runs = {x["_run"] for x in got["items"]}
    assert {"verdicts_a", "verdicts_b"} <= runs and got["columns"][0] == "_run"
    a = json.loads(_get(base + "/api/items?run=verdicts_a&limit=1")[1])
    b = json.loads(_get(base + "/api/items?run=verdicts_b&limit=1")[1])
    assert got["total"] >= a["total"] + b["total"]
    one = json.loads(_get(base + "/api/samples?limit=10&q=i123")[1])
    assert {(x["_run"], x["_id"]) for x in one["items"]} >= {("verdicts_a", "i123"),
                                                             ("verdicts_b", "i123")}

    async def session() -> None:
        async with Browser() as b:
            await b.goto(base + "/samples")
            count = await b.eval("document.getElementById('count').textContent")
            assert count == f"{got['total']} of {got['total']} items"
            assert await b.eval("document.getElementById('label') === null")
            head = await b.eval("[...document.querySelectorAll('#head th')]"
                                ".map(t => t.dataset.col)")
            assert head[0] == "_run"
            await b.key("j")  # the cursor moves to the next row, Enter opens it
            assert await b.eval("document.querySelectorAll('#body tr.cursor').length") == 1
            await b.eval("document.dispatchEvent(new KeyboardEvent('keydown', "
                         "{key: 'Enter'}))")
            await b.wait_for("document.getElementById('dtitle').textContent.includes(' \\u00b7 ')")
            await b.wait_for("document.getElementById('dbody').textContent.includes("
                             "'every field')")
    asyncio.run(session())
