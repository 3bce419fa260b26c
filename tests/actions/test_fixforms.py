"""What a human's fix may be here: with no sandbox the question offers actions only, and a
shell fix is refused with the reason (in process; no engine: ``DOCKER_HOST`` names nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.actions.fixforms import SHELL_OR_ACTION, FixForms, fix_forms
from guard.config import Settings
from tests.helpers.nowhere import no_engine_no_cluster

pytestmark = pytest.mark.unit


def test_without_a_sandbox_the_question_offers_actions_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_engine_no_cluster(monkeypatch, tmp_path)
    forms = fix_forms(Settings())
    assert not forms.shell and forms.why == "no Docker engine, no cluster"
    assert forms.hint.startswith("an action such as docker.restart NAME or ")
    assert "shell command for the sandbox" not in forms.hint
    asked = forms.question("No skill matches. Send a fix.")
    assert asked == f"No skill matches. Send a fix: {forms.hint}."
    assert forms.question("Approve a skill, or send a fix.").endswith(f"send a fix: {forms.hint}.")
    assert forms.question("Other words.") == f"Other words. Send a fix: {forms.hint}."
    assert "no Docker engine, no cluster" in forms.refusal() and forms.hint in forms.refusal()


def test_with_a_sandbox_nothing_changes() -> None:
    forms = FixForms(True, SHELL_OR_ACTION)
    assert forms.question("No skill matches. Send a fix.") == "No skill matches. Send a fix."


def test_the_chats_send_a_fix_prompt_offers_shell_only_where_it_can_run() -> None:
    from guard.notify.answers.presses import fix_prompt

    here = fix_prompt("docker.restart NAME", 7)
    assert "a shell command for the sandbox, or an action such as docker.restart NAME" in here
    nowhere = fix_prompt("docker.restart NAME", 7, shell=False)
    assert "shell command for the sandbox" not in nowhere
    assert "#7: an action such as docker.restart NAME (no sandbox here: no shell commands)" in (
        nowhere
    )
