"""Where `judgekit choose` reads its judges from: `judgekit analyse` runs, verdict files
(one judge per judge column) and alpaca_eval annotations (one judge per annotator),
with each judge's cost and time per item where the files record them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from judgekit.analysis.choose_types import JudgeItems
from judgekit.core.errors import ConfigError
from judgekit.core.jsontypes import JSONObject
from judgekit.recorded.items import VerdictRow

__all__ = ["load_judges"]


def _num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and 0 <= v <= 1 else None


def _from_payload(src: str, p: Any, prices: dict[str, float]) -> list[JudgeItems]:
    if p.shape not in ("pointwise", "pairwise"):
        raise ConfigError(f"{src}: choose compares pointwise or pairwise verdicts, not "
                          f"{p.shape}")
    names = [p.judge, *(o.judge for o in p.others or [])]
    measures = [p.measures, *(o.measures for o in p.others or [])]
    rows = list(p.items.records(VerdictRow))
    out = []
    for name, ms in zip(names, measures):
        mine = [r for r in rows if (r.judge or names[0]) == name] if p.others else rows
        verdict, human, conf, cluster = {}, {}, {}, {}
        cost = [v for v in (_amount(r.cost) for r in mine) if v is not None]
        seconds = [v for v in (_amount(r.seconds) for r in mine) if v is not None]
        for r in mine:
            key, cluster[key] = r.key(p.shape), r.cluster(p.shape)
            verdict[key] = r.said(p.shape)
            if r.people(p.shape) is not None:
                human[key] = str(r.people(p.shape))
            c = _num(r.confidence)
            if c is not None:
                conf[key] = c
        acc = next((m for m in ms if m.key == "accuracy"), None)
        # a judge named only by its generic column is named by its file or run
        label = src if name in ("judge", "winner", "verdict") else name
        given = prices.get(label, prices.get(name))
        recorded = float(np.mean(cost)) if cost else None
        out.append(JudgeItems(
            label, p.shape, verdict, human, conf, cluster,
            acc.decision if acc is not None else None,
            given if given is not None else recorded,
            float(np.mean(seconds)) if seconds else None,
            "--price" if given is not None else
            f"the file's cost column (mean of {len(cost)} items)"
            if recorded is not None else None))
    return out


def _by_folder(judges: list[JudgeItems], origin: list[Path]) -> list[JudgeItems]:
    """Judges named only by a file name they share (LLMBar's JUDGE/SETTING/result.json)
    are named by the folders that tell them apart: GPT-4/Vanilla_NoRules."""
    import os

    stems = [p.stem if p.is_file() else p.name for p in origin]
    out = list(judges)
    for stem in {s for s in stems if stems.count(s) > 1}:
        idx = [i for i, (j, s) in enumerate(zip(judges, stems)) if s == stem and j.name == s]
        if len(idx) < 2:
            continue
        paths = [origin[i].resolve() for i in idx]
        common = Path(os.path.commonpath([str(p.parent) for p in paths]))
        for i, p in zip(idx, paths):
            rel = p.parent.relative_to(common).as_posix()
            if rel and rel != ".":
                out[i] = out[i]._replace(name=rel)
    return out


def _is_alpaca(path: Path) -> bool:
    from judgekit.recorded.tables import format_of

    try:
        return format_of(path, "auto") == "alpaca_eval"
    except Exception:  # noqa: BLE001 - not readable as alpaca_eval: the analysis says why
        return False


def _alpaca_judges(path: Path, prices: dict[str, float]) -> list[JudgeItems]:
    """alpaca_eval annotations (one file may hold several annotators): each annotator's
    preferences as a pairwise judge, items keyed by instruction and both outputs, with
    its ``price_per_example`` and ``time_per_example`` as cost and time. A preference of
    1 is the first output, 2 the second; anything else (1.5, 0, null) is a tie or no
    verdict and is left out. alpaca_eval files carry no people's labels: agreement with
    people needs them from another source."""
    import hashlib
    import tempfile

    import judgekit
    from judgekit.recorded.alpaca_eval import read_annotations

    by: dict[str, list[JSONObject]] = {}
    for r in read_annotations(path):
        key = hashlib.sha1("\x1f".join(str(v) for v in (
            r.instruction, r.output_1, r.output_2)).encode()).hexdigest()[:12]
        if r.winner is None:
            continue
        by.setdefault(str(r.annotator or path.stem), []).append(
            {"pair_id": key, "question": r.instruction, "first": r.output_1,
             "second": r.output_2, "winner": r.winner,
             **({"price_per_example": r.price_per_example}
                if r.price_per_example is not None else {}),
             **({"time_per_example": r.time_per_example}
                if r.time_per_example is not None else {})})
    if not by:
        raise ConfigError(f"{path}: no annotation with a preference of 1 or 2")
    out: list[JudgeItems] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, lines in by.items():
            f = Path(tmp) / "annotations.jsonl"
            f.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
            res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
            out += [j._replace(name=name) for j in _from_payload(name, res.payload, prices)]
    return out


def _amount(x: Any) -> float | None:
    """A cost or a duration as recorded (a number >= 0), None when absent or unreadable."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if np.isfinite(v) and v >= 0 else None


def load_judges(sources: list[str | Path], prices: dict[str, float] | None = None,
                minimum: int = 2) -> list[JudgeItems]:
    """Every judge of ``sources``: `judgekit analyse` run folders, or verdict files
    (analysed in memory, one judge per judge column); at least ``minimum`` of them (1
    for selective evaluation, the plain single-judge case)."""
    import judgekit
    from judgekit.runs.folder import is_run, load_results

    prices = prices or {}
    out: list[JudgeItems] = []
    origin: list[Path] = []  # each judge's source
    for s in sources:
        path = Path(s)
        start = len(out)
        if path.is_dir() and is_run(path):
            res = load_results(path)
        elif path.is_file() and _is_alpaca(path):
            out += _alpaca_judges(path, prices)
            continue
        elif path.is_file():
            res = judgekit.run({"method": "verdicts", "data_path": str(path)}, save=False)
        else:
            raise ConfigError(f"{s}: no such analyse run or verdicts file")
        if getattr(res.payload, "shape", None) not in ("pointwise", "pairwise"):
            raise ConfigError(f"{s}: choose reads `judgekit analyse` runs of pointwise or "
                              f"pairwise verdicts (or their files), not a "
                              f"{getattr(res.payload, 'shape', None) or res.method} run "
                              "(graded judges are not compared yet)")
        out += _from_payload(path.stem if path.is_file() else path.name, res.payload, prices)
        origin += [path] * (len(out) - start)
    out = _by_folder(out, origin)
    names = [j.name for j in out]
    if len(set(names)) < len(names):  # two files of one judge name: name them by source
        seen: dict[str, int] = {}
        fixed = []
        for j in out:
            seen[j.name] = seen.get(j.name, 0) + 1
            fixed.append(j._replace(name=j.name if names.count(j.name) == 1
                                    else f"{j.name}#{seen[j.name]}"))
        out = fixed
    if len(out) < minimum:
        raise ConfigError("choose compares at least 2 judges: give several runs or files, "
                          "or one file with several judge columns (one judge: --selective "
                          "--target-agreement T calibrates its threshold)")
    shapes = {j.shape for j in out}
    if len(shapes) > 1:
        raise ConfigError("choose compares judges of one shape (pointwise or pairwise)")
    _check_shared(out, prices)
    return out


def _check_shared(judges: list[JudgeItems], prices: dict[str, float]) -> None:
    """Judges compared on nothing, a price for a judge that is not there, and people's
    labels that differ between the judges' files are one-line errors: each would make
    a decision rest on something other than the same items and the same labels."""
    names = [j.name for j in judges]
    unknown = sorted(set(prices) - set(names))
    if unknown:
        raise ConfigError(f"--price {unknown[0]}=...: no judge is called {unknown[0]!r}; "
                          f"the judges are {', '.join(names)}")
    shared = set(judges[0].verdict)
    for j in judges[1:]:
        shared &= set(j.verdict)
    if not shared:
        raise ConfigError("the judges share no item id (" + ", ".join(
            f"{j.name}: {len(j.verdict)} items" for j in judges) + "): choose compares "
            "judges on the same items; give files whose ids match")
    conflict = sorted(k for k in shared if len({j.human[k] for j in judges
                                               if k in j.human}) > 1)
    if conflict:
        raise ConfigError(f"people's labels differ between the judges' files on "
                          f"{len(conflict)} shared item(s) ({', '.join(conflict[:5])}"
                          f"{', ...' if len(conflict) > 5 else ''}): give the same labels in "
                          "every file")
