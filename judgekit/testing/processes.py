"""Finding the processes a test or benchmark kills on purpose (Ray's actors carry their
class in the process title, e.g. ``ray::MapWorker(MapBatches(RequestActor))``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pids_titled"]


def pids_titled(fragment: str) -> list[int]:
    """PIDs of live processes whose command line contains ``fragment`` (Linux /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fragment in cmd:
            out.append(int(d.name))
    return sorted(out)
