"""Find actions by name. Built-in families (``guard.actions.kinds``) load lazily, so importing
the registry does not import the docker, kubernetes or Railway clients until one of their
actions is used."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from guard.actions.base import Action, ActionError
from guard.actions.kinds import ACTION_FAMILIES


class ActionRegistry:
    """Actions by name; ``register`` adds custom ones (tests, plugins)."""

    def __init__(self, actions: Iterable[Action] = ()) -> None:
        self._actions: dict[str, Action] = {a.name: a for a in actions}

    def register(self, action: Action) -> None:
        self._actions[action.name] = action

    def get(self, name: str) -> Action:
        if name not in self._actions:
            family = name.split(".", 1)[0]
            found = ACTION_FAMILIES.get(family)
            if found is not None:
                try:
                    actions = found.load()
                except ModuleNotFoundError as exc:
                    raise ActionError(f"action family {family!r} is not available: {exc}") from None
                for action in actions:
                    self._actions.setdefault(action.name, action)
        if name not in self._actions:
            raise ActionError(f"unknown action {name!r} (known: {', '.join(self.names())})")
        return self._actions[name]

    def names(self) -> list[str]:
        return sorted(self._actions)

    def parse(self, text: str) -> tuple[Action, dict[str, Any]]:
        """``"docker.restart api timeout=30"`` -> the action and ``{"container": "api", ...}``."""
        words = shlex.split(text)
        if not words:
            raise ActionError("empty action")
        action = self.get(words[0])
        args: dict[str, Any] = {}
        positional = [w for w in words[1:] if "=" not in w]
        if "host" in action.params and len(positional) >= 2 and positional[-2] == "on":
            args["host"] = positional[-1]  # "host.systemctl restart nginx.service on web1"
            positional = positional[:-2]
        for w in words[1:]:
            if "=" in w:
                key, value = w.split("=", 1)
                args[key] = value
        if len(positional) > len(action.params):
            raise ActionError(
                f"{action.name} takes {len(action.params)} positional argument(s) "
                f"({', '.join(action.params)}), got {len(positional)}"
            )
        args.update(zip(action.params, positional, strict=False))
        return action, args

    def read_only(self, text: str) -> bool:
        """Whether a fix names an action of a read-only family (a probe): evidence, no cure."""
        head = text.strip().split(" ", 1)[0]
        family = ACTION_FAMILIES.get(head.split(".", 1)[0]) if "." in head else None
        return family is not None and family.read_only

    def looks_like_action(self, text: str) -> bool:
        """Whether a human's fix names an action (``family.verb ...``) rather than a command."""
        head = text.strip().split(" ", 1)[0]
        return "." in head and head.split(".", 1)[0] in ACTION_FAMILIES
