"""The annotators' label error is one setting (a rate, or "repeats"), parsed once and
estimated once: ``analyse``, ``label``, the viewer and the probe get the same number
from the same items, and a refused ``label`` leaves nothing beside the user's data."""

from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judgekit.core.errors import ConfigError
from judgekit.core.label_error import parse_label_error
from judgekit.stats.ppi import MIN_REPEATS, resolve_label_error


def _two_annotators(path: Path, n: int = 40, disagree: int = 8) -> Path:
    """n items labelled by two annotators who disagree on ``disagree`` of them."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "input", "output", "judge", "human_1", "human_2"])
        for i in range(n):
            a = "pass" if i % 3 else "fail"
            b = a if i >= disagree else ("fail" if a == "pass" else "pass")
            w.writerow([f"q{i}", f"question {i}", f"answer {i}",
                        "pass" if i % 4 else "fail", a, b])
    return path


def _flip_rate(disagree: int, n: int) -> float:
    """e from d = 2e(1 - e): two independent labels disagree with probability d."""
    d = disagree / n
    return (1 - math.sqrt(1 - 2 * d)) / 2


def _jk(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("judgekit", path=str(Path(sys.executable).parent))
    assert exe is not None, "the judgekit command is not installed beside this Python"
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_parse_label_error_takes_a_rate_or_repeats_and_nothing_else():
    assert parse_label_error(None) is None and parse_label_error("") is None
    assert parse_label_error("0.1") == 0.1 and parse_label_error(0.0) == 0.0
    assert parse_label_error(" Repeats ") == "repeats"
    for bad in ("0.5", "-0.1", "0.7", "often"):
        with pytest.raises(ConfigError, match="--label-error"):
            parse_label_error(bad)


def test_resolve_pins_the_flip_rate_and_needs_enough_repeats():
    groups = [[1.0, 1.0]] * 30 + [[1.0, 0.0]] * 10  # d = 10/40
    got = resolve_label_error("repeats", groups, 0.95, "x")
    assert got is not None and got.items == 40
    assert got.rate == pytest.approx(_flip_rate(10, 40), abs=1e-12)  # 0.1464...
    assert got.rate == pytest.approx(0.14644660940672624, abs=1e-12)
    assert got.ci is not None and got.ci[0] < got.rate < got.ci[1] < 0.5
    # the first two readable labels of each item count; an item read once does not
    third = resolve_label_error("repeats", [[None, 1.0, 0.0]] * 10 + [[1.0]] * 50, 0.95, "x")
    assert third is not None and third.items == 10 and third.rate > 0.49
    stated = resolve_label_error(0.2, [], 0.95, "x")
    assert stated is not None and stated.rate == 0.2 and stated.items is None
    assert resolve_label_error(None, groups, 0.95, "x") is None
    with pytest.raises(ConfigError, match=f"only {MIN_REPEATS - 1} item.*at least "
                                          f"{MIN_REPEATS}"):
        resolve_label_error("repeats", [[1.0, 0.0]] * (MIN_REPEATS - 1), 0.95, "x")


def test_analyse_estimates_it_from_two_annotator_columns_and_records_it(tmp_path):
    data = _two_annotators(tmp_path / "two.csv")
    r = _jk("analyse", str(data), "--label-error", "repeats", "--out", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    row = next(m for m in doc["measures"] if m["key"] == "label_error")
    assert row["n"] == 40 and row["estimate"] == pytest.approx(_flip_rate(8, 40), abs=1e-12)
    assert "estimated from repeats" in row["decision"]
    lo, hi = row["ci"]
    assert 0 <= lo < row["estimate"] < hi < 0.5
    corrected = next(m for m in doc["measures"] if m["key"] == "corrected_pass_rate")
    assert "estimated from 40 items labelled twice" in corrected["note"]
    bad = _jk("analyse", str(data), "--label-error", "0.7", "--out", "o2", cwd=tmp_path)
    assert bad.returncode == 2 and "--label-error '0.7'" in bad.stderr
    assert not (tmp_path / "o2").exists()


def test_label_finds_the_same_repeats_analyse_does(tmp_path):
    from judgekit.analysis.label_terms import label_error_of
    from judgekit.analysis.source import load
    from judgekit.recorded import labels as store

    data = _two_annotators(tmp_path / "two.csv")
    src = load(data)
    e, ci = label_error_of(src, store.read(src.labels_path), "repeats", 0.95)
    assert e == pytest.approx(_flip_rate(8, 40), abs=1e-12) and ci is not None
    r = _jk("label", str(data), "--label-error", "repeats", "--batch", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"flip a label at {_flip_rate(8, 40):.3f}" in r.stdout


def test_a_refused_label_leaves_no_labels_file_beside_the_data(tmp_path):
    data = _two_annotators(tmp_path / "few.csv", n=12, disagree=2)
    rows = list(csv.reader(data.open()))
    for row in rows[4:]:
        row[5] = ""  # three items keep their second annotator
    with data.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    r = _jk("label", str(data), "--label-error", "repeats", cwd=tmp_path)
    assert r.returncode == 2 and "only 3 item(s)" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["few.csv"]


def test_a_labels_file_made_and_left_empty_goes_and_one_found_empty_stays(tmp_path):
    from judgekit.recorded import labels as store

    made = tmp_path / "new.labels.jsonl"
    assert store.transact(made, lambda _labels: []) == [] and not made.exists()
    with pytest.raises(RuntimeError):
        store.transact(made, lambda _labels: (_ for _ in ()).throw(RuntimeError("x")))
    assert not made.exists()
    found = tmp_path / "found.labels.jsonl"
    found.write_text("")
    store.transact(found, lambda _labels: [])
    assert found.exists()
    store.transact(made, lambda _labels: [{"kind": "label", "id": "a", "label": 1}])
    assert store.read(made).by_item == {"a": {"anonymous": 1}}


def test_a_run_of_several_judges_is_labelled_once_per_item(tmp_path):
    """A file with two judge columns: the run's items hold each judge's copy, and the
    labelling source is the items (80), not the copies (160), so labels given on the run
    apply to the file (``analyse FILE --labels RUN/labels.jsonl``)."""
    from judgekit.labelling.sources import label_source

    root = Path(__file__).resolve().parent.parent
    r = _jk("analyse", str(root / "examples" / "verdicts.csv"), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    src = label_source(tmp_path / "run")
    assert len(src.items) == 80 and not any("#" in x.id for x in src.items)
    (tmp_path / "run" / "label-index.npz").unlink()  # the items read, not the index
    assert len(label_source(tmp_path / "run").items) == 80
