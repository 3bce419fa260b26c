"""Model providers for optional diagnosis (docs/DIAGNOSIS.md): the ``ModelProvider`` port
(``base``), the OpenAI and Anthropic adapters over httpx, failover, and trajectories.

``build_provider`` turns ``llm`` settings into a provider, or None with ``provider: none``.
"""

from __future__ import annotations

from guard.config import EndpointSettings, LLMSettings
from guard.llm.base import Completion, Message, ModelProvider, ProviderError, Tool, Usage
from guard.llm.failover import FailoverProvider
from guard.llm.kinds import MODEL_PROVIDERS
from guard.redact import Redactor

__all__ = [
    "Completion",
    "FailoverProvider",
    "Message",
    "ModelProvider",
    "ProviderError",
    "Tool",
    "Usage",
    "build_provider",
    "endpoint_provider",
]


def endpoint_provider(settings: EndpointSettings, redactor: Redactor) -> ModelProvider:
    """The adapter for one endpoint (``MODEL_PROVIDERS``: httpx only loads when a model is
    used)."""
    return MODEL_PROVIDERS[settings.provider].build(settings, redactor)


def build_provider(settings: LLMSettings, redactor: Redactor) -> FailoverProvider | None:
    """The configured endpoints behind failover; None when no model is configured."""
    if not settings.enabled:
        return None
    return FailoverProvider([endpoint_provider(e, redactor) for e in settings.endpoints()])
