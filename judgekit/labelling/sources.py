"""What ``judgekit label`` and the viewer label: a run folder's items (through its
item index when it still holds) or a verdicts file's rows. Labelling consumes run
folders; nothing below it reads labels this way."""

from __future__ import annotations

from pathlib import Path

from judgekit.analysis.source import Source, from_run, load
from judgekit.core.errors import ConfigError, DataError
from judgekit.labelling.snapshot import source
from judgekit.runs.folder import item_details, items_of, load_results

__all__ = ["label_source"]


def label_source(path: Path) -> Source:
    """What ``judgekit label`` and the viewer label: a run folder's items from its
    method's ``items`` hook, or a verdicts file's rows
    (:class:`judgekit.analysis.source.Source`)."""
    if not path.is_dir():
        return load(path)
    try:
        result = load_results(path)
        spec = result.spec
        if spec is not None and spec.label_index is not None and \
                spec.label_index(result) is not None:
            src = source(path)  # the run's labelling index, when it still holds
            if src is not None:
                return src
        got = items_of(result)  # the results already loaded
    except (ConfigError, DataError) as exc:
        raise DataError(f"{path}: not a run folder ({exc})") from None
    return from_run(path, result.method, item_details(result), got)
