"""The `judgekit` command line."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import typer
from rich.console import Console

from judgekit.cli import label as labelling
from judgekit.cli import tables as tables
from judgekit.core.errors import JudgekitError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="LLM-as-judge evaluation without ground truth.")
cache_app = typer.Typer(no_args_is_help=True, help="Inspect or clear the response cache.")
cassette_app = typer.Typer(no_args_is_help=True, help="Inspect recorded cassettes.")
local_app = typer.Typer(no_args_is_help=True, help="Run a local llama.cpp model server.")
app.add_typer(cache_app, name="cache")
app.add_typer(cassette_app, name="cassette")
app.add_typer(local_app, name="local")
console = Console(markup=False, highlight=False, soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        from judgekit import __version__

        print(f"judgekit {__version__}")
        raise typer.Exit(0)


def _packaged() -> list[str]:
    """Packaged experiment names (a directory listing: the CLI's import stays light)."""
    from judgekit.core.resources import resource_dir

    try:
        return sorted(f.stem for f in resource_dir("experiments").glob("*.yaml")
                      if f.stem != "demo_queries")
    except FileNotFoundError:
        return []


def _methods() -> list[str]:
    """METHOD and METHOD/EXPERIMENT names, from the method registry."""
    from judgekit.core.methods import experiments

    return experiments()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")) -> None:
    """LLM-as-judge evaluation without ground truth."""


@app.command()
def run(
    config: str = typer.Argument(..., help="experiment YAML, or a packaged experiment's name: "
                                 + ", ".join(_packaged())),
    set_: list[str] = typer.Option([], "--set", help="dotted override KEY=VALUE"),
    model: list[str] = typer.Option([], "--model", help="ROLE=provider/model"),
    cassette_mode: str | None = typer.Option(None, "--cassette-mode",
                                                help="none | new | all"),
    out: Path | None = typer.Option(None, "--out", help="output directory (new or empty)"),
    overwrite: bool = typer.Option(False, "--overwrite",
                                   help="replace a previous run's outputs in --out"),
    prompts: Path | None = typer.Option(None, "--prompts",
                                        help="folder of templates searched first"),
    seed: int | None = typer.Option(None, "--seed"),
    strict: bool = typer.Option(False, "--strict",
                                help="data-check warnings become errors"),
    execution: str | None = typer.Option(None, "--execution", "--executor",
                                         help="online | batch (providers' batch APIs) | "
                                         "ray (a Ray cluster) | vllm (vLLM's run-batch)"),
    dry_run: bool = typer.Option(False, "--dry-run",
                                 help="price the first stage's calls; send nothing"),
    retry_failed: bool = typer.Option(False, "--retry-failed",
                                      help="call again where the cassette recorded a failed "
                                      "answer (default: replay it as that failure)"),
) -> None:
    """Run an experiment config; write the results file, report.md and report.html."""
    from judgekit.api import run_config
    from judgekit.runs.folder import RESULTS

    models = dict(_model_arg(m) for m in model)
    _, summary, directory = run_config(
        config, out=out, overwrite=overwrite, sets=set_, models=models,
        cassette_mode=cassette_mode, seed=seed, strict=True if strict else None,
        execution=execution, dry_run=True if dry_run else None,
        retry_failed=True if retry_failed else None,
        prompts=str(prompts.resolve()) if prompts else None)
    console.print(f"wrote {directory}/{RESULTS}, report.md and report.html")
    if summary.get("headline"):
        console.print(summary["headline"])
    failed = summary.get("failed_calls") or {}
    if failed:
        total = sum(failed.values())
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(failed.items()))
        console.print(f"{total} call(s) failed and were excluded from scores ({kinds}); "
                      f"see {directory}/failures.jsonl. A rerun calls again those that failed "
                      "in transport; --retry-failed also asks again for answers recorded as "
                      "failed.")
        if failed.get("timeout"):  # a provider may still bill them; no usage reached us
            console.print(f"{failed['timeout']} abandoned at the deadline: not in the cost.")


def _model_arg(text: str) -> tuple[str, str]:
    from judgekit.core.errors import ConfigError

    if "=" not in text:
        raise ConfigError(f"--model {text!r} must name a role: ROLE=provider/model, e.g. "
                          f"--model judge={text}")
    role, value = text.split("=", 1)
    return role.strip(), value.strip()


@app.command()
def vbscore(
    file: Path = typer.Argument(..., help="JSONL of tagged replicas"),
    alpha: list[float] = typer.Option([0.0, 0.25, 0.5, 0.75, 1.0], "--alpha"),
    k: int | None = typer.Option(None, "--k", help="use only the top k outputs"),
    seed: int = typer.Option(0, "--seed"),
    gain: str = typer.Option("binary", "--gain", help="binary | dcg"),
    variance: str = typer.Option("bernoulli", "--variance", help="bernoulli | spread"),
    resamples: int = typer.Option(10_000, "--resamples"),
    clip: bool = typer.Option(False, "--clip", help="clip VB to [0, 1] (labelled in OUT)"),
    normalize: bool = typer.Option(False, "--normalize",
                                   help="rescale probabilities that do not sum to 1"),
    out: Path = typer.Option(..., "--out", help="OUT.json"),
) -> None:
    """Score already-tagged outputs (JSONL) with ES and VB over an alpha grid."""
    from judgekit.core.errors import ConfigError
    from judgekit.methods.vbscore.scorefile import print_table, score_file

    if out.exists() and out.is_dir():
        raise ConfigError(f"--out {out} is a directory; give a file name such as {out}/scores.json")
    if out.exists() and file.exists() and out.resolve() == file.resolve():
        raise ConfigError(f"--out {out} is the input file; choose another name")
    result = score_file(file, alphas=alpha, k=k, seed=seed, gain=gain, variance=variance,
                        resamples=resamples, clip=clip, normalize=normalize)
    from judgekit.runs.io import write_json

    write_json(out, result)
    print_table(result, console)


@cache_app.command("stats")
def cache_stats(cache_dir: Path | None = typer.Option(None, "--dir")) -> None:
    """Entries, hits and misses of the last run, and bytes on disk."""
    from judgekit.llm.cache import ResponseCache

    c = ResponseCache(cache_dir)
    s = c.stats()
    print(json.dumps(s.__dict__, indent=2))


@cache_app.command("clear")
def cache_clear(cache_dir: Path | None = typer.Option(None, "--dir"),
                yes: bool = typer.Option(False, "--yes", "-y",
                                         help="do not ask (needed when not a terminal)")
                ) -> None:
    """Delete every cached response (asks first unless --yes)."""
    from judgekit.core.errors import ConfigError
    from judgekit.llm.cache import ResponseCache, default_cache_dir

    where = cache_dir or default_cache_dir()
    if not yes:
        if not sys.stdin.isatty():
            raise ConfigError(f"cache clear would delete every entry in {where}; "
                              "add --yes to confirm")
        if not typer.confirm(f"delete every cached response in {where}?", default=False):
            console.print("nothing deleted")
            return
    n = ResponseCache(cache_dir).clear()
    console.print(f"removed {n} entries")


@cassette_app.command("list")
def cassette_list(path: Path | None = typer.Argument(None, help="a cassette file, or a "
                                                     "packaged experiment's name; none: "
                                                     "the packaged cassettes")) -> None:
    """One line per entry: key, stage template, model, draw, ok (with no argument: the
    packaged experiments that replay a cassette, and its entries)."""
    from judgekit.llm.cassette import read_entries as load_entries

    if path is None:
        from judgekit.runs.config import find_config, load_raw, packaged_experiments

        for name in packaged_experiments():
            raw = load_raw(find_config(name))
            if raw.get("cassette") and _cassette_path(Path(name)).exists():
                n = len(load_entries(_cassette_path(Path(name))))
                print(f"{name:<22} {n:>4} entries   judgekit run {name} --cassette-mode none")
        return
    path = _cassette_path(path)
    for key, e in sorted(load_entries(path).items()):
        i, r = e["identity"], e["response"]
        print(f"{key[:12]}  {i['template']['name']:<28} {i['provider']}/{i['model']:<20}"
              f" draw={i['draw']:<3} ok={r.get('ok')}")


def _cassette_path(path: Path) -> Path:
    """A cassette file as given, or a packaged experiment's cassette by its name."""
    if path.exists() or path.suffix:
        return path
    from judgekit.core.resources import resolve_resource
    from judgekit.runs.config import find_config, load_raw

    raw = load_raw(find_config(str(path)))
    if not raw.get("cassette"):
        from judgekit.core.errors import ConfigError

        raise ConfigError(f"experiment {path} records no cassette")
    return resolve_resource(raw["cassette"], "cassettes")


@cassette_app.command("verify")
def cassette_verify(paths: list[Path]) -> None:
    """Check keys match identities and that nothing looks like a secret."""
    from judgekit.llm.cassette import verify

    paths = [_cassette_path(p) for p in paths]
    problems = [p for path in paths for p in verify(path)]
    for p in problems:
        _err(p)
    if problems:
        _err(f"{len(problems)} problem(s) in {len(paths)} cassette(s)")
        raise typer.Exit(1)
    console.print(f"{len(paths)} cassette(s) ok")


@cassette_app.command("unused")
def cassette_unused(config: str, set_: list[str] = typer.Option([], "--set")) -> None:
    """Replay CONFIG in mode none and list cassette entries it did not use."""
    from judgekit.api import resolve_config
    from judgekit.core.errors import ConfigError
    from judgekit.runs.pipeline import compute

    cfg = resolve_config(config, sets=set_, cassette_mode="none")
    if not getattr(cfg, "cassette", None):
        raise ConfigError(f"config {config} has no cassette; nothing to compare with")
    unused = compute(cfg).unused_cassette_entries
    for key in unused:
        console.print(key)
    console.print(f"{len(unused)} unused entries")


@app.command()
def schema(method: str = typer.Argument(..., help="one of " + ", ".join(_methods()))
           ) -> None:
    """Print the JSON Schema of a method's results file."""
    from judgekit.core.methods import json_schema

    name, _, experiment = method.partition("/")
    print(json.dumps(json_schema(name, experiment or None), indent=2, sort_keys=True))


app.command()(tables.compare)
app.command("analyse")(tables.analyse)
app.command("export")(tables.export_run)
app.command("plan")(tables.plan)
app.command("card")(tables.card)
app.command("choose")(tables.choose)
app.command("label")(labelling.label)
app.command("view")(labelling.view)
local_app.command("info")(tables.local_info)

prompts_app = typer.Typer(no_args_is_help=True, help="Inspect or copy the prompt templates.")
app.add_typer(prompts_app, name="prompts")

prompts_app.command("list")(tables.prompts_list)
prompts_app.command("export")(tables.prompts_export)


data_app = typer.Typer(no_args_is_help=True, help="Fetch full datasets into a local cache.")
app.add_typer(data_app, name="data")


data_app.command("fetch")(tables.data_fetch)
data_app.command("list")(tables.data_list)


batches_app = typer.Typer(no_args_is_help=True, help="Provider batches this cache submitted.")
app.add_typer(batches_app, name="batches")


@batches_app.command("list")
def batches_list(cache_dir: Path | None = typer.Option(None, "--dir")) -> None:
    """Batches recorded in the journal: id, provider, stage, requests, status."""
    from judgekit.llm.batch import BatchJournal
    from judgekit.llm.cache import default_cache_dir

    journal = BatchJournal(cache_dir or default_cache_dir())
    entries = journal.entries()
    for e in entries.values():
        print(f"{e['id']:<40} {e.get('provider', '?'):<10} {e.get('stage', '?'):<18} "
              f"{e.get('requests', '?'):>7} attempt {e.get('attempt', '?')}  "
              f"{e.get('status', '?')}")
    print(f"{len(entries)} batch(es) in {journal.path}")


@batches_app.command("cancel")
def batches_cancel(batch_id: str, cache_dir: Path | None = typer.Option(None, "--dir")
                   ) -> None:
    """Cancel a submitted batch at its provider (needs that provider's key)."""
    import asyncio

    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.batch import cancel

    client = Client(ClientSettings(cache_dir=cache_dir, use_cache=False, progress=False))
    st = asyncio.run(cancel(client, batch_id))
    print(f"{batch_id}: {st.status}")


@local_app.command("serve")
def local_serve(
    port: int = typer.Option(8080, "--port"),
    model_path: Path | None = typer.Option(None, "--model-path",
                                              help="GGUF file (default: Gemma 3 270M)"),
    threads: int = typer.Option(2, "--threads"),
) -> None:
    """Serve a GGUF model on 127.0.0.1 (OpenAI-compatible) until interrupted."""
    from judgekit.local.server import serve_forever

    serve_forever(port=port, model_path=model_path, threads=threads, console=console)


def _usage_error(exc: BaseException) -> bool:
    """Click's usage and parameter errors, from whichever copy of click typer uses
    (typer 0.29 vendors its own): they carry ``exit_code`` and ``show``."""
    return callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None),
                                                                int)


def _err(message: str) -> None:
    """One literal line on stderr: no markup interpretation, keys scrubbed."""
    from judgekit.llm.secrets import scrub_text

    sys.stderr.write(scrub_text(message).rstrip("\n") + "\n")
    sys.stderr.flush()


def _interrupted() -> int:
    from judgekit.llm.store import persisted_calls

    n = persisted_calls()
    _err(f"interrupted: {n} answered call(s) from this run are kept in the cache/cassette; "
         "rerun the same command to resume without paying for them again")
    return 130


def main(argv: list[str] | None = None) -> int:
    """The console entry point; returns (and exits with) the command's status.

    0 success, 1 a failed check or run (verify found problems, the failure budget was
    spent, the provider rejected the key or model), 2 a usage or input error, 130
    interrupted.
    """
    code = _main(argv)
    sys.exit(code)


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM ends a run like Ctrl-C does: answers kept, judgekit's own local model
    server stopped (atexit runs on this exit), status 143."""
    raise SystemExit(128 + signum)


_INTERRUPTED = threading.Event()


def _on_sigint(signum: int, frame: object) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def _main(argv: list[str] | None) -> int:
    import signal

    from judgekit.core.errors import DryRun, OutputError, RunAborted

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        # Ctrl-C raises KeyboardInterrupt as usual, and is also remembered: a library that
        # swallows the exception (some do while importing) cannot turn it into exit 0
        _INTERRUPTED.clear()
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        rv = app(args=argv, standalone_mode=False, prog_name="judgekit")
        if _INTERRUPTED.is_set():
            return _interrupted()
    except DryRun as exc:
        print(exc)
        return 0
    except (RunAborted, OutputError) as exc:  # the run started and failed: budget spent,
        _err(f"error: {exc}")  # key rejected, an output could not be written...
        return 1
    except JudgekitError as exc:
        _err(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        if type(exc).__name__ == "Abort":  # click turns Ctrl-C into Abort
            return _interrupted()
        if _usage_error(exc):
            exc.show()  # type: ignore[attr-defined]
            return int(exc.exit_code)  # type: ignore[attr-defined]
        if isinstance(getattr(exc, "__cause__", None), KeyboardInterrupt):
            return _interrupted()
        if os.environ.get("JUDGEKIT_DEBUG"):
            raise
        # nothing should reach here: every input error is a JudgekitError naming its file
        # or value. Still one line, not a traceback, and a failure status.
        first = (str(exc).splitlines() or [""])[0][:300]
        _err(f"error: unexpected {type(exc).__name__}{': ' + first if first else ''} "
             "(a judgekit bug: please report it; JUDGEKIT_DEBUG=1 shows the traceback)")
        return 1
    if rv == 130:  # typer turns Ctrl-C inside a command into Exit(130)
        return _interrupted()
    return rv if isinstance(rv, int) else 0


if __name__ == "__main__":
    main()
