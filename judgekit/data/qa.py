"""Question datasets for the VB-Score case study, from a path or the Hugging Face hub.

Every loader maps its format to :class:`Query`: an id, the query text, the
context the interpretation generator sees (answer options, candidates), and
the gold answer with accepted variants.
"""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgekit.core import seeds
from judgekit.core.errors import DataError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import json_loads, read_text, safe_yaml
from judgekit.data.registry import dataset, get, names


@dataclass
class Query:
    id: str
    text: str
    context: str = ""
    gold: str | None = None
    accepted: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def _require(path: Path) -> Path:
    if not path.exists():
        raise DataError(f"dataset file {path} not found; give its path or set hf: true")
    return path


def _truthfulqa_row(r: JSONObject, i: int) -> Query:
    return Query(f"truthfulqa-{i}", r["question"], gold=r["best_answer"],
                 accepted=list(r["correct_answers"]), rejected=list(r["incorrect_answers"]))


def _winograd_row(r: JSONObject, i: int) -> Query:
    opts = list(r["options"])
    gold = opts[int(r["label"])]
    text = f'In "{r["text"]}", who or what does "{r["pronoun"]}" refer to?'
    return Query(f"wsc-{i}", text, context="Candidates: " + "; ".join(opts), gold=gold,
                 accepted=[gold], rejected=[o for o in opts if o != gold])


def _arc_row(r: JSONObject, i: int) -> Query:
    ch = dict(zip(r["choices"]["label"], r["choices"]["text"]))
    gold = ch[r["answerKey"]]
    return Query(r["id"], r["question"], context="Options: " + "; ".join(
        f"{k}) {v}" for k, v in ch.items()), gold=gold,
        accepted=arc_accepted(ch, r["answerKey"]), rejected=[v for v in ch.values() if v != gold])


@dataset("truthfulqa", formats=("csv",), rejected=True, licence="Apache-2.0",
         url="https://raw.githubusercontent.com/sylinrl/TruthfulQA/main/TruthfulQA.csv",
         filename="TruthfulQA.csv", hf=("truthful_qa", "generation", "validation"),
         hf_row=_truthfulqa_row)
def load_truthfulqa(path: Path) -> list[Query]:
    """TruthfulQA CSV: Question, Best Answer, Correct/Incorrect Answers ("; "-separated)."""
    out = []
    with io.StringIO(read_text(_require(path)), newline="") as fh:
        reader = csv.DictReader(fh)
        need = {"Question", "Best Answer", "Correct Answers", "Incorrect Answers"}
        missing = need - set(reader.fieldnames or [])
        if missing:
            raise DataError(f"{path}: missing TruthfulQA column(s) {', '.join(sorted(missing))}")
        for i, row in enumerate(reader):
            out.append(Query(
                id=f"truthfulqa-{i}", text=row["Question"].strip(), gold=row["Best Answer"].strip(),
                accepted=_split(row["Correct Answers"]), rejected=_split(row["Incorrect Answers"]),
                context=f"Category: {row.get('Category', '').strip()}"))
    return out


def _split(cell: str) -> list[str]:
    return [a.strip() for a in cell.split(";") if a.strip()]


def _text(el: ET.Element | None) -> str:
    return " ".join("".join(el.itertext()).split()) if el is not None else ""


def winograd_letter(raw: str) -> int:
    """'A', ' B. ', 'A.' -> 0 or 1 (the WSC XML has stray spaces and dots)."""
    letter = raw.strip().rstrip(".").strip().upper()
    if letter not in ("A", "B"):
        raise DataError(f"unexpected Winograd correctAnswer {raw!r}")
    return 0 if letter == "A" else 1


@dataset("winograd", formats=("xml",), licence="CC BY 4.0",
         url="https://cs.nyu.edu/~davise/papers/WinogradSchemas/WSCollection.xml",
         filename="WSCollection.xml", hf=("winograd_wsc", "wsc273", "test"),
         hf_row=_winograd_row)
def load_winograd(path: Path) -> list[Query]:
    """The original Winograd Schema Collection XML (ISO-8859-1)."""
    try:
        root = ET.parse(_require(path)).getroot()
    except ET.ParseError as exc:
        raise DataError(f"{path}: not valid WSC XML ({exc})") from exc
    out = []
    for i, s in enumerate(root.iter("schema")):
        t = s.find("text")
        if t is None:
            raise DataError(f"{path}: schema {i} has no <text>")
        sentence = " ".join(x for x in (_text(t.find("txt1")), _text(t.find("pron")),
                                        _text(t.find("txt2"))) if x)
        pron = _text(t.find("pron"))
        answers = [_text(a) for a in s.iter("answer")]
        if len(answers) != 2:
            raise DataError(f"{path}: schema {i} needs two <answer> elements")
        gold = answers[winograd_letter(_text(s.find("correctAnswer")))]
        out.append(Query(
            id=f"wsc-{i}", text=wsc_question(sentence, pron, s.find("quote")),
            context=f"Candidates: {answers[0]}; {answers[1]}", gold=gold, accepted=[gold],
            rejected=[a for a in answers if a != gold]))
    return out


def wsc_question(sentence: str, pron: str, quote: ET.Element | None) -> str:
    """The question; when the pronoun occurs more than once in the sentence, it names
    the quoted span (<quote>) that fixes which occurrence is meant."""
    base = f'In "{sentence}", who or what does "{pron}" refer to'
    occurrences = len(re.findall(rf"\b{re.escape(pron)}\b", sentence, re.IGNORECASE))
    if occurrences > 1 and quote is not None:
        span = " ".join(x for x in (_text(quote.find("quote1")), _text(quote.find("pron")),
                                    _text(quote.find("quote2"))) if x)
        if span:
            return f'{base} in "{span}"?'
    return base + "?"


@dataset("arc", formats=("jsonl",), rejected=True, licence="CC BY-SA 4.0",
         url="https://ai2-public-datasets.s3.amazonaws.com/arc/ARC-V1-Feb2018.zip",
         filename="ARC-Challenge-Test.jsonl",
         member="ARC-V1-Feb2018-2/ARC-Challenge/ARC-Challenge-Test.jsonl",
         hf=("allenai/ai2_arc", "ARC-Challenge", "test"), hf_row=_arc_row)
def load_arc(path: Path) -> list[Query]:
    """AI2 ARC JSONL: {"id", "question": {"stem", "choices": [{"text", "label"}]}, "answerKey"}."""
    out = []
    for n, line in enumerate(read_text(_require(path)).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json_loads(line)
            choices = {c["label"]: c["text"] for c in rec["question"]["choices"]}
            gold = choices[rec["answerKey"]]
            stem = rec["question"]["stem"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataError(f"{path} line {n}: not an ARC record ({exc})") from exc
        opts = "; ".join(f"{k}) {v}" for k, v in choices.items())
        out.append(Query(id=str(rec["id"]), text=stem, context=f"Options: {opts}", gold=gold,
                         accepted=arc_accepted(choices, rec["answerKey"]),
                         rejected=[v for v in choices.values() if v != gold]))
    return out


def arc_accepted(choices: dict[str, str], key: str) -> list[str]:
    """The key's option text, plus the bare key ("C", "2") only where no option's text
    is that key (otherwise "2" would accept a wrong option whose text is "2")."""
    gold = choices[key]
    texts = {normalise_answer(t) for t in choices.values()}
    return [gold] if normalise_answer(key) in texts else [gold, key]


@dataset("demo", formats=("yaml",), licence="MIT (judgekit)")
def load_demo(path: Path) -> list[Query]:
    """Our own ambiguous entity queries (YAML list of {id, query, note})."""
    doc = safe_yaml(read_text(_require(path)))
    if not isinstance(doc, list):
        raise DataError(f"{path}: expected a list of queries")
    try:
        return [Query(id=str(q["id"]), text=str(q["query"]), context=str(q.get("note", "")))
                for q in doc]
    except KeyError as exc:
        raise DataError(f"{path}: every demo query needs {exc}") from exc


def load_hf(name: str) -> list[Query]:
    """Load from the Hugging Face hub with `datasets` (optional extra `hf`)."""
    ds = get(name)
    if ds.hf is None or ds.hf_row is None:
        raise DataError(f"dataset {name} has no Hugging Face source; give its path")
    try:
        import datasets
    except ImportError as exc:
        raise DataError("hf: true needs the datasets package: pip install 'judgekit[hf]'") \
            from exc
    repo, config, split = ds.hf
    rows: Any = datasets.load_dataset(repo, config, split=split)
    return [ds.hf_row(r, i) for i, r in enumerate(rows)]


def load_dataset_queries(name: str, path: str | Path | None, hf: bool = False) -> list[Query]:
    """A dataset's queries from ``path``, the Hugging Face hub (``hf``), or, with neither,
    the file `judgekit data fetch NAME` put in the data cache."""
    ds = get(name)
    if ds.kind != "questions":
        raise DataError(f"dataset {name} holds no queries; use one of "
                        f"{', '.join(names('questions'))}")
    if hf and ds.hf is not None:
        return load_hf(name)
    if path is None:
        from judgekit.data.fetch import cached_path

        if ds.fetchable and cached_path(name).exists():
            return list(ds.load(cached_path(name)))
        raise DataError(f"dataset {name}: give a path, set hf: true, or run "
                        f"`judgekit data fetch {name}` first")
    return list(ds.load(Path(path)))


def sample_queries(queries: list[Query], n: int, seed: int, name: str) -> list[Query]:
    """n queries drawn without replacement with a seeded Generator, in file order."""
    if n > len(queries):
        raise DataError(f"dataset {name}: n = {n} is larger than its {len(queries)} queries")
    rng = seeds.rng("data.sample", seed, sum(map(ord, name)))
    idx = sorted(rng.choice(len(queries), size=n, replace=False).tolist())
    return [queries[i] for i in idx]


def normalise_answer(text: str) -> str:
    """The key under which answers share one correctness verdict: only differences
    that cannot change the meaning are removed (spacing, sentence punctuation, the case
    of words longer than three characters). Signs, decimal points, percentages and the
    case of short tokens stay: "+1" / "-1", "1.5" / "15", "Rr" / "RR", "CO" / "Co"
    keep separate verdicts."""
    import unicodedata

    words = re.sub(r"[^\w+\-.%/=<>^]+", " ", unicodedata.normalize("NFC", text)).split()
    out = []
    for w in words:
        w = re.sub(r"(?<!\d)\.|\.(?!\d)", "", w)  # full stops, not decimal points
        if len(w) > 3:
            w = w.casefold()
        if w:
            out.append(w)
    return " ".join(out)
