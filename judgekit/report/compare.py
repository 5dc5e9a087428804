"""The report of `judgekit compare`: the paired difference first, with its interval,
then the two runs side by side, secondary rows and the judges' agreement."""

from __future__ import annotations

from typing import Any

from judgekit.report.document import Doc


def _ci(ci: Any) -> str:
    return "n/a" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def build(comp: Any) -> Doc:
    pct = f"{comp.level:.0%}"
    doc = Doc(f"Comparison: {comp.method}")
    doc.h(1, f"Comparison of two {comp.method} runs")
    doc.p(f"**{comp.measure}**: B - A = {comp.difference:+.3f}, {pct} interval "
          f"{_ci(comp.difference_ci)}, p = {_num(comp.p_value)}, over {comp.n_paired} "
          f"paired items. Verdict: {comp.verdict}.")
    doc.p(f"{comp.changed} of the {comp.n_paired} paired items changed outcome. "
          f"Items in one run only: A {comp.unmatched_a}, B {comp.unmatched_b} "
          "(not compared).")
    doc.h(2, "The two runs")
    doc.table(["run", "folder", "judge", "items", "rate", f"{pct} interval"], [
        ["A", comp.a.path or "(in memory)", comp.a.judge or "n/a", comp.a.n_items,
         comp.a.rate, _ci(comp.a.rate_ci)],
        ["B", comp.b.path or "(in memory)", comp.b.judge or "n/a", comp.b.n_items,
         comp.b.rate, _ci(comp.b.rate_ci)]], name="runs")
    if comp.secondary:
        doc.h(2, "Other paired differences")
        doc.table(["measure", "n", "A", "B", "B - A", f"{pct} interval", "p"],
                  [[r.name, r.n, r.a, r.b, r.difference, _ci(r.difference_ci),
                    r.p_value] for r in comp.secondary], name="secondary")
    if comp.agreement:
        ag = comp.agreement
        doc.h(2, "Agreement between the two runs' labels")
        doc.table(["statistic", "value", f"{pct} interval"], [
            ["percent agreement", ag.percent, _ci(ag.cis.get("percent"))],
            ["Cohen's kappa", ag.kappa, _ci(ag.cis.get("kappa"))],
            ["Gwet's AC1", ag.ac1, _ci(ag.cis.get("ac"))]], name="agreement")
        doc.p(f"n = {ag.n} items labelled by both.")
    doc.p("Intervals: Newcombe's paired score interval with the exact McNemar test for "
          "rates; a percentile bootstrap over queries with a paired t test for VB-Score. "
          "Per-item outcomes are in differences.csv.")
    return doc
