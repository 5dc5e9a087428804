"""The LLM audit cannot be passed by paraphrase alone; rates carry intervals; a verdict."""

from __future__ import annotations

import pytest

from judgekit.stats.proportions import wilson_interval
from judgekit.testing import judges

N = 80


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    judges.write_audit_data(d, N, seed=3)
    return d


def audit(work, judge, para, check="both", **extra):
    return judges.scripted_audit(work, judge, para, n=N, check=check, **extra)


def test_oracle_passes_and_is_trusted(work):
    r = audit(work, "oracle", "faithful")
    row = r["runs"][0]
    assert row["success_rate"] == 1.0 and row["claim_agreement"] == 1.0
    assert row["success_ci"] == pytest.approx(wilson_interval(N, N).as_list())
    assert r["verdict"]["decision"] == "trust"


@pytest.mark.parametrize("para", ["faithful", "realising"])
def test_random_judge_fails_with_either_paraphraser(work, para):
    r = audit(work, "random", para)
    assert r["runs"][0]["success_rate"] <= 0.15
    assert r["verdict"]["decision"] == "do not trust"


def test_constant_judge_succeeds_exactly_where_it_is_right(work):
    r = audit(work, "constant", "faithful")
    assert r["runs"][0]["success_rate"] == pytest.approx(r["known"]["accuracy"])
    assert r["runs"][0]["success_rate"] < 0.6


def test_self_consistent_liar_fails(work):
    assert audit(work, "liar", "realising")["runs"][0]["success_rate"] == 0.0


def test_pair_check_alone_is_fooled_by_a_faithful_paraphraser(work):
    # the documented hole that check=both closes
    assert audit(work, "random", "faithful", check="pair")["runs"][0]["success_rate"] == 1.0


def test_paper_check_is_fooled_by_a_claim_realising_paraphraser(work):
    # the authors' check: claims vs x'; a liar that realises its claims passes
    assert audit(work, "liar", "realising", check="paper")["runs"][0]["success_rate"] == 1.0


def test_wilson_interval_values():
    assert wilson_interval(0, 10).as_list() == pytest.approx([0.0, 0.2775327998628899])
    lo, hi = wilson_interval(7, 20)
    # by hand: z = 1.959964, centre 0.374172, half-width 0.192978
    assert (lo, hi) == pytest.approx((0.181194, 0.567150), abs=1e-5)
    lo90, hi90 = wilson_interval(7, 20, level=0.90)
    assert lo < lo90 < 0.35 < hi90 < hi
