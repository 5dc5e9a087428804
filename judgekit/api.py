"""The Python entry points the command line wraps.

``judgekit.run(config)`` runs an experiment config (a path, a packaged experiment's
name, or a dict) and returns its typed results; ``judgekit.audit(items, rubric, ...)``
audits a judge on judged items without writing YAML.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

from judgekit.errors import ConfigError, DataError, RunAborted, StatsError
from judgekit.results import RunResult, load_results
from judgekit.runguard import FolderBusy, claim_folder, failed_run


def run(config: str | Path | dict[str, Any], *, out: str | Path | None = None,
        overwrite: bool = False, sets: list[str] | None = None,
        models: dict[str, str] | None = None, **overrides: Any) -> RunResult:
    """Run an experiment and return its typed results (also written to ``out``).

    Args:
        config: a YAML path, a packaged experiment name (``"demo"``), or a dict with
            the same keys (relative paths in a dict resolve against the working folder).
        out: the output folder (default: the config's ``out``); it must be new or empty
            unless ``overwrite``.
        sets: dotted ``KEY=VALUE`` overrides, as ``--set`` on the command line.
        models: ``{role: "provider/model"}`` overrides.
        overrides: top-level config fields, e.g. ``cassette_mode="none"``, ``seed=1``.
    """
    outcome = run_config(config, out=out, overwrite=overwrite, sets=sets, models=models,
                         **overrides)
    return outcome[0]


def run_config(config: str | Path | dict[str, Any], *, out: str | Path | None = None,
               overwrite: bool = False, sets: list[str] | None = None,
               models: dict[str, str] | None = None, **overrides: Any
               ) -> tuple[RunResult, dict[str, Any], Path]:
    """``run`` plus the runner's summary (headline, failed calls) and the folder."""
    from judgekit.config import out_dir, resolve, resolve_dict
    from judgekit.runio import prepare_out

    ov = {**overrides, "out": str(out) if out is not None else None}
    model_args = [f"{k}={v}" for k, v in (models or {}).items()]
    if isinstance(config, dict):
        cfg, runner = resolve_dict(config, sets or [], model_args, ov)
    else:
        cfg, runner = resolve(config, sets or [], model_args, ov)
    directory = out_dir(cfg)
    # No folder was asked for: the config's default gets a fresh one each run (runs/demo,
    # runs/demo-2, ...), as evaluation logs do, also when another run holds the first;
    # an explicit --out that is not empty is refused unless overwritten.
    auto = out is None and not overwrite
    with contextlib.ExitStack() as stack:
        while True:
            if auto:
                directory = next_free(directory)
            try:
                stack.enter_context(claim_folder(directory))
                break
            except FolderBusy:
                if not auto:
                    raise
        prepare_out(directory, overwrite=overwrite, inputs=_inputs(cfg))
        try:
            summary = runner(cfg, directory)
        except (RunAborted, StatsError, DataError) as exc:
            failed = failed_run(directory, str(getattr(cfg, "method", "")), exc)
            if failed is None:
                raise
            raise failed from None
    return load_results(directory / "results.json"), summary, directory


def next_free(directory: Path) -> Path:
    """``directory`` if it is absent or empty, else the first free ``<name>-N`` beside it."""
    def free(p: Path) -> bool:
        return not p.exists() or (p.is_dir() and not any(p.iterdir()))

    if free(directory):
        return directory
    n = 2
    while not free(directory.with_name(f"{directory.name}-{n}")):
        n += 1
    return directory.with_name(f"{directory.name}-{n}")


def _inputs(cfg: Any) -> tuple[Path, ...]:
    paths = [getattr(cfg, k, None) for k in ("data_path", "data_dir", "cassette", "prompts",
                                             "labels_file")]
    paths += [d.path for d in getattr(cfg, "datasets", []) or [] if getattr(d, "path", None)]
    return tuple(Path(p) for p in paths if p)


def audit(items: list[dict[str, Any]] | str | Path, rubric: str | Path | dict[str, Any], *,
          evaluator: str, verifier: str, generator: str | None = None,
          verifier_rubric: str | Path | dict[str, Any] | None = None,
          out: str | Path | None = None, overwrite: bool = False,
          **settings: Any) -> RunResult:
    """Audit a judge with the No-Data Algorithm (check ``both`` by default).

    Args:
        items: judged items (``{"Prompt", "Output", "Label"?, "Rubric"?}`` dicts) or a
            JSON file of them.
        rubric: what the judge is told: a rubric YAML path, a packaged rubric name, or a
            dict (``name``, ``aggregator``, ``criteria``).
        evaluator: the judge under audit (``provider/model``); ``verifier``: the model you
            trust; ``generator``: the paraphraser (default: the evaluator).
        verifier_rubric: the rubric the verifier scores with (default: ``rubric``).
        settings: any other audit config field (``rounds``, ``phi``, ``seed``,
            ``cassette``, ``check``, ``trust_threshold``...).
    """
    tmp = Path(tempfile.mkdtemp(prefix="judgekit-audit-"))
    data_path = items if isinstance(items, (str, Path)) else _dump(tmp / "items.json", items)
    models = {"evaluator": evaluator, "verifier": verifier}
    if generator:
        models["generator"] = generator
    n = settings.pop("sample_size", None)
    if n is None:
        n = len(json.loads(Path(data_path).read_text(encoding="utf-8")))
    doc = {"method": "nodata", "experiment": "llm", "name": "audit",
           "data_path": str(data_path), "sample_size": n,
           "rubric": _rubric_path(rubric, tmp / "rubric.yaml"),
           "verifier_rubric": _rubric_path(verifier_rubric or rubric, tmp / "vrubric.yaml"),
           "models": models, **settings}
    return run(doc, out=out or tmp / "run", overwrite=overwrite)


def _dump(path: Path, items: list[dict[str, Any]]) -> Path:
    if not isinstance(items, list):
        raise ConfigError("items must be a list of judged-item dicts or a JSON file path")
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path


def _rubric_path(rubric: str | Path | dict[str, Any], target: Path) -> str:
    if isinstance(rubric, dict):
        import yaml

        target.write_text(yaml.safe_dump(rubric, sort_keys=False), encoding="utf-8")
        return str(target)
    return str(rubric)


def probe_judge(data: list[dict[str, Any]] | str | Path, *, judge: str,
                mode: str = "pairwise", out: str | Path | None = None,
                overwrite: bool = False, **settings: Any) -> RunResult:
    """Probe a judge's reliability (``method: probe``) without writing YAML.

    Args:
        data: pairwise: pairs (``{"id", "question", "a", "b", "correct"?, "human"?}``) or a
            JSONL path; pointwise: judged items (``{"Prompt", "Output", "Label"?}``) or a
            JSON path.
        judge: the judge under test (``provider/model``).
        mode: ``pairwise`` or ``pointwise`` (then pass ``rubric=``).
        settings: any other probe config field (``transforms``, ``repeats``,
            ``template_transforms``, ``human_sample``, ``cassette``...).
    """
    tmp = Path(tempfile.mkdtemp(prefix="judgekit-probe-"))
    if isinstance(data, (str, Path)):
        path = Path(data)
    elif mode == "pairwise":
        path = tmp / "pairs.jsonl"
        path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in data),
                        encoding="utf-8")
    else:
        path = _dump(tmp / "items.json", data)
    if isinstance(settings.get("rubric"), dict):
        settings["rubric"] = _rubric_path(settings["rubric"], tmp / "rubric.yaml")
    doc = {"method": "probe", "name": "probe", "judge_mode": mode, "data_path": str(path),
           "models": {"judge": judge}, **settings}
    return run(doc, out=out or tmp / "run", overwrite=overwrite)
