"""The HTML view of one probed pair or judged item (report.html)."""

from __future__ import annotations

import html
from typing import Any

from judgekit.core.payload import Json
from judgekit.report.html import Item


def probe_item(rec: Json) -> Item:
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
