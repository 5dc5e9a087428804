"""The packaged experiments replay on a core install: with llama-cpp-python and litellm
hidden from the interpreter, `judgekit run demo | nodata_west_frisian | probe_local`
with no flag exit 0, rewrite nothing in the repository and leave no lock file; a call
that misses the cassette is then the one-line missing-extra error (exit 2)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest

from .conftest import ROOT

BLOCK = '''
import importlib.abc, sys
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("llama_cpp", "litellm"):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden: core install)")
        return None
sys.meta_path.insert(0, _Hide())
'''


def _env(tmp_path):
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCK)
    return {"PATH": "", "HOME": str(tmp_path), "PYTHONPATH": f"{site}:{ROOT}",
            "JUDGEKIT_CACHE_DIR": str(tmp_path / "cache"),
            "JUDGEKIT_DATA_DIR": str(tmp_path / "data")}


def _digest():
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ROOT / "cassettes").iterdir())}


@pytest.mark.parametrize("name", ["demo", "nodata_west_frisian", "probe_local"])
def test_packaged_experiment_replays_without_extras(tmp_path, name):
    env = _env(tmp_path)
    hidden = subprocess.run([sys.executable, "-c", "import llama_cpp"], env=env,
                            capture_output=True, text=True, cwd=tmp_path)
    assert hidden.returncode == 1 and "hidden: core install" in hidden.stderr
    before = _digest()
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", name], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "not a criterion" not in r.stderr  # the shipped excerpt passes its data check
    assert _digest() == before  # nothing rewritten, no lock left in cassettes/
    assert (tmp_path / "runs").is_dir()


def test_a_cassette_miss_needs_the_extra(tmp_path):
    env = _env(tmp_path)
    cas = json.loads((ROOT / "cassettes" / "probe_local.json").read_text())
    entries = cas["entries"]
    cas["entries"] = entries[1:] if isinstance(entries, list) else dict(
        sorted(entries.items())[1:])
    (tmp_path / "probe.json").write_text(json.dumps(cas))
    cfg = (ROOT / "experiments" / "probe_local.yaml").read_text().replace(
        "../cassettes/probe_local.json", str(tmp_path / "probe.json")).replace(
        " data/", f" {ROOT / 'experiments' / 'data'}/")
    (tmp_path / "probe.yaml").write_text(cfg)
    r = subprocess.run([sys.executable, "-m", "judgekit.cli", "run", str(tmp_path / "probe.yaml"),
                        "--out", str(tmp_path / "o")], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=600)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "needs the optional package llama-cpp-python" in r.stderr
    assert "judgekit[local]" in r.stderr


def test_hints_lead_somewhere_that_works(tmp_path):
    """No key -> the local model or a packaged cassette; `cassette list` names the
    packaged cassettes and the command that replays each (which exits 0, above)."""
    env = {"PATH": "", "HOME": str(tmp_path), "JUDGEKIT_CACHE_DIR": str(tmp_path / "c")}
    cli = [sys.executable, "-m", "judgekit.cli"]
    r = subprocess.run(cli + ["run", "case_study"], env=env, capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 2
    assert "OPENAI_API_KEY" in r.stderr and "--model ROLE=local/gemma-3-270m" in r.stderr
    assert "judgekit cassette list" in r.stderr
    r = subprocess.run(cli + ["cassette", "list"], env=env, capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    names = [line.split()[0] for line in r.stdout.splitlines()]
    assert names == ["demo", "nodata_west_frisian", "probe_local"]
    assert "judgekit run demo --cassette-mode none" in r.stdout
    r = subprocess.run(cli + ["run", "case_study", "--cassette-mode", "none"], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert r.returncode == 2 and "local/gemma-3-270m" in r.stderr
