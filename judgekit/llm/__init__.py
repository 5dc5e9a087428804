"""The provider-agnostic LLM client layer."""

from judgekit.llm.client import Client, ClientSettings
from judgekit.llm.stage import Call, Stage
from judgekit.llm.types import Completion, ProviderRequest, StageResult, Usage

__all__ = ["Call", "Client", "ClientSettings", "Completion", "ProviderRequest", "Stage",
           "StageResult", "Usage"]
