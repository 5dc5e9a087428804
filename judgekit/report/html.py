"""A self-contained report.html per run: no network, no CDN, figures embedded.

It shows the run's report document (headline tables with intervals) rendered to
HTML, the figures as inline PNGs, and a searchable, filterable per-item view built
from the run's detail records (audited items, VB queries). Everything is escaped;
the only script is the small filter below, inlined.
"""

from __future__ import annotations

import base64
import html
import itertools
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from judgekit.core.jsontypes import JSONObject
from judgekit.report.document import Doc, to_html

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:1em 2em;
color:#1b1b1b}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2} code{background:#f4f4f4;padding:0 3px}
img{max-width:100%;border:1px solid #ddd;margin:.4em 0}
.item{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.2em .6em}
.item summary{cursor:pointer} .pass{color:#186a18} .fail{color:#a11} .excl{color:#777}
.controls{position:sticky;top:0;background:#fff;padding:.5em 0;border-bottom:1px solid #ddd}
.controls input{width:24em} pre{white-space:pre-wrap;background:#fafafa;padding:.4em}
.warning{background:#fff4e5;border-left:4px solid #d97706;padding:.5em .8em}
"""

_JS = """
var jkRest=null;
function jkFilter(){
  var q=document.getElementById('jk-q').value.toLowerCase();
  var k=document.getElementById('jk-k').value;var n=0;
  document.querySelectorAll('.item:not(.rest)').forEach(function(el){
    var ok=(!q||el.textContent.toLowerCase().indexOf(q)>=0)&&(!k||el.dataset.kind===k);
    el.style.display=ok?'':'none'; if(ok){n++;}});
  if(jkRest===null){var d=document.getElementById('jk-rest-data');
    jkRest=d?JSON.parse(d.textContent):[];}
  var box=document.getElementById('jk-rest');var html=[];var more=0;
  if(box&&(q||k)){jkRest.forEach(function(r){
    if((!q||r[2].indexOf(q)>=0)&&(!k||r[0]===k)){n++;
      if(html.length<MAX_REST){html.push("<details class='item rest'><summary>"+r[1]+
        "</summary><p>Full record: line "+r[3]+" of the JSONL.</p></details>");}
      else{more++;}}});}
  if(box){box.innerHTML=html.join('')+(more?'<p>'+more+' more match; narrow the search.</p>':'');}
  document.getElementById('jk-n').textContent=n;}
""".replace("MAX_REST", "300")  # = MAX_REST_SHOWN


# a figure whose panels are also saved alone: the page shows the whole figure once
PANELS = {"four_panel.png": ("vb_vs_es.png", "vb_vs_alpha.png")}


def _figures(folder: Path) -> str:
    parts = []
    pngs = sorted(folder.glob("*.png"))
    hidden = {p for whole, panels in PANELS.items() if (folder / whole).exists()
              for p in panels}
    for png in [p for p in pngs if p.name not in hidden]:
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        parts.append(f"<figure><img alt='{html.escape(png.name)}' "
                     f"src='data:image/png;base64,{data}'><figcaption>"
                     f"{html.escape(png.name)}</figcaption></figure>")
    return "\n".join(parts)


_TAGS = re.compile(r"<[^>]+>")


def _script_json(obj: Any) -> str:
    """JSON safe inside <script>: every "<", ">" and "&" is a JSON escape, so neither
    "</script>" nor "<!--<script>" (which puts the HTML parser in its double-escaped
    state and swallows the rest of the page) can appear in the element."""
    return (js(obj).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


def js(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def pre(obj: Any) -> str:
    """``obj`` (text, or JSON of anything else) escaped in a <pre>."""
    text = obj if isinstance(obj, str) else json.dumps(obj, indent=1, ensure_ascii=False,
                                                         default=str)
    return f"<pre>{html.escape(text)}</pre>"


_SINGULAR = {"queries": "query", "items": "item", "replica_failures": "failed replica"}
MAX_REPLICAS = 5  # replicas shown per query; the rest stay in queries.jsonl
MAX_ITEMS = 2000  # items rendered on the page; the rest are searchable as compact rows
MAX_REST_SHOWN = 300  # rows beyond MAX_ITEMS listed at once for a search
MAX_SUMMARISED = 20_000  # compact rows beyond MAX_ITEMS: the page has a fixed maximum size;
# the rest are in the detail file, paged by `judgekit view`
Item = tuple[str, str, str]  # (kind for the filter, summary line, body HTML)


def generic_item(rec: JSONObject) -> Item:
    if "success" in rec:
        kind = "pass" if rec["success"] else "fail"
    else:
        kind = str(rec.get("kind") or rec.get("stage") or "item")
    return kind, html.escape(json.dumps(rec, ensure_ascii=False)[:160]), pre(rec)


def num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def ci_text(ci: Any) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def write_report_html(out: Path, doc: Doc, details: Mapping[str, Any],
                      views: Mapping[str, Callable[[JSONObject], Item]] | None = None
                      ) -> Path:
    """Write ``out/report.html`` from the report document, the figures in ``out`` and the
    per-item records."""
    sections = []
    for name, got in details.items():
        render = (views or {}).get(name, generic_item)
        # a detail file streams: the first MAX_ITEMS rendered in full, the rest summarised
        rows = got.rows() if hasattr(got, "rows") else iter(got)
        count = getattr(got, "count", None)  # a list's .count is a method, not a number
        total = count if isinstance(count, int) else len(got)
        items = [render(r) for r in itertools.islice(rows, MAX_ITEMS)]
        # beyond MAX_ITEMS: [kind, summary HTML, search text, line in the JSONL]; each
        # item's full body is dropped as soon as it is made (20,000 queries' replica
        # tables were held at once)
        rest_rows: list[tuple[str, str, str, int]] = [
            (k, s, html.unescape(_TAGS.sub("", s)).lower(), i)
            for i, (k, s, _) in enumerate(map(render, itertools.islice(rows, MAX_SUMMARISED)),
                                          start=MAX_ITEMS + 1)]
        covered = MAX_ITEMS + len(rest_rows)
        more = (f"<p>{MAX_ITEMS} of {total} are shown in full; the search and the filter "
                f"cover {'all ' if covered >= total else 'the first '}{covered} (matches "
                f"beyond these are listed below them, {MAX_REST_SHOWN} at a time, with their "
                f"line in {html.escape(name)}.jsonl)."
                + (f" The other {total - covered} are in {html.escape(name)}.jsonl: "
                   "<code>judgekit view FOLDER</code> pages, searches and filters every one."
                   if covered < total else "") + "</p>" if rest_rows else "")
        kinds = sorted({k for k, _, _ in items} | {r[0] for r in rest_rows})
        options = "".join(f"<option value='{html.escape(k)}'>{html.escape(k)}</option>"
                          for k in kinds)
        cards = "\n".join(
            f"<details class='item' data-kind='{html.escape(k)}'><summary>{s}</summary>{b}"
            "</details>" for k, s, b in items)
        sections.append(
            f"<h2>Per {html.escape(_SINGULAR.get(name, name.rstrip('s')))} ({total})</h2>"
            "<div class='controls'><input id='jk-q' type='search' placeholder='search text' "
            "oninput='jkFilter()'> <select id='jk-k' onchange='jkFilter()'>"
            f"<option value=''>all</option>{options}</select> "
            f"showing <span id='jk-n'>{len(items)}</span></div>{more}{cards}"
            f"<div id='jk-rest'></div><script type='application/json' id='jk-rest-data'>"
            f"{_script_json(rest_rows)}</script>")
        break  # one filterable list per page keeps the controls unambiguous
    page = ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
           f"<title>{html.escape(doc.title)}</title><style>{_CSS}</style>"
           f"<script>{_JS}</script></head><body>"
           f"{to_html(doc)}<h2>Figures</h2>{_figures(out) or '<p>none</p>'}"
           f"{''.join(sections)}</body></html>\n")
    from judgekit.llm.secrets import scrub_text
    from judgekit.runs.io import write_bytes

    path = out / "report.html"
    write_bytes(path, scrub_text(page).encode("utf-8"))
    return path
