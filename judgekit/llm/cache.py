"""On-disk response cache (diskcache), keyed by the request identity's sha256."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import diskcache
from platformdirs import user_cache_dir

_STATS_KEY = "__judgekit_last_run_stats__"


def default_cache_dir() -> Path:
    env = os.environ.get("JUDGEKIT_CACHE_DIR")
    return Path(env) if env else Path(user_cache_dir("judgekit")) / "responses"


@dataclass
class CacheStats:
    entries: int
    hits: int
    misses: int
    bytes: int
    directory: str


class ResponseCache:
    """A thin wrapper over diskcache that counts hits and misses."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory) if directory else default_cache_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(self.directory), size_limit=2**34)
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._cache.get(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value  # type: ignore[no-any-return]

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._cache.set(key, value)

    def close(self) -> None:
        if self.hits or self.misses:
            self._cache.set(_STATS_KEY, {"hits": self.hits, "misses": self.misses})
        self._cache.close()

    def stats(self) -> CacheStats:
        last = self._cache.get(_STATS_KEY) or {"hits": 0, "misses": 0}
        entries = len(self._cache) - (1 if _STATS_KEY in self._cache else 0)
        return CacheStats(entries, int(last["hits"]), int(last["misses"]),
                          int(self._cache.volume()), str(self.directory))

    def clear(self) -> int:
        return int(self._cache.clear())
