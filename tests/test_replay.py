"""The committed cassettes replay offline, without keys, to byte-identical results."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT


def _replay(config: str, out):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["JUDGEKIT_CACHE_DIR"] = str(out / "cache")
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", config,
                        "--cassette-mode", "none", "--out", str(out / "run")],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return (out / "run" / "results.json").read_bytes()


@pytest.mark.parametrize("config,cassette", [
    ("experiments/demo.yaml", "cassettes/demo.json"),
    ("experiments/nodata_west_frisian.yaml", "cassettes/nodata_west_frisian.json"),
    ("experiments/probe_local.yaml", "cassettes/probe_local.json"),
])
def test_committed_cassette_replays_identically(tmp_path, config, cassette):
    assert (ROOT / cassette).exists(), f"{cassette} is not committed"
    first = _replay(config, tmp_path / "a")
    second = _replay(config, tmp_path / "b")
    assert first == second
    assert b'"cached"' in first


def test_probe_replay_reports_transforms_against_the_noise_floor(tmp_path):
    import json

    _replay("experiments/probe_local.yaml", tmp_path)
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    names = [t["name"] for t in res["transforms"]]
    assert names == ["swap", "rename", "pad", "inject"]
    for t in res["transforms"]:
        assert {"name", "flip_rate", "noise_floor", "excess", "excess_ci", "p_value"} <= set(t)
        assert t["excess"] == pytest.approx(t["flip_rate"] - t["noise_floor"])
    assert res["position_bias"]["n"] >= 10
