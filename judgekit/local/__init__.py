"""Serving the packaged local model (llama.cpp) on loopback."""

__all__: list[str] = []
