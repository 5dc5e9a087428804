"""A cassette's files, read and written as streams: where each entry lies, not the entries.

The committed file keeps the one format every judgekit version reads (a JSON object with
``entries`` and ``version``), laid out one entry per line::

    {"entries": [
    {"identity": {...}, "key": "...", "response": {...}, "sha256": "..."},
    {"identity": {...}, "key": "...", "response": {...}, "sha256": "..."}
    ], "version": 2}

It is still one JSON document (the previous version's reader and any JSON tool read it
whole, and a diff shows one line per changed entry), while a reader finds each entry's
byte range in one pass and reads it back when it is asked for, so a cassette of 10^6
calls costs an index in memory, not its entries. A file in the earlier indented layout
is read whole, once, and written in this layout by the next save that records anything.

The journal beside it (``<file>.journal``) is one entry per line, appended under a file
lock; the offsets of its lines are known when they are written.

What a crash or a full disk can leave behind is handled where it is read: a torn journal
line (a write cut short) is dropped with a warning, and cut off before the next append so
it never fuses with a good line; the committed file is written to a temporary file and
renamed, so it is either the old or the new one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypedDict, cast

from judgekit.core.errors import ConfigError
from judgekit.core.textio import json_loads
from judgekit.llm.identity import canonical_json, identity_key
from judgekit.llm.secrets import has_secret, has_secret_value
from judgekit.llm.types import CallRecord, Identity

log = logging.getLogger("judgekit.cassette")

VERSION = 2
HEAD = b'{"entries": [\n'
TAIL = b'], "version": 2}\n'
_KEY = re.compile(r"^[0-9a-f]{64}$")
_IDENTITY_FIELDS = ("provider", "model", "messages", "sampling", "schema", "template", "draw")
_RESPONSE_FIELDS = {"ok": bool, "text": str, "attempts": int, "usage": dict, "model": str}


class CassetteError(ConfigError):
    """A cassette file or one of its entries is malformed or was altered."""


class CassetteEntry(TypedDict):
    """One recorded call: what it depended on, what came back, the response's hash."""

    identity: Identity
    response: CallRecord
    sha256: str


class Scan(NamedTuple):
    """One pass over a cassette file: the open descriptor the offsets refer to (None if
    the file is absent or was read whole), key -> (offset, length) of its entry's JSON,
    the entries themselves for a file in the earlier indented layout, and the number of
    torn journal lines dropped."""

    fd: int | None
    places: dict[str, tuple[int, int]]
    whole: dict[str, CassetteEntry]
    torn: int


def response_hash(response: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(response).encode("utf-8")).hexdigest()


def entry_line(key: str, entry: CassetteEntry) -> bytes:
    """An entry as one line of JSON (no newline), as both files hold it."""
    return json.dumps({"key": key, **entry}, sort_keys=True,
                      ensure_ascii=False).encode("utf-8")


def read_at(fd: int, offset: int, length: int, key: str) -> CassetteEntry | None:
    """The entry at a byte range found by a scan; None if the bytes there are no longer
    that entry (the file was changed in place since)."""
    try:
        raw = json_loads(os.pread(fd, length, offset).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("key") != key:
        return None
    return cast(CassetteEntry, {"identity": raw.get("identity"),
                                "response": raw.get("response"), "sha256": raw.get("sha256")})


def scan_file(path: Path) -> Scan:
    """Index a committed cassette, checking every entry on the way (an altered entry is a
    one-line CassetteError, as ever); a file in the indented layout is read whole."""
    fd = _open(path, "cassette")
    if fd is None:
        return Scan(None, {}, {}, 0)
    try:
        index: dict[str, tuple[int, int]] = {}
        offset, closed = len(HEAD), False
        with os.fdopen(os.dup(fd), "rb") as fh:
            legacy = fh.readline() != HEAD
            for i, line in enumerate(() if legacy else fh):
                if line.startswith(b"]"):
                    _check_tail(path, line)
                    closed = True
                    break
                body = line.rstrip(b"\n")
                body = body[:-1] if body.endswith(b",") else body
                key, _ = check_entry(_parsed(body, f"cassette {path}: entry {i}"),
                                     f"cassette {path}: entry {i}")
                index[key] = (offset, len(body))
                offset += len(line)
    except BaseException:
        os.close(fd)
        raise
    if legacy:  # the earlier indented layout: read whole
        os.close(fd)
        return Scan(None, {}, read_entries(path), 0)
    if not closed:
        os.close(fd)
        raise CassetteError(f"cassette {path} ends before its closing line (cut short?); "
                            "restore it from version control or re-record it with "
                            "--cassette-mode all")
    return Scan(fd, index, {}, 0)


def _open(path: Path, what: str) -> int | None:
    """A read-only descriptor of ``path``; None if it does not exist."""
    try:
        return os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CassetteError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None


def _parsed(body: bytes, where: str) -> Any:
    try:
        return json_loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise CassetteError(f"{where} is not readable JSON: {exc}") from None


def _check_tail(path: Path, line: bytes) -> None:
    try:
        tail = json_loads('{"entries": [' + line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise CassetteError(f"cassette {path}: its closing line is not JSON") from None
    _check_version(path, tail.get("version") if isinstance(tail, dict) else None)


def _check_version(path: Path, version: Any) -> None:
    if version != VERSION:
        raise CassetteError(f"cassette {path} is format version {version!r}, this judgekit "
                            f"reads version {VERSION} (with content hashes); re-record it "
                            "with --cassette-mode all")


def scan_journal(journal: Path) -> Scan:
    """Index the journal: a line that is not JSON is a write cut short (a kill, a full
    disk) and is counted and skipped; a line that parses but fails its checks (an edit by
    hand) is an error."""
    fd = _open(journal, "cassette journal")
    if fd is None:
        return Scan(None, {}, {}, 0)
    index: dict[str, tuple[int, int]] = {}
    torn = offset = 0
    try:
        with os.fdopen(os.dup(fd), "rb") as fh:
            for i, line in enumerate(fh):
                body = line.rstrip(b"\n")
                here, offset = offset, offset + len(line)
                if not body.strip():
                    continue
                try:
                    raw = json_loads(body.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    torn += 1
                    continue
                key, _ = check_entry(raw, f"cassette journal {journal}: line {i + 1}")
                index[key] = (here, len(body))
    except BaseException:
        os.close(fd)
        raise
    return Scan(fd, index, {}, torn)


def warn_torn(journal: Path, torn: int) -> None:
    if torn:
        log.warning("judgekit: %s: dropped %d torn line(s) (a recorder was stopped "
                    "mid-write); those calls are asked again", journal, torn)


def write_sorted(path: Path, lines: Iterable[tuple[str, bytes]]
                 ) -> tuple[int, dict[str, tuple[int, int]]]:
    """Write the committed file from (key, entry line) pairs in key order, atomically (a
    temporary file, synced, then renamed; on any error the committed file is untouched).
    Returns an open descriptor of the new file and where each entry lies in it."""
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    where: dict[str, tuple[int, int]] = {}
    try:
        with open(tmp, "wb") as fh:
            fh.write(HEAD)
            offset = len(HEAD)
            for key, body in lines:
                if where:
                    fh.write(b",\n")
                    offset += 2
                fh.write(body)
                where[key] = (offset, len(body))
                offset += len(body)
            fh.write((b"\n" if where else b"") + TAIL)
            fh.flush()
            os.fsync(fh.fileno())
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.replace(tmp, path)
        except BaseException:
            os.close(fd)
            raise
        return fd, where
    finally:
        tmp.unlink(missing_ok=True)


def append(journal: Path, line: bytes, sync: bool = True) -> tuple[int, tuple[int, int]]:
    """Append lines; first cut off a torn tail (a write cut short by a kill or a full disk)
    so the new line never fuses with it. A short write is undone the same way. Returns
    the offset the lines start at and the journal's (device, inode)."""
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
        st = os.fstat(fd)
        return end, (st.st_dev, st.st_ino)


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
    _check_version(path, doc.get("version"))
    out: dict[str, CassetteEntry] = {}
    for i, raw in enumerate(doc["entries"]):
        key, entry = check_entry(raw, f"cassette {path}: entry {i}")
        out[key] = entry
    return out


def read_journal(journal: Path, base: Path | None = None) -> dict[str, CassetteEntry]:
    """Entries appended by recorders (see :func:`scan_journal`). If ``base`` (the
    cassette) is newer than the journal, the journal is stale and yields only the keys
    the cassette lacks."""
    scan = scan_journal(journal)
    if scan.fd is None:
        return {}
    try:
        out = {k: cast(CassetteEntry, read_at(scan.fd, off, n, k))
               for k, (off, n) in scan.places.items()}
    finally:
        os.close(scan.fd)
    warn_torn(journal, scan.torn)
    if base is not None and out and older(journal, base):
        drop = stale_keys(journal, base, out, read_entries(base, missing_ok=True))
        out = {k: v for k, v in out.items() if k not in drop}
    return out


def stale_keys(journal: Path, base: Path, journal_keys: Iterable[str],
               committed: Mapping[str, Any]) -> set[str]:
    """The journal keys a stale journal may not override, with one warning."""
    if not older(journal, base):
        return set()
    both = {k for k in journal_keys if k in committed}
    if both:
        log.warning("judgekit: %s is older than %s; its %d entr%s already in the cassette "
                    "%s ignored (the cassette wins)", journal, base, len(both),
                    "y" if len(both) == 1 else "ies", "is" if len(both) == 1 else "are")
    return both


def older(journal: Path, base: Path) -> bool:
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
