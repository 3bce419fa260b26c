"""Railway-like: a real ``guard run`` where no Docker engine and no cluster are reachable
(``DOCKER_HOST`` names nothing, no kubeconfig). Guard says so before it matters: check-config
and the start flag the skill whose shell steps cannot run (once), ``/readyz`` lists what works,
the question offers only fixes that can run, and a human's shell fix is refused at once with
the reason instead of failing on the engine's connection error."""

from __future__ import annotations

import httpx
import pytest
import yaml

from tests.conftest import GuardHome
from tests.helpers.agent import find, free_port, running_guard, show, wait_for
from tests.helpers.nowhere import no_engine_no_cluster
from tests.skills.test_skills_files import write_skill

CANNOT = "shell steps cannot run here"


@pytest.fixture
def railway_like(home: GuardHome, monkeypatch: pytest.MonkeyPatch) -> GuardHome:
    no_engine_no_cluster(monkeypatch, home.root)
    write_skill(home.root / "skills", "look-at-disk", {"steps": [{"run": "df -h"}]})
    home.write_config(
        {
            "agent": {"verify_timeout": "3s", "poll_interval": "200ms", "settle": "1s"},
            "skills": {"git_author": "Guard Test <guard@test>"},
            "http_host": "127.0.0.1",
            "http_port": free_port(),
        }
    )
    down = f"http://127.0.0.1:{free_port()}/"  # nothing listens: the check fails
    home.playbook("web", [{"id": "web", "type": "http", "url": down, "every": "1h"}])
    return home


def test_check_config_flags_the_skill_whose_shell_steps_cannot_run(
    railway_like: GuardHome,
) -> None:
    done = railway_like.cli("check-config")  # a warning, not an invalid config
    (warning,) = [line for line in done.stderr.splitlines() if CANNOT in line]
    assert "skill look-at-disk (" in warning and "look-at-disk/skill.yaml" in warning
    assert "steps[0]: run df -h" in warning and "no Docker engine, no cluster" in warning


def test_guard_run_says_what_works_and_offers_only_fixes_that_can_run(
    railway_like: GuardHome,
) -> None:
    port = railway_like.settings().http_port
    with running_guard(railway_like) as (proc, log):
        warned = [line for line in log.read_text().splitlines() if CANNOT in line]
        assert len(warned) == 1 and "look-at-disk/skill.yaml" in warned[0], warned

        wait_for(lambda: "serving /healthz" in log.read_text(), 30, "the HTTP server")
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        body = ready.json()
        assert body["status"] == "ready" and body["role"] == "leader"  # kept as they were
        caps = {c["name"]: c for c in body["capabilities"]}
        assert caps["sandbox"]["state"] == "none" and caps["sandbox"]["detail"] == CANNOT
        assert caps["sandbox"]["why"] == "no Docker engine, no cluster"
        assert caps["monitors"]["state"] == "ok"

        inc = wait_for(
            lambda: find(railway_like, monitor_id="web", state="awaiting_human"),
            60,
            "the failing check to ask a human",
        )
        asked = [t for t in show(railway_like, inc["id"])["timeline"] if t["type"] == "asked_human"]
        question = asked[-1]["message"]
        assert "Send a fix: an action such as docker.restart NAME or " in question, question
        assert "a shell command for the sandbox" not in question

        fix = "curl -s http://svc/ || echo down"
        done = railway_like.cli("reply", str(inc["id"]), "--", fix, "--wait", "30", check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "refused: a shell fix needs a sandbox and none can run here" in done.stdout
        assert "no Docker engine, no cluster" in done.stdout
        assert "Connection aborted" not in done.stdout and "FileNotFoundError" not in done.stdout
        after = show(railway_like, inc["id"])
        assert after["state"] == "awaiting_human"  # still the humans': nothing ran
        assert not [t for t in after["timeline"] if t["type"] == "step"]
        assert [t for t in after["timeline"] if t["type"] == "fix_refused"]
        assert proc.poll() is None
    assert len([line for line in log.read_text().splitlines() if CANNOT in line]) == 1


def test_no_shell_step_is_attempted_here_and_the_model_is_offered_none(
    railway_like: GuardHome,
) -> None:
    """A trusted skill whose steps need a shell is not run (a run here would only fail on the
    engine's connection error and count against the skill); its shell diagnostic is skipped
    with the reason; the model is not offered ``sandbox_run``."""
    from tests.fakes.model import ModelServer

    write_skill(
        railway_like.root / "skills",
        "restart-web",
        {
            "triggers": [{"source": "http", "kind": "http_unreachable"}],
            "diagnostics": [{"run": "df -h /"}],
            "steps": [{"run": "echo restart"}],
            "trust": "trusted",
        },
    )
    model = ModelServer("openai")
    try:
        config = yaml.safe_load(railway_like.config.read_text())
        railway_like.write_config({**config, "llm": model.config()})
        with running_guard(railway_like) as (proc, _log):
            inc = wait_for(
                lambda: find(railway_like, monitor_id="web", state="awaiting_human"),
                60,
                "the failing check to ask a human",
            )
            shown = show(railway_like, inc["id"])
            assert proc.poll() is None
    finally:
        model.close()
    timeline = shown["timeline"]
    assert not [t for t in timeline if t["type"] == "step"], timeline  # nothing ran
    evidence = shown["details"]["evidence"]
    assert "$ run df -h /" in evidence and f"(skipped: {CANNOT}" in evidence, evidence
    assert "Connection aborted" not in evidence and "could not run" not in evidence
    question = [t for t in timeline if t["type"] == "asked_human"][-1]["message"]
    assert "restart-web" in question and CANNOT in question, question
    offered = {t["function"]["name"] for r in model.requests for t in r.get("tools") or []}
    assert model.requests and "probe" in offered and "sandbox_run" not in offered, offered
