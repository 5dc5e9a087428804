"""Detail records streamed instead of held: the VB runner's spill file (issue 36)."""

from __future__ import annotations

import json

from .test_standalone import jk


def test_vb_query_rows_spill_and_leave_nothing_behind(tmp_path):
    """The VB runner streams query rows through a spill file: the run's queries.jsonl is
    complete, and the spill is gone when the process ends."""
    import os

    spill_dir = tmp_path / "tmp"
    spill_dir.mkdir()
    env = {"TMPDIR": str(spill_dir), "JUDGEKIT_CACHE_DIR": str(tmp_path / "cache")}
    r = jk("run", "demo", "--out", "run", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in (tmp_path / "run" / "queries.jsonl").read_text()
            .splitlines()]
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(rows) == res["queries"]["count"] == 4
    assert all(len(x["replica_records"]) == x["replicas"] for x in rows)
    assert [p for p in os.listdir(spill_dir) if p.startswith("judgekit-queries-")] == []


def test_a_detail_is_read_once_for_a_view_without_a_field(tmp_path):
    """The report and its figures both read the query rows without their replica
    records: the spill file is parsed once for both, and a new source clears it."""
    from judgekit.core.payload import DetailFile

    path = tmp_path / "q.jsonl"
    rows = [{"id": i, "replica_records": [{"r": j} for j in range(3)]} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ref = DetailFile.spilled("queries", path, len(rows))
    assert [r["replica_records"] for r in ref.rows()][0] == [{"r": 0}, {"r": 1}, {"r": 2}]
    first = ref.rows_without("replica_records")
    assert first == [{"id": i} for i in range(4)]
    path.unlink()  # a second read would fail: the rows come from the first
    assert ref.rows_without("replica_records") is first
    ref.drop_views()
    path.write_text(json.dumps({"id": 7, "replica_records": []}) + "\n")
    assert ref.rows_without("replica_records") == [{"id": 7}]  # read again once dropped
    ref.attach(lambda name: iter([{"id": 9, "replica_records": []}]))
    assert ref.rows_without("replica_records") == [{"id": 9}]
