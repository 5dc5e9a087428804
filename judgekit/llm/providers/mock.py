"""``mock/<name>``: scripted outputs, a real provider used by tests and dry runs.

Register a script with :func:`register_script`: either a callable taking the
:class:`ProviderRequest` and returning text, a dict/Pydantic object (sent as
JSON) or an exception to raise; or a list of such outputs served in order.
``mock/echo`` is built in: it answers the last user message back.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Union

from pydantic import BaseModel

from judgekit.errors import ConfigError
from judgekit.llm.providers.base import Provider, register
from judgekit.llm.types import Completion, ProviderRequest, Usage

Output = Union[str, dict, BaseModel, BaseException, Completion]
Script = Union[Callable[[ProviderRequest], Output], Sequence[Output]]

_SCRIPTS: dict[str, Script] = {}
_POSITIONS: dict[str, int] = {}
_LOCK = threading.Lock()
CALLS: dict[str, int] = {}


def register_script(name: str, script: Script) -> None:
    with _LOCK:
        _SCRIPTS[name] = script
        _POSITIONS[name] = 0
        CALLS[name] = 0


def unregister_script(name: str) -> None:
    with _LOCK:
        _SCRIPTS.pop(name, None)
        _POSITIONS.pop(name, None)


def _next_output(name: str, request: ProviderRequest) -> Output:
    with _LOCK:
        CALLS[name] = CALLS.get(name, 0) + 1
        if name == "echo" and name not in _SCRIPTS:
            return request.messages[-1]["content"]
        script = _SCRIPTS.get(name)
        if script is None:
            raise ConfigError(f"mock/{name} has no script; register one with "
                              "judgekit.llm.providers.mock.register_script")
        if callable(script):
            out = script
        else:
            pos = _POSITIONS[name]
            if pos >= len(script):
                raise ConfigError(f"mock/{name} ran out of scripted outputs after {pos}")
            _POSITIONS[name] = pos + 1
            return script[pos]
    return out(request)


@register
class MockProvider(Provider):
    name = "mock"

    @property
    def identity_base_url(self) -> str | None:
        return None

    async def generate(self, request: ProviderRequest) -> Completion:
        return _completion(_next_output(self.model, request), request, self.model)


class FunctionProvider(MockProvider):
    """A provider object built from a function, passed to ``Client(providers=...)``:
    ``Client(providers={"mock/judge": FunctionProvider(fn)})``. ``fn`` takes the
    :class:`ProviderRequest` and returns text, a dict, a Pydantic object, or an
    exception to raise (sync or async)."""

    def __init__(self, fn: Callable[[ProviderRequest], object], model: str = "function"
                 ) -> None:
        super().__init__(model)
        self.fn = fn

    async def generate(self, request: ProviderRequest) -> Completion:
        out = self.fn(request)
        if hasattr(out, "__await__"):
            out = await out  # type: ignore[misc]
        return _completion(out, request, self.model)  # type: ignore[arg-type]


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
