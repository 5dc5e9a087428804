"""No-Data core: protocol, liars against Lemma 5.1, and the paper's Table 2 figures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from judgekit.core.errors import ConfigError
from judgekit.judging.rubric import load_rubric
from judgekit.methods.nodata.baselines import ensemble
from judgekit.methods.nodata.bitstrings import (
    LieF,
    LieGenerator,
    LieSigma,
    TreeEvaluator,
    generate_balanced,
    ip_rubric,
    load_split,
    oop_rubric,
)
from judgekit.methods.nodata.protocol import (
    challenge_passes,
    no_data,
    one_vs_all,
    run_protocol,
    summarise,
    theorem_5_2_bound,
)

from .conftest import ROOT


def test_rubrics_total_and_labels():
    ip = ip_rubric()
    assert ip.top("010101000000") == (0, 0, 0)  # 3 ones: odd; starts 0 XOR has 10101 -> 0
    assert ip.total("010101000000") == (0, 1, 1, 0, 0)
    assert ip.label("111111000000") == 1
    assert oop_rubric().top("011100000001") == (1, 1, 0)


def test_challenges():
    assert challenge_passes(1, (1, 0, 1), (1, 0, 1), (1,), (0,))
    assert not challenge_passes(2, (1,), (1,), (1, 0, 1), (1, 1, 1))
    assert challenge_passes(2, (1,), (1,), (1, 0, 1), (1, 1, 1), eps=0.5)


@pytest.fixture(scope="module")
def regenerated():
    train, _ = load_split(None, "IP", "train", 0)
    test, _ = load_split(None, "IP", "test", 0)
    return train, test


def test_balanced_generation_is_seeded(regenerated):
    a = generate_balanced(ip_rubric(), 100, np.random.default_rng(3))
    b = generate_balanced(ip_rubric(), 100, np.random.default_rng(3))
    assert a == b and sum(y for _, y in a) == 50


def test_liars_escape_less_with_more_rounds(regenerated):
    train, test = regenerated
    xs = [s for s, _ in test]
    dt = TreeEvaluator(train, "decimal")
    rates = {}
    for ev in (dt, LieSigma(dt), LieF(dt), LieGenerator(dt, p_lie=0.5)):
        rates[ev.name] = [np.mean([r.success for r in run_protocol(
            xs, ev, ip_rubric(), rounds=r, seed=11)]) for r in (1, 2, 3, 4)]
    assert rates["dt_decimal"] == [1.0, 1.0, 1.0, 1.0]
    for name in ("lie_sigma", "lie_f", "lie_generator"):
        # same seed for every r: a run of r + 1 rounds extends the run of r rounds
        assert all(a >= b for a, b in zip(rates[name], rates[name][1:])), rates[name]
        assert rates[name][0] > rates[name][-1], rates[name]


def test_flips_follow_phi_and_seed_is_reproducible(regenerated):
    train, _ = regenerated
    oop, _ = load_split(None, "OOP", "test", 0)
    xs = [s for s, _ in oop]
    dt = TreeEvaluator(train, "bits")
    a = no_data(xs, dt, oop_rubric(), rounds=3, phi=1.0, seed=5)
    b = no_data(xs, dt, oop_rubric(), rounds=3, phi=1.0, seed=5)
    assert [r.final_label for r in a] == [r.final_label for r in b]
    assert all(r.flipped == (not r.success) for r in a)
    none = no_data(xs, dt, oop_rubric(), rounds=3, phi=0.0, seed=5)
    assert not any(r.flipped for r in none)


def test_theorem_bound_and_k_ary():
    assert theorem_5_2_bound(0.622, 0.4, 3) == pytest.approx(1 - 0.378 * (0.6 + 0.4 / 64))
    assert one_vs_all([0, 1, 2, 1], 3) == [[1, 0, 0, 0], [0, 1, 0, 1]]


def test_direct_k_ary_flip_changes_label():
    from judgekit.methods.nodata.protocol import EVRecord, apply_flips

    recs = [EVRecord(label=i % 3, success=False) for i in range(60)]
    flipped = apply_flips(recs, 1.0, seed=1, k=3)
    assert all(r.final_label != r.label and 0 <= r.final_label < 3 for r in flipped)
    s = summarise(flipped, [r.label for r in recs], phi=1.0, rounds=1, k=3)
    assert s.accuracy == 0.0 and s.known_accuracy == 1.0


def test_ensemble_kappa_and_agreement():
    out = ensemble({"a": [1, 0, 1, 0], "b": [1, 0, 1, 0], "c": [0, 1, 0, 1]}, [1, 0, 1, 0])
    pair = {tuple(p["judges"]): p for p in out["pairs"]}
    assert pair[("a", "b")]["kappa"] == 1.0 and pair[("a", "c")]["percent_agreement"] == 0.0
    assert out["majority"]["accuracy"] == 1.0


def test_regenerated_sets_reproduce_table_2(tmp_path):
    # The sets regenerated from the rubrics (seeded; the authors' files are read only
    # when a user points data_dir at them) reproduce the published pattern.
    import judgekit

    judgekit.run(ROOT / "experiments" / "nodata_synthetic.yaml", out=tmp_path, overwrite=True)
    res = json.loads((tmp_path / "results.json").read_text())
    runs = {(r["phenomenon"], r["evaluator"], r["phi"]): r for r in res["runs"]}
    ip, oop = runs[("IP", "dt_decimal", 0.4)], runs[("OOP", "dt_decimal", 0.4)]
    assert ip["success_rate"] >= 0.99 and oop["success_rate"] <= 0.10
    assert abs(ip["known_accuracy"] - 0.622) <= 0.03
    assert abs(oop["known_accuracy"] - 0.542) <= 0.03
    for r in res["runs"]:
        assert set(r) >= {"phenomenon", "evaluator", "phi", "rounds", "success_rate",
                          "flip_rate", "accuracy", "f1", "known_accuracy", "bound"}
        assert 0 <= r["success_rate"] <= 1
    assert "Lemma 5.1" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "success_vs_phi.png").stat().st_size > 0
    first = (tmp_path / "results.json").read_bytes()
    judgekit.run(ROOT / "experiments" / "nodata_synthetic.yaml", out=tmp_path, overwrite=True)
    assert (tmp_path / "results.json").read_bytes() == first


def test_text_rubric_validation(tmp_path):
    bad = tmp_path / "r.yaml"
    bad.write_text("name: x\ncriteria:\n  - id: c1\n    description: d\n"
                   "    clauses: [{id: a, description: a}, {id: b, description: b}]\n")
    with pytest.raises(ConfigError, match="criteria.0: criterion c1 has clauses but no operator"):
        load_rubric(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_rubric(Path(tmp_path / "missing.yaml"))
