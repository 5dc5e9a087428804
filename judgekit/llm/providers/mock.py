"""``mock/<name>``: scripted outputs, a real provider used by tests and dry runs.

Prefer provider objects: ``Client(providers={"mock/judge": FunctionProvider(fn)})``
(``fn`` takes the :class:`ProviderRequest` and returns text, a dict, a Pydantic object,
a :class:`Completion`, or an exception to raise) or ``ScriptProvider([...])`` (outputs
served in order). Each object holds its own script, position and call count.

Built in by name: ``mock/echo`` answers the last user message back; ``mock/auto`` (or
``mock/auto:SEED``) fills any stage's output schema with a valid value derived from the
seed and the request, as a schema-driven test model does, so any config runs offline.

:func:`register_script` (a name -> script table read when a ``mock/<name>`` provider is
made) is kept for existing code; the provider copies the script when it is made.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Sequence
from typing import Any, Union

from pydantic import BaseModel

from judgekit.core.errors import ConfigError
from judgekit.core.registry import Registry
from judgekit.core.seeds import from_content
from judgekit.llm.providers.base import PROVIDERS, Provider
from judgekit.llm.types import Completion, JSONObject, ProviderRequest, Usage

Output = Union[str, dict, BaseModel, BaseException, Completion]
Script = Union[Callable[[ProviderRequest], Output], Sequence[Output]]

# ``mock/<name>`` -> its script: names are replaced freely (a test registers its own).
SCRIPTS: Registry[Script] = Registry("mock script")
_LOCK = threading.Lock()

__all__ = ["FunctionProvider", "MockProvider", "ScriptProvider", "fill_schema",
           "register_script", "unregister_script"]


def register_script(name: str, script: Script) -> None:
    """Make ``mock/<name>`` providers created from now on serve ``script``."""
    with _LOCK:
        SCRIPTS.remove(name)
        SCRIPTS.add(name, script)


def unregister_script(name: str) -> None:
    with _LOCK:
        SCRIPTS.remove(name)


@PROVIDERS.register
class MockProvider(Provider):
    name = "mock"

    def __init__(self, model: str, base_url: str | None = None, *,
                 script: Script | None = None) -> None:
        super().__init__(model, base_url)
        with _LOCK:
            known = model in SCRIPTS
            self.script = script if script is not None else \
                (SCRIPTS.get(model) if known else None)
        self.position = 0
        self.calls = 0
        self._lock = threading.Lock()

    named = True  # False: the model name comes from the key the client holds it under

    @property
    def identity_base_url(self) -> str | None:
        return None

    def bind(self, model_string: str) -> None:
        """Take the model name from the client's key (``mock/judge_a`` -> ``judge_a``), so
        two provider objects under two keys never share cached answers."""
        if not self.named:
            self.model = model_string.partition("/")[2] or model_string
            self.named = True

    def _next(self, request: ProviderRequest) -> Output:
        with self._lock:
            self.calls += 1
            script = self.script
            if script is None:
                if self.model == "echo":
                    return request.messages[-1]["content"]
                if self.model == "auto" or self.model.startswith("auto:"):
                    return auto_output(self.model, request)
                raise ConfigError(f"mock/{self.model} has no script; pass a provider object "
                                  "(Client(providers={'mock/x': FunctionProvider(fn)})) or "
                                  "use mock/auto")
            if not callable(script):
                if self.position >= len(script):
                    raise ConfigError(f"mock/{self.model} ran out of scripted outputs after "
                                      f"{self.position}")
                self.position += 1
                return script[self.position - 1]
        return script(request)

    async def generate(self, request: ProviderRequest) -> Completion:
        out = self._next(request)
        if hasattr(out, "__await__"):
            out = await out  # type: ignore[misc]
        return _completion(out, request, self.model)


class FunctionProvider(MockProvider):
    """A provider object built from a function (sync or async), for
    ``Client(providers={"mock/judge": FunctionProvider(fn)})``."""

    def __init__(self, fn: Callable[[ProviderRequest], object], model: str | None = None
                 ) -> None:
        super().__init__(model or "function", script=fn)  # type: ignore[arg-type]
        self.fn = fn
        self.named = model is not None


class ScriptProvider(MockProvider):
    """A provider object serving ``outputs`` in order (then an error)."""

    def __init__(self, outputs: Sequence[Output], model: str | None = None) -> None:
        super().__init__(model or "script", script=list(outputs))
        self.named = model is not None


def auto_output(model: str, request: ProviderRequest) -> JSONObject | str:
    """A valid value for the request's output schema, derived from the seed in the model
    name (``auto:7``), the messages and the draw: same request, same answer."""
    seed = model.partition(":")[2] or "0"
    rng = random.Random(from_content(json.dumps([seed, request.messages, request.draw],
                                                sort_keys=True).encode()))
    if request.schema is None:
        return rng.choice(WORDS)
    return fill_schema(request.schema, rng)  # type: ignore[no-any-return]


# Short strings that read as answers, labels, tags and reasons in judgekit's stages.
WORDS = ("A", "B", "1", "2", "E1", "E2", "none", "yes", "no")


def fill_schema(schema: JSONObject, rng: random.Random,
                defs: JSONObject | None = None, depth: int = 0) -> Any:
    """A value valid under a JSON Schema (the subset Pydantic emits)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return fill_schema(defs[schema["$ref"].rsplit("/", 1)[-1]], rng, defs, depth)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
            return fill_schema(rng.choice(options), rng, defs, depth)
    if "allOf" in schema:
        return fill_schema(schema["allOf"][0], rng, defs, depth)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: fill_schema(v, rng, defs, depth + 1) for k, v in props.items()}
    if kind == "array":
        lo = int(schema.get("minItems", 1))
        hi = int(schema.get("maxItems", max(lo, 3)))
        n = rng.randint(lo, max(lo, min(hi, lo + 2))) if depth < 4 else lo
        return [fill_schema(schema.get("items", {}), rng, defs, depth + 1) for _ in range(n)]
    if kind == "integer":
        lo = int(schema.get("minimum", 0))
        hi = int(schema.get("maximum", max(lo, 1)))
        return rng.randint(lo, hi)
    if kind == "number":
        low = float(schema.get("minimum", 0.0))
        high = float(schema.get("maximum", low + 1.0))
        return round(rng.uniform(low, high), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    text = rng.choice(WORDS)
    return text.ljust(int(schema.get("minLength", 0)), "x")


def _completion(out: Output, request: ProviderRequest, model: str) -> Completion:
    if isinstance(out, Completion):
        return out
    if isinstance(out, BaseException):
        raise out
    if isinstance(out, BaseModel):
        text = out.model_dump_json()
    elif isinstance(out, dict):
        text = json.dumps(out)
    else:
        text = str(out)
    prompt_words = sum(len(m["content"].split()) for m in request.messages)
    return Completion(text=text, model=f"mock/{model}",
                      usage=Usage(prompt_words, len(text.split())))
