"""On-demand estimators: the authors' unit checks, unbiasedness, and the labelling loop."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgekit.methods.ondemand.estimators import (
    MixingWeights,
    adaptive_sample_size,
    percentile,
    product_variance,
    weights_for,
)
from judgekit.methods.ondemand.simulation import make_population, one_repeat


def test_identical_distributions_weight_rows():
    p = np.array([0.3, 0.2, 0.5])
    w = weights_for([p, p, p], [10, 50, 100])
    assert np.allclose(w, np.tile(np.array([10, 50, 100]) / 160, (3, 1)))


def test_disjoint_distributions_identity():
    d = [np.array([1.0, 0, 0]), np.array([0, 1.0, 0]), np.array([0, 0, 1.0])]
    assert np.allclose(weights_for(d, [10, 50, 100]), np.eye(3))


def test_incremental_update_matches_batch():
    rng = np.random.default_rng(0)
    dists = [rng.dirichlet(np.ones(6)) for _ in range(4)]
    mw = MixingWeights()
    for p, n in zip(dists, [5, 6, 7, 8]):
        mw.add(p, n)
    assert np.allclose(mw.matrix(), weights_for(dists, [5, 6, 7, 8]))


def test_percentile_interval_is_at_stated_level():
    boot = np.arange(1, 1001, dtype=float)[None, :]
    lo, hi = percentile(boot, 0.9)[0]
    assert lo == pytest.approx(50.95) and hi == pytest.approx(950.05)


def test_product_variance_keeps_squares():
    assert product_variance(0.5, 0.01, 0.4, 0.02) == pytest.approx(
        0.25 * 0.02 + 0.16 * 0.01 + 0.0002)


def test_adaptive_disjoint_system_needs_full_budget():
    d = [np.array([1.0, 0, 0, 0]), np.array([0, 0, 0.5, 0.5])]
    f = np.array([1.0, 0, 1, 0])
    n = adaptive_sample_size(d, [500, 500], [np.zeros(500, int)], f, budget=500)
    assert n == 500  # the authors' absolute tolerance asked 437


def test_joint_and_simple_unbiased_small():
    pop = make_population(np.random.default_rng(1), n_systems=4, shared=400, unique=50)
    rng = np.random.default_rng(2)
    reps = [one_repeat(pop, rng, 40, 60, 50, 0.9) for _ in range(300)]
    for key, truth in (("joint_p", pop.precision), ("simple_p", pop.precision),
                       ("joint_r", pop.recall)):
        bias = np.mean([r[key] for r in reps], axis=0) - truth
        assert np.abs(bias).max() < 0.02, (key, bias)


def test_simulation_contract(tmp_path):
    import judgekit

    from .conftest import ROOT

    judgekit.run(ROOT / "experiments" / "ondemand_simulation.yaml",
                 sets=["repeats=40", "adaptive_orders=2"], out=tmp_path, overwrite=True)
    res = json.loads((tmp_path / "results.json").read_text())
    for k in ("pooled", "simple", "joint"):
        assert set(res["estimators"][k]) >= {"precision_bias", "recall_bias",
                                             "precision_ci_width", "recall_ci_width"}
    assert res["estimators"]["pooled"]["unique_system_precision_bias"] < -0.05
    assert len(res["adaptive"]) == 8 and res["adaptive"][0] == 100
    assert res["estimators"]["joint"]["precision_ci_width"] < \
        res["estimators"]["simple"]["precision_ci_width"]


def test_labelling_loop_with_mock_judge_labels_each_instance_once(tmp_path):
    from judgekit.llm import Client, ClientSettings
    from judgekit.llm.providers import mock
    from judgekit.methods.ondemand.loop import Instance, LabellingLoop, llm_labeller

    seen: list[str] = []

    def judge(req):
        text = req.messages[-1]["content"].split("<INSTANCE>\n")[1].split("\n</INSTANCE>")[0]
        seen.append(text)
        return {"reason": "checked", "correct": text.endswith("ok")}

    shared = [Instance(f"s{i}", f"shared {i} {'ok' if i % 2 else 'bad'}") for i in range(6)]
    systems = {"A": shared + [Instance("a1", "a1 ok")],
               "B": shared[:4] + [Instance("b1", "b1 bad")]}
    client = Client(ClientSettings(cache_dir=tmp_path / "c", progress=False),
                    providers={"mock/judge": mock.FunctionProvider(judge)})
    loop = LabellingLoop(systems, llm_labeller(client, "mock/judge", "is it ok?"), seed=3)
    loop.sample("A", 20)
    loop.sample("B", 20)
    client.close()
    assert len(seen) == len(set(seen)) == len(loop.judged) == len(set(loop.judged))
    assert set(loop.judged) == set(loop.samples["A"]) | set(loop.samples["B"])
    est = loop.estimates()
    assert set(est) == {"A", "B"} and 0 <= est["A"]["joint"] <= 1


def test_label_experiment_from_files(tmp_path):
    import judgekit

    for name, ids in (("a", range(0, 8)), ("b", range(4, 12))):
        (tmp_path / f"{name}.jsonl").write_text("\n".join(
            json.dumps({"id": f"x{i}", "text": f"t{i}"}) for i in ids))
    (tmp_path / "labels.jsonl").write_text("\n".join(
        json.dumps({"id": f"x{i}", "label": int(i % 2 == 0)}) for i in range(12)))
    cfg = {"method": "ondemand", "experiment": "label", "samples_per_system": 30,
           "system_outputs": {"a": str(tmp_path / "a.jsonl"), "b": str(tmp_path / "b.jsonl")},
           "labels_file": str(tmp_path / "labels.jsonl"), "out": str(tmp_path / "o")}
    (tmp_path / "c.yaml").write_text(json.dumps(cfg))
    judgekit.run(tmp_path / "c.yaml", out=tmp_path / "o")
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["labels_used"] <= 12 and set(res["estimates"]) == {"a", "b"}
    assert abs(res["estimates"]["a"]["joint"] - 0.5) < 0.25
