"""What the viewer reads from run folders: the run list, each run's item records, the
labels beside them and the transcripts of an item's calls (from the run's cassette)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from judgekit.analysis.choose_types import Choice, Estimate
from judgekit.core.errors import DataError, describe_validation
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_jsonl
from judgekit.llm.cassette_entries import recorded_entries
from judgekit.view import pages

MAX_DEPTH = 4
SKIP = ("labels.jsonl", "replica_failures.jsonl", "failures.jsonl")


class Run(NamedTuple):
    name: str  # the folder's path under the viewer's root, with "/"
    folder: Path
    method: str
    judge: str
    data: str
    date: str
    headline: str
    details: tuple[str, ...] = ()  # the run's detail files, from its method's payload
    labelable: bool = False  # its method has an ``items`` hook
    # each judge's card decision ("<judge>: <decision> (rate): <reason>"), as the run
    # was analysed; labels given since are counted on its card page
    verdicts: tuple[str, ...] = ()


def discover(root: Path) -> list[Run]:
    """Every run folder under ``root`` (``root`` included, MAX_DEPTH levels), newest
    first."""
    from judgekit.runs.folder import is_run

    found = []
    base = root.resolve()
    for here, dirs, _files in os.walk(base):
        depth = len(Path(here).relative_to(base).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        if is_run(Path(here)):
            run = _describe(base, Path(here))
            if run is not None:
                found.append(run)
    return sorted(found, key=lambda r: (r.date, r.name), reverse=True)


class ChoiceFolder(NamedTuple):
    """A `judgekit choose` output folder: its judges, jury and decision."""

    name: str
    folder: Path
    judges: str
    decision: str
    jury: str
    escalated: int


def choices(root: Path) -> list[ChoiceFolder]:
    """Every `judgekit choose` folder (choice.json) under ``root``, by name. A choice
    that cannot be read is listed with the reason, never dropped."""
    found = []
    base = root.resolve()
    for here, dirs, files in os.walk(base):
        depth = len(Path(here).relative_to(base).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < MAX_DEPTH else []
        if "choice.json" not in files:
            continue
        name = Path(here).relative_to(base).as_posix() or "."
        try:
            doc = Choice.model_validate_json((Path(here) / "choice.json").read_bytes())
        except (OSError, ValueError) as exc:
            why = describe_validation(exc) if isinstance(exc, ValidationError) else exc
            found.append(ChoiceFolder(name, Path(here), "", f"(unreadable: {why})", "", 0))
            continue
        judges = ", ".join(f"{j.name} ({_agreement(j.agreement)})" for j in doc.judges)
        jury = ", ".join(f"{k} {_agreement(v.agreement)}" for k, v in doc.jury.items())
        found.append(ChoiceFolder(name, Path(here), judges, doc.decision, jury,
                                  doc.selective.escalated if doc.selective else 0))
    return sorted(found, key=lambda c: c.name)


def _agreement(e: Estimate | None) -> str:
    if e is None or e.estimate is None:
        return "no people's labels"
    if e.ci is None or len(e.ci) != 2:
        return f"agreement {e.estimate:.3f}, n={e.n}"
    return f"agreement {e.estimate:.3f} [{e.ci[0]:.3f}, {e.ci[1]:.3f}], n={e.n}"


def find_choice(root: Path, name: str) -> ChoiceFolder:
    for c in choices(root):
        if c.name == name:
            return c
    raise DataError(f"no judgekit choose folder {name!r} under {root}")


def _describe(base: Path, folder: Path, headline: bool = True) -> Run | None:
    """A run as the viewer lists it: what its method's spec says of it (the judge, the
    detail files, whether it can be labelled), and its config's data."""
    from judgekit.runs.folder import head, load_results, written_at

    doc = head(folder)
    if doc is None:
        return None
    cfg = doc.config
    judge, labelable, line = "", False, ""
    details: tuple[str, ...] = ()
    try:
        result = load_results(folder)
    except Exception as exc:  # a run from another version still lists, with the reason
        line = f"(headline unavailable: {exc})"
    else:
        spec = result.spec
        if spec is not None and spec.judge is not None and result.payload is not None:
            judge = spec.judge(result) or ""
        details = tuple(ref.file for ref in result.details().values())
        labelable = spec is not None and spec.items is not None
        if result.status == "failed":
            line = f"failed: {result.error or ''}"
        elif headline:
            try:
                line = str(result.headline())
            except Exception as exc:
                line = f"(headline unavailable: {exc})"
    data = cfg.data()
    data = Path(data).name if data and os.path.isabs(data) else data
    date = _dt.datetime.fromtimestamp(written_at(folder)).isoformat(" ", "minutes")
    name = folder.relative_to(base).as_posix() if folder != base else folder.name
    return Run(name, folder, doc.method, str(judge), str(data), date, line,
               details, labelable,
               _verdicts(folder, result) if headline and line and not line.startswith(
                   ("failed", "(headline")) else ())


def _verdicts(folder: Path, result: Any) -> tuple[str, ...]:
    """Each judge's card headline from the run as it was analysed (no analysis again:
    the list stays cheap), and a note when labels were given since."""
    from judgekit.analysis.card import build
    from judgekit.core.errors import JudgekitError

    try:
        card = build([folder], relabel=False, loaded=[result])
    except (JudgekitError, ValueError, OSError):
        return ()  # not a run a card reads (a VB-Score run, say)
    since = (folder / "labels.jsonl").is_file()
    return tuple(d.headline for d in card.by_judge.values()) + (
        ("labels were given since: the card counts them",) if since else ())


def find(root: Path, name: str) -> Run:
    """The run ``name`` (as ``discover`` names it) without walking or loading the others
    (its headline is not computed); a name that leaves ``root`` is not a run."""
    from judgekit.runs.folder import is_run

    base = root.resolve()
    folder = base if name == base.name else (base / name).resolve()
    inside = folder.is_relative_to(base) and len(folder.relative_to(base).parts) <= MAX_DEPTH
    run = _describe(base, folder, headline=False) if inside and is_run(folder) else None
    if run is None or run.name != name:
        raise DataError(f"no run {name!r} under {root}")
    return run


def inside(root: Path, path: Path) -> bool:
    """Does ``path``, links followed, stay inside ``root``? What the viewer reads or
    writes must: a link planted in a run folder is not a way out."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):  # a loop, a NUL byte
        return False


def confined(root: Path, path: Path, what: str) -> Path:
    """``path`` if it stays inside ``root``, else a one-line error naming it."""
    if not inside(root, path):
        raise DataError(f"{what} {path.name} leads outside the served folder: not served")
    return path


def item_file(run: Run | Path) -> Path | None:
    """The run's item records: its payload's first detail file (a folder given alone:
    its largest JSONL file that is not labels or failures). A file whose link leads
    out of its run's folder is not one."""
    if isinstance(run, Run):
        for name in run.details:
            if (run.folder / name).is_file() and inside(run.folder, run.folder / name):
                return run.folder / name
        folder = run.folder
    else:
        folder = run
    rest = sorted((p for p in folder.glob("*.jsonl") if p.name not in SKIP
                   and p.is_file() and inside(folder, p)), key=lambda p: -p.stat().st_size)
    return rest[0] if rest else None


def item_id(row: JSONObject, k: int) -> str:
    for key in ("id", "pair_id", "query_id", "item_id", "unit_id"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return str(k)


def items(run: Run) -> list[JSONObject]:
    """The run's item records, flat: nested values become compact JSON text; each has
    ``_id`` (unique) and, where labels were given, ``_label``."""
    path = item_file(run)
    rows = read_jsonl(path) if path else []
    labels = _labels(run.folder)
    out = []
    seen: dict[str, int] = {}
    for k, row in enumerate(rows):
        base = item_id(row, k)
        n = seen.get(base, 0)
        seen[base] = n + 1
        key = base if n == 0 else f"{base}#{n + 1}"
        flat: JSONObject = {"_id": key}
        for name, v in row.items():
            flat[name] = v if isinstance(v, (str, int, float, bool)) or v is None else \
                json.dumps(v, sort_keys=True, ensure_ascii=False)[:2000]
        given = pages.people_label(row)
        if key in labels:
            flat["_label"] = labels[key]
        elif given is not None:  # people's label already in the source file
            flat["_label"] = f"file: {given}"
        out.append(flat)
    return out



def labels_by_item(folder: Path) -> dict[str, dict[str, object]]:
    """Item id -> annotator -> the label standing in the run's labels file."""
    from judgekit.recorded import labels as store

    return dict(store.read(folder / "labels.jsonl").by_item)


def _labels(folder: Path) -> dict[str, str]:
    from judgekit.recorded import labels as store

    got = store.read(folder / "labels.jsonl")
    return {k: ", ".join(f"{who}: {v}" for who, v in ann.items())
            for k, ann in got.by_item.items()}


def full_item(run: Run, item: str) -> JSONObject | None:
    return pages.record(item_file(run), item=item)


def cassettes(run: Run, root: Path) -> list[Path]:
    """The cassette the run's config names, else cassettes/*.json under the viewer's
    root or beside the run, else the packaged cassette of its experiment name: only
    files inside the served folder, or the packaged ones."""
    from judgekit.runs.folder import head
    from judgekit.runs.names import RESULTS

    got = head(run.folder)
    cfg = got.config if got is not None else None
    named = cfg.cassette if cfg is not None else None
    out: list[Path] = []
    if isinstance(named, str) and "\x00" not in named:
        for cand in (run.folder / named, root / named):  # never an absolute path outside
            if cand.is_file() and inside(root, cand):
                out.append(cand)
                break
    for d in (root / "cassettes", run.folder.parent / "cassettes", run.folder):
        out += sorted(p for p in d.glob("*.json") if inside(root, p)) \
            if d.is_dir() and inside(root, d) else []
    if cfg is not None and cfg.name:
        from judgekit.core.resources import resource_dir

        with contextlib.suppress(FileNotFoundError):  # an install without cassettes
            packaged = resource_dir("cassettes") / f"{cfg.name}.json"
            if packaged.is_file():
                out.append(packaged)
    return [p for p in dict.fromkeys(out) if p.name != RESULTS]


def transcripts(run: Run, root: Path, row: JSONObject, limit: int = 50) -> list[JSONObject]:
    """The recorded calls whose prompt mentions the item (its question or text): the
    messages sent, the raw answer, the parsed object, the model and the tokens."""
    needles = [str(row[k]) for k in ("query", "question", "instruction", "input", "prompt")
               if isinstance(row.get(k), str) and len(row[k]) >= 8]
    if not needles:
        return []
    found: list[JSONObject] = []
    for path in cassettes(run, root):
        try:
            doc = json_loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for e in recorded_entries(doc):
            ident, resp = e.identity, e.response
            if any(n in ident.text() for n in needles):
                found.append({"cassette": path.name,
                              "template": ident.template.name if ident.template else None,
                              "model": ident.model, "messages": ident.messages,
                              "raw": resp.text, "parsed": resp.parsed, "error": resp.error,
                              "usage": resp.usage})
                if len(found) >= limit:
                    return found
    return found
