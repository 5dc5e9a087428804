"""Pairs for pairwise probes: a user's JSONL, or built from datasets with objective
answers (a correct answer against an incorrect one, the correct one placed first or
second by a seeded coin), so accuracy and position bias need no human labels."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from judgekit.core import seeds
from judgekit.core.errors import DataError
from judgekit.core.textio import json_loads, read_lines


@dataclass
class Pair:
    id: str
    question: str
    a: str
    b: str
    correct: str | None = None  # "a" | "b"
    human: str | None = None  # a human's preference, "a" | "b"
    humans: list[str] | None = None  # several annotators' preferences (for the ceiling)
    model_a: str | None = None  # the model that wrote answer A (for self-preference)
    model_b: str | None = None
    reference: str | None = None  # a second judge's pick, the quality reference
    dataset: str | None = None  # where the pair comes from (preferences are compared within)


def load_pairs(path: str | Path) -> list[Pair]:
    p = Path(path)
    if not p.exists():
        raise DataError(f"pairs file {p} not found")
    out = []
    for n, line in read_lines(p):
        if not line.strip():
            continue
        try:
            r = json_loads(line)
            if not isinstance(r, dict):
                raise DataError(f"{p} line {n}: a JSON object per line is expected (id, "
                                f"question, a, b), got {type(r).__name__}")
            humans = r.get("humans")
            pair = Pair(str(r["id"]), str(r["question"]), str(r["a"]), str(r["b"]),
                        r.get("correct"), r.get("human") or (humans[0] if humans else None),
                        humans, _opt_str(r.get("model_a")), _opt_str(r.get("model_b")),
                        dataset=_opt_str(r.get("dataset")))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{p} line {n}: need JSON with id, question, a, b ({exc})") \
                from exc
        for field in ("correct", "human"):
            if getattr(pair, field) not in (None, "a", "b"):
                raise DataError(f"{p} line {n}: field {field} must be \"a\" or \"b\"")
        if pair.humans is not None and (not isinstance(pair.humans, list) or
                                        any(h not in ("a", "b") for h in pair.humans)):
            raise DataError(f"{p} line {n}: field humans must be a list of \"a\"/\"b\"")
        out.append(pair)
    if len(out) < 2:
        raise DataError(f"{p}: a probe needs at least two pairs")
    return out


def _opt_str(v: object) -> str | None:
    return None if v is None else str(v)


def pairs_from_datasets(names: list[str], paths: dict[str, str], n: int, seed: int
                        ) -> list[Pair]:
    """A seeded sample of ``n`` pairs across every named dataset: each dataset's pairs in
    a seeded order, taken in turn (round robin), so a small ``n`` still draws from all of
    them (file order would give the first dataset only)."""
    from judgekit.data.qa import load_dataset_queries

    rng = seeds.rng("probe.pairs", seed)
    per: list[list[Pair]] = []
    for name in names:
        got = []
        for q in load_dataset_queries(name, paths.get(name)):
            wrong = next((r for r in q.rejected if r.strip()), None)
            if not q.gold or wrong is None:
                continue
            first = bool(rng.random() < 0.5)
            a, b = (q.gold, wrong) if first else (wrong, q.gold)
            got.append(Pair(f"{name}:{q.id}", q.text, a, b, "a" if first else "b",
                            dataset=name))
        per.append([got[i] for i in rng.permutation(len(got))])
    out: list[Pair] = []
    depth = 0
    while len(out) < n and any(depth < len(g) for g in per):
        out += [g[depth] for g in per if depth < len(g)][: n - len(out)]
        depth += 1
    if len(out) < 2:
        raise DataError("pairs_from gave fewer than two pairs")
    return out


def attach_human_labels(pairs: list[Pair], path: str | Path, field: str = "human") -> None:
    """Labels from a separate JSONL of {"id", "<field>": "a"|"b"} on some of the judged
    pairs: human preferences (``human``), or a second judge's picks (``reference``, the
    quality reference of self-preference and length preference)."""
    p = Path(path)
    what = "human labels" if field == "human" else "reference labels"
    if not p.exists():
        raise DataError(f"{what} file {p} not found")
    by_id = {q.id: q for q in pairs}
    if field == "human" and _is_labels_file(p):  # judgekit label / view's labels file
        from judgekit.recorded.labels import values

        for key, v in values(p, "pairwise").items():
            if key not in by_id:
                raise DataError(f"{p}: id {key!r} is not one of the judged pairs")
            if v in (0.0, 1.0):  # annotators split evenly: no preference
                by_id[key].human = "a" if v == 1.0 else "b"
        return
    for n, line in read_lines(p):
        if not line.strip():
            continue
        try:
            r = json_loads(line)
            key, lab = str(r["id"]), r[field]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{p} line {n}: need JSON with id and {field} ({exc})") from exc
        if lab not in ("a", "b"):
            raise DataError(f"{p} line {n}: field {field} must be \"a\" or \"b\", got {lab!r}")
        if key not in by_id:
            raise DataError(f"{p} line {n}: id {key!r} is not one of the judged pairs")
        setattr(by_id[key], field, lab)


def _is_labels_file(p: Path) -> bool:
    for _, line in read_lines(p):
        if line.strip():
            try:
                row = json_loads(line)
            except json.JSONDecodeError:
                return False
            return isinstance(row, dict) and ("kind" in row or "label" in row)
    return False
