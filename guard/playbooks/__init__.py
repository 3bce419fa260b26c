"""Playbooks: the YAML files that say what Guard watches."""

from guard.playbooks.loader import load_playbook, load_playbooks, playbook_json_schema
from guard.playbooks.models import (
    DockerMonitorSpec,
    HttpMonitorSpec,
    LogfileMonitorSpec,
    LogRule,
    MonitorSpec,
    Playbook,
)

__all__ = [
    "DockerMonitorSpec",
    "HttpMonitorSpec",
    "LogRule",
    "LogfileMonitorSpec",
    "MonitorSpec",
    "Playbook",
    "load_playbook",
    "load_playbooks",
    "playbook_json_schema",
]
