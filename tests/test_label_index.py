"""A run's labelling index (judgekit.labelling.snapshot): what labelling reads instead of
every item is what reading every item gives, item by item; an index that no longer
describes its item file is not used; the viewer's row facts parsed in a process of their
own are the facts parsed in place; and people's labels in the file enter as the same
first draws as the step-by-step definition gives."""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path

import numpy as np

from judgekit.analysis import source as it
from judgekit.labelling import snapshot
from judgekit.labelling.sources import label_source
from judgekit.runs import index
from judgekit.runs.folder import item_details, run_items

from .test_standalone import jk


def _pointwise(path: Path, n: int = 400, seed: int = 2) -> None:
    r = random.Random(seed)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "system", "judge", "confidence", "human"])
        for i in range(n):
            key = f"q{i}" if r.random() < 0.8 else f"q{r.randrange(40)}"  # repeats
            w.writerow([key, f"What is {i}? \u00e9 \"quoted\"\nsecond line", f"answer {i}",
                        r.choice(["A", "B", "C", ""]), r.choice(["1", "0", "pass", "fail",
                                                                  "", "maybe"]),
                        f"{r.random():.3f}", r.choice(["", "", "1", "0", "pass"])])


def _analysed(tmp_path: Path, n: int = 400, seed: int = 2, name: str = "run") -> Path:
    """A run folder of ``judgekit analyse`` on a pointwise file (made once per tmp_path)."""
    data = tmp_path / "v.csv"
    if not data.exists():
        _pointwise(data, n=n, seed=seed)
    out = tmp_path / name
    got = jk("analyse", str(data), "--out", str(out), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    return out


def _read_every_item(folder: Path) -> it.Source:
    result, got = run_items(folder)
    return it.from_run(folder, result.method, item_details(result), got)


def _same(a: it.Source, b: it.Source) -> None:
    da, db = it.Derived(a), it.Derived(b)
    da._items, db._items = a.items, b.items
    assert da.ids == db.ids and da.index == db.index
    for f in ("verdict", "score", "system", "unstable"):
        x, y = getattr(da.pop, f), getattr(db.pop, f)
        assert (x is None and y is None) or np.array_equal(x, y), f
    assert da.pop.systems == db.pop.systems
    assert da.present == db.present and da.fingerprint == db.fingerprint
    assert len(a.items) == len(b.items) and list(a.items) == list(b.items)
    assert a.shape == b.shape and a.labels_path == b.labels_path


def test_the_index_gives_what_reading_every_item_gives(tmp_path):
    out = _analysed(tmp_path)
    assert (out / index.NAME).is_file()
    listed = json.loads((out / ".judgekit-outputs.json").read_text())
    assert index.NAME in json.dumps(listed)  # the run's own output (--overwrite)
    src = label_source(out)
    assert isinstance(src.items, snapshot.Items)
    full = _read_every_item(out)
    assert isinstance(full.items, list)
    _same(src, full)
    d = it.Derived(full)
    assert d.pop.unstable is not None and d.pop.unstable.sum() > 0  # repeats disagree
    assert d.pop.score is not None and d.pop.systems == ("", "A", "B", "C")
    assert 0 < len(d.present) < len(full.items) < 400  # unreadable verdicts left out


def test_pairs_in_both_orders_through_the_index(tmp_path):
    rows = []
    r = random.Random(5)
    for i in range(60):
        a, b = f"answer a{i}", f"answer b{i}"
        w1 = r.choice(["first", "second", "tie"])
        w2 = r.choice(["first", "second"])
        rows.append({"pair_id": f"p{i}", "question": f"q{i}", "first": a, "second": b,
                     "winner": w1, "label": r.choice(["first", "second", None])})
        rows.append({"pair_id": f"p{i}", "question": f"q{i}", "first": b, "second": a,
                     "winner": w2, "label": None})
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(x) + "\n" for x in rows))
    out = tmp_path / "run"
    got = jk("analyse", str(data), "--out", str(out), cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    src = label_source(out)
    assert isinstance(src.items, snapshot.Items) and src.shape == "pairwise"
    _same(src, _read_every_item(out))
    assert it.Derived(src).pop.unstable is not None


def test_an_index_that_no_longer_describes_its_items_is_not_used(tmp_path):
    out = _analysed(tmp_path, n=120)
    items = out / "items.jsonl"
    # copied elsewhere (a new modification time, the same bytes): still used
    st = items.stat()
    os.utime(items, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert isinstance(label_source(out).items, snapshot.Items)
    # the same size, other bytes (one verdict flipped): the items are read again
    text = items.read_text(encoding="utf-8")
    flipped = text.replace('"verdict": 1', '"verdict": 0', 1)
    assert flipped != text and len(flipped) == len(text)
    items.write_text(flipped, encoding="utf-8")
    src = label_source(out)
    assert isinstance(src.items, list)
    assert it.Derived(src).pop.verdict.sum() == \
        it.Derived(_read_every_item(out)).pop.verdict.sum()
    # a line more: read again; an index of another version or unreadable: read again
    items.write_text(text + text.splitlines()[0] + "\n", encoding="utf-8")
    assert isinstance(label_source(out).items, list)
    items.write_text(text, encoding="utf-8")
    (out / index.NAME).write_bytes(b"not an npz")
    assert isinstance(label_source(out).items, list)


def test_labelling_through_the_index_gives_the_same_session(tmp_path):
    from judgekit.labelling import session

    out = _analysed(tmp_path, n=300)
    twin = _analysed(tmp_path, name="twin")
    (twin / index.NAME).unlink()  # the same run, read item by item
    figures = []
    for folder in (out, twin):
        src = label_source(folder)
        st = session.propose(src, batch=5, seed=3, target_width=0.2)
        for p in st.pending[:3]:
            session.add_label(src, str(p.id), "pass", "ann")
        st = session.propose(src, batch=5, seed=3, target_width=0.2)
        figures.append((json.dumps(st.as_json(), sort_keys=True),
                        (folder / "labels.jsonl").read_text().count("item_sha")))
    assert isinstance(label_source(out).items, snapshot.Items)
    assert figures[0][0].replace('"run": "run"', '"run": "twin"') == figures[1][0]
    assert figures[0][1] == figures[1][1] == 3


def test_row_facts_parsed_apart_are_the_facts_parsed_here(tmp_path, monkeypatch):
    from judgekit.view import pages

    path = tmp_path / "items.jsonl"
    rows = [{"id": f"x{i % 7}", "verdict": i % 2, "human": ["", "pass", None][i % 3],
             **({"error": "boom"} if i % 11 == 0 else {})} for i in range(60)]
    path.write_text("".join(json.dumps(x) + "\n" for x in rows) + "not json\n")
    ix = pages.index(path)
    here = pages.facts_of(ix)
    monkeypatch.setattr(pages, "APART", 1)
    apart = pages._facts_apart(ix)
    assert apart[0] == here[0] and apart[3] == here[3]
    assert np.array_equal(apart[1], here[1], equal_nan=True)
    assert np.array_equal(apart[2], here[2]) and apart[2].sum() > 0
    assert here[0][:8] == ["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x0#2"]


def _uniform_reference(n, weights, consts, order_idx):
    """uniform_first's definition, one draw at a time."""
    undrawn = np.ones(n, bool)
    half = [0.5 * float(np.sum(w)) for w in weights]
    out = []
    for t, j in enumerate(order_idx):
        q = 1.0 / (n - t)
        means, bounds = [], []
        for e, w in enumerate(weights):
            big = max((abs(float(w[i])), -i) for i in range(n) if undrawn[i])
            wb = float(w[-big[1]])
            a, b = wb * -0.5 / q, wb * 0.5 / q
            means.append(round(consts[e] + half[e], 12))
            bounds.append([min(a, b), max(a, b)])
        out.append((q, means, bounds))
        undrawn[j] = False
        for e, w in enumerate(weights):
            half[e] -= 0.5 * float(w[j])
    return out


def test_people_s_labels_enter_as_the_draws_the_definition_gives(tmp_path):
    from judgekit.analysis import label_terms as terms
    from judgekit.core import seeds
    from judgekit.labelling import session
    from judgekit.stats import active

    data = tmp_path / "v.csv"
    _pointwise(data, n=200, seed=9)
    with data.open("a", encoding="utf-8") as fh:  # a system of one item, labelled: its
        fh.write("z1,Q,A,Z,1,0.5,1\n")  # weight, the largest, goes once it is drawn
    out = tmp_path / "run"
    assert jk("analyse", str(data), "--out", str(out), cwd=tmp_path).returncode == 0
    src = label_source(out)
    got = session.recorded(src)
    state = terms.state_of(src, got.which)
    rows, head = terms.uniform_first(src, state, set())
    assert head is not None and head.size == len(rows)
    d = it.Derived(src)
    ids = sorted((k for k in d.present if k in state.y), key=d.index.__getitem__)
    order = seeds.rng("labelling.present", 0).permutation(len(ids))
    every = active.estimands_for(state.pop)
    assert len({float(np.max(np.abs(e.weights))) for e in every}) > 1  # sizes differ
    ref = _uniform_reference(len(src.items), [e.weights for e in every],
                             [e.const for e in every], [d.index[ids[k]] for k in order])
    assert [r.id for r in rows] == [ids[k] for k in order]
    for t, (r, (q, means, bounds)) in enumerate(zip(rows, ref)):
        assert r.probability == q and r.prediction == 0.5
        assert [float(head.cols[e.name][0][t]) for e in every] == means
        assert [[float(head.cols[e.name][1][t]), float(head.cols[e.name][2][t])]
                for e in every] == bounds


def test_no_index_past_its_size_and_the_items_are_read(tmp_path, monkeypatch):
    out = _analysed(tmp_path, n=80)
    (out / index.NAME).unlink()
    monkeypatch.setattr(index, "MAX_ITEMS", 79)
    index.write(out, "items.jsonl", "pointwise", 80)
    assert not (out / index.NAME).exists()
    assert isinstance(label_source(out).items, list)
    monkeypatch.setattr(index, "MAX_ITEMS", 80)
    index.write(out, "items.jsonl", "pointwise", 80)
    assert isinstance(label_source(out).items, snapshot.Items)


def test_id_lookup_from_the_index_is_the_dict_it_replaces(tmp_path, monkeypatch):
    out = _analysed(tmp_path, n=150)
    src = label_source(out)
    pos = it.Derived(src).index
    assert isinstance(pos, index.Positions)
    want = {k: i for i, k in enumerate(it.Derived(_read_every_item(out)).ids)}
    assert len(pos.known) > 0 and len(pos.known) < len(want)  # people's labels in a dict
    assert all(pos[k] == i for k, i in want.items()) and len(pos) == len(want)
    for bad in ("nope", "q1#99", "", 3):
        assert bad not in pos
    with np.testing.assert_raises(KeyError):
        pos["nope"]
    # every id hashing alike: the lookup still finds each by its text
    ix = index.read(out)
    monkeypatch.setattr(index, "h64", lambda key: 7)
    same = index.Positions(ix._replace(hashed=np.full(len(ix.ids), 7, np.int64),
                                          order=np.arange(len(ix.ids))))
    assert all(same[k] == i for k, i in want.items()) and "nope" not in same


def test_ids_come_from_their_block_and_a_torn_block_is_not_used(tmp_path):
    data = tmp_path / "u.csv"
    names = ["caf\u00e9", "\u65e5\u672c", "a,b", "x" * 300, "\u00e9\u00e9", "plain"]
    with data.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "judge", "human"])
        for i in range(60):
            w.writerow([f"{names[i % 6]}-{i}", f"Q{i}", f"A{i}", i % 2, ["", "1"][i % 5 == 0]])
    out = tmp_path / "run"
    assert jk("analyse", str(data), "--out", str(out), cwd=tmp_path).returncode == 0
    ix = index.read(out)
    assert ix is not None
    every = [str(x.id) for x in _read_every_item(out).items]
    assert list(ix.ids) == every and ix.ids == every and len(ix.ids) == 60
    assert ix.ids[-1] == every[-1] and ix.ids[0] == every[0] and ix.ids[2:5] == every[2:5]
    assert ix.ids.take(np.array([7, 0, 7])) == [every[7], every[0], every[7]]
    for bad in (60, -61):
        try:
            ix.ids[bad]
        except IndexError:
            continue
        raise AssertionError(f"ids[{bad}] did not raise")
    with np.load(out / index.NAME, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["id_ends"] = arrays["id_ends"].copy()
    arrays["id_ends"][-1] += 1  # ends past the block: not the ids it was written with
    with (out / index.NAME).open("wb") as fh:
        np.savez(fh, **arrays)
    assert index.read(out) is None
    assert isinstance(label_source(out).items, list)  # the items are read instead


def test_background_facts_wait_for_a_quiet_server_and_pause_for_labels(tmp_path,
                                                                      monkeypatch):
    import os
    import threading
    import time

    from judgekit.view import background, pages

    monkeypatch.setattr(background, "_SERVING", [1, time.monotonic()])  # a request
    monkeypatch.setattr(background, "IDLE_S", 0.0)
    started = threading.Event()
    t = threading.Thread(target=background.when_quiet, args=(started.set,), daemon=True)
    t.start()
    assert not started.wait(0.3)
    background._SERVING[0] = 0  # the request answered
    assert started.wait(30)
    # a builder apart waits at its gate while a label is computed, then goes on
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "verdict": i % 2}) + "\n"
                            for i in range(50)))
    ix = pages.index(path)
    gate = threading.Event()  # the server's gate (a process Event there: the same calls)
    gate.set()
    monkeypatch.setattr(background, "_BUSY", [0, gate])
    monkeypatch.setattr(background, "_GATE", gate)
    monkeypatch.setattr(background, "_SERVER", os.getppid())  # "its server": still here
    monkeypatch.setattr(background, "STEP", 10)
    monkeypatch.setattr(background, "PAUSE_S", 60.0)
    got: list = []
    with background.foreground():
        assert not gate.is_set()
        b = threading.Thread(target=lambda: got.append(
            pages.facts_of(ix, background.wait_gate)), daemon=True)
        b.start()
        b.join(0.3)
        assert b.is_alive() and not got  # held at its first check
    assert gate.is_set()
    b.join(30)
    assert got and got[0][0] == pages.facts_of(ix)[0]


def test_a_facts_builder_ends_with_its_server(tmp_path):
    import subprocess
    import sys
    import time

    # a "server" that starts a builder on a large file, then dies at once (kill -9)
    rows = "".join(json.dumps({"id": f"r{i}", "verdict": i % 2, "text": "x" * 50}) + "\n"
                   for i in range(400_000))
    (tmp_path / "items.jsonl").write_text(rows)
    script = (
        "import sys, os, threading, time\n"
        "from pathlib import Path\n"
        "from judgekit.view import pages\n"
        "ix = pages.index(Path(sys.argv[1]))\n"
        "import multiprocessing as mp\n"
        "threading.Thread(target=ix.facts, daemon=True).start()\n"
        "for _ in range(600):\n"
        "    kids = [c.pid for c in mp.active_children()]\n"
        "    if kids:\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "time.sleep(1.0)\n"  # the builder under way
        "print(' '.join(map(str, kids)), flush=True)\n"
        "os._exit(9)\n")
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "items.jsonl")],
                         capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert pids, out.stderr  # the builder was running when its server died
    for _ in range(300):
        alive = [p for p in pids if _alive(p)]
        if not alive:
            break
        time.sleep(0.1)
    assert not alive  # ended with it, not left parsing (or blocked) for minutes


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_the_index_is_mapped_as_numpy_reads_it_and_a_compressed_one_is_not_used(tmp_path):
    out = _analysed(tmp_path, n=90)
    with np.load(out / index.NAME, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    mapped = index._mapped(out / index.NAME)
    assert sorted(mapped) == sorted(arrays)
    for k, v in arrays.items():
        assert mapped[k].dtype == v.dtype and np.array_equal(mapped[k], v, equal_nan=True), k
    before = index.read(out)
    assert before is not None and list(before.ids) == [str(x.id) for x in
                                                       _read_every_item(out).items]
    st = (out / "items.jsonl").stat()
    with (out / index.NAME).open("wb") as fh:  # the same arrays, compressed
        np.savez_compressed(fh, **arrays)
    os.utime(out / "items.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert index.read(out) is None
    assert isinstance(label_source(out).items, list)
