"""Request identity: one canonical JSON whose sha256 keys the cache and cassettes.

Only what changes the answer belongs here (provider, resolved model, base URL,
rendered messages, sampling, output schema, template name and content hash,
draw index). Timeouts, concurrency and retry counts are operational and stay out.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
import uuid
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from judgekit.llm.types import Identity, JSONObject, Message, Sampling

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _not_json(obj: object) -> object:
    return _CANONICAL.default(obj)  # raises json's own TypeError


# json's C encoder with the canonical options, made once: ``JSONEncoder.encode`` makes a
# new one on every call, which was half the cost of encoding a request's sampling. No
# circularity check (an identity is a tree of rendered text and settings).
_MAKE = getattr(json.encoder, "c_make_encoder", None)
_C_CANONICAL = None if _MAKE is None else _MAKE(
    None, _not_json, json.encoder.encode_basestring, None, ":", ",", True, False, True)


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: ``json.dumps`` with those options (equal text)."""
    if _C_CANONICAL is None or type(obj) is str:
        return _CANONICAL.encode(obj)
    return "".join(_C_CANONICAL(obj, 0))


def request_identity(*, provider: str, model: str, base_url: str | None,
                     messages: list[Message], sampling: Sampling,
                     schema: JSONObject | None, template: str, template_hash: str,
                     draw: int) -> Identity:
    return {
        "provider": provider,
        "model": model,
        "base_url": base_url,
        "messages": messages,
        "sampling": {k: v for k, v in sorted(sampling.items()) if v is not None},
        "schema": schema,
        "template": {"name": template, "hash": template_hash},
        "draw": draw,
    }


_SLOT = f"\x00judgekit-slot-{uuid.uuid4().hex}\x00"
_SLOT_JSON = json.dumps(_SLOT)


def identity_key(identity: Mapping[str, Any], schema_json: str | None = None,
                 messages_json: str | None = None) -> str:
    """sha256 of the canonical JSON of ``identity``.

    ``schema_json`` and ``messages_json`` (the canonical JSON of ``identity["schema"]``
    and ``identity["messages"]``, computed once per stage and once per distinct prompt)
    spare re-encoding them on every call; the key is the same.
    """
    known = [(f, j) for f, j in (("messages", messages_json), ("schema", schema_json))
             if j is not None]
    text = canonical_json({**identity, **{f: _SLOT for f, _ in known}})
    for field, value in known:  # each slot once, at its own key (the keys are sorted)
        head, sep, tail = text.partition(f'"{field}":{_SLOT_JSON}')
        if not sep:
            return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()
        text = f'{head}"{field}":{value}{tail}'
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sampling_json(sampling: Sampling) -> str:
    """The canonical JSON of a request identity's sampling (None values left out)."""
    return canonical_json({k: v for k, v in sampling.items() if v is not None})


def framed_key(frame: tuple[str, str, str], draw: int, messages_json: str,
               sampling_json: str, schema_json: str) -> str:
    """The request key from the canonical JSON of its parts: the fields fixed for a
    stage and model (``frame``, encoded once), the messages, sampling (see
    :func:`sampling_json`) and schema; only the draw (an int) is encoded here. The text
    is byte for byte the canonical JSON of :func:`request_identity` with the same
    arguments."""
    head, model_part, tail = frame
    return hashlib.sha256(f'{head}{draw},"messages":{messages_json}{model_part}'
                          f'{sampling_json},"schema":{schema_json}{tail}'.encode()).hexdigest()


@lru_cache(maxsize=256)
def request_frame(base_url: str | None, model: str, provider: str, template: str,
                  template_hash: str) -> tuple[str, str, str]:
    """The canonical JSON around a request's draw, messages, sampling and schema (the
    keys in sorted order)."""
    return (f'{{"base_url":{canonical_json(base_url)},"draw":',
            f',"model":{canonical_json(model)},"provider":{canonical_json(provider)},'
            '"sampling":',
            f',"template":{canonical_json({"name": template, "hash": template_hash})}}}')


def _flatten(obj: Any, prefix: str = "") -> dict[str, object]:
    if isinstance(obj, dict):
        out: dict[str, object] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(obj, list):
        out = {}
        for i, v in enumerate(obj):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out or {prefix: []}
    return {prefix: obj}


def differing_fields(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Dotted paths whose values differ between two identities."""
    fa, fb = _flatten(a), _flatten(b)
    return sorted(k for k in set(fa) | set(fb) if fa.get(k, "<absent>") != fb.get(k, "<absent>"))


def nearest(identity: Mapping[str, Any], candidates: Sequence[Mapping[str, Any]]
            ) -> tuple[int, list[str]]:
    """Index of the candidate with the fewest differing fields, and those fields."""
    best, best_diff = -1, list[str]()
    for i, cand in enumerate(candidates):
        diff = differing_fields(identity, cand)
        if best < 0 or len(diff) < len(best_diff):
            best, best_diff = i, diff
    return best, best_diff
