"""Figures (matplotlib, Agg backend, deterministic metadata)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> None:
    """The figure as PNG, written atomically (never through a link at ``path``)."""
    import io

    from judgekit.runs.io import write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    write_bytes(path, buf.getvalue())


def lines(path: Path, series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *,
          xlabel: str, ylabel: str, title: str, ylim: tuple[float, float] | None = None) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim:
        ax.set_ylim(*ylim)
    ax.grid(alpha=0.3)
    # beside the axes, never over the lines (savefig's tight box keeps it in the file)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
    save(fig, path)
