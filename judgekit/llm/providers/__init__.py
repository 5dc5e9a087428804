"""Providers, registered by name. Importing this package registers them all."""

from judgekit.llm.providers import anthropic, litellm, local, mock, openai  # noqa: F401
from judgekit.llm.providers.base import (
    Provider,
    Requirement,
    check_requirements,
    make_provider,
    parse_model_string,
    providers,
)

__all__ = ["Provider", "Requirement", "check_requirements", "make_provider",
           "parse_model_string", "providers"]
