"""Guard's settings: one pydantic-settings root with one nested model per subsystem.

Sources, strongest first: environment variables ``GUARD_<FIELD>`` (``__`` nests:
``GUARD_TELEGRAM__BOT_TOKEN``), then the YAML file (``--config`` or ``GUARD_CONFIG``), then
defaults. Secrets are ``SecretStr`` so they never print. Relative paths are relative to the
working directory.

The package: ``settings`` (the root model), its sections in ``connections``, ``skills``,
``operations`` and ``safety`` (with ``access``), the shared checks in ``validators``, ``loader``
(``load_settings``), ``sources`` and ``credentials`` (no pydantic), and ``fast``, the
pydantic-free resolver of ``guard incidents list``. Importing this package imports nothing
else: each name below loads its module on first use, so ``guard.config.fast`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guard.config.connections import (
        EndpointSettings,
        KubernetesSettings,
        LLMSettings,
        RailwaySettings,
        TelegramSettings,
    )
    from guard.config.credentials import GIT_USER, basic_credentials
    from guard.config.email import EmailSettings
    from guard.config.loader import load_settings
    from guard.config.matrix import MatrixSettings
    from guard.config.operations import (
        AgentSettings,
        HASettings,
        MemorySettings,
        ReportSettings,
        SandboxSettings,
        SchedulerSettings,
        StoreSettings,
        TriageSettings,
    )
    from guard.config.safety import (
        AccessSettings,
        AuditSettings,
        ExtraPatternSettings,
        RedactSettings,
    )
    from guard.config.settings import Settings
    from guard.config.skills import SkillsSettings
    from guard.config.slack import SlackSettings
    from guard.config.sources import config_path
    from guard.config.validators import refuse_cleartext

_WHERE = {
    "EndpointSettings": "connections",
    "KubernetesSettings": "connections",
    "LLMSettings": "connections",
    "RailwaySettings": "connections",
    "TelegramSettings": "connections",
    "EmailSettings": "email",
    "SlackSettings": "slack",
    "GIT_USER": "credentials",
    "basic_credentials": "credentials",
    "load_settings": "loader",
    "MatrixSettings": "matrix",
    "AgentSettings": "operations",
    "HASettings": "operations",
    "MemorySettings": "operations",
    "ReportSettings": "operations",
    "SandboxSettings": "operations",
    "SchedulerSettings": "operations",
    "StoreSettings": "operations",
    "TriageSettings": "operations",
    "AccessSettings": "safety",
    "AuditSettings": "safety",
    "ExtraPatternSettings": "safety",
    "RedactSettings": "safety",
    "Settings": "settings",
    "SkillsSettings": "skills",
    "config_path": "sources",
    "refuse_cleartext": "validators",
}
__all__ = [
    "GIT_USER",
    "AccessSettings",
    "AgentSettings",
    "AuditSettings",
    "EmailSettings",
    "EndpointSettings",
    "ExtraPatternSettings",
    "HASettings",
    "KubernetesSettings",
    "LLMSettings",
    "MatrixSettings",
    "MemorySettings",
    "RailwaySettings",
    "RedactSettings",
    "ReportSettings",
    "SandboxSettings",
    "SchedulerSettings",
    "Settings",
    "SkillsSettings",
    "SlackSettings",
    "StoreSettings",
    "TelegramSettings",
    "TriageSettings",
    "basic_credentials",
    "config_path",
    "load_settings",
    "refuse_cleartext",
]

if not TYPE_CHECKING:  # for mypy every name is imported above, so a misspelt one is an error

    def __getattr__(name: str) -> Any:
        """Load the module that defines ``name`` (PEP 562), once: the name is then cached."""
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(import_module(f"{__name__}.{module}"), name)
        globals()[name] = value
        return value
