"""The installed ``judgekit view`` on a free loopback port, for tests that talk to it."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .test_standalone import EXE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def viewer(folder: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """(its base URL, the process), once it accepts connections; stopped on exit."""
    port = free_port()
    proc = subprocess.Popen([EXE, "view", str(folder), "--port", str(port), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(proc.stderr.read() if proc.stderr else
                                         "no server") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
