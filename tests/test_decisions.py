"""Issue 67: one decision per use (rate, rank, items), decided by margins; never on an
interval of zero width; pairwise judges measured; the audit trusts a judge people
confirm; and the labelling loop closes through the installed commands."""

from __future__ import annotations

import csv
import json
import random
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from judgekit.analysis.decisions import decide
from judgekit.core.spec import CardRow
from judgekit.methods.nodata.decision import DecisionSettings
from judgekit.methods.nodata.decision import decide as audit_decide
from judgekit.stats.decide import paired_difference, unseen_disagreement_bound
from judgekit.testing.simulate import audit_items

from .test_standalone import EXE
from .viewer import viewer

ROOT = Path(__file__).resolve().parents[1]


def _row(key: str, est: float, ci: list[float], n: int = 400, decision: str = "-",
         family_ci: list[float] | None = None, baseline: float | None = None) -> CardRow:
    return CardRow(key=key, section="people", measure=key, estimate=est, ci=ci, n=n,
                   decision=decision, units="share", source="s", family_ci=family_ci,
                   baseline=baseline)


ABOVE = "above the best uninformed judge"


def test_the_unseen_disagreement_bound_is_pinned():
    # 1 - 0.025 ** (1 / 50): 50 agreeing labels leave up to 7.1% disagreement plausible
    assert unseen_disagreement_bound(50, 0.95) == pytest.approx(0.0711, abs=1e-4)
    assert unseen_disagreement_bound(100, 0.90) == pytest.approx(1 - 0.05 ** 0.01, rel=1e-12)
    est, ci, _ = paired_difference([1.0] * 30 + [0.0] * 20, [1.0] * 30 + [0.0] * 20, None,
                                   0.95)
    assert est == 0.0 and ci == pytest.approx([-0.07112, 0.07112], abs=1e-4)


def test_rate_trusts_inside_the_margin_distrusts_outside_and_corrects_between():
    def rate(ci, fam=None, acc=ABOVE):
        rows = [_row("leniency", sum(ci) / 2, ci, family_ci=fam),
                _row("accuracy", 0.95, [0.93, 0.97], decision=acc, baseline=0.5)]
        return decide(rows, 1000, margin=0.05)["rate"]

    assert rate([-0.02, 0.049]).decision == "trust"
    assert rate([0.021, 0.049]).decision == "trust"  # the case: inside +/-0.05
    assert rate([-0.02, 0.051]).decision == "use corrected"
    assert rate([0.051, 0.09]).decision == "do not trust"
    assert rate([-0.09, -0.051]).decision == "do not trust"
    # a claim against the judge rests on the family's interval (here it straddles)
    assert rate([0.051, 0.09], fam=[0.04, 0.10]).decision == "use corrected"
    # a matching rate from a judge not shown above uninformed is not trusted
    assert rate([-0.02, 0.02], acc="not distinguishable from the best uninformed "
                "judge").decision == "use corrected"
    assert rate([-0.02, 0.02], acc="no better than an uninformed judge").decision == \
        "do not trust"
    # the margin is the one given
    assert decide([_row("leniency", 0.03, [0.02, 0.04]),
                   _row("accuracy", 0.9, [0.88, 0.92], decision=ABOVE)], 500,
                  margin=0.03)["rate"].decision == "use corrected"


def test_a_system_outside_the_margin_vetoes_rate_and_the_spread_decides_rank():
    rows = [_row("leniency", 0.0, [-0.02, 0.02], family_ci=[-0.03, 0.03]),
            _row("leniency[A]", 0.03, [0.01, 0.045], family_ci=[0.0, 0.05]),
            _row("leniency[B]", -0.03, [-0.045, -0.01], family_ci=[-0.05, 0.0]),
            _row("accuracy", 0.95, [0.93, 0.97], decision=ABOVE)]
    d = decide(rows, 1000, margin=0.05)
    assert d["rate"].decision == "trust"
    # the spread of per-system leniency: at most 0.05 - (-0.05) = 0.10 > 0.05
    assert d["rank"].decision == "use corrected"
    assert d["rank"].interval == pytest.approx([0.0, 0.10])
    assert decide(rows, 1000, margin=0.11)["rank"].decision == "trust"


def test_items_rests_on_accuracy_against_the_target():
    def items(ci, decision=ABOVE):
        return decide([_row("accuracy", sum(ci) / 2, ci, decision=decision)], 1000,
                      target=0.9)["items"]

    assert items([0.91, 0.97]).decision == "trust"
    assert items([0.85, 0.95]).decision == "use corrected"
    assert items([0.55, 0.73]).decision == "do not trust"  # wrong on a third of items
    d = items([0.85, 0.95])
    assert 0 < d.labels_needed <= 600 and d.margin == 0.9


def test_a_preference_beyond_the_margin_counts_against_rates_even_without_people():
    # a probe's position bias [+0.363, +0.500]: rates and rankings are not to be trusted
    d = decide([_row("position_bias", 0.45, [0.363, 0.5], n=16)], 16)
    assert d["rate"].decision == d["rank"].decision == "do not trust"
    assert d["rate"].reason.startswith("position_bias [+0.363, +0.500]")
    # inside the margin it does not count; an audit's "not above" is not "no better"
    rows = [_row("position_bias", 0.01, [-0.02, 0.04]),
            _row("leniency", 0.0, [-0.03, 0.03]),
            _row("accuracy", 0.75, [0.30, 0.95], decision="not above the best uninformed "
                 "judge", baseline=0.75)]
    d = decide(rows, 400)
    assert d["rate"].decision == "use corrected" and d["items"].decision == "use corrected"


def test_nothing_measured_asks_for_a_pilot_capped_at_the_items():
    d = decide([_row("position_bias", 0.0, [-0.02, 0.02], n=30)], 30)
    assert d["items"].decision == "do not trust" and d["items"].labels_needed == 30
    assert d["rate"].reason.startswith("nothing measured")


def _analyse_card(tmp_path: Path, data: Path, *args: str) -> tuple[subprocess.CompletedProcess,
                                                                    dict]:
    run = tmp_path / "run"
    r = subprocess.run([EXE, "analyse", str(data), "--out", str(run)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # analyse prints each judge's decision first, and where to read every use's
    assert ": trust (rate): " in r.stdout.splitlines()[0] or \
        ": use corrected (rate): " in r.stdout.splitlines()[0] or \
        ": do not trust (rate): " in r.stdout.splitlines()[0]
    assert "judgekit card" in r.stdout.splitlines()[1]
    r = subprocess.run([EXE, "card", str(run), "--out", str(tmp_path / "card"), *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r, json.loads((tmp_path / "card" / "card.json").read_text())


def test_llmbar_natural_gpt4_is_measured_against_people_and_named_from_the_file(tmp_path):
    data = ROOT / "tests/fixtures/llmbar/Natural/GPT-4/Vanilla_NoRules/result.json"
    r, card = _analyse_card(tmp_path, data, "--use", "items")
    first = r.stdout.splitlines()[0]
    assert first.startswith("GPT-4 (Vanilla_NoRules): ") and "(items): " in first
    items = card["decisions"]["items"]
    assert "nothing measured" not in items["reason"]
    assert items["n"] == 100 and items["interval"] == pytest.approx([0.850, 0.959], abs=1e-3)
    assert items["decision"] == "use corrected"  # 0.92 [0.850, 0.959] straddles 0.9
    assert card["by_judge"]["GPT-4 (Vanilla_NoRules)"]["decisions"]["rate"]["measure"] == \
        "win_rate_bias"
    for use in ("rate", "rank", "items"):
        d = card["decisions"][use]
        assert set(d) >= {"decision", "margin", "interval", "n", "labels_needed"}
    # labels asked for never exceed the pairs left to label (all 100 are labelled)
    assert all(d["labels_needed"] == 0 for d in card["decisions"].values())


def test_card_refuses_an_unknown_use(tmp_path):
    data = ROOT / "experiments/data/llmbar_mt_bench_chatgpt.json"
    run = tmp_path / "run"
    assert subprocess.run([EXE, "analyse", str(data), "--out", str(run)],
                          capture_output=True, timeout=300).returncode == 0
    r = subprocess.run([EXE, "card", str(run), "--out", str(tmp_path / "c"), "--use", "all"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "--use" in r.stderr


def test_a_perfect_judge_people_confirm_is_trusted_whatever_a_temperature_0_verifier_reads():
    for seed in range(3):
        items = audit_items("oracle", n=300, seed=seed, fixed=0.10, criteria=3,
                            reread="same", labelled=True)
        v = audit_decide(items, DecisionSettings(seed=seed, resamples=200))
        assert v.decision == "trust" and v.rule == "confirmed_by_people"
    # without people, never trusted on the verifier's word; the plan never exceeds the
    # items audited
    items = audit_items("oracle", n=40, seed=0, fixed=0.10, reread="same", labelled=False)
    v = audit_decide(items, DecisionSettings(seed=0, resamples=200))
    assert v.decision != "trust" and v.items_to_score is not None and v.items_to_score <= 40


def test_labels_posted_to_the_viewer_count_in_the_card(tmp_path):
    r = random.Random(3)
    data = tmp_path / "verdicts.csv"
    with data.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "answer", "system", "judge", "human"])
        for i in range(300):
            y = r.random() < 0.5
            v = y if r.random() < 0.9 else not y
            w.writerow([f"i{i}", f"question {i // 2}", f"answer {i}", "A" if i % 2 else "B",
                        int(v), int(y) if i < 36 else ""])
    runs = tmp_path / "runs"
    got = subprocess.run([EXE, "analyse", str(data), "--out", str(runs / "mine")],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    with viewer(runs) as (base, _):
        for i in range(100, 112):
            req = urllib.request.Request(
                f"{base}/api/label", method="POST",
                data=json.dumps({"run": "mine", "id": f"i{i}", "label": 1}).encode(),
                headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                status = json.loads(resp.read())
        assert status["labels"] == 48
        # the viewer's card page counts them; the run list shows the verdict as analysed
        # and says labels were given since; the labelling page links to the card
        with urllib.request.urlopen(f"{base}/cards?run=mine", timeout=120) as resp:
            page = resp.read().decode()
        assert "Decisions, by use" in page and "<td>48</td>" in page
        with urllib.request.urlopen(f"{base}/", timeout=120) as resp:
            index = resp.read().decode()
        assert "verdicts: " in index and "labels were given since" in index
        with urllib.request.urlopen(f"{base}/label?name=mine", timeout=60) as resp:
            assert 'id="card"' in resp.read().decode()
    card = subprocess.run([EXE, "card", str(runs / "mine"), "--out", str(tmp_path / "card")],
                          capture_output=True, text=True, timeout=300)
    assert card.returncode == 0, card.stderr
    assert card.stdout.splitlines()[0].startswith("verdicts: ")  # named from the file
    c = json.loads((tmp_path / "card" / "card.json").read_text())
    counted = {r["key"]: r["labelled"] for r in c["rows"] if r["labelled"] is not None}
    assert counted and set(counted.values()) == {48}
    len_rows = [r for r in c["rows"] if r["key"] == "leniency"]
    assert len_rows and len_rows[0]["n"] == 48
    # the documented route keeps the file's own 36 labels and sees no changed source
    again = subprocess.run([EXE, "analyse", str(data), "--labels",
                            str(runs / "mine" / "labels.jsonl"), "--out",
                            str(runs / "again")], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "source changed" not in again.stdout + again.stderr
    res = json.loads((runs / "again" / "results.json").read_text())
    acc = next(m for m in res["measures"] if m["key"] == "accuracy")
    assert acc["n"] == 48


@pytest.mark.parametrize("script,keys", [
    ("decisions.py", ["wrong_trust_rate", "wrong_distrust_rate", "trust_power_at_4x",
                      "flip_to_worse_with_more_labels", "zero_width_trust",
                      "pairwise_nothing_measured", "pairwise_wrong_trust_rate",
                      "pairwise_wrong_distrust_rate", "pairwise_zero_width_trust"]),
    ("recorded_decisions.py", ["uninformed_false_finding_max", "leniency_false_alarm_max",
                               "position_false_alarm_max"]),
])
def test_the_decision_benchmarks_run_in_smoke_mode(script, keys):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--smoke"],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(keys) <= set(got)
    if script == "decisions.py":
        assert got["zero_width_trust"] == 0 and got["pairwise_zero_width_trust"] == 0
        assert got["pairwise_nothing_measured"] == 0
        assert got["wrong_trust_rate"] <= 0.05 and got["pairwise_wrong_trust_rate"] <= 0.05
