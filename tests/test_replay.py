"""The committed cassettes replay offline, without keys, to byte-identical results."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT, SHARED


def _replay(config: str, out):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["JUDGEKIT_CACHE_DIR"] = str(out / "cache")
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", config,
                        "--cassette-mode", "none", "--out", str(out / "run")],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return (out / "run" / "results.json").read_bytes()


@pytest.mark.parametrize("config,cassette,needs_shared", [
    ("experiments/demo.yaml", "cassettes/demo.json", False),
    ("experiments/nodata_west_frisian.yaml", "cassettes/nodata_west_frisian.json", True),
])
def test_committed_cassette_replays_identically(tmp_path, config, cassette, needs_shared):
    if not (ROOT / cassette).exists():
        pytest.skip(f"{cassette} has not been recorded")
    if needs_shared and not SHARED.exists():
        pytest.skip("the shared West Frisian sample is absent")
    first = _replay(config, tmp_path / "a")
    second = _replay(config, tmp_path / "b")
    assert first == second
    assert b'"cached"' in first
