"""Cassettes: recorded responses, committed, replayed without keys or network.

A cassette is a JSON file whose entries are sorted by key; each holds the
request identity, the response (text, parsed object, usage, model used) and the
sha256 of the response, checked on load so a response edited by hand is an
error, never served. Modes: ``none`` replay only, ``new`` record misses,
``all`` re-record.

Recording is crash-safe and safe for several processes: each entry is appended
to ``<file>.journal`` (one JSON line, flushed) as soon as it arrives, under a
file lock, so kill -9 loses at most the calls in flight; ``save`` compacts the
file, the journal and this process's entries into the sorted file, again under
the lock, so two writers never drop each other's entries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from filelock import FileLock

from judgekit.errors import CassetteMissError, ConfigError
from judgekit.llm.identity import canonical_json, identity_key, nearest
from judgekit.llm.secrets import has_secret, scrub

log = logging.getLogger("judgekit.cassette")

MODES = ("none", "new", "all")
VERSION = 2
_KEY = re.compile(r"^[0-9a-f]{64}$")
_IDENTITY_FIELDS = ("provider", "model", "messages", "sampling", "schema", "template", "draw")
_RESPONSE_FIELDS = {"ok": bool, "text": str, "attempts": int, "usage": dict, "model": str}


class CassetteError(ConfigError):
    """A cassette file or one of its entries is malformed or was altered."""


def response_hash(response: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(response).encode("utf-8")).hexdigest()


class Cassette:
    def __init__(self, path: str | Path, mode: str = "new") -> None:
        if mode not in MODES:
            raise ConfigError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        self.journal = self.path.with_name(self.path.name + ".journal")
        self.mode = mode
        self.entries: dict[str, dict[str, Any]] = {}
        self.recorded: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()
        self._lock = threading.Lock()
        self._file_lock = FileLock(str(self.path.with_name(self.path.name + ".lock")))
        if mode == "none" and not self.path.exists() and not self.journal.exists():
            raise CassetteMissError(f"cassette {self.path} does not exist; record it with "
                                    "--cassette-mode new")
        if mode != "all":
            self.entries = read_all(self.path, self.journal)

    @property
    def dirty(self) -> bool:
        return bool(self.recorded)

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.used.add(key)
            return entry["response"]  # type: ignore[no-any-return]
        return None

    def forget(self, key: str) -> None:
        """Drop an entry this run will re-record (e.g. it no longer fits the output model)."""
        self.entries.pop(key, None)

    def miss_error(self, key: str, identity: dict[str, Any],
                   why: str | None = None) -> CassetteMissError:
        if why:
            return CassetteMissError(f"cassette {self.path}: entry {key[:12]} cannot be "
                                     f"replayed (mode none): {why}")
        keys = list(self.entries)
        if not keys:
            return CassetteMissError(f"cassette {self.path} is empty; no entry for key {key[:12]}")
        idx, diff = nearest(identity, [self.entries[k]["identity"] for k in keys])
        shown = ", ".join(diff[:8]) + (" ..." if len(diff) > 8 else "")
        tmpl = identity.get("template", {}).get("name")
        hint = ""
        if any(d.startswith("template.hash") for d in diff):
            hint = f" (the template {tmpl} changed since the cassette was recorded)"
        return CassetteMissError(
            f"cassette {self.path} has no entry for key {key[:12]} (mode none); nearest "
            f"{keys[idx][:12]} differs in: {shown}{hint}"
        )

    def put(self, key: str, identity: dict[str, Any], response: dict[str, Any]) -> None:
        """Record an entry and append it to the journal at once (crash-safe)."""
        identity, response = scrub(identity), scrub(response)
        entry = {"identity": identity, "response": response, "sha256": response_hash(response)}
        line = json.dumps({"key": key, **entry}, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.entries[key] = entry
            self.recorded[key] = entry
            self.used.add(key)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock, open(self.journal, "a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()

    def save(self) -> None:
        """Compact file + journal + this run's entries into the sorted file."""
        with self._lock:
            if not self.recorded and not self.journal.exists():
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock:
                base = {} if self.mode == "all" else read_entries(self.path, missing_ok=True)
                merged = {**base, **read_journal(self.journal), **self.recorded}
                _write(self.path, merged)
                self.journal.unlink(missing_ok=True)
            self.recorded = {}

    def unused(self) -> list[str]:
        return sorted(set(self.entries) - self.used)


def _write(path: Path, entries: dict[str, dict[str, Any]]) -> None:
    doc = {"version": VERSION,
           "entries": [{"key": k, **entries[k]} for k in sorted(entries)]}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    os.replace(tmp, path)


def read_all(path: Path, journal: Path) -> dict[str, dict[str, Any]]:
    return {**read_entries(path, missing_ok=True), **read_journal(journal)}


def read_entries(path: Path, *, missing_ok: bool = False) -> dict[str, dict[str, Any]]:
    """Entries of a cassette file, each checked; a bad one is a one-line CassetteError."""
    if missing_ok and not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CassetteError(f"cassette {path} is not readable JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise CassetteError(f"cassette {path} has no 'entries' list; is it a judgekit cassette?")
    if doc.get("version") != VERSION:
        raise CassetteError(f"cassette {path} is format version {doc.get('version')!r}, this "
                            f"judgekit reads version {VERSION} (with content hashes); "
                            "re-record it with --cassette-mode all")
    out: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(doc["entries"]):
        key, entry = check_entry(raw, f"cassette {path}: entry {i}")
        out[key] = entry
    return out


def read_journal(journal: Path) -> dict[str, dict[str, Any]]:
    """Entries appended by recorders; a torn last line (a kill mid-write) is skipped."""
    if not journal.exists():
        return {}
    lines = journal.read_text(encoding="utf-8").split("\n")
    out: dict[str, dict[str, Any]] = {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1:  # no newline yet: the write was cut short
                log.warning("judgekit: %s: skipped a partial last line (a recorder was "
                            "stopped mid-write)", journal)
                continue
            raise CassetteError(f"cassette journal {journal}: line {i + 1} is not JSON: "
                                f"{exc}") from exc
        key, entry = check_entry(raw, f"cassette journal {journal}: line {i + 1}")
        out[key] = entry
    return out


def check_entry(raw: Any, where: str) -> tuple[str, dict[str, Any]]:
    """Validate one entry's shape and content hash; return (key, entry)."""
    if not isinstance(raw, dict):
        raise CassetteError(f"{where} is not an object")
    key = raw.get("key")
    if not isinstance(key, str) or not _KEY.match(key):
        raise CassetteError(f"{where}: field key must be a 64-character sha256 hex string")
    where = f"{where} ({key[:12]})"
    ident, resp = raw.get("identity"), raw.get("response")
    if not isinstance(ident, dict):
        raise CassetteError(f"{where}: field identity is missing or not an object")
    missing = [f for f in _IDENTITY_FIELDS if f not in ident]
    if missing:
        raise CassetteError(f"{where}: identity lacks {', '.join(missing)}")
    if not isinstance(resp, dict):
        raise CassetteError(f"{where}: field response is missing or not an object")
    for name, typ in _RESPONSE_FIELDS.items():
        if not isinstance(resp.get(name), typ):
            raise CassetteError(f"{where}: response.{name} must be a {typ.__name__}")
    if resp["ok"] and not isinstance(resp.get("parsed"), dict):
        raise CassetteError(f"{where}: response.parsed must be an object when ok is true")
    if raw.get("sha256") != response_hash(resp):
        raise CassetteError(f"{where}: the response does not match its sha256 (edited by "
                            "hand?); re-record the entry with --cassette-mode new")
    return key, {"identity": ident, "response": resp, "sha256": raw["sha256"]}


def verify(path: Path) -> list[str]:
    """Every problem in a cassette: malformed or altered entries, keys that do not match
    their identities, duplicates, key-shaped secrets, parsed values that fail the schema."""
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{path}: not readable JSON: {exc}"]
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        return [f"{path}: no 'entries' list; is it a judgekit cassette?"]
    problems = []
    if doc.get("version") != VERSION:
        problems.append(f"{path}: format version {doc.get('version')!r}, expected {VERSION}")
    if has_secret(text):
        problems.append(f"{path}: contains something shaped like an API key")
    seen: set[str] = set()
    for i, raw in enumerate(doc["entries"]):
        try:
            key, entry = check_entry(raw, f"{path}: entry {i}")
        except CassetteError as exc:
            problems.append(str(exc))
            continue
        if key in seen:
            problems.append(f"{path}: entry {i} ({key[:12]}) duplicates an earlier key")
        seen.add(key)
        if identity_key(entry["identity"]) != key:
            problems.append(f"{path}: entry {i} ({key[:12]}) key does not match its identity")
        bad = _schema_problem(entry)
        if bad:
            problems.append(f"{path}: entry {i} ({key[:12]}) parsed value fails the stage "
                            f"schema: {bad}")
    return problems


def _schema_problem(entry: dict[str, Any]) -> str | None:
    resp, schema = entry["response"], entry["identity"].get("schema")
    if not resp["ok"] or not isinstance(schema, dict):
        return None
    import jsonschema

    try:
        jsonschema.validate(resp["parsed"], schema)
    except jsonschema.ValidationError as exc:
        loc = ".".join(str(p) for p in exc.absolute_path) or "<root>"
        return f"{loc}: {exc.message[:200]}"
    except jsonschema.SchemaError as exc:
        return f"the recorded schema is invalid: {exc.message[:200]}"
    return None
