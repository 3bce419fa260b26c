"""Services across playbooks: which monitor watches which service, and what each one needs.

A monitor names its service with ``service:``; a playbook's top-level ``services:`` says what
a service ``depends_on``. Names are global: one service may be watched from several playbooks,
and declared (with its ``depends_on``) in one of them. ``service_problems`` checks the whole
set as the loader reads it: a name in ``depends_on`` that no playbook declares and no monitor
watches, a service declared twice, and a cycle, each naming the file and the field.
``ServiceMap`` is what triage correlates with (``guard.triage.correlation``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from guard.playbooks.models import MonitorSpecBase, Playbook
from guard.util.validation import display_path


def service_of(spec: MonitorSpecBase) -> str | None:
    """The service a monitor watches (a ``railway`` monitor's is its Railway service)."""
    name = getattr(spec, "service", None)
    return str(name) if name else None


@dataclass(frozen=True)
class ServiceMap:
    """Each monitor's service and each service's dependencies (transitively)."""

    monitors: Mapping[str, str] = field(default_factory=dict)  # monitor id -> service
    needs: Mapping[str, frozenset[str]] = field(default_factory=dict)  # all it depends on

    @classmethod
    def of(cls, monitors: Mapping[str, str], depends_on: Mapping[str, Sequence[str]]) -> ServiceMap:
        """From each monitor's service and each service's direct ``depends_on``."""
        return cls(dict(monitors), _closure(depends_on))

    def service(self, monitor_id: str) -> str | None:
        return self.monitors.get(monitor_id)

    def dependencies(self, service: str) -> frozenset[str]:
        return self.needs.get(service, frozenset())

    def related(self, a: str, b: str) -> bool:
        """Whether one fault may explain both: the same service, or one needs the other."""
        return a == b or b in self.dependencies(a) or a in self.dependencies(b)


def _closure(direct: Mapping[str, Sequence[str]]) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for name in direct:
        seen: set[str] = set()
        todo = list(direct[name])
        while todo:
            dep = todo.pop()
            if dep not in seen and dep != name:
                seen.add(dep)
                todo.extend(direct.get(dep, ()))
        out[name] = frozenset(seen)
    return out


def service_map(books: Iterable[Playbook]) -> ServiceMap:
    """The services of ``books`` (valid ones: ``service_problems`` found nothing)."""
    books = list(books)
    monitors = {
        m.id: s for b in books for m in b.monitors if m.enabled and (s := service_of(m)) is not None
    }
    direct = {name: list(spec.depends_on) for b in books for name, spec in b.services.items()}
    return ServiceMap.of(monitors, direct)


def _cycle(direct: Mapping[str, Sequence[str]], start: str) -> list[str] | None:
    """A dependency cycle through ``start``, as the path ``start -> ... -> start``."""
    path: list[str] = [start]

    def walk(name: str, seen: set[str]) -> bool:
        for dep in direct.get(name, ()):
            if dep == start:
                path.append(dep)
                return True
            if dep not in seen:
                seen.add(dep)
                path.append(dep)
                if walk(dep, seen):
                    return True
                path.pop()
        return False

    return path if walk(start, {start}) else None


def service_problems(books: Sequence[tuple[Path, Playbook]]) -> dict[Path, list[str]]:
    """Each file's problems with ``services:``: unknown names in ``depends_on``, a service
    declared in two files, and dependency cycles (``file: services.NAME.depends_on: ...``)."""
    problems: dict[Path, list[str]] = {}
    declared: dict[str, Path] = {}
    watched = {s for _, b in books for m in b.monitors if (s := service_of(m)) is not None}
    for path, book in books:
        for name in book.services:
            if name in declared:
                problems.setdefault(path, []).append(
                    f"{display_path(path)}: services.{name}: service {name!r} is declared "
                    f"twice (also in {display_path(declared[name])})"
                )
            else:
                declared[name] = path
    known = set(declared) | watched
    direct = {name: list(spec.depends_on) for _, b in books for name, spec in b.services.items()}
    cycles: set[frozenset[str]] = set()  # each said once, at its first service
    for path, book in books:
        for name, spec in book.services.items():
            for i, dep in enumerate(spec.depends_on):
                if dep not in known:
                    problems.setdefault(path, []).append(
                        f"{display_path(path)}: services.{name}.depends_on[{i}]: unknown "
                        f"service {dep!r} (declare it under services: or name it on a "
                        f"monitor's service:)"
                    )
            cycle = _cycle(direct, name)
            if cycle is not None and declared.get(name) == path and frozenset(cycle) not in cycles:
                cycles.add(frozenset(cycle))
                problems.setdefault(path, []).append(
                    f"{display_path(path)}: services.{name}.depends_on: dependency cycle "
                    f"{' -> '.join(cycle)}"
                )
    return problems
