"""`judgekit label` (the items to label next) and `judgekit view` (the local viewer)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console

from judgekit.core.textio import json_loads

console = Console(markup=False, highlight=False, soft_wrap=True)


def _line(f: object) -> str:
    from judgekit.labelling.session import Figure

    assert isinstance(f, Figure)
    if f.estimate is None:
        return f"{f.name}: no labelled draw yet"
    lo, hi = f.ci or [0.0, 0.0]
    need = "target met" if f.draws_needed == 0 else f"about {f.labels_needed} more labels"
    seq = f.sequential_ci or [0.0, 0.0]
    return (f"{f.name}: {f.estimate:.3f} [{lo:.3f}, {hi:.3f}] (n={f.draws} draws; {need}); "
            f"anytime-valid [{seq[0]:.3f}, {seq[1]:.3f}]")


def label(source: Path = typer.Argument(..., help="a `judgekit analyse` run folder or a "
                                        "recorded-verdicts file"),
          target_width: float = typer.Option(0.1, "--target-width", min=0.001, max=1.0,
                                             help="stop when every interval is at most "
                                             "this wide (upper - lower)"),
          out: Path | None = typer.Option(None, "--out", help="write the items to label "
                                          "next here, one JSON object per line"),
          batch: int = typer.Option(10, "--batch", min=1, help="items per proposal"),
          for_: str = typer.Option("pass_rate", "--for", help="what the labels should "
                                   "pin down: pass_rate (each system's), agreement, "
                                   "difference (each system's minus the first's) or all"),
          level: float = typer.Option(0.95, "--level", min=0.5, max=0.999),
          seed: int = typer.Option(0, "--seed", help="seed of the draws"),
          design: str = typer.Option("planned", "--design", help="planned (default: a "
                                     "uniform pilot, then draws steered where it pays, "
                                     "until the fixed-n interval meets the target; check "
                                     "it only when told the target is met) or sequential "
                                     "(stop on the anytime-valid interval, which may be "
                                     "checked after every label)"),
          label_error: str | None = typer.Option(None, "--label-error", help="the chance "
                                                 "an annotator flips a label (e.g. 0.1), "
                                                 "or 'repeats': measured from items two "
                                                 "annotators labelled; the figures are "
                                                 "corrected for it"),
          queue: Path | None = typer.Option(None, "--queue", help="a JSONL of {\"id\"} "
                                            "(e.g. judgekit choose's escalated.jsonl): "
                                            "those items are offered first, until "
                                            "labelled"),
          ) -> None:
    """Propose the items a person should label next so that the corrected estimates
    narrow fastest, and report them with intervals that stay valid however often they
    are checked. Labels go to the run's labels.jsonl (judgekit view, or append
    {"id", "label", "annotator"} lines yourself); run again for the next items."""
    from judgekit.core.errors import ConfigError
    from judgekit.core.label_error import parse_label_error
    from judgekit.labelling.session import DESIGNS, INTERVALS, propose
    from judgekit.labelling.sources import label_source
    from judgekit.runs.io import write_text

    if design not in DESIGNS:
        raise ConfigError(f"--design {design!r}: use {' or '.join(DESIGNS)}")
    src = label_source(source)
    if queue is not None:
        from judgekit.labelling.session import enqueue

        added = enqueue(src, _queue_ids(queue))
        console.print(f"queued {added} item(s) from {queue} for people")
    st = propose(src, batch=batch, seed=seed, target_width=target_width,
                 level=level, which=for_, design=design,
                 label_error=parse_label_error(label_error))
    n_items = len(st.source.items)
    console.print(f"{st.source.name}: {st.labels} of {n_items} items labelled, "
                  f"{st.draws} draws counted (level {st.level:g}); intervals: "
                  f"{INTERVALS[st.design]}")
    if st.label_error is not None:
        ci = f" [{st.label_error_ci[0]:.3f}, {st.label_error_ci[1]:.3f}]" \
            if st.label_error_ci else ""
        console.print(f"corrected for annotators who flip a label at {st.label_error:.3f}"
                      + ci)
    if st.steering and st.steering.get("steered"):
        console.print(f"draws steered to uncertain items ({1 - st.steering['uniform_share']:.0%}"
                      f" steered; estimated variance {st.steering['variance_vs_uniform']:.2f}"
                      " of uniform draws)")
    elif st.draws:
        console.print("draws uniform: steering would not pay on the labels so far")
    for f in st.figures:
        console.print("  " + _line(f))
    if st.done:
        console.print(f"target width {target_width:g} met: no more labels needed")
    elif st.labels == n_items:
        console.print("every item is labelled: the labels themselves are the figures")
    from judgekit.analysis.source import derived

    index = derived(st.source).by_id
    lines = [{"id": p.id, "probability": getattr(p, "probability", None),
              "draw": getattr(p, "draw", None), "verdict": index[p.id].verdict,
              **({"queued": True} if p.kind == "queue" else {})} for p in st.pending]
    if out is not None:
        write_text(out, "".join(json.dumps(x, sort_keys=True) + "\n" for x in lines))
        console.print(f"wrote {len(lines)} item(s) to label to {out}")
    else:
        for x in lines:
            console.print(json.dumps(x, sort_keys=True))
    console.print(f"labels file: {st.source.labels_path}")


def _queue_ids(path: Path) -> list[str]:
    """The ids of a queue file: JSONL objects with "id" (or one id per line)."""
    from judgekit.core.errors import DataError
    from judgekit.core.textio import read_lines

    if not path.is_file():
        raise DataError(f"--queue {path}: no such file")
    ids = []
    for lineno, line in read_lines(path):
        text = line.strip()
        if not text:
            continue
        if text.startswith("{"):
            try:
                row = json_loads(text)
            except json.JSONDecodeError:
                raise DataError(f"{path}:{lineno}: not a JSON object; give {{\"id\": ...}} "
                                "per line") from None
            if not isinstance(row, dict) or "id" not in row:
                raise DataError(f"{path}:{lineno}: a queue line needs \"id\"")
            ids.append(str(row["id"]))
        else:
            ids.append(text)
    return ids


def view(folder: Path = typer.Argument(Path("."), help="a folder of runs (searched "
                                       "recursively) or one run"),
         port: int = typer.Option(8765, "--port", min=0, max=65535,
                                  help="port on 127.0.0.1 (0: any free port)"),
         no_browser: bool = typer.Option(False, "--no-browser",
                                         help="do not open a browser"),
         ) -> None:
    """Browse every run under FOLDER in a local web app on 127.0.0.1: run list,
    reports, sortable sample grids, transcripts, comparisons, judge cards and the
    labelling page. Nothing leaves the machine. Ctrl-C stops it."""
    from judgekit.core.errors import ConfigError
    from judgekit.view.app import serve

    if not folder.is_dir():
        raise ConfigError(f"{folder}: no such folder")
    serve(folder, port, open_browser=not no_browser)
