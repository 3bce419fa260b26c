"""Rendering: escaped HTML, cut under Telegram's limit with a pointer to the full text."""

from __future__ import annotations

from guard.notify.base import HumanRequest, SkillOption
from guard.notify.telegram.messages import LIMIT, cut, render_request


def test_huge_evidence_is_escaped_and_cut_safely():
    evidence = "\n".join(f"line {i} <tag> & \"quote\" &amp;" for i in range(2000))
    req = HumanRequest(incident_id=7, title="db <down>", severity="error", target="db&co",
                       count=3, evidence=evidence,
                       options=[SkillOption("restart-db", "restarts <db>", "a" * 22)],
                       deny_id="d" * 22, mute_id="m" * 22)
    text, buttons = render_request(req, signal="ERROR <x> & y")
    assert len(text) <= LIMIT
    assert "db &lt;down&gt;" in text and "db&amp;co" in text and "&lt;tag&gt;" in text
    assert "<tag>" not in text and text.count("<pre>") == text.count("</pre>")
    assert text.endswith("<code>guard incidents show 7</code>")
    assert [d for row in buttons for _, d in row] == ["a" * 22, "fix:7", "d" * 22, "m" * 22]


def test_cut_never_splits_an_entity():
    for n in range(4080, 4100):
        text = cut("x" * n + "&amp;" * 10, more="more")
        assert len(text) <= LIMIT
        body = text.rsplit("\n…\n", 1)[0]
        assert body.count("&") == body.count("&amp;")
