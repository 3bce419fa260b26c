"""The Action port: an infrastructure operation that Guard performs on a skill's behalf.

Actions run in Guard's process with Guard's credentials, never inside the sandbox: the sandbox
diagnoses, Guard acts. Each action declares its parameters (so ``docker.restart api`` can be
parsed from a human's reply), validates them, and returns an ``ActionResult``; it raises
``ActionError`` for a failure a human should read. Every call is audited by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from guard.config import Settings
from guard.domain.exceptions import GuardError


class ActionError(GuardError):
    """An action failed or was called wrongly; the message says which and why."""


@dataclass(frozen=True)
class ActionContext:
    """What an action may use: settings and the incident it works for (``None`` from the CLI)."""

    settings: Settings
    incident: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ActionResult:
    ok: bool
    message: str
    details: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Action(Protocol):
    """One named operation, e.g. ``docker.restart``."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def params(self) -> Sequence[str]:
        """Positional parameter names, in order; the first is the target."""
        ...

    async def run(self, args: Mapping[str, Any], ctx: ActionContext) -> ActionResult:
        """Perform the action with validated ``args``."""
        ...


def tail_arg(action: str, args: Mapping[str, Any], default: int, most: int) -> int:
    """``args["tail"]`` (lines of a log) as a number from 1 to ``most``; an ``ActionError``
    naming ``action`` for anything else."""
    try:
        return min(max(int(args.get("tail", default)), 1), most)
    except (TypeError, ValueError):
        raise ActionError(f"{action}: tail must be a number, not {args.get('tail')!r}") from None
