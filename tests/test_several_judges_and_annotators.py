"""Recorded verdicts of several judges side by side (one card per judge), a corrected
paired comparison of two systems, agreement intervals clustered by question, several
annotators in pairwise files, self-preference and length preference controlled for
position by both orders."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import t as student

import judgekit
from judgekit.stats.agreement import agreement, fleiss_kappa
from judgekit.stats.ppi import ppi_difference
from judgekit.stats.preference import design_effect

from .test_recorded_verdicts import _cli, _measures, _write_csv


def _two_judges(path):
    rows = []
    for i in range(40):
        truth = i % 3 != 0
        good = truth if i % 10 else not truth  # right on 36 of 40
        bad = truth if i % 2 else not truth  # right on 20 of 40: chance
        rows.append([f"i{i}", f"q{i // 2}", "AB"[i % 2], "pass" if good else "fail",
                     "pass" if bad else "fail", "pass" if truth else "fail"])
    return _write_csv(path, ["id", "question_id", "system", "judge_good", "judge_coin",
                             "human"], rows)


def test_several_judge_columns_give_one_card_per_judge_side_by_side(tmp_path):
    f = _two_judges(tmp_path / "two.csv")
    both = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    p = both.payload
    assert p.judge == "good" and [o.judge for o in p.others] == ["coin"]
    assert p.roles["judge"] == "judge_good,judge_coin"
    # each judge's figures are exactly what a run of that column alone gives
    for column, got in (("judge_good", p.measures), ("judge_coin", p.others[0].measures)):
        alone = judgekit.run({"method": "verdicts", "data_path": str(f),
                              "roles": {"judge": column}}, save=False)
        assert [m.model_dump() for m in got] == [m.model_dump() for m in alone.payload.measures]
    good, coin = _measures(both), {m.key: m for m in p.others[0].measures}
    assert good["accuracy"].estimate == 36 / 40 and coin["accuracy"].estimate == 20 / 40
    assert not good["accuracy"].finding and coin["accuracy"].finding
    out = tmp_path / "run"
    r = _cli("analyse", str(f), "--out", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "side by side with coin (findings:" in r.stdout
    r = _cli("card", str(out), "--out", str(tmp_path / "card"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    card = json.loads((tmp_path / "card" / "card.json").read_text())
    assert card["judges"] == ["good", "coin"]
    keys = {(row["judge"], row["key"]) for row in card["rows"]}
    assert {("good", "accuracy"), ("coin", "accuracy"), ("good", "kappa"),
            ("coin", "kappa")} <= keys
    assert any(x.startswith("coin: accuracy") for x in card["findings"])
    assert not any(x.startswith("good:") for x in card["findings"])
    md = (tmp_path / "card" / "report.md").read_text()
    assert "## The judges side by side" in md and "| key | good | coin |" in md
    items = [json.loads(x) for x in (out / "items.jsonl").read_text().splitlines()]
    assert {x["judge"] for x in items} == {"good", "coin"} and len(items) == 80


def _var_half(x):
    vals = np.concatenate([x, [1.0, -1.0]])
    w = np.concatenate([np.ones(len(x)), [0.5, 0.5]])
    m = np.sum(w * vals) / w.sum()
    return np.sum(w * (vals - m) ** 2) / (w.sum() - 1)


def test_paired_difference_is_ppi_plus_plus_on_per_question_differences():
    f = np.array([1, 0, 0, 1, -1, 0, 1, 0, 0, 1, 0, 1], float)  # judge A - B, 12 questions
    lab = np.arange(6)
    y = np.array([1, 0, -1, 1, -1, 1], float)  # human A - B on the first 6
    c = ppi_difference(f, f[lab], y, level=0.9)
    fl = f[lab]
    lam = min(1.0, max(0.0, np.cov(fl, y, ddof=1)[0, 1] / fl.var(ddof=1)))
    est = lam * f.mean() + (y - lam * fl).mean()
    # Agresti-Min: one discordant pseudo-question each way, weight 1/2, in each variance
    var = (1 / 6 - 1 / 12) * _var_half(y - lam * fl) + _var_half(y) / 12
    h = student.ppf(0.95, 5) * math.sqrt(var)
    assert c.lam == pytest.approx(lam) and c.estimate == pytest.approx(est)
    assert c.ci == pytest.approx([max(-1, est - h), min(1, est + h)])
    hh = student.ppf(0.95, 5) * math.sqrt(_var_half(y) / 6)
    assert c.human_only_ci == pytest.approx([y.mean() - hh, y.mean() + hh])
    # the pseudo-observations by hand: 6 zeros plus +1 and -1 at weight 1/2 -> 1 / 6
    assert _var_half(np.zeros(6)) == pytest.approx(1 / 6)
    # no disagreement in the labels: the interval stays open
    same = ppi_difference(f, f[lab], f[lab], level=0.9)
    assert same.ci[1] - same.ci[0] > 0.2
    flat = ppi_difference(np.zeros(10), np.zeros(4), np.zeros(4), level=0.9)
    v = (1 / 4 - 1 / 10) * (1 / 4) + (1 / 4) / 10  # _var_half of 4 zeros is 1 / 4
    assert flat.ci == pytest.approx([-student.ppf(0.95, 3) * math.sqrt(v),
                                     student.ppf(0.95, 3) * math.sqrt(v)])


def test_two_systems_compared_corrected_for_the_judge(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for q in range(120):
        for s, p in (("A", 0.75), ("B", 0.45)):
            y = rng.random() < p
            v = y if rng.random() < 0.85 else not y
            rows.append([f"{s}{q}", f"q{q}", s, int(v), int(y) if q % 4 == 0 else ""])
    f = _write_csv(tmp_path / "ab.csv", ["id", "question_id", "system", "judge", "human"],
                   rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f), "level": 0.9},
                       save=False)
    m = _measures(res)["corrected_difference[A-B]"]
    judge = {(r[2], r[1]): float(r[3]) for r in rows}
    human = {(r[2], r[1]): float(r[4]) for r in rows if r[4] != ""}
    qs = [f"q{q}" for q in range(120)]
    lab = [q for q in qs if ("A", q) in human]
    want = ppi_difference([judge[("A", q)] - judge[("B", q)] for q in qs],
                          [judge[("A", q)] - judge[("B", q)] for q in lab],
                          [human[("A", q)] - human[("B", q)] for q in lab], level=0.9)
    assert m.estimate == pytest.approx(want.estimate) and m.ci == pytest.approx(want.ci)
    assert m.n == 120 and m.ci[0] > 0 and m.decision == "A better (30 labelled questions)"
    assert "human labels alone" in m.note


def test_agreement_intervals_resample_questions_when_answers_share_one():
    rng = np.random.default_rng(2)
    j = rng.integers(0, 2, 30)
    h = np.where(rng.random(30) < 0.8, j, 1 - j)
    plain = agreement(j, h, seed=7, resamples=4000, level=0.9)
    # every question answered twice identically: the design effect is about 2, so the
    # table counts about as the undoubled data did; taking rows as independent would
    # narrow it
    jj, hh = np.repeat(j, 2), np.repeat(h, 2)
    groups = np.repeat(np.arange(30), 2).tolist()
    clustered = agreement(jj, hh, seed=7, resamples=4000, level=0.9, groups=groups)
    rows = agreement(jj, hh, seed=7, resamples=4000, level=0.9)
    assert clustered.kappa == pytest.approx(plain.kappa)
    deff = design_effect([[bool(a == b)] * 2 for a, b in zip(j, h)])
    assert 2.0 <= deff <= 2.1  # k / (k - 1) times 2 for k = 30 identical pairs
    for k in ("kappa", "alpha", "ac"):
        assert clustered.cis[k] == pytest.approx(plain.cis[k], abs=0.03)
    width = lambda a: a.cis["kappa"][1] - a.cis["kappa"][0]  # noqa: E731
    assert width(rows) < 0.8 * width(clustered)


def test_pairwise_several_annotators_majority_and_fleiss(tmp_path):
    votes = [("1", "1", "2"), ("2", "2", "2"), ("0", "1", "2"), ("1", "1", "1"),
             ("2", "0", "0"), ("1", "2", "1"), ("2", "2", "1"), ("0", "0", "0")]
    winners = ["1", "2", "1", "2", "tie", "1", "2", "0"]
    rows = [[f"p{i}", f"first {i}", f"second {i} longer", winners[i], *v]
            for i, v in enumerate(votes)]
    f = _write_csv(tmp_path / "pw.csv", ["pair_id", "first", "second", "winner",
                                         "annotator1", "annotator2", "annotator3"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    # majority: 1, 2, none (three ways), 1, 0 (tie), 1, 2, 0 -> 7 labelled pairs
    assert m["accuracy"].n == 7
    # winners 1, 2, -, 2, tie, 1, 2, 0: only p3 (second for a first-label) is wrong
    assert m["accuracy"].estimate == pytest.approx(6 / 7)
    codes = {"0": 0, "1": 1, "2": 2}
    want = fleiss_kappa(np.array([[codes[x] for x in v] for v in votes]))
    assert m["fleiss_kappa"].estimate == pytest.approx(want) and m["fleiss_kappa"].n == 8


def test_self_preference_from_recorded_pairs_uses_both_orders(tmp_path):
    # the judge's own answer (gpt) is shown first in the file's order; on half the
    # pairs the judge picks the first-shown answer, on the others the better one. As
    # given that reads as self-preference (+0.5); both orders show it is the position.
    rows = []
    for i in range(24):
        own_first = True
        own_good = (i // 2) % 2 == 0
        models = ("gpt-4o", "claude-3") if own_first else ("claude-3", "gpt-4o")
        label = "first" if own_first == own_good else "second"
        for order in (0, 1):
            m1, m2 = models if order == 0 else models[::-1]
            lab = label if order == 0 else {"first": "second", "second": "first"}[label]
            winner = "first" if i < 12 else lab  # position bias on half the pairs
            rows.append([f"p{i}", f"a{i}" if order == 0 else f"b{i}",
                         f"b{i}" if order == 0 else f"a{i}", m1, m2, winner, lab])
    f = _write_csv(tmp_path / "self.csv", ["pair_id", "first", "second", "model_first",
                                           "model_second", "winner", "label"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f), "judge_family": "gpt"},
                       save=False)
    sp = _measures(res)["self_preference"]
    assert sp.n == 48 and sp.clusters == 24
    assert sp.estimate == pytest.approx(0.0) and sp.decision == "no preference shown"
    assert sp.note.startswith("both orders")
    given = [r for k, r in enumerate(rows) if k % 2 == 0]
    one = _write_csv(tmp_path / "one.csv", ["pair_id", "first", "second", "model_first",
                                            "model_second", "winner", "label"], given)
    res = judgekit.run({"method": "verdicts", "data_path": str(one), "judge_family": "gpt"},
                       save=False)
    sp1 = _measures(res)["self_preference"]
    assert sp1.n == 24 and sp1.note.startswith("one order per pair")
    assert sp1.estimate == pytest.approx(0.5)  # the position bias, read as a preference
    # no dataset column: the asymmetry is reported, not claimed (it may come from mixing
    # datasets); here it is the position bias leaking into one order
    assert sp1.decision.startswith("a preference appears") and not sp1.finding


def test_alpha_and_repeat_consistency_of_a_pointwise_file(tmp_path):
    import krippendorff

    rows = []
    verdicts = {"a": ["pass", "pass"], "b": ["fail", "pass"], "c": ["fail", "fail", "fail"],
                "d": ["pass"]}
    humans = {"a": "pass", "b": "fail", "c": "pass", "d": "pass"}
    for item, vs in verdicts.items():
        for v in vs:
            rows.append([item, v, humans[item]])
    f = _write_csv(tmp_path / "rep.csv", ["id", "judge", "human"], rows)
    res = judgekit.run({"method": "verdicts", "data_path": str(f)}, save=False)
    m = _measures(res)
    rep = m["repeat_consistency"]
    assert rep.estimate == pytest.approx(2 / 3) and rep.n == 3  # a and c agree, b does not
    assert rep.note.startswith("3 items judged 2-3 times")
    j = [1 if r[1] == "pass" else 0 for r in rows]
    h = [1 if r[2] == "pass" else 0 for r in rows]
    want = krippendorff.alpha(reliability_data=[j, h], level_of_measurement="nominal")
    assert m["alpha"].estimate == pytest.approx(want, abs=1e-12)
    assert m["alpha"].n == len(rows)


def test_plan_prints_the_label_plan_of_every_corrected_figure(tmp_path):
    rng = np.random.default_rng(9)
    rows = []
    for q in range(300):
        for s, p in (("A", 0.7), ("B", 0.5)):
            y = rng.random() < p
            v = y if rng.random() < 0.85 else not y
            rows.append([f"{s}{q}", f"q{q}", s, int(v), int(y) if q % 3 == 0 else ""])
    f = _write_csv(tmp_path / "ab.csv", ["id", "question_id", "system", "judge", "human"],
                   rows)
    out = tmp_path / "run"
    assert _cli("analyse", str(f), "--out", str(out), cwd=tmp_path).returncode == 0
    r = _cli("plan", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "results.json").read_text())
    corrected = [m for m in doc["measures"] if m.get("labelled") is not None]
    assert {m["key"] for m in corrected} == {
        "corrected_pass_rate", "corrected_pass_rate[A]", "corrected_pass_rate[B]",
        "corrected_difference[A-B]"}
    for m in corrected:
        want = m["labels_for_target"]
        assert want is None or m["labelled"] < want <= m["n"]
        line = next(x for x in r.stdout.splitlines() if f" {m['key']} " in x)
        assert line.split()[-1] == (str(want) if want is not None else "already")
    # the overall rate's plan is the interval actually reported, recomputed from its
    # variance terms: the smallest n whose half-width reaches +-0.05
    from judgekit.stats.ppi import ppi_interval, ppi_mean

    f_all = [float(x[3]) for x in rows]
    lab = [x for x in rows if x[4] != ""]
    c = ppi_mean(f_all, [float(x[3]) for x in lab], [float(x[4]) for x in lab], level=0.95)
    overall = next(m for m in corrected if m["key"] == "corrected_pass_rate")
    need = overall["labels_for_target"]
    assert need == c.labels_for_halfwidth(0.05) and need is not None and need < 600

    def half(n: int) -> float:
        lo, hi = ppi_interval(c.estimate, c.label_var, c.residual_var, n, 600, 0.95)
        return (hi - lo) / 2

    assert half(need) <= 0.05 < half(need - 1)
    # the old rule (half-width times sqrt(n / labels)) ignored the Var(y) / N term
    old = math.ceil(c.n_labelled * ((c.ci[1] - c.ci[0]) / 2 / 0.05) ** 2)
    assert old != need
    r = _cli("plan", str(tmp_path / "nothing"), cwd=tmp_path)
    assert r.returncode == 2


def test_label_error_corrects_the_corrected_pass_rate_and_says_so(tmp_path):
    rng = np.random.default_rng(4)
    rows = []
    for i in range(400):
        y = rng.random() < 0.3
        v = y if rng.random() < 0.9 else not y
        h = (not y) if rng.random() < 0.05 else y  # annotators flip 5% of labels
        rows.append([f"i{i}", int(v), int(h) if i % 2 == 0 else ""])
    f = _write_csv(tmp_path / "v.csv", ["id", "judge", "human"], rows)
    docs = {}
    for name, extra in (("plain", []), ("fixed", ["--label-error", "0.05"])):
        out = tmp_path / name
        r = _cli("analyse", str(f), "--out", str(out), *extra, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        docs[name] = next(m for m in json.loads((out / "results.json").read_text())
                          ["measures"] if m["key"] == "corrected_pass_rate")
    plain, fixed = docs["plain"], docs["fixed"]
    assert "taken as error-free (--label-error RATE" in plain["note"]
    assert "corrected for annotators flipping 5.0% of labels" in fixed["note"]
    assert fixed["estimate"] == pytest.approx((plain["estimate"] - 0.05) / 0.9)
    assert fixed["ci"] == pytest.approx([(c - 0.05) / 0.9 for c in plain["ci"]])
    bad = _cli("analyse", str(f), "--out", str(tmp_path / "bad"), "--label-error", "0.6",
               cwd=tmp_path)
    assert bad.returncode == 2
