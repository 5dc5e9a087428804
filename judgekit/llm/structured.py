"""Parsing structured outputs: JSON, possibly fenced, validated by Pydantic."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from judgekit.core.textio import json_loads
from judgekit.llm.types import JSONObject

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class ParseFailure(Exception):
    """The text did not hold a valid instance of the output model."""


def extract_json(text: str) -> Any:
    """Parse JSON from raw text, a ```json fenced block, or the first {...} span (tried
    in that order; the fences are looked for only when the whole text is not JSON)."""
    whole = text.strip()
    try:
        return json_loads(whole) if whole else _other_json(text, None)
    except json.JSONDecodeError as exc:
        return _other_json(text, exc)


def _other_json(text: str, last: Exception | None) -> Any:
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for cand in candidates:
        if not cand:
            continue
        try:
            return json_loads(cand)
        except json.JSONDecodeError as exc:
            last = exc
    raise ParseFailure(f"no JSON object found ({last})" if last else "empty response")


def parse_output(text: str, model: type[BaseModel]) -> BaseModel:
    data = extract_json(text)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in exc.errors()
        )
        raise ParseFailure(f"JSON does not match the schema: {errors}") from exc


def parse_text(text: str, pattern: str, model: type[BaseModel]) -> BaseModel:
    """A free-text answer read by ``pattern`` (Inspect's "GRADE: C"): its named groups,
    or group 1 as ``model``'s first field, validated by ``model``."""
    m = re.search(pattern, text)
    if m is None:
        raise ParseFailure(f"the answer does not match the grade pattern {pattern!r}"
                           if text.strip() else "empty response")
    data = m.groupdict() or {next(iter(model.model_fields)): m.group(1) if m.groups()
                             else m.group(0)}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ParseFailure(f"the grade {data} is not valid: {exc.errors()[0]['msg']}"
                           ) from exc


def output_schema(model: type[BaseModel]) -> JSONObject:
    return model.model_json_schema()


# How models open a refusal in plain text (no JSON at all). Checked only on an answer
# that failed to parse, so a refusal costs one request instead of five.
_REFUSAL = re.compile(
    r"^\W*(?:I\s*(?:'m|’m| am)\s+(?:sorry|unable|not able)|I\s+(?:can\s*not|can't|can’t|"
    r"won't|won’t|will not|must decline|do not feel comfortable|don't feel comfortable)|"
    r"Sorry,? (?:but )?I|I apologi[sz]e|As an AI|Unfortunately,? I (?:can|am|cannot))",
    re.IGNORECASE)


def looks_like_refusal(text: str) -> bool:
    """A plain-text refusal: no JSON object in it, and it opens the way refusals do."""
    t = text.strip()
    return bool(t) and "{" not in t and len(t) < 2000 and bool(_REFUSAL.match(t))
