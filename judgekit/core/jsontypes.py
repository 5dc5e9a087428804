"""One name for JSON whose shape someone else defines, or that a model validates next: a
provider's HTTP body, a batch file's line, an Inspect or promptfoo document, a user's
config or judged items as written, a row of a table, a JSON schema. judgekit's own
shapes are typed (Pydantic models, typed dicts); this alias marks the boundary."""

from __future__ import annotations

from typing import Any

__all__ = ["JSONObject"]

JSONObject = dict[str, Any]
