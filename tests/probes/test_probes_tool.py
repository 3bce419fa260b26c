"""Probes as a read-only tool of the model's investigation (and of MCP): ``probe`` runs a
probe within the ``probes:`` grants, audited; anything but a probe, or an ungranted host, is
refused back to the model as text."""

from __future__ import annotations

from typing import Any, cast

import pytest
from sqlmodel import select

from guard.access.roles import Role, needed
from guard.actions import ActionRegistry
from guard.agent.steps import StepRunner
from guard.agent.tools import BY_NAME, TOOL_NAMES, Toolbox, ToolError
from guard.redact import Redactor
from guard.skills.library import SkillLibrary
from guard.store.models import AuditEntry
from tests.conftest import GuardHome
from tests.helpers.agent import stored_incident
from tests.helpers.probes import fixed_site

pytestmark = pytest.mark.unit


def toolbox(home: GuardHome) -> Toolbox:
    settings, db = home.settings(), home.database()
    with db.session() as session:
        inc = stored_incident(session)
        session.expunge(inc)
    none = cast(Any, None)  # the probe needs no verifier, sandbox or memory
    runner = StepRunner(settings, db, ActionRegistry(), none, none, Redactor())
    library = SkillLibrary(home.root / "skills")
    return Toolbox(inc, runner, none, library, none, ActionRegistry(), 10.0)


async def test_the_model_probes_what_the_grant_names(home: GuardHome) -> None:
    assert "probe" in TOOL_NAMES and BY_NAME["probe"].role == needed("probe") == Role.operator
    with fixed_site({"/health": (200, b"fine")}) as url:
        port = int(url.rsplit(":", 1)[1])
        home.write_config({"probes": {"allow": [{"host": "127.0.0.1", "ports": [port]}]}})
        box = toolbox(home)
        said = await box.call("probe", {"probe": f"probe.http {url}/health"})
        assert said.startswith("ok: True\n") and f"GET {url}/health -> 200 OK" in said
        with pytest.raises(ToolError, match=r"10\.0\.0\.9 is not in probes\.allow"):
            await box.call("probe", {"probe": "probe.tcp 10.0.0.9:22"})
        with pytest.raises(ToolError, match=r"'docker\.restart' is not a probe"):
            await box.call("probe", {"probe": "docker.restart api"})
    with box.runner.db.session() as session:
        done = session.exec(select(AuditEntry).where(AuditEntry.action == "action.probe.http"))
        [entry] = list(done)
    assert entry.data["ok"] is True and "-> 200 OK" in entry.data["message"]
