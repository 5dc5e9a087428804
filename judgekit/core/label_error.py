"""The annotators' label error, one setting for every surface (``analyse``, ``label``,
the viewer, the probe): a stated flip rate in [0, 0.5), or ``"repeats"`` (estimated from
the items two annotators labelled), or None (labels taken as error-free). Parsed once,
here; estimated once, by :func:`judgekit.stats.ppi.resolve_label_error`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from judgekit.core.errors import ConfigError

__all__ = ["LabelErrorSetting", "parse_label_error"]

# what a config holds (None: labels taken as error-free)
LabelErrorSetting = Annotated[float, Field(ge=0, lt=0.5)] | Literal["repeats"]


def parse_label_error(raw: object) -> float | Literal["repeats"] | None:
    """``--label-error``: a rate in [0, 0.5), or "repeats"; None (or empty): labels
    taken as error-free. Anything else is one line saying what to give."""
    if raw is None or raw == "":
        return None
    if str(raw).strip().casefold() == "repeats":
        return "repeats"
    try:
        e = float(str(raw))
    except ValueError:
        raise ConfigError(f"--label-error {raw!r}: give a rate in [0, 0.5) or "
                          "'repeats'") from None
    if not 0.0 <= e < 0.5:
        raise ConfigError(f"--label-error {raw!r}: give a rate in [0, 0.5) (the chance an "
                          "annotator flips a label) or 'repeats'")
    return e
