"""What works here, said before it is needed: ``guard doctor``, ``/readyz`` and the warnings of
check-config and ``guard run``'s start read ``assess``.

Each ``Capability`` is a part of Guard (its monitors, the sandbox, probes, each action family,
the channels, the model) with its state here: ``ok``, ``degraded`` (some of it works) or
``none``, why, and what that means. A capability is a ``problem`` when something configured
needs it and it cannot work (a skill's shell step where no sandbox runs, a docker monitor with
no engine): ``guard doctor`` exits 1 then. The tables are read generically (monitor kinds in
use, ``SANDBOX_BACKENDS`` through ``guard.sandbox.reach``, ``ACTION_FAMILIES``); what a kind needs
from where Guard runs (an engine, a cluster, a token) is one entry of ``NEEDS``. Every check is
local and cheap (a ``/_ping``, files, settings): no cluster or model is called.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from guard.config import Settings
from guard.playbooks.models import Playbook
from guard.sandbox.reach import SHELL_CANNOT_RUN, Reach, cluster_configured, engine_error, reach
from guard.skills.library import Skill
from guard.util.validation import display_path

State = Literal["ok", "degraded", "none"]


@dataclass(frozen=True)
class Capability:
    """One part of Guard and its state here."""

    name: str
    state: State
    why: str  # what is there or missing: "no Docker engine, no cluster"
    detail: str  # what it means: "shell steps cannot run here"
    problem: bool = False  # something configured needs it, and it cannot work

    @property
    def line(self) -> str:
        """``sandbox: none (no Docker engine, no cluster): shell steps cannot run here``."""
        why = f" ({self.why})" if self.why else ""
        return f"{self.name}: {self.state}{why}: {self.detail}"

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


class Here:
    """The facts of where Guard runs, each looked at once per assessment."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._engine: str | None = None

    @property
    def engine(self) -> str:
        """ "" when the Docker engine answers, else its error (naming DOCKER_HOST)."""
        if self._engine is None:
            self._engine = engine_error()
        return self._engine


def _engine(here: Here) -> str | None:
    return f"no Docker engine: {here.engine}" if here.engine else None


def _cluster(here: Here) -> str | None:
    if cluster_configured(here.settings.kubernetes):
        return None
    return "no cluster credentials: kubernetes.kubeconfig, $KUBECONFIG or in-cluster"


def _railway(here: Here) -> str | None:
    r = here.settings.railway
    return None if r.token or r.project_token else "no railway.token or railway.project_token"


# What a monitor kind or an action family needs from where Guard runs (absent: nothing).
NEEDS: dict[str, Callable[[Here], str | None]] = {
    "docker": _engine,
    "kubernetes": _cluster,
    "k8s": _cluster,
    "railway": _railway,
}


def _cut(command: str, limit: int = 80) -> str:
    """A step's command on one line, as much as a warning needs to name it."""
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def shell_steps(books: Iterable[Playbook], skills: Iterable[Skill]) -> dict[str, list[str]]:
    """Where a shell command is configured to run: a skill's file (or a playbook) -> its steps."""
    found: dict[str, list[str]] = {}
    for book in books:
        for i, diag in enumerate(book.diagnostics):
            if (run := getattr(diag, "run", None)) is not None:
                found.setdefault(f"playbook {book.name}", []).append(
                    f"diagnostics[{i}]: {_cut(run)}"
                )
    for skill in skills:
        where = f"skill {skill.meta.name} ({display_path(skill.path / 'skill.yaml')})"
        for part in ("diagnostics", "steps"):
            for i, step in enumerate(getattr(skill.spec, part)):
                if step.run is not None:
                    found.setdefault(where, []).append(f"{part}[{i}]: run {_cut(step.run)}")
    return found


def unrunnable_warnings(shell: dict[str, list[str]], sandbox: Reach) -> list[str]:
    """One warning per skill (or playbook) whose shell steps cannot run here; none if they can."""
    if sandbox.ok:
        return []
    return [
        f"{where}: {SHELL_CANNOT_RUN} (sandbox: none: {sandbox.why}): {'; '.join(steps)}. "
        "Give Guard a sandbox (a Docker engine through DOCKER_HOST, docs/SANDBOX.md) or use "
        "actions in these steps"
        for where, steps in shell.items()
    ]


def unrunnable_here(
    settings: Settings, books: Sequence[Playbook], skills: Sequence[Skill]
) -> list[str]:
    """check-config's warnings: the shell steps no sandbox can run here (no ``/_ping`` when
    there are none)."""
    shell = shell_steps(books, skills)
    if not shell:
        return []
    return unrunnable_warnings(shell, reach(settings.sandbox, settings.kubernetes))


def _monitors(here: Here, books: Sequence[Playbook]) -> Capability:
    from guard.monitors.kinds import monitor_kind

    kinds = Counter(m.type for b in books for m in b.monitors)
    if not kinds:
        return Capability("monitors", "none", "no playbook names a monitor", "nothing is watched")
    broken = []
    for name in kinds:
        kind = monitor_kind(name)
        problem = kind.config_problem(here.settings) if kind and kind.config_problem else None
        if problem := problem or (NEEDS[name](here) if name in NEEDS else None):
            broken.append(f"{name}: {problem}")
    counts = ", ".join(f"{n} {k}" for k, n in kinds.items())
    if broken:
        state: State = "none" if len(broken) == len(kinds) else "degraded"
        return Capability("monitors", state, counts, "; ".join(broken), problem=True)
    return Capability("monitors", "ok", counts, "every configured monitor can run")


def _sandbox(sandbox: Reach, shell: dict[str, list[str]], settings: Settings) -> Capability:
    if sandbox.ok:
        return Capability("sandbox", "ok", sandbox.what, "shell steps run here")
    needed = bool(shell) and settings.agent.enabled
    return Capability("sandbox", "none", sandbox.why, SHELL_CANNOT_RUN, problem=needed)


def _actions(here: Here, used: set[str]) -> list[Capability]:
    from guard.actions.kinds import ACTION_FAMILIES

    found = []
    for prefix in ACTION_FAMILIES:
        name = f"actions {prefix}.*"
        missing = NEEDS[prefix](here) if prefix in NEEDS else None
        if missing:
            found.append(Capability(name, "none", missing, "cannot run here", prefix in used))
        else:
            found.append(Capability(name, "ok", "", "can run here"))
    return found


def _probes() -> Capability:
    from guard.actions.kinds import ACTION_FAMILIES

    if "probe" in ACTION_FAMILIES:
        return Capability("probes", "ok", "probe.*", "run inside Guard: no sandbox needed")
    return Capability("probes", "none", "no probe family", "diagnostics need a sandbox")


def _channels(settings: Settings) -> list[Capability]:
    from guard.notify.kinds import configured

    found = [
        Capability(f"channel {name}", "ok", "configured", "questions go there")
        for name in configured(settings)
    ]
    if not found:
        found.append(
            Capability(
                "channels",
                "degraded",
                "no chat channel configured",
                "questions are printed by guard run (answer with guard reply ID -- FIX)",
            )
        )
    if settings.routes and any(r.notify for r in settings.routes):
        found.append(Capability("pagers", "ok", f"{len(settings.routes)} route(s)", "pages go out"))
    return found


def _model(settings: Settings) -> Capability:
    llm = settings.llm
    if not llm.enabled:
        return Capability("model", "none", "llm.provider: none", "no model investigates incidents")
    more = f", {len(llm.fallback)} fallback(s)" if llm.fallback else ""
    return Capability("model", "ok", f"{llm.provider} {llm.model}{more}", "investigates incidents")


def used_families(skills: Iterable[Skill], sources: set[str]) -> set[str]:
    """The action families used by the skills that can fire here (a trigger on a monitor kind
    in ``sources``, or on any): ``docker`` for ``docker.restart``."""
    return {
        step.action.split(".", 1)[0]
        for s in skills
        if any(t.source is None or t.source in sources for t in s.spec.triggers)
        for step in [*s.spec.diagnostics, *s.spec.steps]
        if step.action
    }


def assess(
    settings: Settings, books: Sequence[Playbook], skills: Sequence[Skill], *, fresh: bool = True
) -> list[Capability]:
    """Every capability, in the order ``guard doctor`` prints them. Blocking (a ``/_ping``)."""
    here = Here(settings)
    shell = shell_steps(books, skills)
    sandbox = reach(settings.sandbox, settings.kubernetes, fresh=fresh)
    return [
        _monitors(here, books),
        _sandbox(sandbox, shell, settings),
        _probes(),
        *_actions(here, used_families(skills, {m.type for b in books for m in b.monitors})),
        *_channels(settings),
        _model(settings),
    ]


def snapshot(
    settings: Settings, books: Sequence[Playbook], skills: Sequence[Skill]
) -> tuple[list[dict[str, Any]], list[str]]:
    """What ``guard run`` keeps for ``/readyz``, and the warnings it logs once at start."""
    found = assess(settings, books, skills)
    sandbox = reach(settings.sandbox, settings.kubernetes)  # as ``assess`` just found it
    return [c.as_json() for c in found], unrunnable_warnings(shell_steps(books, skills), sandbox)
