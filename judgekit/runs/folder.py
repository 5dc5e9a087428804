"""The one module that writes and reads a run's folder.

A run's folder holds results.json (the typed result), one JSONL file per detail
(``queries.jsonl``, ``items.jsonl``...), failures.jsonl (every failed call with its
transcript), the method's figures, report.md and report.html; a recorded-verdicts run
also its labelling index (label-index.npz, :mod:`judgekit.labelling.snapshot`), which
labelling reads instead of every item. ``judgekit compare`` and
``judgekit card`` write their folders through :func:`write_folder` too. Each file is
replaced atomically and scrubbed of secrets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judgekit.core.errors import ConfigError, DataError, describe_validation
from judgekit.core.methods import find
from judgekit.core.payload import DetailFile, Json
from judgekit.core.results import RunResult
from judgekit.core.spec import RunItems
from judgekit.core.textio import json_loads
from judgekit.report.document import Doc, to_markdown
from judgekit.report.html import write_report_html
from judgekit.runs.io import (
    prepare_out,
    record_outputs,
    write_failures,
    write_json,
    write_lines,
    write_text,
)
from judgekit.runs.names import RESULTS

__all__ = ["attach", "load_results", "report_doc", "write", "write_folder"]


def report_doc(result: RunResult[Any]) -> Doc:
    """The run's report document (its method's ``report``)."""
    return _doc(result.spec.report(_settings(result), result), result.method)


def write(result: RunResult[Any], out: str | Path, *, overwrite: bool = False) -> Path:
    """Write ``result``'s folder (see the module docstring); returns it."""
    out = Path(out)
    spec = result.spec
    before = prepare_out(out, overwrite=overwrite)
    cfg = _settings(result)
    details = result.details()
    for name, ref in details.items():  # streamed: a detail file is never held whole
        write_lines(out / f"{name}.jsonl", ref.lines())
    got = spec.label_index(result) if spec.label_index is not None else None
    if got is not None:  # what labelling reads, so that it need not parse every item
        from judgekit.runs import index

        index.write(out, *got)
    write_json(out / "results.json", result.model_dump(mode="json"))
    if spec.figures is not None:
        spec.figures(cfg, result, out)
    doc = _doc(spec.report(cfg, result), result.method)
    for ref in details.values():  # the figures' and report's views of the rows can go
        ref.drop_views()
    write_folder(out, doc, details=details, views=spec.views)
    write_failures(out, result.failures)
    record_outputs(out, before, "run")
    return out


def _doc(doc: Any, method: str) -> Doc:
    """A method's report, checked: its spec's ``report`` returns a Doc."""
    if not isinstance(doc, Doc):
        raise TypeError(f"the {method} method's report returned {type(doc).__name__}, "
                        "not a judgekit.report.document.Doc")
    return doc


def write_folder(out: Path, doc: Doc, *,
                 details: Mapping[str, list[Json] | DetailFile] | None = None,
                 views: Mapping[str, Callable[[Json], tuple[str, str, str]]] | None = None,
                 json_files: Mapping[str, BaseModel] | None = None,
                 text_files: Mapping[str, str] | None = None) -> Path:
    """report.md and report.html from ``doc`` (with the per-item view of ``details``),
    plus any JSON documents and text files (CSV) the caller names."""
    out.mkdir(parents=True, exist_ok=True)
    for name, model in (json_files or {}).items():
        write_json(out / name, model.model_dump(mode="json"))
    for name, text in (text_files or {}).items():
        write_text(out / name, text)
    write_text(out / "report.md", to_markdown(doc))
    write_report_html(out, doc, details or {}, views)
    return out


def attach(result: RunResult[Any], folder: Path | None = None) -> RunResult[Any]:
    """Give ``result`` its writer (``result.save``) and, for a loaded run, its folder's
    reader (detail records and failures stream from the files)."""
    result.bind(writer=_save)
    if folder is not None:
        result.bind(folder=folder, reader=_reader(folder))
    return result


def _save(result: RunResult[Any], out: Path, overwrite: bool) -> Path:
    return write(result, out, overwrite=overwrite)


def _reader(folder: Path) -> Callable[[str], Iterator[Json]]:
    def read(name: str) -> Iterator[Json]:
        path = folder / name
        if not path.exists():
            return iter(())
        return _jsonl(path)
    return read


def _jsonl(path: Path) -> Iterator[Json]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json_loads(line)


def _settings(result: RunResult[Any]) -> Any:
    """The validated config a result was computed with (rebuilt from results.json)."""
    if result.settings is None:
        cfg = result.spec.config.model_validate({**(result.config or {}),
                                                 "method": result.method})
        result.bind(settings=cfg)
    return result.settings




def results_path(path: str | Path) -> Path:
    """The results file of a run folder (or the file itself); a one-line error when there
    is none."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS
    if not p.is_file():
        raise ConfigError(f"{path}: no {RESULTS} here; give a run folder or its {RESULTS}")
    return p


def is_run(folder: Path) -> bool:
    """Does ``folder`` hold a run's results file?"""
    return (folder / RESULTS).is_file()


class ConfigHead(BaseModel):
    """What a listing reads of a run's config, from any version (the rest rides along)."""

    model_config = ConfigDict(extra="allow")
    name: str | None = None
    data_path: str | None = None
    datasets: Any = None
    cassette: str | None = None

    def data(self) -> str:
        """The run's data as listed: its data file, its datasets' names, or its name."""
        data = self.data_path or self.datasets or self.name or ""
        if isinstance(data, str):
            return data
        if not isinstance(data, list):
            return json.dumps(data)
        return ", ".join(str(d["name"]) if isinstance(d, dict) and d.get("name") is not None
                         else str(d) for d in data)

    @field_validator("name", "data_path", "cassette", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return v if v is None or isinstance(v, str) else None  # another type: not shown


class RunHead(BaseModel):
    """A run's results file as a listing reads it: its method and config, unvalidated
    beyond that (runs from any version list)."""

    model_config = ConfigDict(extra="allow")
    method: str
    config: ConfigHead = Field(default_factory=ConfigHead)

    @field_validator("config", mode="before")
    @classmethod
    def _config(cls, v: Any) -> Any:
        return v if isinstance(v, dict) else {}


def head(folder: Path) -> RunHead | None:
    """A run's results file's head (:class:`RunHead`), or None when the file is missing,
    unreadable or names no method."""
    try:
        doc = json_loads((folder / RESULTS).read_text(encoding="utf-8"))
        return RunHead.model_validate(doc)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError,
            ValidationError):
        return None


def written_at(folder: Path) -> float:
    """When the run's results file was written (seconds since the epoch)."""
    return (folder / RESULTS).stat().st_mtime


def run_items(folder: Path) -> tuple[RunResult[Any], RunItems | None]:
    """A run and its labelable items, from its method's ``items`` hook (None: the method
    has none)."""
    result = load_results(folder)
    return result, items_of(result)


def items_of(result: RunResult[Any]) -> RunItems | None:
    hook = result.spec.items if result.spec is not None else None
    return hook(result) if hook is not None else None


def item_details(result: RunResult[Any]) -> list[str]:
    """The run's per-item detail files (the payload's, in its order)."""
    return [ref.file for ref in result.details().values()]


def load_results(path: str | Path) -> RunResult[Any]:
    """Load a run's results.json (or its folder), schema 1 or 2, as its method's
    ``RunResult[Payload]``."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS
    try:
        doc = json_loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{p}: not a readable results.json ({exc})") from exc
    if not isinstance(doc, dict) or "method" not in doc:
        raise DataError(f"{p}: no 'method' field; is it a judgekit results.json?")
    try:
        if doc.get("status") == "failed":  # a failed run's results.json says why
            res: RunResult[Any] = RunResult.model_validate(doc)
        else:
            spec = find(str(doc["method"]), doc.get("experiment"))
            res = spec.result_model().model_validate(doc)
            res.bind(spec=spec)
    except ValidationError as exc:
        raise DataError(f"{p}: {describe_validation(exc)}") from exc
    except ConfigError as exc:
        raise DataError(f"{p}: {exc}") from None
    return attach(res, p.parent)
