"""Anything LiteLLM routes, through ``litellm.acompletion`` (optional extra)."""

from __future__ import annotations

import os
from typing import Any

from judgekit.core.errors import MissingDependencyError, ProviderError
from judgekit.llm.providers.base import (
    PROVIDERS,
    RETRYABLE_STATUS,
    Provider,
    Requirement,
    run_wide,
)
from judgekit.llm.providers.openai import mean_entropy_bits
from judgekit.llm.secrets import clip
from judgekit.llm.types import Completion, JSONObject, ProviderRequest, Usage


def import_litellm() -> Any:
    # litellm fetches a remote price map at import unless told not to.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError as exc:
        raise MissingDependencyError(
            "litellm/ models need litellm: pip install 'judgekit[litellm]'") from exc
    return litellm


@PROVIDERS.register
class LiteLLMProvider(Provider):
    name = "litellm"
    requires = (Requirement("litellm", "litellm", "1.40", "litellm"),)

    async def generate(self, request: ProviderRequest) -> Completion:
        litellm = import_litellm()
        kwargs: JSONObject = {
            k: v for k, v in request.sampling.items()
            if v is not None and k in ("temperature", "top_p", "max_tokens", "seed", "logprobs",
                                       "top_logprobs")
        }
        if request.schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name, "schema": request.schema},
            }
        if self.base_url:
            kwargs["api_base"] = self.base_url
        try:
            resp = await litellm.acompletion(model=self.model, messages=request.messages,
                                             timeout=request.timeout, num_retries=0, **kwargs)
        except Exception as exc:  # litellm maps every provider's errors to its own types
            status = getattr(exc, "status_code", None)
            wide = run_wide(status, str(exc))
            retryable = status in RETRYABLE_STATUS or \
                type(exc).__name__ in ("Timeout", "APIConnectionError", "RateLimitError",
                                       "ServiceUnavailableError", "InternalServerError")
            raise ProviderError(clip(f"litellm/{self.model}: {type(exc).__name__}: {exc}", 600),
                                status=status, retryable=retryable and not wide,
                                fatal=wide) from exc
        choice = resp.choices[0]
        usage = getattr(resp, "usage", None)
        lp = getattr(choice, "logprobs", None)
        return Completion(
            text=choice.message.content or "",
            model=getattr(resp, "model", self.model) or self.model,
            usage=Usage(getattr(usage, "prompt_tokens", 0) or 0,
                        getattr(usage, "completion_tokens", 0) or 0),
            mean_token_entropy=mean_entropy_bits(
                lp.model_dump() if lp is not None and hasattr(lp, "model_dump") else lp),
            finish_reason=getattr(choice, "finish_reason", None),
            refusal=getattr(choice.message, "refusal", None) or None,
        )
