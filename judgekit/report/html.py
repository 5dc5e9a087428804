"""A self-contained report.html per run: no network, no CDN, figures embedded.

It shows the run's report document (headline tables with intervals) rendered to
HTML, the figures as inline PNGs, and a searchable, filterable per-item view built
from the run's detail records (audited items, VB queries). Everything is escaped;
the only script is the small filter below, inlined.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    """JSON safe inside <script>: a "</" in the data cannot close the element."""
    return _js(obj).replace("</", "<\\/")


def _js(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def _pre(obj: Any) -> str:
    text = obj if isinstance(obj, str) else json.dumps(obj, indent=1, ensure_ascii=False,
                                                         default=str)
    return f"<pre>{html.escape(text)}</pre>"


_SINGULAR = {"queries": "query", "items": "item", "replica_failures": "failed replica"}
MAX_REPLICAS = 5  # replicas shown per query; the rest stay in queries.jsonl
MAX_ITEMS = 2000  # items rendered on the page; the rest are searchable as compact rows
MAX_REST_SHOWN = 300  # rows beyond MAX_ITEMS listed at once for a search
Item = tuple[str, str, str]  # (kind for the filter, summary line, body HTML)


def audit_item(rec: dict[str, Any]) -> Item:
    """An audited judged item: outcome, challenges, x and x', judge's and verifier's
    criterion values with the judge's reasons."""
    if rec.get("excluded"):
        kind = "excluded"
    else:
        kind = "pass" if rec.get("success") else "fail"
    ev = rec.get("evaluator") or {}
    crit = ev.get("criteria") or []
    claims = (rec.get("claims_agree") or {}).get("criteria", {})
    rows = "".join(
        f"<tr><td>{html.escape(str(c.get('id')))}</td><td>{c.get('value')}</td>"
        f"<td>{'' if c.get('id') not in claims else ('agrees' if claims[c['id']] else 'DISAGREES')}"
        f"</td><td>{html.escape(str(c.get('reason', '')))}</td></tr>" for c in crit)
    failed = "" if rec.get("failed_round") is None else (
        f"; failed at round {rec['failed_round']} (challenge {rec.get('failed_challenge')}"
        + (": the verifier's reading of x contradicts the judge's claims"
           if rec.get("failed_challenge") == 0 else "") + ")")
    why = f" ({html.escape(str(rec['excluded']))})" if rec.get("excluded") else ""
    summary = (f"item {rec.get('index')}: <b class='{kind[:4]}'>{kind}</b>{why}; judge label "
               f"{ev.get('label')}; human label {rec.get('label')}; challenges "
               f"{rec.get('challenges')}{failed}")
    body = ("<h4>Judge's criteria (and whether the verifier's reading of x agrees)</h4>"
            "<table><tr><th>criterion</th><th>judge</th><th>verifier on x</th>"
            f"<th>judge's reason</th></tr>{rows}</table>"
            f"<p>Verifier's values on x: {html.escape(str(rec.get('verifier_x')))}</p>"
            f"<h4>x (prompt and response)</h4>{_pre(rec.get('x') or '')}"
            "<h4>x' per round</h4>" + "".join(_pre(xp) for xp in rec.get("x_primes") or []))
    return kind, summary, body


def vb_query(rec: dict[str, Any]) -> Item:
    """A VB query: scores with intervals, and each replica's interpretations, outputs,
    tags and gains."""
    agree = rec.get("replicas_agree")
    kind = "agree" if agree else "spread"
    vb = rec.get("vb") or {}
    summary = (f"{html.escape(str(rec.get('dataset')))} / {html.escape(str(rec.get('query_id')))}"
               f": ES {_num(rec.get('es'))} {_ci(rec.get('es_ci'))}; VB "
               + ", ".join(f"{a}: {_num(v)}" for a, v in vb.items())
               + f"; B = {rec.get('replicas')}" + (" (all replicas agree)" if agree else ""))
    replicas = rec.get("replica_records") or []
    reps = "".join(
        f"<h4>replica {r.get('replica')}</h4>"
        f"<p>interpretations: {html.escape(_js(r.get('distribution')))}"
        f"</p><p>outputs: {html.escape(_js(r.get('outputs')))}</p>"
        f"<p>tags: {html.escape(_js(r.get('linked')))}; gains "
        f"{r.get('gains')}; ES {_num(r.get('es'))}</p>"
        for r in replicas[:MAX_REPLICAS])
    if len(replicas) > MAX_REPLICAS:
        reps += (f"<p>... {len(replicas) - MAX_REPLICAS} more replicas in queries.jsonl</p>")
    body = (f"<p>{html.escape(str(rec.get('query')))}</p>"
            f"<p>gold: {html.escape(str(rec.get('gold')))}</p>{reps}")
    return kind, summary, body


def probe_item(rec: dict[str, Any]) -> Item:
    """A probed pair (or judged item): the question, both answers, the known answer, and
    the verdict under each change, with the changes that flipped it. Filter: "flipped
    under T" or "consistent"."""
    flipped = rec.get("flipped_under") or []
    kind = ("flipped under " + ", ".join(flipped)) if flipped else "consistent"
    v = rec.get("verdicts") or {}
    base = v.get("run0")
    def versus(k: str, val: Any) -> str:
        if k == "run0" or val is None or base is None:
            return ""
        return "same" if val == base else "<b>changed</b>"

    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(str(val))}</td>"
                   f"<td>{versus(k, val)}</td></tr>" for k, val in v.items() if ":" not in k)
    correct = rec.get("correct")
    summary = (f"{html.escape(str(rec.get('id')))}: <b>{html.escape(kind)}</b>; verdict "
               f"{html.escape(str(base))}" + (f" (correct: {html.escape(str(correct))})"
                                              if correct else ""))
    body = (f"<p><b>Question</b>: {html.escape(str(rec.get('question', '')))}</p>"
            f"<p><b>Answer A</b>: {html.escape(str(rec.get('a', '')))}</p>"
            f"<p><b>Answer B</b>: {html.escape(str(rec.get('b', '')))}</p>"
            "<table><tr><th>condition</th><th>verdict</th><th>vs as given</th></tr>"
            f"{rows}</table>")
    return kind, summary, body


def synthetic_item(rec: dict[str, Any]) -> Item:
    """A synthetic bit-string item: outcome, set, evaluator and phi in the filter; the
    item, its true and claimed labels, the challenge strings, where it failed."""
    outcome = "success" if rec.get("success") else "failure"
    kind = f"{outcome} · {rec.get('phenomenon')} · {rec.get('evaluator')}"
    fail = "" if rec.get("failed_round") is None else (
        f"; failed at round {rec['failed_round']} (challenge {rec.get('failed_challenge')})")
    summary = (f"<b class='{'pass' if rec.get('success') else 'fail'}'>{outcome}</b> "
               f"{html.escape(str(rec.get('phenomenon')))} · "
               f"{html.escape(str(rec.get('evaluator')))} · phi {rec.get('phi')}: x "
               f"<code>{html.escape(str(rec.get('x')))}</code>, true label {rec.get('true')},"
               f" judged {rec.get('label')}, final {rec.get('final_label')}"
               + (" (flipped)" if rec.get("flipped") else "") + fail)
    rows = "".join(f"<tr><td>{i + 1}</td><td><code>{html.escape(str(xp))}</code></td></tr>"
                   for i, xp in enumerate(rec.get("x_primes") or []))
    body = ("<table><tr><th>round</th><th>challenge x'</th></tr>" + rows + "</table>"
            if rows else "<p>No challenge was asked.</p>")
    return kind, summary, body


def generic_item(rec: dict[str, Any]) -> Item:
    if "success" in rec:
        kind = "pass" if rec["success"] else "fail"
    else:
        kind = str(rec.get("kind") or rec.get("stage") or "item")
    return kind, html.escape(json.dumps(rec, ensure_ascii=False)[:160]), _pre(rec)


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ci(ci: Any) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


RENDERERS: dict[str, Callable[[dict[str, Any]], Item]] = {
    "audit": audit_item, "vb": vb_query, "probe": probe_item, "synthetic": synthetic_item,
    "generic": generic_item}


def write_report_html(out: Path, doc: Doc, details: dict[str, list[dict[str, Any]]],
                      views: dict[str, str] | None = None) -> Path:
    """Write ``out/report.html`` from the report document, the figures in ``out`` and the
    per-item records."""
    sections = []
    for name, rows in details.items():
        render = RENDERERS[(views or {}).get(name, "generic")]
        items = [render(r) for r in rows[:MAX_ITEMS]]
        rest = [render(r) for r in rows[MAX_ITEMS:]]
        # beyond MAX_ITEMS: [kind, summary HTML, search text, line in the JSONL]
        rest_rows: list[tuple[str, str, str, int]] = [
            (k, s, html.unescape(_TAGS.sub("", s)).lower(), i)
                     for i, (k, s, _) in enumerate(rest, start=MAX_ITEMS + 1)]
        more = (f"<p>{MAX_ITEMS} of {len(rows)} are shown in full; the search and the filter "
                f"cover all {len(rows)} (matches beyond these are listed below them, "
                f"{MAX_REST_SHOWN} at a time, with their line in {html.escape(name)}.jsonl)."
                "</p>" if rest else "")
        kinds = sorted({k for k, _, _ in items} | {r[0] for r in rest_rows})
        options = "".join(f"<option value='{html.escape(k)}'>{html.escape(k)}</option>"
                          for k in kinds)
        cards = "\n".join(
            f"<details class='item' data-kind='{html.escape(k)}'><summary>{s}</summary>{b}"
            "</details>" for k, s, b in items)
        sections.append(
            f"<h2>Per {html.escape(_SINGULAR.get(name, name.rstrip('s')))} ({len(rows)})</h2>"
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

    path = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text(scrub_text(page), encoding="utf-8")
    tmp.replace(path)
    return path
