"""The viewer's item pages at scale: a page of 100 items, one item, a search and a
filter on an items.jsonl of N rows (default 100,000; ``python benchmarks/view_pages.py
[N]``), through ``judgekit.view.pages`` (what ``GET /api/items?offset&limit`` and
``GET /api/item?row=`` call), against the baseline in the same process: the whole table
read and flattened (``judgekit.view.runs.items``, what the grid loaded before, and what
``GET /api/items`` without paging still returns).

Figures: seconds for the cold first page (index built from the bytes), a warm page, the
last page, one item by row and by id, a search, a filter; the baseline's seconds; and
the ratio of the cold first page to the baseline. The last line is one JSON object."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from _smoke import argv, pick


def _timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    from judgekit.view import pages, runs

    args = argv()
    n = int(args[0]) if args else pick(100_000, 2_000)
    folder = Path(tempfile.mkdtemp(prefix="judgekit-view-"))
    path = folder / "items.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"q{i}", "question_id": f"q{i // 3}",
                                 "input": f"What is {i} plus {i}? Explain briefly.",
                                 "output": f"The answer is {2 * i}: adding {i} twice.",
                                 "verdict": i % 2, "human": None if i % 7 else i % 2,
                                 "humans": [] if i % 7 else [i % 2]}) + "\n")
    figs: dict[str, float | int] = {"items": n, "file_mb": round(path.stat().st_size / 1e6, 1)}
    figs["first_page_cold_s"], first = _timed(lambda: pages.page(path, {}, offset=0, limit=100))
    assert len(first.items) == 100 and first.items[0]["input"].startswith("What is 0")
    figs["page_warm_s"], _ = _timed(lambda: pages.page(path, {}, offset=n // 2, limit=100))
    figs["last_page_s"], last = _timed(lambda: pages.page(path, {}, offset=n - 100, limit=100))
    assert last.items[-1]["_row"] == n - 1
    figs["item_by_row_s"], _ = _timed(lambda: pages.record(path, row=n - 1))
    figs["filter_first_s"], got = _timed(lambda: pages.page(path, {}, limit=100, show="fail"))
    assert got.matched == n // 2
    figs["item_by_id_s"], rec = _timed(lambda: pages.record(path, item=f"q{n - 2}"))
    assert rec is not None and rec["id"] == f"q{n - 2}"
    figs["search_s"], got = _timed(lambda: pages.page(path, {}, limit=100,
                                                      q=f"what is {n - 1} plus"))
    assert got.matched == 1
    figs["sort_first_s"], _ = _timed(lambda: pages.page(path, {}, limit=100, sort="output",
                                                        descending=True))
    figs["baseline_whole_table_s"], rows = _timed(lambda: runs.items(runs.Run(
        "bench", folder, "verdicts", "", "", "", "", ("items.jsonl",), True)))
    assert len(rows) == n
    figs["first_page_over_whole_table"] = round(figs["first_page_cold_s"]
                                                / figs["baseline_whole_table_s"], 4)
    for k, v in list(figs.items()):
        if isinstance(v, float):
            figs[k] = round(v, 4)
        print(f"{k:<30} {figs[k]}", file=sys.stderr)
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
