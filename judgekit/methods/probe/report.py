"""The probe's report, as a :class:`Doc`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.core.payload import Rate
from judgekit.core.results import RunResult
from judgekit.methods.probe.config import ProbeConfig
from judgekit.methods.probe.payload import Corrected, ProbePayload
from judgekit.report.document import Doc, Heading, Para, Table


def build(cfg: ProbeConfig, r: ProbePayload, seed: int | None) -> Doc:
    lv = f"{cfg.level:.0%}"
    nf, rr = r.noise_floor, r.rerun_flips or Rate()
    # the noise floor is the placebo's when one was run, else identical re-runs'
    floor = "the placebo" if nf.source == "placebo" else "identical re-runs"
    cons = [[t.name, _pct(t.flip_rate), _pct(t.noise_floor),
             f"{t.excess:+.3f} {_ci(t.excess_ci)}", f"{t.p_value:.3g}",
             f"{t.p_adjusted:.3g}", t.verdict, t.n] for t in r.transforms]
    bias = [[b.name, b.what, f"{b.bias:+.3f} {_ci(b.ci)}", f"{b.p_value:.3g}",
             f"{b.p_adjusted:.3g}", b.verdict, b.n] for b in r.biases]
    names = {"swap": "position (swap)", "rename": "label name (rename)"}
    shown = [f"{names.get(b.name or '', b.name)} {b.bias:+.3f} {_ci(b.ci)} "
             f"(n = {b.n})" for b in r.biases if b.verdict == "biased"] + [
             f"{t.name} flips {t.excess:+.3f} {_ci(t.excess_ci)} above {floor} "
             f"(n = {t.n})" for t in r.transforms if t.verdict.startswith("incons")]
    pos_note = r.position_bias.note if r.position_bias is not None else None
    parts: list[Any] = [
        Heading(1, f"Probe of `{r.judge}`"),
        Para("Headline: " + ("; ".join(shown) if shown else "no bias or inconsistency shown")
             + f" ({lv} intervals; noise floor {_pct(nf.rate)} {_ci(nf.ci)}, "
             f"n = {nf.n})." + (f" Position: {pos_note}." if pos_note else "")),
        Para(f"{r.n_pairs} items, {r.repeats} identical runs each, then one verdict per "
        f"transform{' and one under the placebo' if floor == 'the placebo' else ''}; "
        f"seed {seed}. Intervals: {lv} (Newcombe's "
        "paired score interval for differences, Wilson for rates). Decisions: "
        f"Benjamini-Hochberg over every test below at {1 - cfg.level:.2g}."),
        Para("Two questions, two tests. Direction (bias): does a transform move verdicts one "
        "way? Consistency: does it flip verdicts more often than " + (
            "the placebo, an irrelevant reference id added to the question" if floor ==
            "the placebo" else "identical re-runs of each verdict") +
        "? A judge can be inconsistent without being biased."),
        Heading(2, "Direction: biases"),
        Table(["transform", "effect", f"estimate ({lv} CI)", "p (exact)", "p (BH)",
               "verdict", "n"], bias, "biases") if bias
        else Para("No transform with a direction."),
        Heading(2, f"Consistency against {floor}"),
        Para(f"Noise floor ({nf.source}): flip rate {_pct(nf.rate)} {_ci(nf.ci)}, "
        f"n = {nf.n}. Identical re-runs flip {_pct(rr.rate)} {_ci(rr.ci)}, "
        f"n = {rr.n}."),
        Table(["transform", "flip rate", f"{floor.removeprefix('the ')} flips",
               f"excess ({lv} CI)",
               "p (exact)", "p (BH)", "verdict", "n"], cons, "transforms"),
    ]
    pr = r.pass_rate
    if pr is not None:
        parts.append(Para(f"Pass rate (as given): {_pct(pr.rate)} {_ci(pr.ci)}, "
                     f"n = {pr.n}."))
    oc = r.order_consistency
    if oc is not None:
        parts.append(Para(f"Same winner in both orders: {_pct(oc.rate)} {_ci(oc.ci)}, "
                     f"n = {oc.n}."))
    if r.accuracy is not None:
        a1, a2 = r.accuracy.single_order, r.accuracy.both_orders
        parts.append(Para(f"Accuracy against the known correct answer: one order "
                     f"{_pct(a1.rate)} {_ci(a1.ci)} (n = {a1.n}); a win counted only "
                     f"when both orders agree {_pct(a2.rate)} {_ci(a2.ci)} "
                     f"(n = {a2.n})."))
    rel = r.reliability
    if rel is not None:
        parts.append(Para(f"Repeat reliability: {rel.unstable_share:.1%} of items change "
                     f"verdict across {r.repeats} runs; single-run reliability "
                     f"{rel.single_run_reliability:.3f}; runs needed for "
                     f"{rel.target}: {rel.k_for_target} (Spearman-Brown), "
                     f"n = {rel.n}."))
    h = r.human
    if h is not None and h.a_win_rate is not None:
        c = h.a_win_rate
        what = "pass rate" if r.mode == "pointwise" else "rate at which answer A wins"
        need = c.labels_for_target
        parts.append(Para(f"Prediction-powered {what}: {_pct(c.estimate)} {_ci(c.ci)} from "
                     f"{c.n_labelled} human labels and {c.n_items} judge verdicts "
                     f"({c.sampling} sampling, lambda {c.lam:.2f}); human labels alone "
                     f"{_pct(c.human_only)} {_ci(c.human_only_ci)}. "
                     + (f"About {need} labels would give +-{c.target_halfwidth}. "
                        if need else f"Already within +-{c.target_halfwidth}. ")
                     + _label_error_text(c)))
    parts += _natural(r, lv) + _plan(r) + _sequential(r)
    return Doc(f"Probe of {r.judge}", parts)


def _label_error_text(c: Corrected) -> str:
    """Whether the corrected rate accounts for annotator error (issue 33)."""
    e = c.label_error
    if e is None:
        return ("Human labels are taken as error-free: if annotators flip some labels, "
                "set label_error (a rate, or \"repeats\").")
    ci = c.label_error_ci
    return (f"Corrected for annotators flipping {_pct(e)} of labels"
            + (f" (estimated from repeated labels, {_ci(ci)})" if ci else " (stated)") + ".")


def _natural(r: ProbePayload, lv: str) -> list[Any]:
    rows = []
    for x, name in ((r.self_preference, "own model family"),
                    (r.length_bias, "longer answer")):
        if x is None:
            continue
        est = "n/a" if x.preference is None else f"{x.preference:+.3f} {_ci(x.ci)}"
        p = "n/a" if x.p_value is None else f"{x.p_value:.3g}"
        rows.append([name, x.what, est, p, x.verdict, x.n,
                     x.orders or "the order as given"])
    if not rows:
        return []
    return [Heading(2, "Preferences for the longer answer and the judge's own family"),
            Para("Controlled for quality: among pairs where exactly one answer has the "
                 "feature and the correct (or human-preferred) answer is known, how much more "
                 "often the judge errs toward the feature than away from it (0 for a judge "
                 "whose errors do not depend on the feature). Controlled for position: when "
                 "the swap transform ran, every pair counts in both orders (the pair is the "
                 "cluster: Newcombe's interval from Wilson limits at the effective n, a z "
                 "test with the design effect); otherwise the order as given (Newcombe's "
                 "interval for two independent rates, Fisher's exact test), where a "
                 "position bias can leak into the preference."),
            Table(["preference for", "effect", f"estimate ({lv} CI)", "p", "verdict",
                   "n (verdicts)", "orders"], rows, "preferences")]


def _plan(r: ProbePayload) -> list[Any]:
    pl = r.plan
    if pl is None or not pl.rows:
        return []
    effects = [repr(e) for e in pl.effects]
    rows = [[x.name, x.question, f"{x.discordant:.3f} ({x.source})", x.n_now,
             *[x.pairs_needed[e] if x.pairs_needed[e] is not None else "n/a"
               for e in effects]] for x in pl.rows]
    return [Heading(2, "How many pairs a decision needs"),
            Para(f"Pairs for {pl.power:.0%} power at the run's level to detect an effect of "
                 "each size (in the units of the tables above), planned from this run's "
                 "share of discordant pairs (Connor 1987). `judgekit plan RUN` prints it."),
            Table(["transform", "question", "discordant share", "pairs now",
                   *[f"effect {e}" for e in effects]], rows, "plan")]


def _sequential(r: ProbePayload) -> list[Any]:
    sq = r.sequential
    if sq is None:
        return []
    rows = [[d.name, d.question, d.decision, _ci(d.ci), d.n]
            for d in sq.decisions]
    return [Heading(2, "Sequential mode"),
            Para(f"Asked {sq.units_asked} of at most {sq.units_max} items in "
                 f"{sq.looks} batches of {sq.batch} ({sq.stopped}; "
                 f"{sq.share_saved:.0%} of the items not asked). Intervals above are "
                 "confidence sequences (valid at any stopping time; betting, Waudby-Smith and "
                 f"Ramdas 2024); settled means the sequence excludes 0 or lies inside "
                 f"+-{sq.margin}."),
            Table(["transform", "question", "decision", "confidence sequence", "n"], rows,
                  "sequential")]


def _pct(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _ci(ci: Any) -> str:
    return "" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def figures(cfg: ProbeConfig, r: ProbePayload, out: Path) -> None:
    """probe.png: each transform's flip rate (Wilson interval at the run's level) against
    the noise floor (its interval as a band), and each signed bias with its paired
    interval against zero."""
    from judgekit.report.figures import pyplot, save
    from judgekit.stats.proportions import wilson_interval

    rows = [t for t in r.transforms if t.n]
    biases = [b for b in r.biases if b.ci]
    if not rows and not biases:
        return
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    level = float(r.level or cfg.level)
    ax = axes[0]
    floor = r.noise_floor
    if floor.ci:
        ax.axvspan(floor.ci[0], floor.ci[1], color="0.85",
                   label=f"noise floor ({floor.source or ''})")
        ax.axvline(floor.rate, color="0.5", lw=1)
    for i, t in enumerate(rows):
        lo, hi = wilson_interval(int(round(t.flip_rate * t.n)), t.n, level)
        ax.errorbar(t.flip_rate, i, xerr=[[t.flip_rate - lo], [hi - t.flip_rate]],
                    fmt="o", color="C3" if t.verdict.startswith("inconsistent")
                    else "C0", capsize=3)
    ax.set_yticks(range(len(rows)), [f"{t.name} (n={t.n})" for t in rows])
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(f"share of verdicts that flip ({level:.0%} interval)")
    ax.set_title("Consistency: flips under each change")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False)
    ax = axes[1]
    ax.axvline(0.0, color="0.5", lw=1)
    for i, b in enumerate(biases):
        est, ci = b.bias or 0.0, b.ci or [0.0, 0.0]
        ax.errorbar(est, i, xerr=[[est - ci[0]], [ci[1] - est]],
                    fmt="o", color="C3" if b.verdict == "biased" else "C0", capsize=3)
    ax.set_yticks(range(len(biases)), [f"{b.name} (n={b.n})" for b in biases])
    ax.set_xlim(-1.02, 1.02)
    ax.set_xlabel(f"shift in the share chosen ({level:.0%} interval); red: biased")
    ax.set_title("Direction: does a change move verdicts one way?")
    fig.tight_layout()
    save(fig, out / "probe.png")


def report(cfg: ProbeConfig, result: RunResult[ProbePayload]) -> Doc:
    """The probe's report document."""
    assert result.payload is not None
    return build(cfg, result.payload, result.seed)


def draw(cfg: ProbeConfig, result: RunResult[ProbePayload], out: Path) -> None:
    """probe.png (see :func:`figures`)."""
    assert result.payload is not None
    figures(cfg, result.payload, out)
