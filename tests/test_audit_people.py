"""Issue 49: the audit never trusts on its verifier's word alone, knows the verifier's
worth from people, plans how many items to score by hand and reads those scores back;
and the intervals at the small edges (VB per query, agreement, low-prevalence PPI)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from judgekit.core.errors import DataError
from judgekit.methods.nodata.decision import DecisionSettings, decide, items_to_score
from judgekit.recorded import labels as store
from judgekit.testing.simulate import audit_items


def _runs(judge: str, runs: int = 6, settings: dict | None = None, **kw) -> list:
    return [decide(audit_items(judge, n=200, seed=s, **kw),
                   DecisionSettings(seed=s, resamples=300, **(settings or {})))
            for s in range(runs)]


@pytest.mark.parametrize("judge,kw,settings", [
    ("blind_spot", {"blind_spot": 0.3}, {}),
    ("copied", {}, {}),
    ("easy_only", {"hard": 0.3}, {}),
    ("mostly_right", {"reread_noise": 0.06}, {"second_verifier": True}),
    ("oracle", {}, {}),  # even a perfect judge: the verifier alone cannot show it
])
def test_without_people_the_verifier_alone_never_earns_trust(judge, kw, settings):
    for v in _runs(judge, labelled=False, settings=settings, **kw):
        assert v.decision != "trust"
        assert isinstance(v.items_to_score, int) and v.items_to_score >= 10
        assert "score" in v.reason
    perfect = _runs("oracle", labelled=False)
    assert {v.rule for v in perfect} == {"verifier_only"}
    assert "not excluded" in perfect[0].reason


def test_with_people_a_perfect_judge_is_trusted_and_a_copying_verifier_is_not():
    assert {v.decision for v in _runs("oracle")} == {"trust"}
    assert all(v.items_to_score is None for v in _runs("oracle", runs=2))
    assert "trust" not in {v.decision for v in _runs("copied")}


@pytest.mark.parametrize("fixed,criteria", [(0.05, 6), (0.10, 3)])
def test_a_temperature_0_verifier_repeating_its_misreads_does_not_sink_a_perfect_judge(
        fixed, criteria):
    # the re-read repeats each misread (reference 1.0); paraphrases are other texts, so
    # they show the misreads, and the reference follows them
    for v in _runs("oracle", fixed=fixed, criteria=criteria, reread="same", labelled=False):
        assert v.decision != "do not trust"


def test_a_liar_and_a_random_judge_are_still_distrusted_without_people():
    for judge in ("liar", "random"):
        assert {v.decision for v in _runs(judge, runs=4, labelled=False)} == {"do not trust"}


def test_items_to_score_pinned():
    s = DecisionSettings()  # 0.95, thresholds 0.5 / 0.8, at least 10 items
    # 16 of 16 is the first all-pass sample whose Wilson lower limit (0.806) clears 0.8
    assert [items_to_score(r, s) for r in (1.0, 0.95, 0.9, 0.2, 0.0)] == [16, 25, 54, 11, 10]
    assert items_to_score(0.8, s) == 5000 and items_to_score(0.5, s) == 5000
    assert items_to_score(1.0, s, scored=10) == 6 and items_to_score(1.0, s, scored=40) == 0
    # between the thresholds: exclude the nearer one (0.7 -> show it below 0.8)
    assert items_to_score(0.7, s) == 55


def test_a_second_verifier_counts_only_when_people_measured_it():
    from judgekit.methods.nodata.readings import VerifierReadings

    items = audit_items("oracle", n=100, seed=1, reread_noise=0.06, labelled=False)
    alone = VerifierReadings(items, 3, "both", 10, second_verifier=True)
    same = VerifierReadings(items, 3, "both", 10, second_verifier=False)
    rows = np.arange(100)
    assert "rereads" not in alone.references(rows) and "rereads" in same.references(rows)
    assert "paraphrases" in alone.references(rows)
    people = audit_items("oracle", n=100, seed=1, reread_noise=0.06)
    measured = VerifierReadings(people, 3, "both", 10, second_verifier=True)
    assert set(measured.references(rows)) == {"rereads", "people"}
    summary = measured.summary(people, 0.95)
    assert summary.rereads_counted is True
    # the re-reader's own error rate against people: about 6% per criterion
    rates = [r.rate for r in summary.reread_human_agreement.values()]
    assert all(0.85 <= r <= 0.99 for r in rates)


def test_people_labels_from_judgekit_label_reach_the_audit(tmp_path):
    from judgekit.testing import judges

    judges.write_audit_data(tmp_path, 60, seed=3, pass_rate=0.5)
    data = json.loads((tmp_path / "items.json").read_text())
    truth = [row.pop("Label") for row in data]
    for row in data:
        row.pop("Rubric")
    (tmp_path / "items.json").write_text(json.dumps(data))
    bare = judges.scripted_audit(tmp_path, "oracle", "faithful", n=60)["verdict"]
    assert bare["decision"] == "inconclusive" and bare["rule"] == "verifier_only"
    assert bare["items_to_score"] == 16
    labels = tmp_path / "labels.jsonl"
    store.append(labels, [{"kind": "label", "id": str(i), "label": "pass" if truth[i] else
                           "fail", "annotator": "ann"} for i in range(40)])
    got = judges.scripted_audit(tmp_path, "oracle", "faithful", n=60,
                                human_labels=str(labels))["verdict"]
    assert got["claims_vs_people"]["n"] == 40 and got["claims_vs_people"]["rate"] == 1.0
    assert got["decision"] == "trust"
    # a label for an item that was not audited is an error naming the file and id
    store.append(labels, [{"kind": "label", "id": "999", "label": "pass"}])
    with pytest.raises(DataError, match=r"human_labels .*labels.jsonl.*'999'"):
        judges.scripted_audit(tmp_path, "oracle", "faithful", n=60, human_labels=str(labels))


def test_vb_query_interval_is_a_bounded_mean_interval_that_covers_a_rare_reading():
    from judgekit.methods.vbscore.replicas import query_interval
    from judgekit.stats.label_intervals import betting_mean_interval

    lo, hi = query_interval(np.ones(5))
    assert lo == pytest.approx(0.405, abs=0.003) and hi == 1.0
    lo20, _ = query_interval(np.ones(20))
    assert lo20 == pytest.approx(0.785, abs=0.003)
    # on VB's range [-alpha/2, 1] the same values map through the range
    lo_vb, hi_vb = betting_mean_interval(np.ones(5), 0.95, -0.25, 1.0)
    assert lo_vb == pytest.approx(-0.25 + 1.25 * 0.405, abs=0.005) and hi_vb == 1.0
    # one reading dominates (0.85 on 92%, 0.1 otherwise): five replicas rarely show the
    # rare one; the interval must still cover the true mean 0.79
    rng = np.random.default_rng(4)
    x = np.where(rng.random((300, 5)) < 0.92, 0.85, 0.1)
    ci = np.array([query_interval(r) for r in x])
    assert np.mean((ci[:, 0] <= 0.79) & (0.79 <= ci[:, 1])) >= 0.95
    assert np.all(ci[:, 0] >= 0) and np.all(ci[:, 1] <= 1)


def test_agreement_keeps_an_interval_when_one_class_is_seen():
    from judgekit.stats.agreement import agreement

    ag = agreement([1] * 40, [1] * 40, seed=1, resamples=2000)
    assert ag.kappa is None and "kappa" in ag.undefined
    lo, hi = ag.cis["kappa"]
    assert lo < 0.05 and hi > 0.95  # the population's kappa is barely bounded by 40 alike


def test_ppi_counts_a_pseudo_disagreement_each_way():
    from judgekit.stats.bootstrap import pseudo_variance
    from judgekit.stats.ppi import ppi_interval, ppi_mean

    rng = np.random.default_rng(0)
    y = (rng.random(2000) < 0.05).astype(float)
    f = np.where(y == 1, 1.0, (rng.random(2000) < 0.03).astype(float))
    lab = np.arange(100)
    c = ppi_mean(f, f[lab], y[lab], 0.90)
    fl, yl = f[lab], y[lab]
    lam = c.lam
    assert 0 < lam <= 1
    assert c.residual_var == pytest.approx(pseudo_variance(yl - lam * fl, -lam, 1.0))
    assert c.ci == pytest.approx(ppi_interval(c.estimate, float(yl.var(ddof=1)),
                                              c.residual_var, 100, 2000, 0.90))
    # the pseudo-pair only adds spread
    assert c.residual_var > float((yl - lam * fl).var(ddof=1))
