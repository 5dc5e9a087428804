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

from judgekit.core.errors import ConfigError, DataError, RunAborted, StatsError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.results import RunResult
from judgekit.runs.guard import FolderBusy, claim_folder, failed_run


def run(config: str | Path | JSONObject, *, client: Any = None,
        out: str | Path | None = None, overwrite: bool = False,
        sets: list[str] | None = None, models: dict[str, str] | None = None,
        save: bool | None = None, **overrides: Any) -> RunResult[Any]:
    """Run an experiment in memory and return its typed result.

    Args:
        config: a YAML path, a packaged experiment name (``"demo"``), or a dict with
            the same keys (relative paths in a dict resolve against the working folder).
        client: the :class:`judgekit.Client` to use (its providers, cache and cassette),
            e.g. ``Client(providers={"mock/judge": FunctionProvider(fn)})``; left open.
            Default: one built from the config's settings, closed at the end.
        out: also write the run's folder there (results file, JSONL, report.md/html);
            it must be new or empty unless ``overwrite``. ``result.save(folder)`` does
            the same later.
        save: write the folder even without ``out`` (to the config's ``out``, a fresh
            ``runs/<name>[-N]``). Default: only when ``out`` is given, except that a
            config named by path or name with no ``client`` still writes its folder as
            judgekit 0.1 did (deprecated: pass ``out=`` or ``save=True``).
        sets: dotted ``KEY=VALUE`` overrides, as ``--set`` on the command line.
        models: ``{role: "provider/model"}`` overrides.
        overrides: top-level config fields, e.g. ``cassette_mode="none"``, ``seed=1``.
    """
    if save is None:
        save = out is not None or (not isinstance(config, dict) and client is None)
        if save and out is None:
            import warnings

            warnings.warn("judgekit.run(path) writing the config's output folder without "
                          "out= is deprecated: pass out=FOLDER or save=True (or save=False "
                          "to compute in memory only)", FutureWarning, stacklevel=2)
    if not save:
        from judgekit.runs.pipeline import compute

        cfg = resolve_config(config, sets=sets, models=models, **overrides)
        return compute(cfg, client)
    outcome = run_config(config, out=out, overwrite=overwrite, sets=sets, models=models,
                         client=client, **overrides)
    return outcome[0]


def resolve_config(config: str | Path | JSONObject, *, sets: list[str] | None = None,
                   models: dict[str, str] | None = None, **overrides: Any) -> Any:
    """Load, override and validate a config (a path, a packaged name or a dict)."""
    from judgekit.runs.config import resolve, resolve_dict

    model_args = [f"{k}={v}" for k, v in (models or {}).items()]
    if isinstance(config, dict):
        return resolve_dict(config, sets or [], model_args, overrides)
    return resolve(config, sets or [], model_args, overrides)


def run_config(config: str | Path | JSONObject, *, out: str | Path | None = None,
               overwrite: bool = False, sets: list[str] | None = None,
               models: dict[str, str] | None = None, client: Any = None, **overrides: Any
               ) -> tuple[RunResult[Any], JSONObject, Path]:
    """Run and write the folder (what ``judgekit run`` does): the result, what the
    console shows (headline, failed calls by kind) and the folder written."""
    from judgekit.llm.collect import fewer_collections
    from judgekit.runs.config import out_dir
    from judgekit.runs.folder import write
    from judgekit.runs.io import prepare_out
    from judgekit.runs.pipeline import compute

    cfg = resolve_config(config, sets=sets, models=models,
                         **{**overrides, "out": str(out) if out is not None else None})
    directory = out_dir(cfg)
    # No folder was asked for: the config's default gets a fresh one each run (runs/demo,
    # runs/demo-2, ...), as evaluation logs do, also when another run holds the first;
    # an explicit --out that is not empty is refused unless overwritten.
    auto = out is None and not overwrite
    with contextlib.ExitStack() as stack:
        stack.enter_context(fewer_collections())  # many live records: see llm.collect
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
            result = compute(cfg, client)
        except (RunAborted, StatsError, DataError) as exc:
            failed = failed_run(directory, str(getattr(cfg, "method", "")), exc)
            if failed is None:
                raise
            raise failed from None
        write(result, directory, overwrite=True)
    kinds: dict[str, int] = {}
    for f in result.failures:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    result.bind(folder=directory)
    return result, {"headline": result.headline(), "failed_calls": kinds,
                    "unused_cassette_entries": result.unused_cassette_entries}, directory


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


def audit(items: list[JSONObject] | str | Path, rubric: str | Path | JSONObject, *,
          evaluator: str, verifier: str, generator: str | None = None,
          verifier_rubric: str | Path | JSONObject | None = None,
          out: str | Path | None = None, overwrite: bool = False, client: Any = None,
          **settings: Any) -> RunResult[Any]:
    """Audit a judge with the No-Data Algorithm (check ``both`` by default).

    Args:
        items: judged items (``{"Prompt", "Output", "Label"?, "Rubric"?}`` dicts) or a
            JSON file of them.
        rubric: what the judge is told: a rubric YAML path, a packaged rubric name, or a
            dict (``name``, ``aggregator``, ``criteria``).
        evaluator: the judge under audit (``provider/model``); ``verifier``: the model you
            trust; ``generator``: the paraphraser (default: the evaluator).
        verifier_rubric: the rubric the verifier scores with (default: ``rubric``).
        client: a :class:`judgekit.llm.Client` to run with (for example one holding
            provider objects); it is used and left open.
        settings: any other audit config field (``rounds``, ``phi``, ``seed``,
            ``cassette``, ``check``, ``trust_threshold``...).
    """
    tmp = Path(tempfile.mkdtemp(prefix="judgekit-audit-"))
    data_path = items if isinstance(items, (str, Path)) else _dump(tmp / "items.json", items)
    models = {"evaluator": evaluator, "verifier": verifier}
    if generator:
        models["generator"] = generator
    n = settings.pop("sample_size", None)
    if n is None:  # every item, in whatever format the file is (an Inspect .eval is a zip)
        from judgekit.recorded.judged import JudgedInput, read_records

        spec = JudgedInput.model_validate({k: settings[k] for k in (
            "data_format", "columns", "scorer", "pass_threshold") if k in settings})
        n = len(read_records(Path(data_path), spec))
    doc = {"method": "nodata", "experiment": "llm", "name": "audit",
           "data_path": str(data_path), "sample_size": n,
           "rubric": _rubric_path(rubric, tmp / "rubric.yaml"),
           "verifier_rubric": _rubric_path(verifier_rubric or rubric, tmp / "vrubric.yaml"),
           "models": models, **settings}
    return run(doc, out=out or tmp / "run", overwrite=overwrite, client=client)


def _dump(path: Path, items: list[JSONObject]) -> Path:
    if not isinstance(items, list):
        raise ConfigError("items must be a list of judged-item dicts or a JSON file path")
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return path


def _rubric_path(rubric: str | Path | JSONObject, target: Path) -> str:
    if isinstance(rubric, dict):
        import yaml

        target.write_text(yaml.safe_dump(rubric, sort_keys=False), encoding="utf-8")
        return str(target)
    return str(rubric)


def probe_judge(data: list[JSONObject] | str | Path, *, judge: str,
                mode: str = "pairwise", out: str | Path | None = None,
                overwrite: bool = False, client: Any = None, **settings: Any) -> RunResult[Any]:
    """Probe a judge's reliability (``method: probe``) without writing YAML.

    Args:
        data: pairwise: pairs (``{"id", "question", "a", "b", "correct"?, "human"?}``) or a
            JSONL path; pointwise: judged items (``{"Prompt", "Output", "Label"?}``) or a
            JSON path.
        judge: the judge under test (``provider/model``).
        mode: ``pairwise`` or ``pointwise`` (then pass ``rubric=``).
        client: a :class:`judgekit.llm.Client` to run with (for example one holding
            provider objects); it is used and left open.
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
    return run(doc, out=out or tmp / "run", overwrite=overwrite, client=client)
