"""Real judges as the benchmark: judgekit's analysis of recorded verdicts against the
figures their authors published.

    python benchmarks/real_judges.py DATA_DIR

DATA_DIR holds a clone of princeton-nlp/LLMBar (a folder named LLMBar, or DATA_DIR
itself); nothing is downloaded. For every evaluator and prompt setting
(``Dataset/**/evaluators/JUDGE/SETTING/result.json`` beside its ``statistics.json``)
the file goes through ``judgekit analyse`` (the command, in a subprocess) and
judgekit's figure is printed beside the published one:

- ``equal`` (same winner in both orders) against judgekit's order consistency;
- ``correct_False`` (accuracy in the order as given) against judgekit's accuracy;
- ``correct_both`` against judgekit's accuracy counted only when both orders agree;
- ``kappa_agreement`` (Cohen's kappa between the two orders' verdicts) against
  judgekit's order kappa.

LLMBar's ``kappa_False``/``kappa_True``/``kappa_average`` are not compared: they are
miscomputed (a "2" verdict is mapped to 0 while the labels stay 1 or 2). Where an
evaluator left verdicts unparsed, LLMBar counts two unparsed verdicts as "equal" and an
unparsed one as wrong, while judgekit leaves those rows out and counts them: such files
are reported, not compared.

With a clone of WeOpenML/PandaLM (Apache-2.0) beside it (a folder named PandaLM), its
test set's three human annotators are compared with the README's figures: the
pairwise Cohen's kappa of the annotators (published to two decimals: compared after
rounding to two) and the label distribution of their majority (105 ties, 422 and 472).
Its two recorded judges (gpt-3.5-turbo and PandaLM-7B, ``data/*-testset-v1.json``)
then go through ``judgekit analyse`` as one pairwise file with two judge columns and the
three annotator columns (judges side by side): their accuracy, kappa, position and
length preference are printed (``pandalm_judges`` in the JSON). The paper's accuracy,
precision, recall and F1 (arXiv 2306.05087) are not in the repository and are not
compared; note that the released verdicts do not reproduce the abstract's F1 ratio
(PandaLM-7B at 93.75% of gpt-3.5-turbo): on these files PandaLM-7B's accuracy against
the annotators' majority is below gpt-3.5-turbo's, as printed.
The last line is one JSON object with ``figures_compared`` and ``figures_matching``
(to 1e-3; the rounded kappas as said).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _smoke import SMOKE, argv

FIGURES = {"equal": "order_consistency", "correct_False": "accuracy",
           "correct_both": "accuracy_both_orders", "kappa_agreement": "order_kappa"}


def _share(text: object) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    k, n = str(text).split("=")[0].split("/")
    return int(k) / int(n)


def _root(data: Path) -> Path:
    for cand in (data / "LLMBar", data):
        if (cand / "Dataset").is_dir():
            return cand
    sys.exit(f"{data}: no LLMBar clone here (expected Dataset/ or LLMBar/Dataset/)")


def _parsed(result: Path) -> bool:
    doc = json.loads(result.read_text(encoding="utf-8"))
    return all(r["results"][-1].get(f"swap = {s}", {}).get("winner") in ("1", "2")
               for r in doc for s in (False, True))


PANDALM_KAPPA = {(1, 2): 0.85, (1, 3): 0.88, (2, 3): 0.86}
PANDALM_LABELS = {0: 105, 1: 422, 2: 472}


def pandalm(data: Path) -> tuple[int, int]:
    """(compared, matching) of PandaLM's published inter-annotator figures."""
    from collections import Counter

    from judgekit.stats.agreement import cohen_kappa

    test = data / "PandaLM" / "data" / "testset-v1.json"
    if not test.exists():
        print(f"(no PandaLM clone at {data / 'PandaLM'}: its figures are not compared)")
        return 0, 0
    rows = json.loads(test.read_text(encoding="utf-8"))
    ann = [[int(r[f"annotator{i}"]) for r in rows] for i in (1, 2, 3)]
    compared = matching = 0
    for (i, j), published in PANDALM_KAPPA.items():
        k = cohen_kappa(ann[i - 1], ann[j - 1])
        ok = round(k, 2) == published
        compared, matching = compared + 1, matching + ok
        print(f"{'PandaLM test set':<58} {f'kappa a{i}-a{j}':<16} {published:>10.2f} "
              f"{k:>10.4f}" + ("" if ok else "  DIFFERS"))
    majority = Counter(Counter(x).most_common(1)[0][0] for x in zip(*ann))
    for label, published in PANDALM_LABELS.items():
        ok = majority[label] == published
        compared, matching = compared + 1, matching + ok
        print(f"{'PandaLM test set':<58} {f'majority = {label}':<16} {published:>10d} "
              f"{majority[label]:>10d}" + ("" if ok else "  DIFFERS"))
    return compared, matching


def pandalm_judges(data: Path, jk: str, work: Path) -> dict[str, dict[str, object]]:
    """PandaLM's two recorded judges side by side through ``judgekit analyse``."""
    import csv

    folder = data / "PandaLM" / "data"
    files = {"gpt-3.5-turbo": ("gpt-3.5-turbo-testset-v1.json", "gpt_result"),
             "pandalm-7b": ("pandalm-7b-testset-v1.json", "pandalm_result")}
    if not all((folder / f).exists() for f, _ in files.values()):
        return {}
    test = json.loads((folder / "testset-v1.json").read_text(encoding="utf-8"))
    verdicts = {name: json.loads((folder / f).read_text(encoding="utf-8"))
                for name, (f, _) in files.items()}
    table = work / "pandalm.csv"
    with open(table, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_id", "question", "first", "second", "model_first", "model_second",
                    *(f"winner_{n}" for n in files), "annotator1", "annotator2",
                    "annotator3"])
        for k, row in enumerate(test):
            m1, m2 = str(row["cmp_key"]).split("_", 1)
            w.writerow([row["idx"], row["instruction"], row["response1"], row["response2"],
                        m1, m2, *(verdicts[n][k][key] for n, (_, key) in files.items()),
                        row["annotator1"], row["annotator2"], row["annotator3"]])
    out = work / "pandalm"
    proc = subprocess.run([jk, "analyse", str(table), "--out", str(out)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"PandaLM judges: judgekit analyse failed: {proc.stderr.strip()[-200:]}")
        return {}
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    shown: dict[str, dict[str, object]] = {}
    for judge in [doc, *doc.get("others", [])]:
        got = {m["key"]: m for m in judge["measures"]}
        row: dict[str, object] = {"unreadable": judge["unreadable"]}
        for key in ("accuracy", "kappa", "position_bias", "length_preference"):
            m = got.get(key, {})
            row[key] = m.get("estimate")
            est = "n/a" if m.get("estimate") is None else f"{m['estimate']:+.3f}"
            ci = m.get("ci") or [float("nan")] * 2
            print(f"{'PandaLM test set / ' + judge['judge']:<58} {key:<18} {est:>8} "
                  f"[{ci[0]:.3f}, {ci[1]:.3f}] n = {m.get('n')}  {m.get('decision', '')}")
        shown[judge["judge"]] = row
    return shown


def _excerpt() -> Path:
    """--smoke without DATA_DIR: the committed LLMBar excerpt (tests/fixtures/llmbar) laid
    out as the clone is, so the same code path runs on it in seconds."""
    src = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "llmbar"
    data = Path(tempfile.mkdtemp(prefix="judgekit-real-smoke-"))
    for where, sub in (("MT-Bench", "Processed/MT-Bench"), ("Natural", "LLMBar/Natural")):
        for judge in sorted(p.name for p in (src / where).iterdir() if p.is_dir()):
            shutil.copytree(src / where / judge, data / "LLMBar" / "Dataset" / sub /
                            "evaluators" / judge)
    return data


def main() -> None:
    args = argv()
    if len(args) != 1 and not SMOKE:
        sys.exit("usage: python benchmarks/real_judges.py DATA_DIR  (or --smoke)")
    data = Path(args[0]) if args else _excerpt()
    root = _root(data)
    jk = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))
    compared = matching = skipped = 0
    position: dict[str, str] = {}
    work = Path(tempfile.mkdtemp(prefix="judgekit-real-"))
    print(f"{'set / judge / setting':<58} {'figure':<16} {'published':>10} {'judgekit':>10}")
    for stats_file in sorted(root.glob("Dataset/**/evaluators/*/*/statistics.json")):
        result = stats_file.with_name("result.json")
        if not result.exists():
            continue
        rel = stats_file.parent.relative_to(root / "Dataset")
        name = str(rel).replace("/evaluators/", " / ")
        if not _parsed(result):
            skipped += 1
            print(f"{name:<58} (unparsed verdicts: reported, not compared)")
            continue
        out = work / str(abs(hash(str(rel))))
        proc = subprocess.run([jk, "analyse", str(result), "--format", "llmbar", "--out",
                               str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{name:<58} judgekit analyse failed: {proc.stderr.strip()[-200:]}")
            compared += len(FIGURES)
            continue
        got = {m["key"]: m for m in json.loads((out / "results.json").read_text())["measures"]}
        published = json.loads(stats_file.read_text(encoding="utf-8"))
        for theirs, ours in FIGURES.items():
            if theirs not in published or ours not in got:
                continue
            a, b = _share(published[theirs]), got[ours]["estimate"]
            ok = b is not None and abs(a - b) <= 1e-3
            compared += 1
            matching += ok
            shown = b if b is not None else float("nan")
            print(f"{name:<58} {theirs:<16} {a:>10.4f} {shown:>10.4f}"
                  + ("" if ok else "  DIFFERS"))
        if "MT-Bench" in name and "Vanilla_NoRules" in name:
            position[name] = (f"{got['position_bias']['estimate']:+.3f} "
                              f"{got['position_bias']['decision']}")
    c, m = pandalm(data)
    judges = pandalm_judges(data, jk, work)
    shutil.rmtree(work, ignore_errors=True)
    compared, matching = compared + c, matching + m
    for k, v in position.items():
        print(f"position bias, {k}: {v}")
    print(json.dumps({"figures_compared": compared, "figures_matching": matching,
                      "files_with_unparsed_verdicts": skipped,
                      "mt_bench_position_bias": position, "pandalm_judges": judges}))


if __name__ == "__main__":
    main()
