"""Every Python block in the README runs as written (in a fresh folder, offline)."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import ROOT


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def test_the_readme_has_python_blocks():
    assert len(_blocks()) >= 1


def test_every_readme_python_block_runs(tmp_path):
    for i, code in enumerate(_blocks()):
        script = tmp_path / f"block{i}.py"
        script.write_text(code, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, f"README python block {i}:\n{proc.stderr[-3000:]}"
