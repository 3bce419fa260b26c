"""What a human's fix may be, here: a shell command only where a sandbox can run it.

The question shown to a human offers only what can run (``Asker.ask``), and a shell fix sent
where no sandbox can run is refused at once with the reason (``HumanAnswers``), instead of
being run and failing with the engine's connection error. Whether a sandbox can run is
``guard.sandbox.reach`` (kept a minute); the example actions come from the families
``ACTION_FAMILIES`` has (tested in tests/agent/test_fixforms.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from guard.config import Settings
from guard.sandbox.reach import reach

SHELL_OR_ACTION = "a shell command for the sandbox, or an action like docker.restart NAME"
# one example per family, in the order they are offered; families not listed are not shown
EXAMPLES = {
    "docker": "docker.restart NAME",
    "probe": "probe.http URL",
    "http": "http.request URL",
}
_SEND = re.compile(r"([Ss]end a fix)\.")


@dataclass(frozen=True)
class FixForms:
    """Whether a shell fix can run here, how to say what a fix may be, and why not shell."""

    shell: bool
    hint: str  # "a shell command for the sandbox, or an action like docker.restart NAME"
    why: str = ""  # "no Docker engine, no cluster"

    def question(self, question: str) -> str:
        """``question`` offering only what can run here."""
        if self.shell:
            return question
        offer = f"Send a fix: {self.hint}."
        asked, found = _SEND.subn(lambda m: f"{m.group(1)}: {self.hint}.", question, count=1)
        return asked if found else f"{question} {offer}"

    def refusal(self) -> str:
        """Why a shell fix does not run here, and what to send instead."""
        return (
            f"refused: a shell fix needs a sandbox and none can run here ({self.why}); "
            f"send {self.hint}"
        )


def actions_only() -> str:
    """``an action such as docker.restart NAME or probe.http URL`` (the families there are)."""
    from guard.actions.kinds import ACTION_FAMILIES

    shown = [example for prefix, example in EXAMPLES.items() if prefix in ACTION_FAMILIES][:2]
    return "an action such as " + " or ".join(shown) + " (no sandbox here: no shell commands)"


def fix_forms(settings: Settings) -> FixForms:
    """What a fix may be here. Blocking (a ``/_ping`` at most once a minute)."""
    found = reach(settings.sandbox, settings.kubernetes)
    if found.ok:
        return FixForms(True, SHELL_OR_ACTION)
    return FixForms(False, actions_only(), found.why)
