"""The names of a run folder's files (no imports: anything may read them)."""

RESULTS = "results.json"  # the one name of a run's results file

__all__ = ["RESULTS"]
