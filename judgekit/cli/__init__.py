"""The command line: ``judgekit`` (:mod:`judgekit.cli.main`), its labelling commands
(:mod:`judgekit.cli.label`) and its table commands (:mod:`judgekit.cli.tables`). Every
command wraps a Python function; none holds logic of its own."""

from __future__ import annotations

__all__ = ["main"]


def main() -> None:
    """The console script's entry point."""
    from judgekit.cli.main import main as run

    run()
