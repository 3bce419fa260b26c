"""Promotion with no git remote, under a real `guard run` and the Bot API test server: a skill
asked for first (``trust: approval``) heals a web check three times; Guard asks an admin, once,
whether to trust it (its recoveries, the diff, two buttons); an approver's press is refused and
audited; an admin's press commits ``trust: trusted`` to the skills repository, and the fourth
fault heals with no question. Declined ("Keep asking"), it is not proposed again until
``promote_after`` more verified recoveries."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import pytest

from tests.helpers.agent import db_rows, find, past_flap_window, show, tune_skill, wait_for
from tests.helpers.telegram import (
    ADMIN,
    CHAT,
    answers,
    buttons,
    configure,
    guard_run,
    http_playbook,
    incident_message,
    write_http_skill,
)

SKILL = "web-fix"
APPROVER = 43  # on the allowlist: an approver, not an admin
QUESTION = f"Promote skill {SKILL}"


def setup(home, tg, service) -> None:
    http_playbook(home, service)
    write_http_skill(home, service, SKILL)
    tune_skill(home, SKILL, limits={"max_runs": 10, "window": "1h"})  # six runs on one target
    configure(
        home,
        tg,
        telegram={"allowed_user_ids": [ADMIN, APPROVER]},
        access={"telegram": {ADMIN: "admin"}},
        triage={"flap_window": "1s"},
    )


def heal(home, tg, service, n: int) -> None:
    """Fault ``n``: the check fails, Guard asks, the approver approves the skill, it heals."""
    if n > 1:
        wait_for(lambda: past_flap_window(home, n - 1), 30, "the flap window")
        service.healthy = False
    wait_for(partial(find, home, id=n, state="awaiting_human"), 30, f"#{n} asked")
    msg = incident_message(tg, n)
    run = next(d for label, d in buttons(msg) if SKILL in label)
    tg.press(APPROVER, run, chat_id=CHAT, message_id=msg["message_id"])
    wait_for(partial(find, home, id=n, state="resolved"), 30, f"#{n} resolved")


def three_heals_asked(home, tg, service) -> dict:
    """Faults 1-3 approved and healed; the promotion question they earned."""
    for n in (1, 2, 3):
        heal(home, tg, service, n)
    [question] = wait_for(lambda: questions(tg), 30, "the promotion question")
    return question


def questions(tg) -> list[dict]:
    return tg.bot_messages(QUESTION)


def audited(home, prefix: str) -> list[tuple[str, str, str]]:
    return db_rows(
        home,
        f"select action, actor, data from audit_log where action like '{prefix}%' order by seq",
    )


def skill_json(home) -> dict:
    return json.loads(home.cli("skills", "show", SKILL, "--json").stdout)


@pytest.mark.timeout(400)  # four incidents under a real `guard run`: ~1.5 min
def edited(tg: Any, question: dict[str, Any]) -> dict[str, Any] | None:
    """The question as it reads now, once its buttons are gone (None while they are not)."""
    now = next(m for m in tg.bot_messages() if m["message_id"] == question["message_id"])
    return None if buttons(now) else now


def test_three_heals_ask_an_admin_once_whose_press_promotes_and_the_fourth_heals_unasked(
    home, tg, service
):
    setup(home, tg, service)
    with guard_run(home):
        question = three_heals_asked(home, tg, service)
        text = question["text"]
        assert "-trust: approval" in text and "+trust: trusted" in text, text
        for n in (1, 2, 3):
            assert f"incident #{n}" in text, text
        labels = dict(buttons(question))
        assert set(labels) == {"Promote", "Keep asking"}, labels
        pending = skill_json(home)
        assert pending["promotion"] and pending["proposal"]["asked"], pending

        # an approver may approve runs, not change a skill's trust
        tg.press(APPROVER, labels["Promote"], chat_id=CHAT, message_id=question["message_id"])
        wait_for(lambda: any("needs admin" in a for a in answers(tg)), 60, "the refusal")
        refused = [json.loads(d) for a, _, d in audited(home, "telegram.refused")]
        assert any("needs admin; you are approver" in r["reason"] for r in refused), refused
        assert skill_json(home)["trust_file"] == "approval"

        tg.press(ADMIN, labels["Promote"], chat_id=CHAT, message_id=question["message_id"])
        wait_for(lambda: skill_json(home)["trust_file"] == "trusted", 60, "the promotion")
        wait_for(lambda: any("promoted" in a for a in answers(tg)), 60, "the press's answer")
        closed = wait_for(partial(edited, tg, question), 60, "the question closed")
        assert f"Promoted by telegram:{ADMIN}" in closed["text"], closed["text"]
        assert "+trust: trusted" in closed["text"], closed["text"]  # the question is still read
        [(_, actor, data)] = audited(home, "skill.promoted")
        assert actor == f"telegram:{ADMIN}"
        assert json.loads(data)["by"] == f"telegram:{ADMIN}"
        log = subprocess.run(
            ["git", "log", "-p", "-1", "--format=%s", "--", SKILL],
            cwd=home.root / "skills",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert f"guard: promote skill {SKILL} to trust: trusted" in log
        assert "-trust: approval" in log and "+trust: trusted" in log, log

        wait_for(lambda: past_flap_window(home, 3), 60, "the flap window")
        service.healthy = False  # the fourth fault: healed with no question
        wait_for(partial(find, home, id=4, state="resolved"), 90, "#4 healed unasked")
        assert not [t for t in show(home, 4)["timeline"] if t["type"] == "asked_human"]
        time.sleep(2)  # a second question would have been queued by now
        assert len(questions(tg)) == 1

    history = json.loads(home.cli("skills", "history", SKILL, "--json").stdout)
    made = [c["made_by"] for r in history["revisions"] for c in r["commits"]]
    assert "promoted" in made, history
    assert [a for a, _, _ in audited(home, "skill.")] == [
        "skill.promotion_proposed",
        "skill.promotion_asked",
        "skill.promoted",
    ]


@pytest.mark.timeout(600)  # six incidents and a restart: ~2.5 min
def test_kept_asking_it_is_not_proposed_again_until_three_more_verified_recoveries(
    home, tg, service
):
    setup(home, tg, service)
    with guard_run(home):
        question = three_heals_asked(home, tg, service)
    with guard_run(home):  # a restart: the proposal was asked, it is not asked again
        time.sleep(3)
        assert len(questions(tg)) == 1
        keep = dict(buttons(question))["Keep asking"]
        tg.press(ADMIN, keep, chat_id=CHAT, message_id=question["message_id"])
        wait_for(lambda: audited(home, "skill.promotion_declined"), 20, "the decline")
        closed = wait_for(partial(edited, tg, question), 30, "the question closed")
        assert f"Kept asking by telegram:{ADMIN}" in closed["text"], closed["text"]
        assert not skill_json(home)["promotion"]
        for n in (4, 5):
            heal(home, tg, service, n)
        time.sleep(2)
        assert len(questions(tg)) == 1 and skill_json(home)["trust_file"] == "approval"
        heal(home, tg, service, 6)
        wait_for(lambda: len(questions(tg)) == 2, 30, "the second question")
    [(_, actor, _)] = audited(home, "skill.promotion_declined")
    assert actor == f"telegram:{ADMIN}"


def test_guard_skills_promote_commits_trusted_audited_and_refuses_with_a_remote(home, service):
    http_playbook(home, service)
    write_http_skill(home, service, SKILL)
    home.write_config({"skills": {"git_author": "Guard Test <guard@test>"}})
    done = home.cli("skills", "promote", SKILL)
    assert f"skill {SKILL} was promoted to trust: trusted by cli:" in done.stdout, done.stdout
    assert skill_json(home)["trust"] == "trusted"
    [(_, actor, data)] = audited(home, "skill.promoted")
    assert actor.startswith("cli:") and json.loads(data)["commit"]
    subjects = subprocess.run(
        ["git", "log", "--format=%s"], cwd=home.root / "skills", capture_output=True, text=True
    ).stdout.splitlines()
    assert subjects == [
        f"guard: promote skill {SKILL} to trust: trusted",
        f"guard: track skill {SKILL} before its promotion",
    ]
    again = home.cli("skills", "promote", SKILL)
    assert "already says trust: trusted" in again.stdout, again.stdout

    home.write_config({"skills": {"git_remote": "file:///srv/skills.git"}})
    refused = home.cli("skills", "promote", SKILL, check=False)
    assert refused.returncode != 0 and f"merge guard/promote/{SKILL}" in refused.stderr


def test_the_press_and_the_job_finishing_one_promotion_commit_and_audit_it_once(home, service):
    """A press finishes its promotion while the job's round finds it too: one of them commits
    and audits it (both did, before)."""
    from guard.skills import localpromotion
    from guard.store.ladder import PROMOTE, PROPOSED, LadderStep

    http_playbook(home, service)
    write_http_skill(home, service, SKILL)
    home.write_config({"skills": {"git_author": "Guard Test <guard@test>"}})
    settings, db = home.settings(), home.database()
    with db.session() as session:
        step = LadderStep(skill=SKILL, step=PROPOSED, reason="three verified recoveries")
        session.add(step)
        session.flush()
        assert step.id is not None
        localpromotion.decide_in(session, step.id, PROMOTE, "telegram:42")
    start = threading.Barrier(2)

    def finish() -> list[str]:
        start.wait()
        return localpromotion.complete(db, settings)

    with ThreadPoolExecutor(2) as pool:
        notes = [n for done in pool.map(lambda _: finish(), range(2)) for n in done]
    db.dispose()
    assert len(notes) == 1, notes
    [(_, actor, data)] = audited(home, "skill.promoted")
    assert actor == "telegram:42" and json.loads(data)["commit"], data
    assert skill_json(home)["trust"] == "trusted"
