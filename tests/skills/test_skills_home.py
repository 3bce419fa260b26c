"""Where skills live by default: learned ones in ``data_dir/skills`` (a git repository of
their own), never in the source checkout; the shipped starter skills are read beneath them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from guard.skills.library import load_skill
from tests.conftest import REPO, GuardHome
from tests.helpers.agent import find, guard_process, setup_docker_home, show, wait_for

STARTERS = sorted(p.name for p in (REPO / "skills").iterdir() if (p / "skill.yaml").is_file())


def checkout_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


def test_by_default_skills_are_the_starters_beneath_the_data_dir(home: GuardHome) -> None:
    home.write_config({"skills_dir": None})
    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    assert sorted(s["name"] for s in listed) == STARTERS
    checked = "".join(home.cli("check-config").stdout.split())  # rich wraps long lines
    assert f"{len(STARTERS)}skill(s)in{home.root / 'data' / 'skills'}" in checked
    # a configured skills_dir is the whole library, as before: an empty one has no skills
    home.write_config({})
    assert json.loads(home.cli("skills", "list", "--json").stdout) == []


@pytest.mark.docker
def test_a_learned_skill_lands_in_the_data_dir_not_the_checkout(
    home: GuardHome, containers: object, tmp_path: Path
) -> None:
    before = checkout_status()
    no_starters = tmp_path / "no-starters"
    no_starters.mkdir()  # nothing matches, so Guard asks and the reply is learned
    labels = setup_docker_home(home, skills_dir=None, builtin_skills_dir=str(no_starters))
    victim = containers.run("victim", "sleep 600", labels=labels)  # type: ignore[attr-defined]
    with guard_process(home):
        victim.kill()
        asked = wait_for(
            lambda: find(home, target=victim.name, state="awaiting_human"), 60, "the question"
        )
        reply = home.cli("reply", str(asked["id"]), "--", "docker.restart", victim.name)
        assert "saved as skill learned-" in reply.stdout
    name = show(home, asked["id"])["details"]["learned_skill"]
    library = home.root / "data" / "skills"
    assert load_skill(library / name).spec.origin == "learned"
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=library, capture_output=True, text=True
    )
    assert Path(top.stdout.strip()) == library  # committed in its own repository
    assert not (home.root / "skills" / name).exists()  # not the folder guard run was run in
    assert checkout_status() == before
