"""Local OpenAI-compatible servers: llama.cpp, vLLM, Ollama, LM Studio...

``local/<name>`` talks to ``base_url`` (config ``base_urls.local``, or
JUDGEKIT_LOCAL_BASE_URL). ``local/gemma-3-270m`` with no base URL uses the
managed llama.cpp server, started on demand (see judgekit.local).
"""

from __future__ import annotations

import os
from typing import ClassVar

from judgekit.llm.providers.base import register
from judgekit.llm.providers.openai import OpenAIProvider
from judgekit.llm.types import Completion, ProviderRequest

MANAGED_MODELS = {"gemma-3-270m"}


@register
class LocalProvider(OpenAIProvider):
    name = "local"
    key_env: ClassVar[str | None] = None
    max_tokens_field = "max_tokens"

    def __init__(self, model: str, base_url: str | None = None) -> None:
        explicit = base_url or os.environ.get("JUDGEKIT_LOCAL_BASE_URL")
        self.managed = explicit is None and model in MANAGED_MODELS
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

    async def generate(self, request: ProviderRequest) -> Completion:
        if self.managed:
            from judgekit.local.server import ensure_managed_server

            self.base_url = await ensure_managed_server(self.model)
        return await super().generate(request)
