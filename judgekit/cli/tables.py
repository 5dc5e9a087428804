"""Commands that read runs and datasets as tables: `judgekit compare`, `judgekit export`,
`judgekit data fetch|list` (registered on the app in judgekit.cli.commands)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from judgekit.core.errors import ConfigError

console = Console(markup=False, highlight=False, soft_wrap=True)


def terminal_safe(text: str) -> str:
    """``text`` (names and reasons from data) with control characters shown as escapes,
    so no judge name can move the cursor, clear the screen or forge a line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def compare(a: Path = typer.Argument(..., help="run A: its folder or results file"),
            b: Path = typer.Argument(..., help="run B: its folder or results file"),
            out: Path = typer.Option(..., "--out", help="folder for compare.json, "
                                     "differences.csv and report.html"),
            level: float | None = typer.Option(None, "--level",
                                               help="interval level (default: run A's)"),
            overwrite: bool = typer.Option(False, "--overwrite",
                                           help="replace a previous comparison in --out")
            ) -> None:
    """Paired comparison of two runs of one method on the same items (B - A)."""
    from judgekit.analysis.comparison import compare as run_compare
    from judgekit.analysis.comparison import write

    comp, items = run_compare(a, b, level=level)
    folder = write(comp, items, out, overwrite=overwrite)
    lo, hi = comp.difference_ci
    p = "n/a" if comp.p_value is None else f"{comp.p_value:.3g}"
    console.print(f"{comp.measure}: B - A = {comp.difference:+.3f} [{lo:.3f}, {hi:.3f}] "
                  f"p = {p}, n = {comp.n_paired} paired; {comp.verdict}")
    console.print(f"wrote {folder}")


def export_run(run: Path = typer.Argument(..., help="a run folder or its results file"),
               fmt: str = typer.Option("csv", "--format", help="csv, jsonl or parquet"),
               out: Path = typer.Option(..., "--out", help="the file to write"),
               headline: bool = typer.Option(False, "--headline",
                                             help="the headline rows instead of per item")
               ) -> None:
    """Write a run's per-item (or per-query) rows, or its headline rows, as a table."""
    from judgekit.analysis.comparison import load
    from judgekit.core.frames import headline_rows
    from judgekit.report.export import detail_rows, write

    result = load(run)
    rows = headline_rows(result) if headline else detail_rows(result)
    path = write(rows, out, fmt)
    console.print(f"wrote {len(rows)} rows to {path}")


def data_fetch(name: str = typer.Argument(..., help="dataset name (judgekit data list)"),
               url: str | None = typer.Option(None, "--url", help="another source URL"),
               sha256: str | None = typer.Option(None, "--sha256",
                                                 help="expected checksum of the file")) -> None:
    """Download a dataset's canonical file into the data cache, checksummed."""
    from judgekit.core.methods import all_methods
    from judgekit.data.fetch import fetch

    all_methods()  # a method's own datasets register with its package

    path = fetch(name, url=url, sha256=sha256)
    print(path)


def data_list() -> None:
    """Every registered dataset: its kind, formats, licence, whether `data fetch` has
    cached it, and its source (a group name fetches all its members)."""
    from judgekit.core.methods import all_methods
    from judgekit.data.fetch import cached_path
    from judgekit.data.registry import all_datasets, groups

    all_methods()  # a method's own datasets register with its package

    rows = [("dataset", "kind", "format", "licence", "cached", "source")]
    for d in all_datasets():
        cached = ("yes" if cached_path(d.name).exists() else "no") if d.fetchable else "-"
        source = d.url or "shipped / your own file"
        if d.hf:
            source += f"  (hf: {d.hf[0]})"
        rows.append((d.name, d.kind, "/".join(d.formats), d.licence, cached, source))
    for g, members in groups().items():
        rows.append((g, "group", "", "", "", "fetches " + ", ".join(members)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[5])


def plan(run: Path = typer.Argument(..., help="a pilot run: its folder or results file"),
         power: float = typer.Option(0.8, "--power", min=0.01, max=0.99,
                                     help="the chance of detecting the effect"),
         effect: list[float] = typer.Option([0.05, 0.1, 0.2], "--effect", min=0.001,
                                            max=0.99, help="effect sizes to plan for "
                                            "(repeat the option)")) -> None:
    """How many pairs (probe) or items (audit) a decision needs, from a pilot run."""
    from judgekit.analysis.comparison import load
    from judgekit.core.errors import ConfigError
    from judgekit.core.methods import all_methods

    result = load(run)
    hook = result.spec.plan if result.spec is not None else None
    if hook is None:
        able = ", ".join(s.key for s in all_methods() if s.plan is not None)
        raise ConfigError(f"{run}: plan reads runs of {able}, not {result.method}")
    try:
        table = hook(result, power, tuple(effect))
    except ConfigError as exc:
        raise ConfigError(f"{run}: {exc}") from None
    for i, t in enumerate([table, *table.more]):
        console.print(("\n" if i else "") + t.title.replace("{run}", str(run)))
        head, rows = t.header, t.rows
        widths_ = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
        for r in [head, *rows]:
            console.print("  ".join(str(c).ljust(w) for c, w in zip(r, widths_)))


def card(runs: list[Path] = typer.Argument(..., help="probe and audit runs of one judge "
                                           "(folders or results file)"),
         out: Path = typer.Option(..., "--out", help="folder for card.json and report.html"),
         overwrite: bool = typer.Option(False, "--overwrite",
                                        help="replace a previous card in --out"),
         use: str = typer.Option("rate", "--use", help="the use the first lines decide: "
                                 "rate (pass rates), rank (ordering systems) or items "
                                 "(acting on single verdicts)"),
         margin: float = typer.Option(0.05, "--margin", min=0.001, max=0.5,
                                      help="trust a judge whose rates are shown within "
                                      "+/- this of people's"),
         target_agreement: float = typer.Option(0.9, "--target-agreement", min=0.01,
                                                max=1.0, help="trust single verdicts "
                                                "when agreement with people is shown at "
                                                "least this")
         ) -> None:
    """One judge card: its probes, audits and agreement with people side by side, and
    its decision for each use (rate, rank, items), decided by margins."""
    from judgekit.analysis.card import build, write

    if use not in ("rate", "rank", "items"):
        raise typer.BadParameter(f"{use!r}: use rate, rank or items", param_hint="--use")
    c = build([str(r) for r in runs], use=use, margin=margin, target=target_agreement)
    folder = write(c, out, overwrite=overwrite)
    for d in c.by_judge.values():
        console.print(terminal_safe(d.headline))
    console.print(f"(every use's decision, margin {c.margin:g} and target agreement "
                  f"{c.target_agreement:g}: {folder / 'report.html'}, card.json)")
    console.print(f"judge {c.judge}: {len(c.rows)} measures from {len(c.runs)} run(s); "
                  f"{len(c.findings)} finding(s)" + "".join(f"\n  {f}" for f in c.findings))
    console.print(f"wrote {folder}")


def choose(sources: list[Path] = typer.Argument(..., help="`judgekit analyse` runs or verdict "
                                              "files (one file may hold several judge "
                                              "columns)"),
           out: Path = typer.Option(..., "--out", help="folder for choice.json and "
                                    "report.html"),
           price: list[str] = typer.Option([], "--price", help="JUDGE=USD per item "
                                           "(repeat); the cheapest good-enough judge wins"),
           margin: float = typer.Option(0.05, "--margin", min=0.0, max=0.5,
                                        help="agreement a cheaper judge may lose"),
           level: float = typer.Option(0.95, "--level", min=0.5, max=0.999,
                                       help="interval level (before the Bonferroni "
                                       "adjustment over the comparisons)"),
           target_agreement: float | None = typer.Option(
               None, "--target-agreement", min=0.0, max=1.0,
               help="pick the cheapest judge whose agreement with people is shown at "
               "least this (with --selective: the guarantee's target)"),
           max_leniency: float | None = typer.Option(
               None, "--max-leniency", min=0.0, max=1.0,
               help="only judges shown within +/- this of people's pass rate"),
           selective: bool = typer.Option(False, "--selective", help="calibrate a "
                                          "confidence threshold: trust the judge above it, "
                                          "escalate the rest to people"),
           risk: float = typer.Option(0.1, "--risk", min=0.001, max=0.5,
                                      help="with --selective: the guarantee's risk"),
           cascade: bool = typer.Option(False, "--cascade", help="with --selective: a "
                                        "cheapest-first cascade of the judges that record "
                                        "a confidence, ending with people"),
           seed: int = typer.Option(0, "--seed", help="seed of the bootstrap intervals"),
           overwrite: bool = typer.Option(False, "--overwrite",
                                          help="replace a previous choice in --out")
           ) -> None:
    """Choose a judge or a jury: paired comparisons with people's labels, juries, and
    selective evaluation with a guarantee (no model call)."""
    from judgekit.analysis.choose import choose as decide
    from judgekit.analysis.choose import load_judges, write

    prices = {}
    for item in price:
        name, sep, value = item.partition("=")
        try:
            prices[name] = float(value)
        except ValueError:
            raise ConfigError(f"--price {item!r}: use JUDGE=USD, e.g. gpt-4o=0.002") from None
        if not sep or prices[name] < 0:
            raise ConfigError(f"--price {item!r}: use JUDGE=USD, e.g. gpt-4o=0.002")
    judges = load_judges([str(x) for x in sources], prices, minimum=1 if selective else 2)
    c = decide(judges, level=level, margin=margin, target_agreement=target_agreement,
               max_leniency=max_leniency, selective=selective, risk=risk, seed=seed,
               cascade=cascade)
    folder = write(c, out, overwrite=overwrite)
    console.print(f"{len(c.judges)} judges: {c.decision}")
    if c.selective is not None:
        console.print(f"selective: {c.selective.judge}, threshold {c.selective.threshold}, "
                      f"coverage {c.selective.coverage:.3f}, {c.selective.escalated} item(s) "
                      "escalated to people (escalated.jsonl)")
    console.print(f"wrote {folder}")


def local_info() -> None:
    """Check the local extra: llama-cpp-python's version and CPU features (a portable
    build lists no AVX512 or AMX), and the packaged model file."""
    from judgekit.local.server import build_info

    for line in build_info():
        print(line)


def analyse(file: Path = typer.Argument(..., help="recorded verdicts: a CSV or JSONL table "
                                        "(pointwise or pairwise) or an alpaca_eval "
                                        "annotations.json"),
            out: Path = typer.Option(..., "--out", help="folder for results file and "
                                     "report.html"),
            fmt: str = typer.Option("auto", "--format",
                                    help="auto, csv, jsonl, xlsx, alpaca_eval, llmbar, "
                                    "inspect, promptfoo or parquet (also a folder of "
                                    "partitioned Parquet files)"),
            map_: list[str] = typer.Option([], "--map", help="ROLE=COLUMN, e.g. judge=gpt4 "
                                           "(repeat; roles not given are detected)"),
            level: float = typer.Option(0.95, "--level", min=0.5, max=0.999,
                                        help="interval level"),
            judge: str | None = typer.Option(None, "--judge", help="the judge's name on "
                                             "its card (default: its column's)"),
            judge_family: str | None = typer.Option(
                None, "--judge-family", help="the judge's model family (e.g. gpt), for "
                "self-preference when the file names each answer's model"),
            seed: int = typer.Option(0, "--seed", help="seed of the bootstrap intervals"),
            label_error: str | None = typer.Option(
                None, "--label-error", help="the share of labels your annotators flip "
                "(a rate in [0, 0.5)), or 'repeats' to estimate it from items two "
                "annotators labelled: corrected rates are corrected for it"),
            labels: Path | None = typer.Option(
                None, "--labels", help="human labels (a labels file of judgekit label / "
                "view, or JSONL of {\"id\", \"label\"}); they replace the file's own"),
            scale: str | None = typer.Option(
                None, "--scale", help="graded verdicts: the scale LO-HI (e.g. 1-5); "
                "detected from the scores when not given"),
            overwrite: bool = typer.Option(False, "--overwrite",
                                           help="replace a previous run's outputs in --out")
            ) -> None:
    """Analyse verdicts a judge already gave (no model call, no key, no network).
    Several judge columns (judge_NAME, or pairwise winner_NAME, or --map
    judge=COL1,COL2) give one set of figures per judge, side by side."""
    import judgekit.recorded  # noqa: F401  (registers the formats)
    from judgekit.api import run_config
    from judgekit.core.errors import ConfigError
    from judgekit.core.label_error import parse_label_error
    from judgekit.recorded.base import FORMATS
    from judgekit.runs.config import parse_assignment

    formats = ("auto", *FORMATS.names())
    if fmt not in formats:
        raise ConfigError(f"--format {fmt!r}: use {', '.join(formats)}")
    if not (file.is_file() or (file.is_dir() and any(file.rglob("*.parquet")))):
        raise ConfigError(f"{file}: no such file (or folder of Parquet files)")
    roles = {}
    for m in map_:
        role, column = parse_assignment(m, "--map")
        roles[role] = str(column)
    doc = {"method": "verdicts", "name": file.stem, "data_path": str(file),
           "data_format": fmt, "roles": roles, "level": level, "seed": seed, "judge": judge,
           "judge_family": judge_family, "label_error": parse_label_error(label_error),
           "labels_file": None if labels is None else str(labels), "scale": scale}
    _, shown, folder = run_config(doc, out=out, overwrite=overwrite)
    _print_decisions(folder)
    console.print(shown["headline"])
    console.print(f"wrote {folder}")


def _print_decisions(folder: Path) -> None:
    """Each judge's card decision (at the default margins) as the first lines, and where
    to read more; nothing when the run is not one a card reads (alpaca_eval)."""
    from judgekit.analysis.card import build
    from judgekit.core.errors import JudgekitError

    try:
        card = build([folder], relabel=False)
    except JudgekitError:
        return
    for d in card.by_judge.values():
        console.print(terminal_safe(d.headline))
    console.print(f"(every use's decision: judgekit card {folder} --out DIR)")


def prompts_list(prompts: Path | None = typer.Option(None, "--prompts",
                                                      help="your templates folder")) -> None:
    """Which file each stage's template resolves to, and its content hash."""
    from judgekit.core.methods import stages
    from judgekit.llm.templates import TemplateLibrary

    lib = TemplateLibrary(user=prompts)
    known = stages()
    for name in lib.names():
        print(f"{name:<26} {known.get(name, '(your template)'):<36} "
              f"{lib.content_hash(name)}  {lib.resolve(name)}")


def prompts_export(directory: Path = typer.Argument(..., help="folder to copy into"),
                   overwrite: bool = typer.Option(False, "--overwrite")) -> None:
    """Copy the packaged templates into DIRECTORY for editing (then --prompts DIR)."""
    import shutil

    from judgekit.core.errors import ConfigError
    from judgekit.core.resources import resource_dir

    directory.mkdir(parents=True, exist_ok=True)
    src = sorted(resource_dir("prompts").glob("*.j2"))
    clash = [f.name for f in src if (directory / f.name).exists()]
    if clash and not overwrite:
        raise ConfigError(f"{directory} already has {', '.join(clash[:3])}; pass --overwrite")
    for f in src:
        shutil.copyfile(f, directory / f.name)
    print(f"copied {len(src)} templates to {directory}; use them with --prompts {directory} "
          "or `prompts:` in a config")
