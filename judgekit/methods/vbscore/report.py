"""The VB-Score case study's report (as a :class:`Doc`) and figures."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgekit.core.payload import Rate
from judgekit.core.results import RunResult
from judgekit.llm.ledger import CallSummary
from judgekit.methods.vbscore.config import VBScoreConfig
from judgekit.methods.vbscore.payload import (
    QueryFigures,
    SelfCheck,
    Stability,
    VBDataset,
    VBScorePayload,
)
from judgekit.report.document import Doc
from judgekit.report.figures import pyplot, save


def report(cfg: VBScoreConfig, result: RunResult[VBScorePayload]) -> Doc:
    """The case study's report document."""
    assert result.payload is not None and result.calls is not None
    return build(cfg, result.payload, result.calls, _queries(result.payload))


def draw(cfg: VBScoreConfig, result: RunResult[VBScorePayload], out: Path) -> None:
    """The case study's figures."""
    assert result.payload is not None
    figures(cfg, result.payload, _queries(result.payload), out)


def _queries(p: VBScorePayload) -> list[QueryFigures]:
    """The per-query figures the report and figures read (the replica records stay in
    queries.jsonl), read once for both."""
    return [QueryFigures.model_validate(q) for q in p.queries.rows_without("replica_records")]


def _ci(ci: Sequence[float | None]) -> str:
    return "n/a" if ci[0] is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def build(cfg: VBScoreConfig, p: VBScorePayload, calls: CallSummary,
          queries: list[QueryFigures]) -> Doc:
    a = cfg.alpha
    t1 = [[d.name, _f(d.vb), _ci(d.vb_ci), _f(d.es), _ci(d.es_ci or [None, None]),
           _f(d.accuracy), _ci(d.accuracy_ci or [None, None]),
           _f(d.p_value) + (f" ({d.t_test_note})" if d.t_test_note else ""),
           d.n_queries, d.replicas] for d in p.datasets]
    alphas = [repr(x) for x in cfg.alphas]
    grid = [[d.name, *[_f((d.vb_by_alpha or {}).get(x)) for x in cfg.alphas]]
            for d in p.datasets]
    shown, hidden = forest_rows(queries, repr(a))
    key = repr(a)
    pq = [[q.dataset, q.query_id,
           f"{q.replicas}" + (" (all agree: no spread seen)" if q.replicas_agree else ""),
           _f(q.es), _f(q.vb[key]), _ci(q.vb_ci[key]),
           _f(q.vb_of_mean_es.get(key)), _f(q.accuracy),
           _f(q.response_diversity)] for q in shown]
    stage_rows = [[name, s.calls, s.provider_calls, s.cached, s.failed,
                   s.attempts, s.prompt_tokens, s.completion_tokens]
                  for name, s in calls.per_stage.items()]
    n_rep = sum(q.replicas for q in queries) or 1
    doc = Doc("VB-Score case study")
    doc.h(1, "VB-Score case study")
    check = p.self_check
    if check is not None and not check.reliable:
        doc.warn("the VB headline below is unreliable: " + "; ".join(check.reasons) +
                 ". Its numbers are computed as usual but do not measure the system.")
    doc.p("Headline: " + "; ".join(
        f"{d.name}: VB = {_f(d.vb)} {_ci(d.vb_ci)}, ES = {_f(d.es)} "
        f"{_ci(d.es_ci or [None, None])}, n = {d.n_queries} queries" for d in p.datasets)
        + ".")
    doc.p(
        f"System under test: `{cfg.models['system']}`; judge (interpretations, tagging, "
        f"correctness): `{cfg.models['judge']}`. B = {cfg.replicas} replicas, "
        f"{cfg.interpretations} interpretations, k = {cfg.k}, alpha = {a}, seed = {cfg.seed}. "
        f"Intervals ({cfg.level:.0%}): per query a hedged-betting interval for a bounded "
        "mean on the score's range, which covers for any score distribution, however few "
        "the replicas (the percentile bootstrap is in queries.jsonl only for "
        "queries with 20 or more graded replicas, where it covers); per dataset Student t "
        "over queries with the ends of the score's range as two half-weight "
        "pseudo-observations, so that a few agreeing queries keep a width. VB is reported "
        "raw (it can be negative).")
    lv = f"{cfg.level:.0%}"
    doc.h(2, "Per dataset (the paper's Table 1)").table(
        ["dataset", f"VB (alpha={a})", f"{lv} CI", "ES", f"ES {lv} CI", "accuracy",
         f"accuracy {lv} CI", "p (VB vs ES, paired t)", "queries", "B"], t1, "datasets")
    doc.h(2, "VB over the alpha grid").table(["dataset", *[f"VB_{x}" for x in alphas]], grid,
                                             "vb_by_alpha")
    doc.h(2, "Per query" + (f" ({FOREST_ROWS} lowest and highest VB of "
                            f"{len(queries)}; all are in queries.jsonl)"
                            if hidden else ""))
    doc.table(["dataset", "query", "replicas", "ES", "VB", f"VB {lv} CI", "VB(mean ES)",
               "accuracy", "diversity"], pq)
    if check is not None:
        _self_check(doc, check, cfg.level)
    doc.h(2, "Calls and failures").p(
        f"Total calls {calls.total} (provider {calls.provider_calls}, cached "
        f"{calls.cached}), failed {calls.failed} (each after its last allowed attempt; "
        "see failures.jsonl); "
        f"{calls.total / n_rep:.2f} calls per scored replica. Tokens: prompt "
        f"{calls.prompt_tokens}, completion {calls.completion_tokens}; cost "
        f"{_cost(calls.cost_usd)}" + _abandoned(calls) + ".")
    doc.table(["stage", "calls", "provider", "cached", "failed", "attempts",
               "prompt tokens", "completion tokens"], stage_rows, "calls")
    doc.p("Replicas excluded from scores (never scored as zero): " +
          (", ".join(f"{k}: {v}" for k, v in p.failures_by_stage.items()) or "none") + ".")
    return doc


def _self_check(doc: Doc, check: SelfCheck, level: float) -> None:
    t, it = check.tagger, check.interpretations or Stability()
    rows = []

    def row(step: str, what: str, r: Rate | None, unit: str, clusters: int | None = None
            ) -> None:
        if r is not None:
            n_cl = clusters if clusters is not None else \
                r.clusters if "clusters" in r.model_fields_set else r.n
            rows.append([step, what, _f(r.rate), _ci(r.ci or [None, None]), r.n,
                         f"{n_cl} {unit}"])

    if t:
        ps = t.position_share
        row("tagger", "share of decisive calls whose tags stayed with the slot (position)",
            ps if ps.rate is not None else None, "calls", clusters=ps.n)
        row("tagger", "answer keeps its tag when moved (content)", t.content_agreement,
            "calls")
        row("tagger", "slot keeps its tag when a new answer moves in (position)",
            t.position_agreement, "calls")
        row("tagger", "same tags when re-asked with an irrelevant id (placebo)",
            t.placebo_agreement, "calls")
    row("interpretations", "two replicas agree on the top reading",
        it.top_reading_agreement, "queries")
    row("interpretations", "two replicas give the same set of readings",
        it.same_readings, "queries")
    doc.h(2, "Checks of the LLM steps").p(
        "The tagger is probed like a judge: each tagging call is asked again with its "
        "answers rotated (every answer moves) and with an irrelevant reference id (its "
        "noise floor). " + (f"Decision: {t.decision} ({t.reason})." if t else
                            "The tagger check was off (check_tagger: false).") +
        f" Rates are shares (0 to 1) with {level:.0%} intervals that treat a call or a "
        "query as one cluster.")
    doc.table(["step", "what", "rate", f"{level:.0%} CI", "n", "clusters"], rows, "self_check")


def figures(cfg: VBScoreConfig, p: VBScorePayload, queries: list[QueryFigures], out: Path
            ) -> None:
    rows = [d for d in p.datasets if d.vb is not None]
    if not rows:
        return
    plt = pyplot()
    names = [d.name for d in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    _vb_vs_es(ax, rows, names, cfg.alpha)
    save(fig, out / "vb_vs_es.png")
    fig, ax = plt.subplots(figsize=(6, 4))
    _alpha(ax, rows, cfg)
    save(fig, out / "vb_vs_alpha.png")
    fig, axs = plt.subplots(2, 2, figsize=(11, 8))
    _vb_vs_es(axs[0, 0], rows, names, cfg.alpha)
    _baselines(axs[0, 1], rows, names)
    _uncertainty(axs[1, 0], rows, names)
    _alpha(axs[1, 1], rows, cfg)
    fig.tight_layout()
    save(fig, out / "four_panel.png")
    _forest(plt, queries, cfg, out)


FOREST_ROWS = 15  # per end: the figure's size does not grow with the collection


def forest_rows(qs: list[QueryFigures], key: str, per_end: int = FOREST_ROWS
                ) -> tuple[list[QueryFigures], int]:
    """The queries a forest plot shows: all of them when few, else the ``per_end`` lowest
    and highest VB (the extremes a reader looks for) and how many were left out."""
    if len(qs) <= 2 * per_end:
        return list(qs), 0
    order = sorted(qs, key=lambda q: (q.vb[key], q.dataset, q.query_id))
    return order[:per_end] + order[-per_end:], len(qs) - 2 * per_end


def _forest(plt: Any, qs: list[QueryFigures], cfg: VBScoreConfig, out: Path) -> None:
    import numpy as np

    key = repr(cfg.alpha)
    shown, hidden = forest_rows(qs, key)
    fig, ax = plt.subplots(figsize=(7, max(3, 0.3 * (len(shown) + 2) + 1)))
    for i, q in enumerate(shown):
        lo, hi = q.vb_ci[key]
        ax.plot([lo, hi], [i, i], color="tab:blue")
        ax.plot(q.vb[key], i, "o", color="tab:blue")
        ax.plot(q.es, i, "x", color="tab:orange")
    labels = [f"{q.dataset}:{q.query_id}"[:40] for q in shown]
    if hidden:
        vb = np.array([q.vb[key] for q in qs])
        y = len(shown) + 1
        ax.boxplot(vb, positions=[y], vert=False, widths=0.8)
        labels += ["", f"all {len(qs)} queries"]
        ax.axhline(FOREST_ROWS - 0.5, color="grey", lw=0.5, ls=":")
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel(f"VB_{cfg.alpha} (o, 95% CI) and ES (x)")
    title = "Per-query forest plot"
    if hidden:
        title += f": {FOREST_ROWS} lowest and highest of {len(qs)} (box: all)"
    ax.set_title(title)
    save(fig, out / "forest.png")


def _vb_vs_es(ax: Any, rows: list[VBDataset], names: list[str], alpha: float) -> None:
    x = range(len(rows))
    vb = [d.vb for d in rows]
    err = [[d.vb - d.vb_ci[0] for d in rows], [d.vb_ci[1] - d.vb for d in rows]]  # type: ignore[operator]
    ax.errorbar([i - 0.1 for i in x], vb, yerr=err, fmt="o", capsize=4, label=f"VB_{alpha}")
    ax.plot([i + 0.1 for i in x], [d.es for d in rows], "s", label="ES")
    ax.set_xticks(list(x), names)
    ax.set_title("VB vs ES (95% CI)")
    ax.legend(fontsize=8)


def _baselines(ax: Any, rows: list[VBDataset], names: list[str]) -> None:
    import numpy as np

    x = np.arange(len(rows))
    for off, key in ((-0.25, "vb"), (0.0, "es"), (0.25, "accuracy")):
        ax.bar(x + off, [getattr(d, key) or 0 for d in rows], 0.25, label=key)
    ax.set_xticks(x, names)
    ax.set_title("Baselines (accuracy 0 where no gold)")
    ax.legend(fontsize=8)


def _uncertainty(ax: Any, rows: list[VBDataset], names: list[str]) -> None:
    import numpy as np

    x = np.arange(len(rows))
    ent = [d.mean_token_entropy or 0 for d in rows]
    div = [d.response_diversity or 0 for d in rows]
    ax.bar(x - 0.15, ent, 0.3, label="mean token entropy (bits; 0 = n/a)")
    ax.bar(x + 0.15, div, 0.3, label="response diversity")
    ax.set_xticks(x, names)
    ax.set_title("Uncertainty")
    ax.legend(fontsize=8)


def _alpha(ax: Any, rows: list[VBDataset], cfg: VBScoreConfig) -> None:
    for d in rows:
        ax.plot(cfg.alphas, [(d.vb_by_alpha or {})[a] for a in cfg.alphas], marker="o",
                label=d.name)
    ax.set_xlabel("alpha")
    ax.set_ylabel("VB")
    ax.set_title("VB against alpha")
    ax.legend(fontsize=8)


def _abandoned(calls: CallSummary) -> str:
    """Calls the client gave up on (its deadline): the provider may still answer and
    bill them, and reports no usage to this run, so the cost cannot include them."""
    n = sum(v for k, v in calls.failed_by_kind.items() if k == "timeout")
    return "" if not n else (f" (not counting {n} call(s) abandoned at the deadline, which "
                             "a provider may still bill: their usage never reached the run)")


def _cost(v: float | None) -> str:
    return "n/a (unknown prices)" if v is None else f"${v:.4f}"
