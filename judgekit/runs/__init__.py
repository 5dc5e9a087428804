"""Run folders: the one place that claims, writes and reads a run's folder
(:mod:`judgekit.runs.folder`, :mod:`judgekit.runs.io`), the guard that leaves a failed
run's folder explained (:mod:`judgekit.runs.guard`), and config loading
(:mod:`judgekit.runs.config`)."""

__all__: list[str] = []
