"""`judgekit data fetch NAME`: full datasets from their canonical locations into a
local data cache, checksummed.

Each download is verified against a sha256: the one given with ``--sha256`` (or
pinned below), else the one recorded when the file was first fetched (trust on
first use, kept in ``checksums.json`` beside the files), so a later fetch that
changes is an error rather than a silent swap. Files land atomically.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from platformdirs import user_cache_dir

from judgekit.core.errors import DataError
from judgekit.core.textio import json_loads, read_text
from judgekit.data.registry import Dataset, all_datasets, groups


def data_dir() -> Path:
    env = os.environ.get("JUDGEKIT_DATA_DIR")
    return Path(env) if env else Path(user_cache_dir("judgekit")) / "data"


def cached_path(name: str) -> Path:
    return data_dir() / str(_source(name).filename)


def _source(name: str) -> Dataset:
    ds = next((d for d in all_datasets() if d.name == name), None)
    if ds is None or not ds.fetchable:
        known = [d.name for d in all_datasets() if d.fetchable] + list(groups())
        raise DataError(f"unknown dataset {name!r}; `judgekit data fetch` knows "
                        f"{', '.join(known)}")
    return ds


def fetch(name: str, *, url: str | None = None, sha256: str | None = None,
          timeout: float = 60.0) -> Path:
    """Download ``name`` (or every file of a group) into the data cache; return its path
    (for a group, the folder)."""
    members = groups().get(name)
    if members:
        if url is not None:
            raise DataError(f"--url names one file; {name} is a group of "
                            f"{len(members)} files")
        for member in members:
            fetch(member, timeout=timeout)
        return data_dir()
    src = _source(name)
    target = data_dir() / str(src.filename)
    target.parent.mkdir(parents=True, exist_ok=True)
    where = url or str(src.url)
    body = _download(where, timeout)
    if src.member is not None:
        body = _unzip(body, src.member, where)
    digest = hashlib.sha256(body).hexdigest()
    expected = sha256 or src.sha256 or _recorded().get(str(src.filename))
    if expected is not None and digest != expected.lower():
        raise DataError(f"{name}: the download's sha256 is {digest}, expected {expected}; "
                        "the file changed at its source or in transit (not saved)")
    tmp = target.with_name(f".{target.name}.part")
    tmp.write_bytes(body)
    os.replace(tmp, target)
    _record(str(src.filename), digest)
    return target


def _download(url: str, timeout: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - https/http
            return bytes(resp.read())
    except urllib.error.HTTPError as exc:
        raise DataError(f"cannot fetch {url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"cannot fetch {url}: {reason}; give a local path instead") from exc


def _unzip(body: bytes, member: str, url: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            return zf.read(member)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise DataError(f"{url}: no {member} in the archive ({exc})") from exc


def _checksums() -> Path:
    return data_dir() / "checksums.json"


def _recorded() -> dict[str, str]:
    p = _checksums()
    if not p.exists():
        return {}
    try:
        doc = json_loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise DataError(f"{p} is not JSON ({exc}); delete it to re-record checksums") from exc
    return {str(k): str(v) for k, v in doc.items()}


def _record(filename: str, digest: str) -> None:
    doc = {**_recorded(), filename: digest}
    tmp = _checksums().with_name(".checksums.json.part")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, _checksums())
