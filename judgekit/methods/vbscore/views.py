"""The HTML view of one VB query (report.html)."""

from __future__ import annotations

import html

from judgekit.core.payload import Json
from judgekit.report.html import MAX_REPLICAS, Item, ci_text, js, num


def vb_query(rec: Json) -> Item:
    """A VB query: scores with intervals, and each replica's interpretations, outputs,
    tags and gains."""
    agree = rec.get("replicas_agree")
    kind = "agree" if agree else "spread"
    vb = rec.get("vb") or {}
    summary = (f"{html.escape(str(rec.get('dataset')))} / {html.escape(str(rec.get('query_id')))}"
               f": ES {num(rec.get('es'))} {ci_text(rec.get('es_ci'))}; VB "
               + ", ".join(f"{a}: {num(v)}" for a, v in vb.items())
               + f"; B = {rec.get('replicas')}" + (" (all replicas agree)" if agree else ""))
    replicas = rec.get("replica_records") or []
    reps = "".join(
        f"<h4>replica {r.get('replica')}</h4>"
        f"<p>interpretations: {html.escape(js(r.get('distribution')))}"
        f"</p><p>outputs: {html.escape(js(r.get('outputs')))}</p>"
        f"<p>tags: {html.escape(js(r.get('linked')))}; gains "
        f"{r.get('gains')}; ES {num(r.get('es'))}</p>"
        for r in replicas[:MAX_REPLICAS])
    if len(replicas) > MAX_REPLICAS:
        reps += (f"<p>... {len(replicas) - MAX_REPLICAS} more replicas in queries.jsonl</p>")
    body = (f"<p>{html.escape(str(rec.get('query')))}</p>"
            f"<p>gold: {html.escape(str(rec.get('gold')))}</p>{reps}")
    return kind, summary, body
