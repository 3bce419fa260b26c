"""Model providers: one entry per ``llm.provider`` says which adapter speaks its API.

Each adapter is imported only when a model is configured (httpx and its wire formats load
then). ``endpoint_provider`` reads this table; ``llm.provider``'s allowed values are its keys
and ``none`` (no model: ``tests/contracts/test_plugin_tables.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from guard.config import EndpointSettings
from guard.llm.base import ModelProvider
from guard.redact import Redactor


@dataclass(frozen=True)
class ProviderKind:
    """One provider's API: how to build its adapter for an endpoint."""

    name: str
    build: Callable[[EndpointSettings, Redactor], ModelProvider]


def _openai(settings: EndpointSettings, redactor: Redactor) -> ModelProvider:
    from guard.llm.openai import OpenAIProvider  # any OpenAI-compatible /chat/completions

    return OpenAIProvider(settings, redactor)


def _anthropic(settings: EndpointSettings, redactor: Redactor) -> ModelProvider:
    from guard.llm.anthropic import AnthropicProvider

    return AnthropicProvider(settings, redactor)


MODEL_PROVIDERS: dict[str, ProviderKind] = {
    k.name: k for k in (ProviderKind("openai", _openai), ProviderKind("anthropic", _anthropic))
}
