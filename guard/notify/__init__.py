"""Notifiers: the Notifier port and its implementations (console; Telegram in notify/telegram)."""

from guard.notify.base import HumanRequest, IncidentUpdate, Notifier, SkillOption

__all__ = ["HumanRequest", "IncidentUpdate", "Notifier", "SkillOption"]
