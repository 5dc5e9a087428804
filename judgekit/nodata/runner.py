"""Entry point of `judgekit run` for method: nodata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgekit.nodata.config import NoDataConfig


def run(cfg: NoDataConfig, out: Path) -> dict[str, Any]:
    if cfg.experiment == "synthetic":
        from judgekit.nodata import synthetic

        return synthetic.run(cfg, out)
    from judgekit.nodata import audit

    return audit.run(cfg, out)
