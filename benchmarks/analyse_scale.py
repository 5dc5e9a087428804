"""`judgekit analyse` at scale: a pointwise CSV of 10^5 and of 10^6 rows (3% labelled),
each analysed by the installed command in its own process; the peak resident memory of
that process (wait4's ru_maxrss), its wall time, the size of report.html; then `judgekit
view` on the 10^6-row run: the first page of 100 items (GET /api/items?offset&limit) and
one label POST (which proposes the next batch), each timed from this process. The same
10^6 rows as Parquet too (`pip install 'judgekit[parquet]'`; left out without pyarrow).

Then a Parquet file of PARQUET_ROWS rows (default 10^7, written by pyarrow a million
rows at a time, as a warehouse export is) analysed the same way: the entry
``parquet_at_scale`` {rows, seconds, peak_rss_mb}.

``python benchmarks/analyse_scale.py [ROWS [PARQUET_ROWS]]`` (default 1,000,000 and
10,000,000; PARQUET_ROWS 0 leaves it out). The last line is one JSON object: rows,
seconds, peak_rss_mb, report_html_mb, growth_10x (seconds at ROWS over seconds at
ROWS/10), view_page_s, view_label_s, parquet_rows, parquet_seconds, parquet_peak_rss_mb,
parquet_at_scale."""

from __future__ import annotations

import csv
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _smoke import argv, pick

EXE = str(Path(sys.executable).with_name("judgekit"))


def write_csv(path: Path, n: int, seed: int = 1) -> None:
    r = random.Random(seed)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "system", "judge", "human"])
        for i in range(n):
            y = r.random() < 0.4
            w.writerow([f"q{i}", f"What is {i} plus {i}?", f"It is {2 * i}.", "AB"[i % 2],
                        int(y if r.random() < 0.85 else not y),
                        int(y) if r.random() < 0.03 else ""])


def write_parquet(path: Path, n: int, seed: int = 1) -> None:
    """The CSV's design as Parquet, written in row groups of 10^6 (3% labelled)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    writer = None
    for start in range(0, n, 1_000_000):
        k = min(1_000_000, n - start)
        i = np.arange(start, start + k)
        y = rng.random(k) < 0.4
        judge = np.where(rng.random(k) < 0.85, y, ~y).astype(int)
        labelled = rng.random(k) < 0.03
        table = pa.table({
            "id": [f"q{j}" for j in i], "question": [f"What is {j} plus {j}?" for j in i],
            "answer": [f"It is {2 * j}." for j in i], "system": np.where(i % 2, "B", "A"),
            "judge": judge, "human": pa.array([str(int(v)) if m else None
                                               for v, m in zip(y, labelled)])})
        if writer is None:
            writer = pq.ParquetWriter(str(path), table.schema)
        writer.write_table(table)
    if writer is not None:
        writer.close()


def analyse(path: Path, out: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one `judgekit analyse` process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([EXE, "analyse", str(path), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "analyse failed")
    return seconds, usage.ru_maxrss / 1024


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


LABEL_TIMEOUT = 300


def view_times(root: Path, run: str) -> tuple[float, float | None]:
    port = _port()
    proc = subprocess.Popen([EXE, "view", str(root), "--port", str(port), "--no-browser"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/api/runs", timeout=60).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        t0 = time.perf_counter()
        page = json.loads(urllib.request.urlopen(
            f"{base}/api/items?run={run}&offset=0&limit=100", timeout=600).read())
        page_s = time.perf_counter() - t0
        assert len(page["items"]) == 100 and page["items"][0]["input"].startswith("What is")
        item = page["items"][5]["_id"]
        body = json.dumps({"run": run, "id": item, "label": "pass", "annotator": "bench"})
        req = urllib.request.Request(base + "/api/label", data=body.encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        t0 = time.perf_counter()
        try:
            urllib.request.urlopen(req, timeout=LABEL_TIMEOUT).read()
            label_s: float | None = time.perf_counter() - t0
        except OSError:  # no answer in time: reported as such, not as a number
            label_s = None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # a label proposal still computing
            proc.kill()
            proc.wait()
    return page_s, label_s


def main() -> None:
    args = argv()
    n = int(args[0]) if args else pick(1_000_000, 2_000)  # --smoke: 2,000 rows
    work = Path(tempfile.mkdtemp(prefix="judgekit-analyse-scale-"))
    small, big = work / "small.csv", work / "big.csv"
    write_csv(small, n // 10)
    write_csv(big, n)
    s_small, _ = analyse(small, work / "runs" / "small")
    seconds, peak = analyse(big, work / "runs" / "big")
    figs: dict[str, object] = {
        "rows": n, "seconds": round(seconds, 1), "peak_rss_mb": round(peak),
        "report_html_mb": round((work / "runs" / "big" / "report.html").stat().st_size / 2**20,
                                1),
        "growth_10x": round(seconds / s_small, 2), "seconds_at_tenth": round(s_small, 1)}
    page_s, label_s = view_times(work / "runs", "big")
    figs["view_page_s"] = round(page_s, 3)
    figs["view_label_s"] = None if label_s is None else round(label_s, 3)
    try:
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        pq.write_table(pacsv.read_csv(big, convert_options=pacsv.ConvertOptions(
            strings_can_be_null=True)), work / "big.parquet")
        p_seconds, p_peak = analyse(work / "big.parquet", work / "runs" / "parquet")
        figs.update(parquet_rows=n, parquet_seconds=round(p_seconds, 1),
                    parquet_peak_rss_mb=round(p_peak))
        big_n = int(args[1]) if len(args) > 1 else pick(10_000_000, 5_000)
        if big_n:
            write_parquet(work / "huge.parquet", big_n)
            h_seconds, h_peak = analyse(work / "huge.parquet", work / "runs" / "huge")
            figs["parquet_at_scale"] = {"rows": big_n, "seconds": round(h_seconds, 1),
                                        "peak_rss_mb": round(h_peak)}
    except ImportError:
        figs["parquet"] = "skipped: pyarrow is not installed"
    for k, v in figs.items():
        print(f"{k:<22} {v}", file=sys.stderr)
    import shutil

    shutil.rmtree(work, ignore_errors=True)  # gigabytes of outputs at 10^7 rows
    print(json.dumps(figs, sort_keys=True))


if __name__ == "__main__":
    main()
