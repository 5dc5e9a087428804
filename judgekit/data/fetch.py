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
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from judgekit.errors import DataError
from judgekit.textio import read_text


@dataclass(frozen=True)
class Source:
    url: str
    filename: str
    member: str | None = None  # a file inside a zip archive
    sha256: str | None = None  # pinned checksum of the downloaded file, when known
    licence: str = ""


_ND = "https://raw.githubusercontent.com/adewynter/no_data_algorithm/main/"
SOURCES: dict[str, Source] = {
    "truthfulqa": Source("https://raw.githubusercontent.com/sylinrl/TruthfulQA/main/"
                         "TruthfulQA.csv", "TruthfulQA.csv", licence="Apache-2.0"),
    "winograd": Source("https://cs.nyu.edu/~davise/papers/WinogradSchemas/WSCollection.xml",
                       "WSCollection.xml", licence="CC BY 4.0"),
    "arc": Source("https://ai2-public-datasets.s3.amazonaws.com/arc/ARC-V1-Feb2018.zip",
                  "ARC-Challenge-Test.jsonl",
                  member="ARC-V1-Feb2018-2/ARC-Challenge/ARC-Challenge-Test.jsonl",
                  licence="CC BY-SA 4.0"),
    "west_frisian": Source(_ND + "west_frisian_dataset_with_rubric_shuffled.json",
                           "west_frisian_dataset_with_rubric_shuffled.json", licence="MIT"),
    **{f"nodata_{p}_{s}": Source(_ND + f"{p}_data_{s}_with_xor.json",
                                 f"{p}_data_{s}_with_xor.json", licence="MIT")
       for p in ("good", "other") for s in ("train", "test")},
}
GROUPS = {"nodata_bitstrings": [f"nodata_{p}_{s}" for p in ("good", "other")
                                for s in ("train", "test")]}


def data_dir() -> Path:
    env = os.environ.get("JUDGEKIT_DATA_DIR")
    return Path(env) if env else Path(user_cache_dir("judgekit")) / "data"


def cached_path(name: str) -> Path:
    return data_dir() / _source(name).filename


def _source(name: str) -> Source:
    if name not in SOURCES:
        raise DataError(f"unknown dataset {name!r}; `judgekit data fetch` knows "
                        f"{', '.join([*SOURCES, *GROUPS])}")
    return SOURCES[name]


def fetch(name: str, *, url: str | None = None, sha256: str | None = None,
          timeout: float = 60.0) -> Path:
    """Download ``name`` (or every file of a group) into the data cache; return its path
    (for a group, the folder)."""
    if name in GROUPS:
        if url is not None:
            raise DataError(f"--url names one file; {name} is a group of "
                            f"{len(GROUPS[name])} files")
        for member in GROUPS[name]:
            fetch(member, timeout=timeout)
        return data_dir()
    src = _source(name)
    target = data_dir() / src.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    body = _download(url or src.url, timeout)
    if src.member is not None:
        body = _unzip(body, src.member, url or src.url)
    digest = hashlib.sha256(body).hexdigest()
    expected = sha256 or src.sha256 or _recorded().get(src.filename)
    if expected is not None and digest != expected.lower():
        raise DataError(f"{name}: the download's sha256 is {digest}, expected {expected}; "
                        "the file changed at its source or in transit (not saved)")
    tmp = target.with_name(f".{target.name}.part")
    tmp.write_bytes(body)
    os.replace(tmp, target)
    _record(src.filename, digest)
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
        doc = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise DataError(f"{p} is not JSON ({exc}); delete it to re-record checksums") from exc
    return {str(k): str(v) for k, v in doc.items()}


def _record(filename: str, digest: str) -> None:
    doc = {**_recorded(), filename: digest}
    tmp = _checksums().with_name(".checksums.json.part")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, _checksums())
