"""The HTML views of one audited item and one synthetic bit-string item."""

from __future__ import annotations

import html

from judgekit.core.payload import Json
from judgekit.report.html import Item, pre


def audit_item(rec: Json) -> Item:
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
            f"<h4>x (prompt and response)</h4>{pre(rec.get('x') or '')}"
            "<h4>x' per round</h4>" + "".join(pre(xp) for xp in rec.get("x_primes") or []))
    return kind, summary, body


def synthetic_item(rec: Json) -> Item:
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
