"""The batch journal: which provider batches a cache directory has submitted, so an
interrupted run polls them instead of paying again."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path

from filelock import FileLock

from judgekit.llm.types import JSONObject

__all__ = ["BatchJournal"]


class BatchJournal:
    """``batches.jsonl`` in the cache directory: one line per event (submitted,
    collected, cancelled), and ``batches/<id>.keys`` listing each batch's request keys."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.path = self.dir / "batches.jsonl"
        self.keys_dir = self.dir / "batches"
        self.lock = FileLock(str(self.dir / "batches.lock"))

    def record(self, entry: JSONObject) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
            fh.flush()

    def write_keys(self, keys: Sequence[str]) -> str:
        self.keys_dir.mkdir(parents=True, exist_ok=True)
        name = f"{uuid.uuid4().hex}.keys"
        (self.keys_dir / name).write_text("\n".join(keys) + "\n", encoding="utf-8")
        return name

    def keys(self, entry: JSONObject) -> list[str]:
        p = self.keys_dir / str(entry.get("keys_file"))
        return p.read_text(encoding="utf-8").split() if p.exists() else []

    def entries(self) -> dict[str, JSONObject]:
        """The latest state of every batch, by id."""
        out: dict[str, JSONObject] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a kill mid-write
            out[e["id"]] = {**out.get(e["id"], {}), **e}
        return out

    def open_batches(self, provider: str, base_url: str) -> list[JSONObject]:
        return [e for e in self.entries().values() if e.get("provider") == provider
                and e.get("base_url") == base_url and e.get("status") == "submitted"]
