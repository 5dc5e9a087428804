"""No crash after paying: every packaged experiment, run through the installed command
with a judge that never gives a readable answer (mock/echo) and with mock/auto, ends
with exit 1 (and results.json saying why) or exit 0, never a traceback; headlines,
reports and cards render whatever statistic is undefined."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from judgekit.core.resources import resource_dir

JK = shutil.which("judgekit") or str(Path(sys.executable).with_name("judgekit"))


@pytest.mark.parametrize("experiment", ["demo", "nodata_west_frisian", "probe_local"])
@pytest.mark.parametrize("model", ["mock/echo", "mock/auto"])
def test_unreadable_and_random_judges_never_crash(tmp_path, experiment, model):
    doc = yaml.safe_load((resource_dir("experiments") / f"{experiment}.yaml").read_text())
    roles = [a for role in (doc.get("models") or {}) for a in ("--model", f"{role}={model}")]
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["JUDGEKIT_CACHE_DIR"] = str(tmp_path / "cache")
    out = tmp_path / "run"
    r = subprocess.run([JK, "run", experiment, *roles, "--set", "cassette=null",
                        "--out", str(out)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert "Traceback" not in r.stderr + r.stdout
    doc = json.loads((out / "results.json").read_text())
    if model == "mock/echo":  # nothing readable: a failed run, said in one line
        assert r.returncode == 1, r.stderr
        assert r.stderr.startswith("error: ") and doc["status"] == "failed"
        assert doc["calls"]["failed"] > 0 and (out / "failures.jsonl").exists()
    else:
        assert r.returncode == 0, r.stderr
        assert (out / "report.html").exists() and (out / "report.md").exists()
        if experiment == "probe_local":
            card = subprocess.run([JK, "card", str(out), "--out", str(tmp_path / "card")],
                                  capture_output=True, text=True, env=env, timeout=300)
            assert card.returncode == 0 and "Traceback" not in card.stderr, card.stderr
            assert json.loads((tmp_path / "card" / "card.json").read_text())["rows"]
