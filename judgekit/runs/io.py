"""Writing run outputs: deterministic JSON, JSONL and text, secrets scrubbed, each file
replaced atomically."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from judgekit.core.errors import ConfigError, OutputError
from judgekit.core.jsontypes import JSONObject
from judgekit.core.textio import clean
from judgekit.llm.secrets import scrub, secret_values


def write_json(path: Path, data: JSONObject) -> None:
    write_text(path, json.dumps(scrub(clean(data)), indent=2, sort_keys=True,
                                ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically: a fresh temporary file beside it (created
    exclusively, never through a link someone planted), flushed to disk, then renamed
    over ``path`` (which replaces a link at ``path`` rather than writing through it)."""
    write_bytes(path, scrub(text).encode("utf-8"))


def write_lines(path: Path, lines: Iterable[str]) -> int:
    """Text ``lines`` into ``path`` atomically like ``write_text``, streamed (a large
    detail file is never held whole), each scrubbed of secrets; returns how many."""
    count = [0]
    secrets = secret_values()  # read once per file: re-reading the environment for every
    # line cost 25 of 75 s at 10^5 rows

    def chunks() -> Iterator[bytes]:
        buf: list[bytes] = []
        for line in lines:
            buf.append(scrub(line, secrets).encode("utf-8"))
            count[0] += 1
            if len(buf) >= 1024:
                yield b"".join(buf)
                buf.clear()
        yield b"".join(buf)
    _atomic(path, chunks())
    return count[0]


def write_bytes(path: Path, data: bytes) -> None:
    """``data`` into ``path`` atomically (see ``write_text``); a folder that cannot be
    written (read-only, full) is an :class:`OutputError` naming the file, and ``path``
    keeps its previous content."""
    _atomic(path, (data,))


def write_with(path: Path, fill: Callable[[BinaryIO], object]) -> None:
    """What ``fill`` writes to a binary file (seekable: e.g. ``numpy.savez``), into
    ``path`` atomically, as ``write_bytes`` (no copy of it held in memory first)."""
    _atomic(path, fill=fill)


def _atomic(path: Path, chunks: Iterable[bytes] = (),
            fill: Callable[[BinaryIO], object] | None = None) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(tmp, flags, 0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
                if fill is not None:
                    fill(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc} (a read-only folder "
                          "or a full disk?); it keeps its previous content, and the run's "
                          "answers are cached: rerun with another --out") from None


def write_failures(out: Path, log: list[JSONObject]) -> dict[str, int]:
    """Write the run's failure log (one JSON line per failed call, with its transcript)
    as failures.jsonl, and return the failed-call counts by kind."""
    path = out / "failures.jsonl"
    if log:
        write_text(path, "".join(json.dumps(scrub(clean(r)), sort_keys=True,
                                            ensure_ascii=False) + "\n" for r in log))
    elif path.exists():
        path.unlink()
    counts: dict[str, int] = {}
    for r in log:
        counts[r["kind"]] = counts.get(r["kind"], 0) + 1
    return counts


# The output folder's lock (judgekit.runs.guard): one run per folder at a time.
LOCK_NAME = ".judgekit.lock"

# Which files a folder's judgekit outputs are: written last, after everything else, by
# record_outputs; --overwrite removes exactly these (anything else in the folder, a
# user's holiday.png included, is left alone).
MANIFEST = ".judgekit-outputs.json"
# A folder written before manifests existed: its fixed-name outputs (never *.png, which
# cannot be told from a user's own pictures).
LEGACY_OUTPUTS = ("results.json", "report.md", "report.html", "failures.jsonl",
                  "queries.jsonl", "items.jsonl", "replica_failures.jsonl", "card.json",
                  "compare.json", "differences.csv")
Snapshot = dict[str, tuple[int, int, int]]


def snapshot(out: Path) -> Snapshot:
    """Every regular file in ``out`` (not links): name -> (inode, size, mtime)."""
    if not out.is_dir():
        return {}
    found: Snapshot = {}
    for p in out.iterdir():
        st = p.lstat()
        if p.is_file() and not p.is_symlink() and p.name not in (LOCK_NAME, MANIFEST):
            found[p.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return found


def record_outputs(out: Path, before: Snapshot, kind: str) -> None:
    """Name what this write put in ``out`` (files new or changed since ``before``)."""
    now = snapshot(out)
    files = sorted(n for n, v in now.items() if before.get(n) != v)
    write_json(out / MANIFEST, {"kind": kind, "files": files})


def _previous(out: Path) -> tuple[str | None, list[str]]:
    """(what the folder holds: run, card, compare or None; its output files)."""
    try:
        doc = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        kind, files = str(doc["kind"]), [str(f) for f in doc["files"]]
        return kind, [f for f in files if "/" not in f and "\\" not in f and f not in
                      ("", ".", "..")]
    except FileNotFoundError:  # no manifest: a folder from before manifests, or none
        return _legacy(out)
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigError(f"{out / MANIFEST} is unreadable; remove it or choose another "
                          "--out") from None


def _legacy(out: Path) -> tuple[str | None, list[str]]:
    legacy = [n for n in LEGACY_OUTPUTS if (out / n).is_file()]
    held = ("run" if "results.json" in legacy else "card" if "card.json" in legacy else
            "compare" if "compare.json" in legacy else None)
    return held, legacy if held else []


def prepare_out(out: Path, *, overwrite: bool, inputs: tuple[Path, ...] = (),
                kind: str = "run") -> Snapshot:
    """A run (card, comparison) writes into a fresh folder; a non-empty one needs
    ``overwrite``, which removes exactly the previous outputs of the same kind (so no
    stale figure survives, and nothing another program wrote is touched); a folder
    holding another kind (a card into a run's folder) is refused. Never the input.
    Returns the folder's files as they are now, for ``record_outputs``."""
    out = Path(out)
    for p in inputs:
        if p.exists() and out.resolve() in (p.resolve(), *p.resolve().parents):
            raise ConfigError(f"--out {out} contains the run's input {p}; choose another folder")
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise ConfigError(f"--out {out} is a file or a link; give a folder")
    if out.is_dir() and any(p.name != LOCK_NAME for p in out.iterdir()):
        held, files = _previous(out)
        if held is not None and held != kind:
            raise ConfigError(f"--out {out} holds a judgekit {held}; write the {kind} to "
                              "another folder")
        if not overwrite:
            raise ConfigError(f"output folder {out} is not empty; choose a new --out or pass "
                              "--overwrite to replace the previous outputs")
        try:
            for name in files:
                f = out / name
                if f.is_symlink() or f.is_file():
                    f.unlink()
            (out / MANIFEST).unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot clear {out}: {exc.strerror or exc}") from None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {out}: {exc.strerror or exc} (a read-only "
                          "folder?)") from None
    return snapshot(out)


