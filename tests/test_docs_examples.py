"""Every code block in docs/ runs as written, or says why it does not: Python and bash
blocks are executed (each in a fresh folder, offline, with the clone's experiments/,
examples/ and cassettes/ beside it); a block that cannot run here (a key, a cluster, a
compile of many minutes, a file of your own) is preceded by ``<!-- not run: REASON -->``;
data blocks (text, json, yaml, csv) are shown, not run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DATA = {"text", "json", "jsonl", "yaml", "csv", "toml"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!-- not run: (\S[^>]*?) -->\s*$")


def blocks() -> list[tuple[str, int, str, str, str | None]]:
    """(page, line, language, code, the not-run reason) of every fenced block."""
    out = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            why = NOT_RUN.search(before)
            out.append((page.relative_to(DOCS).as_posix(), text[:m.start()].count("\n") + 1,
                        m.group(1), m.group(2), why.group(1) if why else None))
    return out


RUNNABLE = [b for b in blocks() if b[2] in ("bash", "python") and b[4] is None]


def test_every_block_is_run_shown_as_data_or_says_why_not():
    found = blocks()
    assert len(found) >= 20
    unknown = [f"{p}:{n} ```{lang}" for p, n, lang, _, why in found
               if lang not in DATA | {"bash", "python"} and why is None]
    assert unknown == []  # an unlabelled block says what it is
    assert len(RUNNABLE) >= 8  # most of them run
    assert [why for *_, why in found if why is not None and len(why) < 20] == []


def _env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JUDGEKIT_", "OPENAI", "ANTHROPIC")) and k != "PATH"}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
               HOME=str(tmp), JUDGEKIT_CACHE_DIR=str(tmp / "cache"),
               JUDGEKIT_DATA_DIR=str(tmp / "data"), MPLBACKEND="Agg")
    return env


@pytest.mark.parametrize("page,line,lang,code,why", RUNNABLE,
                         ids=[f"{p}:{n}" for p, n, *_ in RUNNABLE])
def test_the_block_runs(tmp_path, page, line, lang, code, why):
    for name in ("experiments", "examples", "cassettes"):
        (tmp_path / name).symlink_to(ROOT / name)
    if lang == "python":
        (tmp_path / "block.py").write_text(code, encoding="utf-8")
        cmd = [sys.executable, "block.py"]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    r = subprocess.run(cmd, cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"docs/{page}:{line}\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"
