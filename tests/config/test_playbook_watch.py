"""The playbook watcher's parts: noticing an edit, validating per file, diffing two configs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from guard.app import Guard
from guard.app.compose import compose_agent
from guard.config import Settings
from guard.domain.fingerprint import fingerprint
from guard.playbooks import Playbook
from guard.playbooks.loader import check_playbooks
from guard.playbooks.watch import PlaybookWatch, diff_playbooks, invalid_signal, valid_signal
from guard.store.db import open_database

pytestmark = pytest.mark.unit


def book(name: str, *monitors: dict[str, Any], **extra: Any) -> Playbook:
    return Playbook.model_validate({"name": name, "monitors": list(monitors), **extra})


def http(id_: str, **kw: Any) -> dict[str, Any]:
    return {"id": id_, "type": "http", "url": f"http://127.0.0.1:1/{id_}", **kw}


def test_diff_names_added_removed_and_changed_monitors() -> None:
    old = [book("a", http("same"), http("edited"), http("dropped")), book("b", http("off"))]
    new = [
        book("a", http("same"), http("edited", every="5s"), http("fresh")),
        book("b", http("off", enabled=False)),
    ]
    diff = diff_playbooks(old, new)
    assert diff.added == ("fresh",)
    assert diff.removed == ("dropped", "off")  # turned off is removed
    assert diff.changed == ("edited",)
    assert diff.playbooks == ()
    assert not diff.empty


def test_diff_of_the_same_config_is_empty_and_other_parts_are_named() -> None:
    old = [book("a", http("x"))]
    assert diff_playbooks(old, [book("a", http("x"))]).empty
    grants = [book("a", http("x"), diagnostics=[{"run": "uptime"}])]
    diff = diff_playbooks(old, grants)
    assert diff.playbooks == ("a",) and not diff.added and not diff.changed
    moved = diff_playbooks(old, [book("b", http("x"))])  # same monitor, other file
    assert moved.playbooks == ("a", "b") and not moved.changed


def test_watch_sees_content_not_touches(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text("name: web\n")
    watch = PlaybookWatch(tmp_path)
    assert not watch.changed()
    path.write_text("name: web\n")  # rewritten, same text
    os.utime(path, ns=(1, 1))
    assert not watch.changed()
    path.write_text("name: web2\n")
    assert not watch.changed()  # not yet: it may still be being written
    assert watch.changed() and not watch.changed()  # the same a poll later: it counts once
    (tmp_path / "more.yml").write_text("name: more\n")
    assert not watch.changed() and watch.changed()
    path.unlink()
    assert not watch.changed() and watch.changed()
    assert watch.files == [tmp_path / "more.yml"]


def test_a_file_being_written_counts_once_it_is_whole(tmp_path: Path) -> None:
    """``write_text`` truncates, then writes: a poll between the two saw an empty playbook."""
    path = tmp_path / "web.yaml"
    path.write_text("name: web\nmonitors: []\n")
    watch = PlaybookWatch(tmp_path)
    path.write_text("")  # truncated: a poll now
    assert not watch.changed()
    path.write_text("name: web\nmonitors:\n")  # half written: the next poll
    assert not watch.changed()
    path.write_text("name: web\nmonitors:\n  - {id: a, type: http, url: 'http://x/'}\n")
    assert not watch.changed()
    assert watch.changed()  # whole, and the same a poll later
    assert not watch.changed()


def test_check_playbooks_names_the_broken_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(yaml.safe_dump({"name": "good", "monitors": [http("g")]}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nmonitors:\n  - id: b\n    type: http\n    url: nope\n")
    books, problems = check_playbooks(tmp_path)
    assert [b.name for b in books] == ["good"]
    assert list(problems) == [bad]
    assert "bad.yaml" in problems[bad][0] and "(line 5)" in problems[bad][0]

    sig = invalid_signal(bad, problems[bad])
    assert (sig.kind, sig.target, sig.monitor_id, sig.status) == (
        "playbook_invalid",
        str(bad),
        "playbooks",
        "firing",
    )
    assert "(line 5)" in sig.message
    again = invalid_signal(bad, check_playbooks(tmp_path)[1][bad])
    key = (again.source, again.target, again.kind, again.message)
    assert fingerprint(*key) == fingerprint(sig.source, sig.target, sig.kind, sig.message)
    ok = valid_signal(bad)
    assert ok.status == "ok" and ok.check_key == sig.check_key


def test_check_playbooks_reports_a_missing_folder(tmp_path: Path) -> None:
    books, problems = check_playbooks(tmp_path / "nope")
    assert books == [] and "playbooks_dir does not exist" in problems[tmp_path / "nope"][0]


async def test_apply_keeps_unchanged_monitors_and_updates_what_derives_from_playbooks(
    tmp_path: Path,
) -> None:
    settings = Settings(
        data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=tmp_path / "playbooks"
    )
    db = open_database(settings.database_url)
    old = [book("a", http("same"), http("edited"), http("dropped"))]
    agent = compose_agent(settings, db, old, sandboxes=cast(Any, object()))
    guard = Guard(settings, old, db=db, agent=agent)
    same = guard.monitors[0]
    new = [
        book("a", http("same"), http("edited", **{"for": 3}), http("fresh")),
        book("b", diagnostics=[{"run": "uptime"}]),
    ]
    diff = await guard.apply_playbooks(new)
    assert (diff.added, diff.removed, diff.changed) == (("fresh",), ("dropped",), ("edited",))
    assert [m.id for m in guard.monitors] == ["same", "edited", "fresh"]
    assert guard.monitors[0] is same  # not rebuilt, not restarted
    assert guard.triage.policy("edited").for_count == 3
    assert set(agent.runner.verifier.specs) == {"same", "edited", "fresh"}
    assert agent.diagnoser.books["edited"] is new[0]
    assert guard.playbooks == new
    await guard.close()


def drained(guard: Guard) -> list[tuple[str, str, str]]:
    """What the reload put on the triage queue: (status, file name, message start)."""
    out: list[tuple[str, str, str]] = []
    while not guard.intake.queue.empty():
        for s in guard.intake.queue.get_nowait().signals:
            assert s.kind == "playbook_invalid"
            out.append((s.status, Path(s.target).name, s.message.split(":")[0]))
    return out


async def reloaded(guard: Guard) -> Any:
    """The poll that sees an edit (it waits: the file may still be being written), then the
    poll after, where the edit has settled and counts."""
    assert await guard.reload_playbooks() is None and drained(guard) == []
    return await guard.reload_playbooks()


async def test_reload_signals_each_problem_once_and_resolves_what_was_fixed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "playbooks"
    folder.mkdir()
    a, b = folder / "a.yaml", folder / "b.yaml"
    a.write_text(yaml.safe_dump({"name": "a", "monitors": [http("x")]}))
    b.write_text(yaml.safe_dump({"name": "b", "monitors": [http("y")]}))
    settings = Settings(data_dir=tmp_path, skills_dir=tmp_path / "skills", playbooks_dir=folder)
    guard = Guard(settings, check_playbooks(folder)[0], heal=False)
    assert await guard.reload_playbooks() is None and drained(guard) == []  # nothing changed

    a.write_text("name: a\nmonitors: [")
    assert await reloaded(guard) is None
    assert drained(guard) == [
        ("firing", "a.yaml", "playbook a.yaml is invalid, Guard keeps its last good config")
    ]
    assert [m.id for m in guard.monitors] == ["x", "y"]  # the last good config runs on

    b.write_text("name: b\nmonitors: 3\n")  # a is as broken as before: nothing about a
    await reloaded(guard)
    assert [(st, name) for st, name, _ in drained(guard)] == [("firing", "b.yaml")]

    a.write_text("name: a\nnope: 1\n")  # another problem in a: the old one resolves
    await reloaded(guard)
    assert [(st, name) for st, name, _ in drained(guard)] == [
        ("ok", "a.yaml"),
        ("firing", "a.yaml"),
    ]

    a.write_text(yaml.safe_dump({"name": "a", "monitors": [http("x"), http("z")]}))
    b.unlink()
    diff = await reloaded(guard)
    assert diff is not None and (diff.added, diff.removed) == (("z",), ("y",))
    assert sorted((st, name) for st, name, _ in drained(guard)) == [
        ("ok", "a.yaml"),
        ("ok", "b.yaml"),
    ]
    assert [m.id for m in guard.monitors] == ["x", "z"]
    await guard.close()
