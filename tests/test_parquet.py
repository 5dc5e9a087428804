"""`judgekit analyse` reads Parquet, Arrow and partitioned Parquet folders (the parquet
extra) with the same figures as the same rows in CSV (issue 52)."""

from __future__ import annotations

import csv
import json
import random

import pytest

from .test_standalone import jk

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _close(a, b) -> bool:
    import math

    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[k], b[k])
                                                                     for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


def _rows(n=600, seed=2):
    r = random.Random(seed)
    out = []
    for i in range(n):
        y = r.random() < 0.4
        out.append({"id": f"i{i}", "question_id": f"q{i // 3}", "system": "AB"[i % 2],
                    "judge": int(y if r.random() < 0.85 else not y),
                    "human": int(y) if i < 120 else None, "input": f"question {i}",
                    "tags": ["x", str(i % 3)]})
    return out


def test_parquet_arrow_and_partitions_give_the_csv_figures(tmp_path):
    rows = _rows()
    with (tmp_path / "v.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        for x in rows:
            w.writerow({k: "" if v is None else json.dumps(v, sort_keys=True) if
                        isinstance(v, list) else v for k, v in x.items()})
    table = pa.Table.from_pylist(rows)
    pq.write_table(table, tmp_path / "v.parquet")
    import pyarrow.feather as feather

    feather.write_feather(table, tmp_path / "v.arrow")
    pq.write_to_dataset(table, tmp_path / "parts", partition_cols=["system"])
    got = {}
    for name in ("v.csv", "v.parquet", "v.arrow", "parts"):
        r = jk("analyse", str(tmp_path / name), "--out", str(tmp_path / f"r_{name}"),
               cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        got[name] = json.loads((tmp_path / f"r_{name}" / "results.json").read_text())
    want = got["v.csv"]["measures"]
    assert {m["key"] for m in want} >= {"pass_rate", "accuracy", "kappa",
                                         "corrected_pass_rate"}
    for name in ("v.parquet", "v.arrow"):
        assert got[name]["measures"] == want, name
        assert got[name]["n_rows"] == 600
    # partitions come back grouped by system: the same figures up to summation order
    assert _close(got["parts"]["measures"], want) and got["parts"]["n_rows"] == 600
    items = [json.loads(x) for x in (tmp_path / "r_v.parquet" / "items.jsonl").read_text()
             .splitlines()]
    assert items[200]["input"] == "question 200" and items[200]["human"] is None


def test_a_bad_parquet_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    r = jk("analyse", str(bad), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 2  # bad input, as every unreadable verdicts file
    assert "bad.parquet: not a readable parquet table" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
