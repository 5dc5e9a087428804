"""Reports (as :class:`Doc`) and figures of the No-Data method: the LLM judge audit and
the synthetic bit-string study."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.results import RunResult
from judgekit.llm.ledger import CallSummary
from judgekit.methods.nodata.config import AuditConfig, NoDataConfig, SyntheticConfig
from judgekit.methods.nodata.payload import (
    AuditPayload,
    Known,
    SyntheticPayload,
    SyntheticRun,
    Verdict,
)
from judgekit.methods.nodata.synthetic import PAPER_PHI
from judgekit.report.document import Doc, Heading, Para, Table
from judgekit.report.figures import lines


def audit_figures(cfg: NoDataConfig, p: AuditPayload, out: Path) -> None:
    runs = p.runs
    lines(out / "success_vs_phi.png",
          {cfg.rubric_label: ([r.phi for r in runs], [r.success_rate for r in runs])},
          xlabel="phi", ylabel="success rate", ylim=(-0.02, 1.02),
          title=f"No-Data audit of {cfg.models['evaluator']}")


def synthetic_figures(cfg: NoDataConfig, p: SyntheticPayload, out: Path) -> None:
    _phi_figure(out / "success_vs_phi.png", p.runs)


def _file(path: Any) -> str:
    """A data file by its name only (no local folder in a report)."""
    return Path(str(path)).name if path else "n/a"


def _sources(data: Any) -> str:
    """Where each split came from, in words: "IP train regenerated, ..." or file names."""
    if not isinstance(data, dict):
        return _file(data)
    return "; ".join(f"{k} {'regenerated from the rubric' if v == 'regenerated' else _file(v)}"
                     for k, v in data.items())


def _agreement_line(k: Known) -> str:
    ag = k.agreement
    if not ag:
        return "No human labels: agreement not computed."

    def one(name: str, key: str) -> str:
        value = getattr(ag, key)
        ci = (ag.cis or {}).get(key)
        if value is None:
            return f"{name} undefined ({(ag.undefined or {}).get(key, '')})"
        assert ci is not None
        return f"{name} {value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"

    return ("Agreement of the evaluator's labels with the human labels "
            f"(n = {ag.n}): " + "; ".join([one("percent", "percent"), one("Cohen's kappa",
                                                                        "kappa"),
                                            one("Krippendorff's alpha", "alpha"),
                                            one("Gwet's AC1", "ac")])
            + f"; prevalence of the commonest human label {ag.prevalence:.3f} "
            f"(always saying it agrees {ag.majority_baseline:.3f})."
            + (f" Note: {ag.note}." if ag.note else ""))


def _pct(v: float | None) -> str:
    return "n/a" if v is None or v == "" else f"{100 * v:.1f}"


def _pci(v: float | None, ci: list[float] | None) -> str:
    """A percentage with its 95% interval."""
    if v is None:
        return "n/a"
    return _pct(v) if ci is None else f"{_pct(v)} [{_pct(ci[0])}, {_pct(ci[1])}]"


def _verdict_table(v: Verdict) -> Table | None:
    """The evidence behind the decision, one row a reference."""
    if v.reference is None:
        return None

    def ci(x: list[float] | None, f: str = "{:.3f}") -> str:
        if not x or any(t is None for t in x):
            return ""
        return "[" + ", ".join(f.format(t) for t in x) + "]"

    ver, un, lab = v.verifier, v.uninformed, v.label_agreement
    assert ver is not None and un is not None and lab is not None
    rows = [["success rate", f"{v.success_rate:.3f} {ci(v.success_ci)}", v.n_items],
            ["perfect judge under this verifier (reference)", f"{v.reference:.3f}",
             ver.rereads],
            ["success / reference", "undefined (the reference is 0)"
             if v.relative_success is None else f"{v.relative_success:.2f} "
             f"{ci(v.relative_success_ci, '{:.2f}')}", v.n_items],
            ["claims agree (challenge 0)", f"{v.claim_agreement:.3f}", v.n_items],
            ["uninformed judge: best constant / random at the judge's rates",
             f"{un.constant_claims:.3f} / {un.random_claims:.3f}", v.n_items],
            ["claims over the better uninformed judge",
             f"{v.skill:+.3f} {ci(v.skill_ci, '{:+.3f}')}", v.n_items],
            ["labels vs the verifier's: Cohen's kappa",
             "undefined" if lab.kappa is None else
             f"{lab.kappa:.3f} {ci(lab.kappa_ci)}", v.n_items]]
    people = v.claims_vs_people
    if people:
        rows.append(["its claims match people's rubric values",
                     f"{people.rate:.3f} {ci(people.ci)}", people.n])
    if ver.disagreement is not None:
        rows.append(["verifier disagrees with its own re-reading",
                     f"{ver.disagreement:.3f} {ci(ver.disagreement_ci)}",
                     ver.readings])
    if ver.paraphrase_agreement is not None:
        pa = ver.paraphrase_agreement
        rows.append(["paraphrase readings that read as x did",
                     f"{pa.rate:.3f} {ci(pa.ci)}", pa.n])
    la = v.label_accuracy
    if la:
        rows.append(["label accuracy (human labels) / majority label / random",
                     f"{la.accuracy:.3f} / {la.majority_label:.3f} / "
                     f"{la.random_at_judge_rate:.3f}", la.n])
    if v.items_to_score is not None:
        rows.append(["items people should score by hand to settle it",
                     str(v.items_to_score), "" if people is None else people.n])
    return Table(["evidence", "value", "n"], rows, "verdict")


def build_audit(cfg: NoDataConfig, r: AuditPayload, calls: CallSummary) -> Doc:
    k = r.known
    span = r.indices or f"from {r.start}"
    rows = [[x.rubric, x.phi, _pct(k.accuracy), _pct(k.f1),
             _pci(x.accuracy, x.accuracy_ci), _pci(x.f1, x.f1_ci),
             _pci(x.success_rate, x.success_ci), _pci(x.flip_rate, x.flip_ci),
             _pci(x.claim_agreement, x.claim_agreement_ci),
             _pct(x.bound), x.n_items] for x in r.runs]
    v = r.verdict
    assert v is not None
    per = [[c, _pct(a)] for c, a in (k.per_criterion_accuracy or {}).items()]
    probs = [[s, ", ".join(f"{kk}: {vv}" for kk, vv in d.items())]
             for s, d in r.problems_by_stage.items()] or [["all", "none"]]
    n_items = max(1, r.sample_size)
    title = f"No-Data audit of `{cfg.models['evaluator']}`"
    table = _verdict_table(v)
    parts: list[Any] = [
        Heading(1, title),
        Heading(2, f"Verdict: {v.decision}"),
        Para(f"{v.reason[0].upper()}{v.reason[1:]} (rule `{v.rule}`; n = {v.n_items} "
        f"items, {v.items_excluded} excluded; r = {cfg.rounds} rounds, check "
        f"`{cfg.check}`; intervals at {cfg.level:.0%})."),
        Para(f"What this measures: {v.measures}. It rests on the verifier "
        f"`{cfg.models['verifier']}` and its rubric {r.verifier_rubric}: the audit is only "
        "as strong as the verifier."),
        *([table] if table else []),
        Heading(3, "Which criterion the judge gets wrong"),
        Table(["criterion", "claims confirmed by the verifier", "n"],
              [[c, _pci(x.rate, x.ci), x.n]
               for c, x in (r.claim_agreement.by_criterion or {}).items()], "claims"),
        Para(f"Data: {_file(r.data)} items {span} ({r.sample_size} items); evaluator "
        f"rubric {r.rubric} ({cfg.rubric_label}), verifier `{cfg.models['verifier']}` with "
        f"rubric {r.verifier_rubric}; r = {cfg.rounds}, seed = {cfg.seed}. phi: flip on "
        "failure with probability phi (the paper's meaning)."),
        Heading(2, "Per rubric: accuracy, successes and flips (percent; the paper's Table 3)"),
        Table(["rubric", "phi", "known acc", "known F1", "No-Data acc", "No-Data F1",
               "successes", "flips", "claims agree", "error bound (Thm 5.2)", "items"], rows,
              "runs"),
        Para(f"Brackets: {cfg.level:.0%} intervals (Wilson for rates, item bootstrap for accuracy "
        "and F1). "
        "Claims agree: the share of items where the verifier's reading of x matches the "
        "judge's claimed criteria and label."),
        Para("Paper (GPT-4.1 on 515 items): IP successes 86-88%, OOP about 1%."),
        Para(_agreement_line(k)),
        Heading(2, "Per-criterion accuracy of the evaluator against human labels"),
        Table(["criterion", "accuracy"], per, "per_criterion") if per
        else Para("No human criterion labels."),
        Heading(2, "Failures by stage (excluded, never scored as a default)"),
        Table(["stage", "counts"], probs, "problems"),
        Para(f"Excluded items: {len(r.excluded_items)}. Calls: {calls.total} "
             f"({calls.total / n_items:.1f} per item, "
             f"{(calls.prompt_tokens + calls.completion_tokens) / n_items:.0f} tokens "
             f"per item; cached {calls.cached})."),
    ]
    b = r.baseline
    if b:
        parts += [Heading(2, "Ensemble baseline (the paper's Table 9)"),
                  Table(["judges", "mean kappa", "percent agreement", "average acc",
                         "majority acc"],
                        [[", ".join(b.judges or []), b.mean_kappa,
                          _pct(b.mean_percent_agreement),
                          _pct(b.average.accuracy if b.average else None),
                          _pct(b.majority.accuracy if b.majority else None)]], "baseline")]
    return Doc(title.replace("`", ""), parts)


def build_synthetic(cfg: NoDataConfig, res: SyntheticPayload) -> Doc:
    rows = []
    for r in res.runs:
        sw = r.seed_sweep
        rows.append([r.phenomenon, r.evaluator, r.phi, _pct(r.known_accuracy),
                     _pct(r.known_f1), _pci(r.accuracy, r.accuracy_ci),
                     _pct(r.f1),
                     _pci(r.success_rate, r.success_ci),
                     _pci(r.flip_rate, r.flip_ci), _pct(r.bound),
                     f"{_pct(sw.mean)} ({_pct(sw.min)}-{_pct(sw.max)})" if sw else "",
                     _pct(r.paper.success_rate if r.paper is not None else None)
                     if abs(r.phi - PAPER_PHI) < 1e-9 else "", r.n_items])
    esc = [[e.evaluator, e.rounds, _pct(e.pass_rate), _pct(e.lemma_5_1)]
           for e in res.escape]
    base = []
    for phen, b in res.baselines.items():
        base.append([phen, ", ".join(b.judges or []), f"{b.mean_kappa:.2f}",
                     _pct(b.mean_percent_agreement),
                     _pct(b.average.accuracy if b.average else None),
                     _pct(b.majority.accuracy if b.majority else None)])
    return Doc("No-Data Algorithm: synthetic bitstrings", [
        Heading(1, "No-Data Algorithm: synthetic bitstrings"),
        Para("Headline (success rate, percent, with its interval and n" + (
            f", at the paper's phi = {PAPER_PHI}" if _at_paper_phi(res.runs) != res.runs
            else "") + "): " + "; ".join(
            f"{r.phenomenon} {r.evaluator}: "
            f"{_pci(r.success_rate, r.success_ci)}, n = {r.n_items}"
            for r in _at_paper_phi(res.runs)) + "."),
        Para(f"Data: {_sources(res.data)}. r = {cfg.rounds}, seed = {cfg.seed}. "
             "phi is the paper's (flip on failure with probability phi); the authors' code "
             "used 1 - phi."),
        Heading(2, "Known labels against No-Data (percent; the paper's Tables 2 and 6)"),
        Table(["set", "evaluator", "phi", "known acc", "known F1", "No-Data acc",
                  "No-Data F1", "successes", "flips", "error bound (Thm 5.2)",
                  *([f"successes over {cfg.seeds} seeds: mean (range)"] if cfg.seeds > 1
                    else []), "paper successes", "n"],
              [r[:10] + r[11:] if cfg.seeds <= 1 else r for r in rows], "runs"),
        Para("Brackets: 95% intervals (Wilson for rates, item bootstrap for accuracy). "
        "Paper (DT, Table 2 at phi = 0.5): IP known 62.2 / No-Data 62.2, successes 100.0, "
        "flips 0.0; OOP known 54.2 / No-Data 52.8, successes 4.8, flips 46.4. Liars (IP "
        "successes, Table 6): Lie 1 17.0, Lie 2 0.6, Lie 3 43.6 (authors' code over seeds "
        f"43.6-51.0, at p = 0.25; this run p = {cfg.generator_lie_p}). A single seed's "
        "success rate differs from the paper's by seed luck: use `seeds: 20` to compare."),
        Heading(2, "Escape rates against Lemma 5.1 (IP data)"),
        Table(["evaluator", "rounds r", "passed", "(1/4)^r"], esc, "escape"),
        Heading(2, "Ensemble baselines (the paper's Table 9)"),
        Table(["set", "judges", "mean kappa", "percent agreement", "average acc",
               "majority acc"], base, "baselines"),
    ])


def _at_paper_phi(runs: list[SyntheticRun]) -> list[SyntheticRun]:
    at = [r for r in runs if abs(r.phi - PAPER_PHI) < 1e-9]
    return at or runs


def _phi_figure(path: Path, runs: list[SyntheticRun]) -> None:
    series: dict[str, tuple[list[float], list[float]]] = {}
    for r in runs:
        key = f"{r.phenomenon} {r.evaluator}"
        xs, ys = series.setdefault(key, ([], []))
        xs.append(r.phi)
        ys.append(r.success_rate)
    lines(path, series, xlabel="phi", ylabel="success rate", ylim=(-0.02, 1.02),
          title="No-Data success rate against phi")


def audit_report(cfg: AuditConfig, result: RunResult[AuditPayload]) -> Doc:
    """The audit's report document."""
    assert result.payload is not None and result.calls is not None
    return build_audit(cfg, result.payload, result.calls)


def audit_draw(cfg: AuditConfig, result: RunResult[AuditPayload], out: Path) -> None:
    assert result.payload is not None
    audit_figures(cfg, result.payload, out)


def synthetic_report(cfg: SyntheticConfig, result: RunResult[SyntheticPayload]) -> Doc:
    """The synthetic study's report document."""
    assert result.payload is not None
    return build_synthetic(cfg, result.payload)


def synthetic_draw(cfg: SyntheticConfig, result: RunResult[SyntheticPayload], out: Path
                   ) -> None:
    assert result.payload is not None
    synthetic_figures(cfg, result.payload, out)
