"""Which model a local OpenAI-compatible server serves (``GET /models``), and whether a
name means it. No imports from the rest of judgekit."""

from __future__ import annotations

import re
from typing import Any


def served_ids(data: Any) -> list[str]:
    """Model ids from an OpenAI-style ``/models`` answer (Ollama's ``models`` too)."""
    if not isinstance(data, dict):
        return []
    rows = data.get("data") or data.get("models") or []
    ids = [str(r.get("id") or r.get("name") or r.get("model") or "") for r in rows
           if isinstance(r, dict)]
    return [i for i in ids if i]


def _short(model_id: str) -> str:
    return model_id.replace("\\", "/").rsplit("/", 1)[-1]


QUANT = re.compile(r"[-._](?:i?q\d\w*|f16|f32|bf16|fp16)$", re.IGNORECASE)


def stem(model_id: str) -> str:
    short = _short(model_id)
    return short[:-5] if short.lower().endswith(".gguf") else short


def serves(model_id: str, name: str) -> bool:
    """Whether a served id is the named model: equal, the same file (a GGUF path's name
    or stem, with or without its quantisation suffix such as ``-q4_k_m``), or an Ollama
    tag of it (``name:latest``)."""
    short, st = _short(model_id), stem(model_id)
    bare = QUANT.sub("", st)  # the same weights in another quantisation
    return name in (model_id, short, st, bare) or model_id.split(":", 1)[0] == name or \
        short.split(":", 1)[0] == name
