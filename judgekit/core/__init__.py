"""The core every surface builds on: settings, the method spec and its hooks, the
generic registry, results and payload models, the pipeline, named random streams,
errors and the small text/JSON helpers. Nothing here names a method."""

__all__: list[str] = []
