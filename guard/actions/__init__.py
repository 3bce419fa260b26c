"""Actions: infrastructure operations performed by Guard (never by the sandbox)."""

from guard.actions.base import Action, ActionContext, ActionError, ActionResult
from guard.actions.registry import ActionRegistry

__all__ = ["Action", "ActionContext", "ActionError", "ActionRegistry", "ActionResult"]
