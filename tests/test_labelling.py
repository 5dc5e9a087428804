"""Active labelling (judgekit.stats.active, judgekit.labelling) and `judgekit label`."""

from __future__ import annotations

import csv
import functools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from judgekit.core.errors import ConfigError, DataError, StatsError
from judgekit.labelling import session
from judgekit.recorded import labels as store
from judgekit.stats import active

from .test_standalone import jk


def _pop(n=12, score=True):
    rng = np.random.default_rng(3)
    verdict = rng.integers(0, 2, n)
    sc = rng.random(n) if score else None
    return active.Population(verdict, sc, (np.arange(n) % 2), ("A", "B"))


def test_every_draw_is_unbiased_whatever_the_predictor():
    """E_q[Z] = theta exactly, for any m and q: a wrong sign or weight breaks it."""
    pop = _pop()
    y = np.array([1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1], float)
    rng = np.random.default_rng(0)
    m = rng.random(pop.n)  # a poor predictor
    for e in active.estimands_for(pop):
        q = active.sampling_probabilities(m, [e])
        assert q.min() >= active.UNIFORM_SHARE / pop.n - 1e-15
        assert math.isclose(q.sum(), 1.0)
        z = active.terms(e, m, q, np.arange(pop.n), y)
        theta = e.const + float(e.weights @ y)
        assert math.isclose(float(q @ z), theta, abs_tol=1e-12), e.name
    names = [e.name for e in active.estimands_for(pop)]
    assert names == ["pass_rate[A]", "pass_rate[B]", "agreement", "difference[B - A]"]
    agree = active.estimands_for(pop)[2]
    assert math.isclose(agree.const + float(agree.weights @ y),
                        float(np.mean(y == pop.verdict)))


def test_probabilities_follow_the_predictor_uncertainty():
    m = np.array([0.5, 0.5, 0.99, 0.01])
    e = active.Estimand("pass_rate", 0.0, np.full(4, 0.25))
    q = active.sampling_probabilities(m, [e], uniform_share=0.2)
    s = np.sqrt(np.clip(m * (1 - m), 1e-4, None))
    np.testing.assert_allclose(q, 0.8 * s / s.sum() + 0.05)
    assert q[0] > 3 * q[2]


def test_a_draw_without_replacement_is_unbiased_given_the_past():
    """des Raj's ordered term: E[Z_t | past] = theta exactly over the undrawn items, for
    any m and q, with the drawn items' labels known (a wrong sign or a missing known
    part breaks it)."""
    pop = _pop()
    y = np.array([1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 1], float)
    rng = np.random.default_rng(4)
    m = rng.random(pop.n)
    undrawn = np.ones(pop.n, bool)
    undrawn[[0, 3, 7]] = False  # drawn before, labels known
    for e in active.estimands_for(pop):
        q = np.where(undrawn, rng.random(pop.n) + 0.1, 0.0)
        q /= q.sum()
        base, lo, hi = active.frame(e, m, q, undrawn)
        known = float(e.weights[~undrawn] @ y[~undrawn])
        z = base + known + e.weights * (y - m) / np.where(q > 0, q, 1)
        theta = e.const + float(e.weights @ y)
        assert math.isclose(float(q[undrawn] @ z[undrawn]), theta, abs_tol=1e-12), e.name
        assert lo <= float((z - base - known)[undrawn].min())
        assert hi >= float((z - base - known)[undrawn].max())
    # the known part counts each item once, from its first draw on
    np.testing.assert_allclose(active.known_before(np.array([2, 5, 2, 1]),
                                                   np.array([0, 10, 100, 0, 0, 1000.0])),
                               [0, 100, 1100, 1100])


def test_betting_sequence_pinned_and_valid():
    z = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0] * 5)
    lo, hi = np.zeros(z.size), np.ones(z.size)
    iv = active.betting_cs(z, lo, hi, 0.9)
    assert iv.low <= iv.estimate == 0.625 <= iv.high and 0 <= iv.low and iv.high <= 1
    # pinned (hedged capital, predictable plug-in bets, grid of 2001)
    assert (round(iv.low, 4), round(iv.high, 4)) == (0.414, 0.812)

    def capital(theta):  # the two capital processes, written out draw by draw
        up = down = 1.0
        mu, dev = 0.5, 0.0
        for t, x in enumerate(z, start=1):
            var = 0.25 if t == 1 else (0.25 + dev) / t
            lam = math.sqrt(2 * math.log(2 / 0.1) / (var * t * math.log(1 + t)))
            up *= 1 + min(lam, 0.5 / max(theta, 1e-12)) * (x - theta)
            down *= 1 - min(lam, 0.5 / max(1 - theta, 1e-12)) * (x - theta)
            dev += (x - mu) ** 2
            mu = (0.5 + z[:t].sum()) / (t + 1)
        return max(up, down)

    assert capital(0.40) >= 20 > capital(0.42) and capital(0.62) < 20
    assert capital(0.82) >= 20 > capital(0.80)
    # wider than the fixed-n interval at the same n, narrower than the trivial [0, 1]
    fixed = active.fixed_interval(z, 0.9)
    assert iv.low < fixed.low < 0.625 < fixed.high < iv.high
    # anytime coverage of the mean by simulation: checked after every draw
    rng = np.random.default_rng(0)
    misses = 0
    for _ in range(200):
        x = (rng.random(300) < 0.3).astype(float)
        path = active.betting_cs_path(x, np.zeros(300), np.ones(300), 0.9, grid=401)
        misses += any(not (p.low <= 0.3 <= p.high) for p in path)
    assert misses / 200 <= 0.1
    with pytest.raises(StatsError, match="empty"):  # terms far outside their bounds
        active.betting_cs(np.full(200, 5.0), np.zeros(200), np.ones(200), 0.9)


def test_fixed_interval_and_the_draws_it_needs_agree():
    z = np.random.default_rng(2).normal(0.4, 0.3, 60)
    iv = active.fixed_interval(z, 0.9)
    assert iv.low < iv.estimate < iv.high and iv.estimate == pytest.approx(float(z.mean()))
    need = active.draws_needed(z, 0.9, 0.02)
    grown = np.resize(z, z.size + need)  # the same spread and mean at T + need
    grown = (grown - grown.mean()) / grown.std(ddof=1) * z.std(ddof=1) + z.mean()
    wide = active.fixed_interval(grown, 0.9)
    assert (wide.high - wide.low) / 2 <= 0.02 + 1e-9
    short = grown[:-1]
    short = (short - short.mean()) / short.std(ddof=1) * z.std(ddof=1) + z.mean()
    assert (lambda w: (w.high - w.low) / 2)(active.fixed_interval(short, 0.9)) > 0.02
    assert active.draws_needed(z, 0.9, 0.5) == 0
    # a share never leaves [0, 1], and the estimate stays inside
    edge = active.fixed_interval(np.array([1.0, 1.0, 1.0, 1.2]), 0.9)
    assert edge.high == 1.0 and edge.low <= edge.estimate <= edge.high
    assert active.expected_new_labels(np.full(10, 0.1), np.arange(4), 10 ** 6) == 6


def test_label_error_correction_pinned():
    e = active.Estimand("pass_rate", 0.0, np.full(4, 0.25))
    iv = active.label_error_map(active.Interval(0.6, 0.5, 0.7), e, 0.1)
    assert iv == pytest.approx(active.Interval(0.625, 0.5, 0.75))  # (x - e) / (1 - 2e)
    # a difference: the error cancels in the numerator
    d = active.Estimand("difference", 0.0, np.array([0.5, 0.5, -0.5, -0.5]), -1.0, 1.0)
    assert active.label_error_map(active.Interval(0.2, 0.1, 0.3), d, 0.1) == \
        pytest.approx(active.Interval(0.25, 0.125, 0.375))
    # an estimated error widens both limits
    wide = active.label_error_map(active.Interval(0.6, 0.45, 0.7), e, 0.1, [0.05, 0.15])
    assert wide.low < 0.4375 and wide.high > 0.75 and wide.estimate == pytest.approx(0.625)


def test_steering_only_where_it_pays():
    n = 400
    e = active.Estimand("pass_rate", 0.0, np.full(n, 1 / n))
    rng = np.random.default_rng(5)
    drawn = rng.choice(n, 60, replace=False)
    q_drawn = np.full(60, 1 / n)
    sure = np.where(np.arange(n) < 300, 0.01, 0.5)  # most items certain
    # residuals as the items' uncertainty says: steering pays
    resid = np.where(drawn < 300, 0.05, 0.5)
    q, share, ratio, _ = active.steer(sure, [e], drawn, q_drawn, resid)
    assert share < 1 and ratio <= active.STEER_GAIN and q[350] > q[10]
    # the same predictor, but residuals even everywhere (it was overconfident): uniform
    q, share, ratio, _ = active.steer(sure, [e], drawn, q_drawn, np.full(60, 0.5))
    assert share == 1.0 and np.allclose(q, 1 / n)
    # fewer labels than the pilot: uniform
    assert active.steer(sure, [e], drawn[:10], q_drawn[:10], resid[:10])[1] == 1.0


def _file(tmp_path: Path, n=300, seed=1, with_prob=True) -> tuple[Path, dict[str, int]]:
    r = random.Random(seed)
    truth = {}
    path = tmp_path / "verdicts.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "system", "judge"] + (["probability"] if with_prob else []))
        for i in range(n):
            y = r.random() < 0.3
            e = r.betavariate(0.5, 4)
            v = y if r.random() > e else not y
            truth[f"i{i}"] = int(y)
            w.writerow([f"i{i}", "A" if i % 2 else "B", int(v)] +
                       ([round(1 - e if v else e, 3)] if with_prob else []))
    return path, truth


def test_propose_is_idempotent_and_the_estimate_uses_the_labelled_prefix(tmp_path):
    path, truth = _file(tmp_path)
    st = session.propose(path, batch=5, seed=1)
    first = [p.id for p in st.pending]
    assert len(first) == 5 and st.draws == 0
    again = session.propose(path, batch=5, seed=1)  # nothing labelled: nothing drawn
    assert [p.id for p in again.pending] == first
    assert len(store.read(path.with_name("verdicts.labels.jsonl")).draws) == len(st.pending) \
        or len(store.read(path.with_name("verdicts.labels.jsonl")).draws) >= 5
    # label the second pending item only: the first is still pending, nothing counts
    session.add_label(path, first[1], truth[first[1]], "ann")
    assert session.estimate(path).draws == 0
    session.add_label(path, first[0], truth[first[0]], "ann")
    assert session.estimate(path).draws >= 2
    for p in first[2:]:
        session.add_label(path, p, truth[p], "bob")
    st = session.propose(path, batch=5, seed=1)
    assert st.labels == 5 and st.pending and not {p.id for p in st.pending} & set(first)
    for f in st.figures:
        assert f.estimate is not None and f.ci[0] <= f.estimate <= f.ci[1]
        assert 0 <= f.ci[0] and f.ci[1] <= 1 and f.draws_needed > 0
    # undo withdraws the annotator's latest label
    assert session.undo(path, "bob") == first[-1]
    assert first[-1] not in store.read(path.with_name("verdicts.labels.jsonl")).by_item


def test_labelling_to_the_target_covers_the_truth(tmp_path):
    path, truth = _file(tmp_path, n=600)
    for _ in range(300):
        st = session.propose(path, batch=10, target_width=0.2, level=0.9)
        if st.done:
            break
        for p in st.pending:
            session.add_label(path, p.id, truth[p.id], "ann")
    assert st.done and st.labels < 600
    for f in st.figures:
        assert f.ci[1] - f.ci[0] <= 0.2 + 1e-9
        system = f.name.split("[")[1].rstrip("]")
        ids = [k for k in truth if (int(k[1:]) % 2 == 1) == (system == "A")]
        theta = np.mean([truth[k] for k in ids])
        assert f.ci[0] <= theta <= f.ci[1]
    # done: nothing more is proposed
    assert session.propose(path, batch=10, target_width=0.2, level=0.9).pending == []


def test_bad_labels_and_sources_are_one_line_errors(tmp_path):
    path, _ = _file(tmp_path, n=40)
    with pytest.raises(ConfigError, match="id 'nope' matches no item"):
        session.add_label(path, "nope", 1, "a")
    with pytest.raises(ConfigError, match="use pass/fail"):
        session.add_label(path, "i1", "maybe", "a")
    bad = tmp_path / "bad.csv"
    bad.write_text("id,judge,probability\n1,1,1.7\n")
    with pytest.raises(DataError, match="probability 1.7 is outside"):
        session.propose(bad)
    lab = tmp_path / "verdicts.labels.jsonl"
    lab.write_text('{"id": "i1", "label": 1}\nnot json\n{"id": "i2", "label": 0}\n')
    with pytest.raises(DataError, match=r"verdicts.labels.jsonl:2: not a JSON object"):
        session.estimate(path)
    # a line cut by a crash (the last one) is dropped, and the next append starts afresh
    lab.write_text('{"id": "i1", "label": 1}\n{"id": "i2", "lab')
    assert set(store.read(lab).by_item) == {"i1"}
    session.add_label(path, "i3", 0, "a")
    assert set(store.read(lab).by_item) == {"i1", "i3"}


def test_label_command_writes_next_items_and_exit_codes(tmp_path):
    path, _ = _file(tmp_path, n=200)
    r = jk("analyse", str(path), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = jk("label", "run", "--target-width", "0.1", "--out", "NEXT.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (tmp_path / "NEXT.jsonl").read_text().splitlines()]
    assert len(lines) == 10 and all({"id", "probability"} <= set(x) for x in lines)
    assert all(0 < x["probability"] < 1 for x in lines)
    assert (tmp_path / "run" / "labels.jsonl").is_file()
    assert "results.json" in {p.name for p in (tmp_path / "run").iterdir()}
    before = (tmp_path / "run" / "results.json").read_bytes()
    r = jk("label", "run", "--out", "NEXT2.jsonl", cwd=tmp_path)
    assert (tmp_path / "NEXT2.jsonl").read_text() == (tmp_path / "NEXT.jsonl").read_text()
    assert (tmp_path / "run" / "results.json").read_bytes() == before
    r = jk("label", "missing", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "missing" in r.stderr
    r = jk("label", "run", "--for", "nonsense", cwd=tmp_path)
    assert r.returncode == 2 and "--for 'nonsense'" in r.stderr
    r = jk("label", "run", "--target-width", "7", cwd=tmp_path)
    assert r.returncode == 2


def test_probe_and_analyse_read_the_labels_file(tmp_path):
    lab = tmp_path / "labels.jsonl"
    store.append(lab, [{"kind": "label", "id": "a", "label": 1, "annotator": "x"},
                       {"kind": "label", "id": "a", "label": 0, "annotator": "y"},
                       {"kind": "label", "id": "b", "label": "fail", "annotator": "x"},
                       {"kind": "undo", "id": "b", "annotator": "x"},
                       {"kind": "label", "id": "c", "label": "pass", "annotator": "x"}])
    assert store.values(lab) == {"a": 0.5, "c": 1.0}


def test_two_processes_append_without_losing_lines(tmp_path):
    lab = tmp_path / "labels.jsonl"
    code = ("import sys; from pathlib import Path; from judgekit.recorded import labels as store\n"
            "for i in range(200): store.append(Path(sys.argv[1]), [{'kind': 'label', "
            "'id': f'{sys.argv[2]}{i}', 'label': 1, 'annotator': sys.argv[2]}])\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(lab), who])
             for who in ("p", "q")]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    assert len(store.read(lab).by_item) == 400


def test_progress_of_a_long_loop_without_a_terminal(capsys):
    from judgekit.core.progress import track

    got = list(track(range(5), "simulation", 5, "repeats", interval=0.0, quiet=0.0))
    err = capsys.readouterr().err.splitlines()
    assert got == [0, 1, 2, 3, 4]
    assert err[0] == "judgekit: simulation 1/5 repeats, 0 s"
    assert err[-1] == "judgekit: simulation 5/5 repeats done in 0 s"
    assert list(track(range(3), "quick", 3)) == [0, 1, 2]  # a short loop stays silent
    assert capsys.readouterr().err == ""


def test_self_contradiction_draws_more_often(tmp_path):
    from judgekit.analysis.source import load, population

    path = tmp_path / "pairs.jsonl"
    rows = []
    for i in range(40):  # each pair in both orders; the judge follows the slot on 0..9
        a, b = f"answer a{i}", f"answer b{i}"
        rows.append({"pair_id": f"p{i}", "first": a, "second": b, "winner": "first"})
        rows.append({"pair_id": f"p{i}", "first": b, "second": a,
                     "winner": "first" if i < 10 else "second"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    src = load(path)
    pop = population(src.items)
    assert pop.unstable is not None and int(pop.unstable.sum()) == 20
    # nothing is trusted before it is checked: no labels, no lean
    np.testing.assert_allclose(active.fit_predictor(pop, np.array([], int), np.array([])),
                               0.5)
    # labels that agree with the stable verdicts and split on the unstable ones
    labelled = np.arange(pop.n)
    y = np.where(pop.unstable == 1, np.arange(pop.n) % 2, pop.verdict).astype(float)
    m = active.fit_predictor(pop, labelled, y)
    assert abs(m[pop.unstable == 1] - 0.5).max() < 0.15
    q = active.sampling_probabilities(m, active.estimands_for(pop))
    assert q[pop.unstable == 1].min() > 1.15 * q[pop.unstable == 0].max()


def test_probe_and_audit_runs_are_labelled_and_read_their_labels(tmp_path):
    from judgekit.labelling.sources import label_source

    env = {"JUDGEKIT_CACHE_DIR": str(tmp_path / "cache")}
    for exp, out in (("probe_local", "pl"), ("nodata_west_frisian", "wf")):
        r = jk("run", exp, "--out", out, cwd=tmp_path, env=env)
        assert r.returncode == 0, r.stderr
        r = jk("label", out, "--out", f"{out}.next.jsonl", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    pending = [json.loads(x)["id"] for x in (tmp_path / "pl.next.jsonl").read_text()
               .splitlines()]
    for i, item in enumerate(pending):
        session.add_label(label_source(tmp_path / "pl"), item, "a" if i % 2 else "b", "kim")
    r = jk("run", "probe_local", "--out", "pl2", "--set", "human_labels=pl/labels.jsonl",
           cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "pl2" / "results.json").read_text())
    assert res["human"]["a_win_rate"]["n_labelled"] == len(pending)
    audit = [json.loads(x)["id"] for x in (tmp_path / "wf.next.jsonl").read_text()
             .splitlines()]
    assert sorted(audit) == ["0", "1", "2", "3"]  # the audit's items by position
    for item in audit:
        # every item passes, say people
        session.add_label(label_source(tmp_path / "wf"), item, 1, "kim")
    r = jk("run", "nodata_west_frisian", "--out", "wf2", "--set",
           "labels_file=wf/labels.jsonl", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    items = [json.loads(x) for x in (tmp_path / "wf2" / "items.jsonl").read_text()
             .splitlines()]
    assert [x["label"] for x in items] == [1, 1, 1, 1]
    r = jk("run", "nodata_west_frisian", "--out", "wf3", "--set",
           "labels_file=pl/labels.jsonl", cwd=tmp_path, env=env)
    assert r.returncode == 2 and "is not an item of the data" in r.stderr



def test_llmbar_pairs_in_both_orders_are_labelled_and_analysed(tmp_path):
    """A real pairwise file (LLMBar's GPT-4 on MT-Bench, both orders of each pair): the
    second order's id is "ID#2" in the proposals and in `judgekit analyse --labels`."""
    import shutil

    from .conftest import ROOT

    src = ROOT / "tests" / "fixtures" / "llmbar" / "MT-Bench" / "GPT-4" / "Vanilla_NoRules"
    path = tmp_path / "GPT-4" / "Vanilla_NoRules" / "result.json"
    path.parent.mkdir(parents=True)
    shutil.copy(src / "result.json", path)
    st = session.propose(path, batch=30, seed=2)
    # LLMBar's gold label is on every row: every item counts as labelled, none is proposed
    assert st.labels == len(st.source.items) == 400 and st.pending == []
    ids = [str(x.id) for x in st.source.items]
    assert "0#2" in ids and len(set(ids)) == 400
    picked = [i for i in ids if "#2" in i][:15] + [i for i in ids if "#" not in i][:15]
    for k, i in enumerate(picked):
        session.add_label(path, i, "first" if k % 2 else "second", "kim")
    lab = path.with_name("result.labels.jsonl")
    r = jk("analyse", str(path), "--labels", str(lab), "--out", "run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    keys = {m["key"]: m for m in res["measures"]}
    # the labels file's labels join the file's own (issue 67: they stay), so accuracy in
    # the order as given reads every pair
    assert res["roles"]["label"] == "_labels" and keys["accuracy"]["n"] == 200


def test_annotators_who_disagree_are_corrected_for(tmp_path):
    """Two annotators per item, each flipping 15% of labels: `repeats` measures the error
    from the doubled labels and the corrected pass rate moves away from 1/2 by
    1 / (1 - 2e); a stated rate does the same; too few doubled items is a one-line
    error."""
    path, truth = _file(tmp_path, n=400)
    rng = random.Random(9)
    with pytest.raises(ConfigError, match="only 0 item"):
        session.propose(path, batch=10, label_error="repeats")
    for _ in range(6):
        st = session.propose(path, batch=10, seed=3)
        for p in st.pending:
            for who in ("ann", "bob"):
                y = truth[p.id]
                session.add_label(path, p.id, y if rng.random() > 0.15 else 1 - y, who)
    plain = session.estimate(path, seed=3)
    rep = session.estimate(path, label_error="repeats", seed=3)
    stated = session.estimate(path, label_error=0.1, seed=3)
    assert plain.label_error is None and rep.label_error is not None
    e = rep.label_error
    assert 0.05 < e < 0.3 and rep.label_error_ci[0] < e < rep.label_error_ci[1]
    for f0, f1, f2 in zip(plain.figures, rep.figures, stated.figures):
        assert f2.estimate == pytest.approx(max(0.0, (f0.estimate - 0.1) / 0.8), abs=1e-5)
        assert f1.estimate == pytest.approx(max(0.0, (f0.estimate - e) / (1 - 2 * e)),
                                            abs=1e-5)
        assert f1.ci[0] <= f1.estimate <= f1.ci[1]
        # the error's own interval widens the corrected interval beyond a stated rate
        assert f1.ci[1] - f1.ci[0] > (f0.ci[1] - f0.ci[0]) / (1 - 2 * e) - 1e-9
    with pytest.raises(ConfigError, match="--label-error"):
        session.parse_label_error("0.7")


def test_label_error_on_the_command_line(tmp_path):
    path, _ = _file(tmp_path, n=200)
    r = jk("label", str(path), "--label-error", "0.1", "--out", "NEXT.jsonl", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (tmp_path / "NEXT.jsonl").read_text().splitlines()]
    assert lines and all({"id", "probability"} <= set(x) for x in lines)
    assert "corrected for annotators who flip a label at 0.100" in r.stdout
    for bad in ("0.7", "often"):
        r = jk("label", str(path), "--label-error", bad, cwd=tmp_path)
        assert r.returncode == 2 and "--label-error" in r.stderr
        assert r.stderr.strip().count("\n") == 0
    r = jk("label", str(path), "--design", "greedy", cwd=tmp_path)
    assert r.returncode == 2 and "--design 'greedy'" in r.stderr


def test_a_labels_file_of_the_previous_version_is_read(tmp_path):
    """Draw lines of the previous version (with replacement, no bounds, no frame): the
    same terms c + w.m + w_j (y_j - m_j) / q_j, and bounds from its 25% uniform share."""
    path, truth = _file(tmp_path, n=100)
    from judgekit.analysis.source import load, population

    src = load(path)
    pop = population(src.items)
    every = active.estimands_for(pop)
    m = np.full(pop.n, 0.5)
    q = active.sampling_probabilities(m, every)
    rows, labels = [], []
    rng = np.random.default_rng(1)
    for t in range(40):
        j = int(rng.choice(pop.n, p=q))
        k = src.items[j].id
        rows.append({"kind": "draw", "draw": t + 1, "batch": 1, "id": k,
                     "probability": float(q[j]), "prediction": 0.5,
                     "means": {e.name: e.const + float(e.weights @ m) for e in every},
                     "expected_var": {e.name: active.model_variance(e, m, q) for e in every},
                     **({"horizon": 100.0, "seed": 0, "for": "pass_rate", "level": 0.95,
                         "target_width": 0.1} if t == 0 else {})})
        labels.append({"kind": "label", "id": k, "label": truth[k], "annotator": "a"})
    store.append(path.with_name("verdicts.labels.jsonl"), rows + labels)
    st = session.estimate(path)
    assert st.draws == 40
    for f in st.figures:
        assert f.ci[0] <= f.estimate <= f.ci[1]
        assert f.sequential_ci[0] <= f.sequential_estimate <= f.sequential_ci[1]
        e = next(x for x in every if x.name == f.name)
        idx = [int(str(r["id"])[1:]) for r in rows]
        z = [e.const + float(e.weights @ m) + e.weights[i] * (truth[f"i{i}"] - 0.5)
             / q[i] for i in idx]
        assert f.sequential_estimate == pytest.approx(min(max(np.mean(z), 0), 1), abs=1e-6)
    # the next batch is drawn the new way, after the old draws
    nxt = session.propose(path, batch=5)
    assert nxt.pending and all(str(p.id) not in {r["id"] for r in rows}
                               for p in nxt.pending)


def test_two_processes_proposing_at_once_draw_one_batch(tmp_path):
    """Proposals are decided and appended under the file's lock: two processes asking at
    once get the same batch, drawn once."""
    path, _ = _file(tmp_path, n=200)
    code = ("import sys; from pathlib import Path; from judgekit.labelling import session;"
            "st = session.propose(Path(sys.argv[1]), batch=10, seed=1);"
            "print(','.join(p.id for p in st.pending))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outs[0] == outs[1] and len(outs[0].split(",")) == 10
    draws = store.read(path.with_name("verdicts.labels.jsonl")).draws
    assert len(draws) == 10 and len({d.id for d in draws}) == 10


def test_hand_appends_and_links(tmp_path):
    path, truth = _file(tmp_path, n=50)
    lab = path.with_name("verdicts.labels.jsonl")
    # a complete line appended by hand without its newline (CRLF before it) is kept
    lab.write_bytes(b'{"id": "i1", "label": 1, "annotator": "a"}\r\n'
                    b'{"id": "i2", "label": 0, "annotator": "a"}')
    session.add_label(path, "i3", 1, "b")
    assert set(store.read(lab).by_item) == {"i1", "i2", "i3"}
    # a torn line (a writer killed mid-line) is cut, and only it
    with lab.open("ab") as fh:
        fh.write(b'{"id": "i4", "lab')
    session.add_label(path, "i5", 1, "b")
    assert set(store.read(lab).by_item) == {"i1", "i2", "i3", "i5"}
    # never written through a symbolic link
    other = tmp_path / "elsewhere.jsonl"
    other.write_text("")
    lab.unlink()
    lab.symlink_to(other)
    with pytest.raises(Exception, match="symbolic link"):
        session.add_label(path, "i1", 1, "a")
    assert other.read_text() == ""


def test_a_plan_grows_by_the_predicted_variance_not_by_one_surprise():
    """Thirty uniform terms, then twelve steered ones with one surprise: given the
    variance the next batch is predicted to have, the plan grows by it alone; the
    steered block's own spread (raised by the surprise) plans only without one. The
    larger of the two planned far past the target on skewed labels."""
    rng = np.random.default_rng(4)
    z = np.concatenate([rng.normal(0.1, 0.3, 30), rng.normal(0.1, 0.15, 11), [2.6]])
    block = np.array([0] * 30 + [1] * 12)
    own = float(z[block == 1].var(ddof=1))
    plan = functools.partial(active.draws_needed, z, 0.9, 0.04, block=block, future=1)
    assert plan(future_var=None) == plan(future_var=own)
    predicted = own / 8
    assert plan(future_var=predicted) < plan(future_var=own)
    assert plan(future_var=predicted) > plan(future_var=predicted / 2) > 0


def test_a_pilot_with_no_positive_plans_a_finite_number_of_draws():
    """Thirty draws, none a pass: the share's effective n grows with every further draw
    (the variance floor is one unseen error), so the plan is modest, not every item."""
    z = np.zeros(30)
    need = active.draws_needed(z, 0.9, 0.05, floor=1 / 30)
    assert 0 < need < 60
    iv = active.fixed_interval(np.zeros(30 + need), 0.9, floor=1 / (30 + need))
    assert iv.low == 0.0 and iv.high <= 0.1 + 1e-9


def test_a_proposal_that_draws_nothing_gives_the_figures_estimate_gives(tmp_path):
    """While draws are pending, propose appends nothing and returns the figures it decided
    on: the same as estimate's, field for field (it no longer computes them twice)."""
    path, truth = _file(tmp_path)
    first = [p.id for p in session.propose(path, batch=5, seed=1).pending]
    for p in first[:3]:
        session.add_label(path, p, truth[p], "ann")
    labels_file = path.with_name("verdicts.labels.jsonl")
    before = labels_file.read_bytes()
    proposed = session.propose(path, batch=5, seed=1)
    assert labels_file.read_bytes() == before  # two still pending: nothing drawn
    assert proposed.as_json() == session.estimate(path, seed=1).as_json()
    assert [p.id for p in proposed.pending] == first[3:]
    for p in first[3:]:  # the batch labelled: the next proposal draws and re-estimates
        session.add_label(path, p, truth[p], "ann")
    drawn = session.propose(path, batch=5, seed=1)
    assert len(labels_file.read_bytes()) > len(before)
    assert drawn.as_json() == session.estimate(path, seed=1).as_json()
    assert drawn.labels == 5 and len(drawn.pending) == 5


def test_the_first_look_comes_sooner_when_the_target_is_wide():
    """The pilot is PILOT draws, or a quarter of what people alone need for the widest
    share, ceil((z / half-width)^2 / 16), at least MIN_PILOT: 30 draws before a look cost
    1.6 times the random plan at a target of 0.2 (nominal 0.80)."""
    assert active.pilot_size(0.1, 0.9) == 30  # (1.645 / 0.05)^2 / 16 = 67.6: capped
    assert active.pilot_size(0.2, 0.9) == 17  # 270.6 / 16 = 16.9
    assert active.pilot_size(0.2, 0.8) == 11  # (1.2816 / 0.1)^2 / 16 = 10.3
    assert active.pilot_size(0.2, 0.9, 0.1) == 27  # flipped labels: half-width 0.08
    assert active.pilot_size(0.5, 0.9) == active.MIN_PILOT == 10
    # one of two equal systems' rates: twice the spread per uniform draw
    half = active.Estimand("pass_rate[A]", 0.0, np.where(np.arange(8) % 2, 0.25, 0.0), 0.0,
                           1.0)
    assert active.pilot_size(0.2, 0.8, estimands=[half]) == 21  # 2 * 164.2 / 16 = 20.5
    assert active.pilot_size(0.2, 0.9, estimands=[half]) == 30  # 33.8: capped


def test_a_wide_target_is_looked_at_after_its_pilot(tmp_path):
    path, truth = _file(tmp_path)
    st = session.propose(path, batch=50, seed=3, target_width=0.2, level=0.8)
    # each of two systems' rates: pilot_size(0.2, 0.8) at twice a share's spread
    assert len(st.pending) == 21 and st.figures[0].draws_needed == 21
    for p in st.pending:
        session.add_label(path, p.id, truth[p.id], "ann")
    after = session.estimate(path, target_width=0.2, level=0.8)
    # a look at every figure: one narrow enough needs nothing more, the other re-plans
    # from its interval (a 30-draw pilot would still ask for its last 9 draws)
    a, b = after.figures
    assert a.draws == b.draws == 21 and not after.done
    assert a.halfwidth <= 0.1 and a.draws_needed == 0
    assert b.halfwidth > 0.1 and 0 < b.draws_needed < 30 - 21
