"""Cassettes: recorded responses, committed, replayed without keys or network.

A cassette is a JSON file whose entries are sorted by key; each holds the
request identity and the response (text, parsed object, usage, model used).
Modes: ``none`` replay only, ``new`` record misses, ``all`` re-record.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from judgekit.errors import CassetteMissError, ConfigError
from judgekit.llm.identity import identity_key, nearest
from judgekit.llm.secrets import scrub

MODES = ("none", "new", "all")


class Cassette:
    def __init__(self, path: str | Path, mode: str = "new") -> None:
        if mode not in MODES:
            raise ConfigError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        self.mode = mode
        self.entries: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()
        self.dirty = False
        self._lock = threading.Lock()
        if mode != "all" and self.path.exists():
            self.entries = load_entries(self.path)
        elif mode == "none":
            raise CassetteMissError(f"cassette {self.path} does not exist; record it with "
                                    "--cassette-mode new")

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.used.add(key)
            return entry["response"]  # type: ignore[no-any-return]
        return None

    def miss_error(self, key: str, identity: dict[str, Any]) -> CassetteMissError:
        keys = list(self.entries)
        if not keys:
            return CassetteMissError(f"cassette {self.path} is empty; no entry for key {key[:12]}")
        idx, diff = nearest(identity, [self.entries[k]["identity"] for k in keys])
        shown = ", ".join(diff[:8]) + (" ..." if len(diff) > 8 else "")
        return CassetteMissError(
            f"cassette {self.path} has no entry for key {key[:12]} (mode none); nearest "
            f"{keys[idx][:12]} differs in: {shown}"
        )

    def put(self, key: str, identity: dict[str, Any], response: dict[str, Any]) -> None:
        with self._lock:
            self.entries[key] = {"identity": scrub(identity), "response": scrub(response)}
            self.used.add(key)
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "version": 1,
            "entries": [{"key": k, **self.entries[k]} for k in sorted(self.entries)],
        }
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.replace(tmp, self.path)
        self.dirty = False

    def unused(self) -> list[str]:
        return sorted(set(self.entries) - self.used)


def load_entries(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cassette {path} is not readable JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise ConfigError(f"cassette {path} has no 'entries' list; is it a judgekit cassette?")
    return {e["key"]: {"identity": e["identity"], "response": e["response"]}
            for e in doc["entries"]}


def verify(path: Path) -> list[str]:
    """Problems in a cassette: keys that do not match identities, key-shaped secrets."""
    problems = []
    text = path.read_text(encoding="utf-8")
    if scrub(text) != text:
        problems.append(f"{path}: contains something shaped like an API key")
    for key, entry in load_entries(path).items():
        if identity_key(entry["identity"]) != key:
            problems.append(f"{path}: entry {key[:12]} key does not match its identity")
        if "text" not in entry["response"]:
            problems.append(f"{path}: entry {key[:12]} has no response text")
    return problems
