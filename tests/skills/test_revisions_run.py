"""Revisions under a real ``guard run`` watching a real log file, driven by ``guard reply`` and
``guard approve`` as a human would: a learned skill that is not trusted is offered for the
fault's second occurrence; the human sends another fix instead, and it becomes revision 2 of
that skill (one skill, its history shows both), which then heals the third occurrence."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.agent.test_learning_causation import asked, disk_filler, setup_log_home
from tests.conftest import GuardHome
from tests.helpers.agent import find, guard_process, past_flap_window, show, wait_for

pytestmark = pytest.mark.timeout(300)  # three incidents, two flap windows: ~2 min


def test_a_fix_sent_instead_of_an_untrusted_skill_is_its_next_revision(home: GuardHome):
    log = setup_log_home(home)
    config = yaml.safe_load(home.config.read_text())
    config["skills"]["learned_trust"] = "approval"  # a learned skill asks first
    home.config.write_text(yaml.safe_dump(config))
    marker = home.root / "disk-full"
    marker.write_text("A")
    with guard_process(home), disk_filler(log, marker):
        first = asked(home, kind="disk_full")
        reply = home.cli("reply", str(first["id"]), "--", f"rm -f {marker}")
        assert "saved as skill learned-" in reply.stdout, reply.stdout
        name = show(home, first["id"])["details"]["learned_skill"]

        wait_for(lambda: past_flap_window(home, first["id"]), 30, "the flap window to pass")
        marker.write_text("B")
        second = asked(home, kind="disk_full", id=first["id"] + 1)
        # the skill matches, but is not trusted: the human is asked, and sends another fix
        reply = home.cli("reply", str(second["id"]), "--", f"rm {marker} || true")
        out = reply.stdout
        assert f"saved as revision 2 of skill {name}" in out, out
        assert "-rm -f " in out and "+rm " in out  # the scripts' diff, for review

        wait_for(lambda: past_flap_window(home, second["id"]), 30, "the flap window to pass")
        marker.write_text("A")
        third = asked(home, kind="disk_full", id=second["id"] + 1)
        home.cli("approve", str(third["id"]), "--skill", name)
        wait_for(lambda: find(home, id=third["id"], state="resolved"), 60, "revision 2 to heal")

    listed = json.loads(home.cli("skills", "list", "--json").stdout)
    assert [s["name"] for s in listed] == [name]  # one skill, not learned-...-2
    history = json.loads(home.cli("skills", "history", name, "--json").stdout)
    revisions = history["revisions"]
    assert [r["revision"] for r in revisions] == [1, 2]
    assert [r["made_by"] for r in revisions] == [
        f"learned from incident #{first['id']}",
        f"learned from incident #{second['id']}",
    ]
    assert revisions[0]["outcomes"]["runs"] == 0
    assert (revisions[1]["outcomes"]["runs"], revisions[1]["outcomes"]["verified"]) == (1, 1)
