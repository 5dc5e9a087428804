"""The reports' pages run in a real DOM (jsdom under node, when node and the npm registry
are reachable; headless Chromium could not run on the development machine): the filter
and the search over every item, the warning and headline before the tables, no request
leaves the page."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import judgekit
from judgekit.report import html as rhtml

SCRIPT = r"""
const {JSDOM, VirtualConsole} = require(process.argv[2] + "/node_modules/jsdom");
const fs = require("fs");
const page = fs.readFileSync(process.argv[3], "utf8");
const steps = JSON.parse(process.argv[4]);
const requests = [];
class Loader extends require(process.argv[2] + "/node_modules/jsdom").ResourceLoader {
  fetch(url) { requests.push(url); return null; }
}
const vc = new VirtualConsole();
const errors = [];
vc.on("jsdomError", e => errors.push(String(e)));
const dom = new JSDOM(page, {runScripts: "dangerously", resources: new Loader(),
                             virtualConsole: vc});
const d = dom.window.document;
const out = {title: d.title, errors, requests,
             headings: [...d.querySelectorAll("h1,h2")].map(h => h.textContent),
             first: [...d.body.children].slice(0, 4).map(e => e.tagName + "." + e.className),
             results: []};
for (const [q, k] of steps) {
  d.getElementById("jk-q").value = q;
  d.getElementById("jk-k").value = k;
  dom.window.jkFilter();
  const shown = [...d.querySelectorAll(".item")].filter(e => e.style.display !== "none");
  out.results.push({n: Number(d.getElementById("jk-n").textContent),
                    shown: shown.length,
                    rest: d.querySelectorAll("#jk-rest .item").length,
                    kinds: [...new Set(shown.map(e => e.dataset.kind || "rest"))]});
}
console.log(JSON.stringify(out));
"""


# jsdom is installed before the tests run (bash .ci/run does it; by hand:
# npm install --prefix .ci/jsdom jsdom@24): a test run never downloads.
JSDOM_HOME = Path(__file__).resolve().parent.parent / ".ci" / "jsdom"


@pytest.fixture(scope="session")
def jsdom(tmp_path_factory):
    node = shutil.which("node")
    if not node:
        pytest.skip("node is needed for the DOM tests")
    if not (JSDOM_HOME / "node_modules" / "jsdom").is_dir():
        pytest.skip(f"jsdom is not installed in {JSDOM_HOME} (bash .ci/run installs it: "
                    "npm install --prefix .ci/jsdom jsdom@24)")
    home = tmp_path_factory.mktemp("jsdom")
    (home / "node_modules").symlink_to(JSDOM_HOME / "node_modules")
    (home / "run.js").write_text(SCRIPT)
    return node, home


def _run(jsdom, page, steps):
    node, home = jsdom
    r = subprocess.run([node, str(home / "run.js"), str(home), str(page), json.dumps(steps)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_synthetic_page_filters_and_searches_every_item(tmp_path, jsdom, monkeypatch):
    monkeypatch.setattr(rhtml, "MAX_ITEMS", 300)
    judgekit.run("nodata_synthetic", evaluators=["dt_decimal"], phi=[0.5], escape_rounds=[1],
                 out=str(tmp_path / "s"))
    items = [json.loads(x) for x in (tmp_path / "s" / "items.jsonl").read_text().splitlines()]
    late = items[-1]["x"]  # an item beyond the first 300: only in the compact rows
    def kind_of(x):
        return (f"{'success' if x['success'] else 'failure'} · {x['phenomenon']} · "
                f"{x['evaluator']}")
    counts = {}
    for x in items:
        counts[kind_of(x)] = counts.get(kind_of(x), 0) + 1
    kinds = sorted(counts)
    out = _run(jsdom, tmp_path / "s" / "report.html",
               [["", ""], [late, ""], ["zzz-no-such-text", ""]] + [["", k] for k in kinds])
    assert not out["errors"] and not out["requests"]
    everything, search, none, *by_kind = out["results"]
    assert everything["n"] == everything["shown"] == 300 and everything["rest"] == 0
    # found although it is not among the items rendered in full
    assert search["rest"] >= 1 and search["n"] >= 1
    assert none == {"n": 0, "shown": 0, "rest": 0, "kinds": []}
    # the filter counts every item of its kind, rendered or not
    assert [r["n"] for r in by_kind] == [counts[k] for k in kinds]
    assert sum(r["n"] for r in by_kind) == len(items)


def test_demo_page_warns_before_its_headline(tmp_path, jsdom):
    judgekit.run("demo", cassette_mode="none", out=str(tmp_path / "d"))
    out = _run(jsdom, tmp_path / "d" / "report.html", [["jaguar", ""]])
    assert not out["errors"] and not out["requests"]
    assert out["first"][0].startswith("H1") and out["first"][1] == "P.warning"
    assert out["headings"][0] == "VB-Score case study"
    assert "Checks of the LLM steps" in out["headings"]
    assert out["results"][0]["n"] >= 1


def test_probe_page_filters_by_what_flipped(tmp_path, jsdom):
    judgekit.run("probe_local", cassette_mode="none", out=str(tmp_path / "p"))
    items = [json.loads(x) for x in (tmp_path / "p" / "items.jsonl").read_text().splitlines()]
    swapped = sum("swap" in (x.get("flipped_under") or []) for x in items)
    kinds = sorted({("flipped under " + ", ".join(x["flipped_under"]))
                    if x.get("flipped_under") else "consistent" for x in items})
    out = _run(jsdom, tmp_path / "p" / "report.html", [["", k] for k in kinds])
    assert sum(r["n"] for r in out["results"]) == len(items)
    assert swapped == sum(r["n"] for k, r in zip(kinds, out["results"]) if "swap" in k)


def test_a_hostile_item_beyond_the_rendered_ones_cannot_break_the_search(tmp_path, jsdom,
                                                                          monkeypatch):
    from judgekit.report.document import Doc
    from judgekit.runs.folder import write_folder

    monkeypatch.setattr(rhtml, "MAX_ITEMS", 5)
    items = [{"id": f"i{k}", "text": f"plain {k}"} for k in range(12)]
    items[7]["text"] = "<!--<script>alert(1)</script>"  # beyond the 5 rendered in full
    items[10]["text"] = "needle-after-the-hostile-one"
    d = Doc("hostile")
    d.h(1, "hostile")
    write_folder(tmp_path, d, details={"items": items})
    out = _run(jsdom, tmp_path / "report.html",
               [["needle-after-the-hostile-one", ""], ["<!--<script>", ""], ["", ""]])
    assert not out["errors"] and not out["requests"]
    needle, hostile, everything = out["results"]
    assert needle["n"] == 1 and needle["rest"] == 1
    assert hostile["n"] == 1
    assert everything["n"] == 5  # the rendered ones; the rest are searched
