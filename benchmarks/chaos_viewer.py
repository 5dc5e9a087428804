"""The viewer under hostile requests and careless hands (issue 51), for
benchmarks/chaos.py: the installed `judgekit view` on a folder of real `judgekit analyse`
runs, some of them tampered with.

- ``viewer_5xx``: answers of status 500 or more over a corpus of hostile requests
  (traversal and NUL names, ids with "#", bodies nested 50,000 deep, wrong types, a torn
  items.jsonl, a list line in labels.jsonl, symlinks out of the folder); the server must
  answer each with a 4xx or a page, and stay up (``viewer_alive``).
- ``outside_root_files_served``: responses holding a marker planted only in files
  outside the served folder (reached through a symlinked report.html, items.jsonl or
  labels.jsonl, or a config's absolute cassette path), plus outside files changed.
- ``get_requests_changed_state``: files under the folder whose bytes changed after the
  GET corpus (every GET endpoint, with and without parameters).
- ``concurrent_label_posts_duplicate_draws``: 40 label POSTs at once from 8 threads:
  draw numbers recorded twice in labels.jsonl.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MARK = "OUTSIDE-" + "7f3a9c-marker"


def _exe() -> str:
    return str(Path(sys.executable).with_name("judgekit"))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _call(url: str, body: bytes | None = None, ctype: str = "application/json"
          ) -> tuple[int, str]:
    req = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET",
                                 headers={"Content-Type": ctype} if body is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        return 599, str(e)


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def _verdicts(path: Path, n: int = 120, seed: int = 3) -> None:
    r = random.Random(seed)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "judge", "probability"])
        for i in range(n):
            w.writerow([f"i{i}" if i != 5 else "i#5", f"question {i} about topic {i}",
                        f"answer {i}", int(r.random() < 0.4), round(r.random(), 3)])


def _setup(work: Path) -> tuple[Path, Path]:
    root, outside = work / "served", work / "outside"
    outside.mkdir(parents=True)
    data = work / "verdicts.csv"
    _verdicts(data)
    for name in ("clean", "linked", "torn", "posts"):
        r = subprocess.run([_exe(), "analyse", str(data), "--out", str(root / name)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    (outside / "report.html").write_text(f"<p>{MARK}</p>")
    (outside / "items.jsonl").write_text(json.dumps({"id": "x", "input": MARK}) + "\n")
    (outside / "labels.jsonl").write_text(json.dumps({"id": "i1", "label": MARK}) + "\n")
    (outside / "cassette.json").write_text(json.dumps({"entries": [{"identity": {
        "messages": [{"role": "user", "content": "question 1 about topic 1"}]},
        "response": {"text": MARK}}]}))
    linked = root / "linked"
    for name in ("report.html", "items.jsonl"):
        (linked / name).unlink()
        (linked / name).symlink_to(outside / name)
    (linked / "labels.jsonl").symlink_to(outside / "labels.jsonl")
    res = json.loads((linked / "results.json").read_text())
    res.setdefault("config", {})["cassette"] = str(outside / "cassette.json")
    (linked / "results.json").write_text(json.dumps(res))
    torn = root / "torn"
    with (torn / "items.jsonl").open("ab") as fh:
        fh.write(b'{"id": "torn", "input": "half a li')
    (torn / "labels.jsonl").write_text("[1, 2]\n")
    return root, outside


def _gets(base: str) -> list[str]:
    names = ["clean", "linked", "torn", "../outside", "..%2Foutside", "%2e%2e/outside",
             "clean%00", "/etc", "clean/../../outside", "nope", "", "clean#x", "linked/.."]
    out = [base + "/", base + "/api/runs", base + "/cards", base + "/cards?run=linked",
           base + "/cards?run=torn&run=%00"]
    for n in names:
        for path in ("/report?name=", "/run?name=", "/label?name=", "/api/items?run=",
                     "/api/next?run=", "/cards?run=", "/report?choice="):
            out.append(base + path + n)
        for q in ("&offset=0&limit=100", "&offset=-5&limit=0", "&limit=99999999999999999999",
                  "&q=%00", "&filter=..", "&sort=__proto__&dir=desc", "&offset=1e3"):
            out.append(base + "/api/items?run=" + n + q)
        for q in ("&id=i%235", "&id=i", "&id=%00", "&row=0", "&row=-1", "&row=1e9",
                  "&row=99999999999999999999999", "&id=../../outside"):
            out.append(base + "/api/item?run=" + n + q)
    return out


def _posts(base: str) -> list[tuple[str, bytes, str]]:
    deep = b"[" * 50_000 + b"]" * 50_000
    deep_obj = b'{"run": "clean", "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    out = []
    for ep in ("/api/label", "/api/next", "/api/undo"):
        for body, ctype in ((deep, "application/json"), (deep_obj, "application/json"),
                            (b"[1,2]", "application/json"), (b"null", "application/json"),
                            (b'{"run": "../outside"}', "application/json"),
                            (b'{"run": "linked", "id": "i1", "label": "pass"}',
                             "application/json"),
                            (b'{"run": "torn", "id": "i1", "label": "pass"}',
                             "application/json"),
                            (b'{"run": "clean", "id": ["x"], "label": {"a": 1}}',
                             "application/json"),
                            (b'{"run": "clean", "id": "i1", "label": NaN}', "application/json"),
                            (b'{"run": "clean\\u0000", "id": "i1", "label": "pass"}',
                             "application/json"),
                            (b'{"run": "clean", "label_error": "abc"}', "application/json"),
                            (b"run=clean", "application/x-www-form-urlencoded"),
                            (b"\xff\xfe", "application/json")):
            out.append((base + ep, body, ctype))
    return out


def viewer_scenarios(work: Path) -> dict[str, object]:
    root, outside = _setup(work)
    before_out = _digest(outside)
    port = _port()
    proc = subprocess.Popen([_exe(), "view", str(root), "--port", str(port), "--no-browser"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while _call(base + "/api/runs")[0] != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(proc.stderr.read() if proc.stderr else "no viewer")
        time.sleep(0.1)
    try:
        state = _digest(root)
        fives = leaks = 0
        for url in _gets(base):
            status, text = _call(url)
            fives += status >= 500
            leaks += MARK in text
        changed = sum(1 for k, v in _digest(root).items() if state.get(k) != v) + \
            sum(1 for k in state if not (root / k).exists())
        for url, body, ctype in _posts(base):
            status, text = _call(url, body, ctype)
            fives += status >= 500
            leaks += MARK in text
        alive = _call(base + "/api/runs")[0] == 200

        def post(i: int) -> int:
            return _call(base + "/api/label", json.dumps(
                {"run": "posts", "id": f"i{i}", "label": "pass" if i % 2 else "fail",
                 "annotator": f"a{i % 4}"}).encode())[0]

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(post, range(40)))
        lines = [json.loads(x) for x in (root / "posts" / "labels.jsonl").read_text()
                 .splitlines() if x.strip()]
        draws = [x.get("draw") for x in lines if x.get("kind") == "draw"]
        dup = len(draws) - len(set(draws))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    outside_changed = sum(1 for k, v in _digest(outside).items() if before_out.get(k) != v)
    shutil.rmtree(work, ignore_errors=True)
    return {"viewer_5xx": fives, "viewer_alive": alive,
            "outside_root_files_served": leaks + outside_changed,
            "get_requests_changed_state": changed,
            "concurrent_label_posts_duplicate_draws": dup,
            "concurrent_label_posts_ok": sum(c == 200 for c in codes),
            "viewer_requests": len(_gets(base)) + len(_posts(base))}


if __name__ == "__main__":  # --smoke is the full run: it takes seconds already
    import tempfile

    figs = viewer_scenarios(Path(tempfile.mkdtemp(prefix="judgekit-viewer-chaos-")))
    print(json.dumps(figs, sort_keys=True))
