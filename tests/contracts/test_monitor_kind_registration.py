"""A monitor kind added by the test suite alone (``flag_kind.py``, one ``MonitorKind`` entry) is
accepted by a playbook and its schema, built, scheduled by a running Guard, read by the
investigation's ``recent_logs``, given its first look by diagnosis, and verified after a
remedy. Nothing in ``guard/`` names it; unregistered, playbooks refuse it again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from guard.agent.diagnosis import Diagnoser
from guard.agent.tools import Toolbox
from guard.agent.verify import Verifier
from guard.domain.exceptions import ConfigError
from guard.monitors import Monitor, MonitorKind, build_monitor, register_monitor_kind
from guard.playbooks import load_playbooks, playbook_json_schema
from guard.playbooks.models import MonitorSpecBase, monitor_types
from guard.playbooks.watch import active_specs
from guard.skills.model import VerifySpec
from tests.conftest import REPO
from tests.contracts.flag_kind import (
    FLAG_KIND,
    FlagMonitor,
    FlagMonitorSpec,
    build_flag,
    registered_flag_kind,
)
from tests.monitors.test_docker_monitor import running_guard, wait_for_incident

PUBLISHED = REPO / "docs" / "playbook.schema.json"


@pytest.fixture
def flag_kind() -> Iterator[MonitorKind[FlagMonitorSpec]]:
    with registered_flag_kind() as kind:
        yield kind


def flag_playbook(home: Any, flag: Path) -> None:
    home.playbook("flags", [{"id": "flag", "type": "flagfile", "path": str(flag), "every": "1h"}])


@pytest.mark.unit
def test_playbooks_accept_the_kind_only_while_it_is_registered(home: Any, tmp_path: Path) -> None:
    flag_playbook(home, tmp_path / "flag")
    with pytest.raises(ConfigError, match=r"unknown monitor type 'flagfile' \(expected one of: "):
        load_playbooks(home.playbooks)
    with registered_flag_kind():
        assert monitor_types()[-1] == "flagfile"
        [book] = load_playbooks(home.playbooks)
        [spec] = book.monitors
        assert isinstance(spec, FlagMonitorSpec) and spec.every == 3600
        schema = json.loads(playbook_json_schema())
        items = schema["properties"]["monitors"]["items"]
        assert items["discriminator"]["mapping"]["flagfile"] == "#/$defs/FlagMonitorSpec"
        monitor = build_monitor(spec)
        assert isinstance(monitor, FlagMonitor) and isinstance(monitor, Monitor)
        with pytest.raises(ValueError, match="'flagfile' is already registered"):
            register_monitor_kind(FLAG_KIND)
    assert "flagfile" not in monitor_types()
    assert playbook_json_schema() == PUBLISHED.read_text()  # the union is the built-in one again
    with pytest.raises(ConfigError, match="unknown monitor type 'flagfile'"):
        load_playbooks(home.playbooks)


@pytest.mark.unit
def test_a_spec_without_a_literal_type_is_refused() -> None:
    class Vague(MonitorSpecBase):
        type: str

    with pytest.raises(TypeError, match="Vague needs a field type: Literal"):
        register_monitor_kind(MonitorKind(Vague, build_flag))  # type: ignore[arg-type]

    class Twin(MonitorSpecBase):
        type: Literal["logfile"]

    with pytest.raises(ValueError, match="'logfile' is already registered"):
        register_monitor_kind(MonitorKind(Twin, build_flag))  # type: ignore[arg-type]
    assert monitor_types().count("logfile") == 1


async def test_guard_runs_the_kind_and_the_agent_investigates_and_verifies_it(
    home: Any, tmp_path: Path, flag_kind: MonitorKind[FlagMonitorSpec]
) -> None:
    flag = tmp_path / "flag"
    flag.write_text("booting\nready\ndown\n")
    flag_playbook(home, flag)
    g, task = await running_guard(home)  # its first scheduled check reads the flag
    try:
        inc = await wait_for_incident(home, lambda i: i.source == "flagfile", within=60)
    finally:
        g.stop()
        await task
    assert (inc.kind, inc.target, inc.monitor_id) == ("flag_down", str(flag), "flag")

    box = Toolbox(inc, *([None] * 5), timeout=10)  # type: ignore[arg-type,misc]
    assert await box.call("recent_logs", {"lines": 2}) == "ready\ndown\n"

    diagnoser = Diagnoser(None, None, None, {}, None)  # type: ignore[arg-type]
    [(step, skill)] = diagnoser.steps_for(inc, [])
    assert (step.action, step.args, skill) == ("flag.look", {"tail": 3}, None)

    books = load_playbooks(home.playbooks)
    verifier = Verifier(home.database(), active_specs(books), home.settings())
    quick = VerifySpec(timeout=0.3, interval=0.05)
    verdict = await verifier.verify(inc, quick)
    assert not verdict.passed and "flag reads 'down'" in verdict.reason
    flag.write_text("down\nup\n")  # the remedy worked
    verdict = await verifier.verify(inc, quick)
    assert verdict.passed and verdict.reason == "flag reads 'up'"
