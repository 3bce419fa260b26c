"""The console ends incidents as the CLI does (issue #40, item 3): resolve, mute for a while,
unmute, and silences, each a CSRF form through the gate, audited, refused for a viewer."""

from __future__ import annotations

import pytest
from sqlmodel import select

from guard.store.silences import Silence
from tests.conftest import GuardHome
from tests.webui.helpers import Site, csrf_of, sign_in

pytestmark = pytest.mark.unit


async def test_an_operator_resolves_mutes_and_unmutes_on_the_incident_page(
    home: GuardHome,
) -> None:
    site = Site(home)
    inc = site.incident(state="escalated", details={"rule": "disk .* is full"})
    async with site.aclient() as c:
        await sign_in(c, site.tokens["ann"])
        page = await c.get(f"/incidents/{inc}")
        assert "when no matching line for 10m (resolve_after)" in page.text  # how it ends
        for verb in ("resolve", "mute"):
            assert f'action="/incidents/{inc}/{verb}"' in page.text, verb
        muted = await c.get(f"/incidents/{site.incident(state='muted')}")
        assert "/unmute" in muted.text and "/unmute" not in page.text
        csrf = csrf_of(page)
        for verb, extra in (("mute", {"for": "2h"}), ("unmute", {}), ("resolve", {})):
            r = await c.post(f"/incidents/{inc}/{verb}", data={"csrf": csrf, **extra})
            assert r.status_code == 303, r.text
    assert [(c.verb, c.fix, c.actor) for c in site.commands()] == [
        ("mute", "7200.0", "token:ann"),
        ("unmute", None, "token:ann"),
        ("resolve", None, "token:ann"),
    ]
    assert [e.actor for e in site.audited("human.resolve")] == ["token:ann"]


async def test_the_deny_result_offers_to_close(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident(details={"options": ["restart-api"]})
    async with site.aclient() as c:
        await sign_in(c, site.tokens["ann"])
        page = await c.get(f"/incidents/{inc}")
        r = await c.post(f"/incidents/{inc}/deny", data={"csrf": csrf_of(page)})
        shown = await c.get(r.headers["location"])
    assert 'id="close"' in shown.text
    assert f'action="/incidents/{inc}/resolve"' in shown.text
    assert f'action="/incidents/{inc}/mute"' in shown.text


async def test_silences_from_the_console_and_a_viewer_is_refused(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident()
    async with site.aclient() as c:
        await sign_in(c, site.tokens["vic"])
        page = await c.get("/silences")
        assert page.status_code == 200 and 'action="/silences"' not in page.text
        csrf = csrf_of(page)
        for path, data in (
            ("/silences", {"matchers": "service=api", "for": "2h"}),
            (f"/incidents/{inc}/resolve", {}),
            (f"/incidents/{inc}/mute", {}),
        ):
            r = await c.post(path, data={"csrf": csrf, **data})
            assert r.status_code == 403, (path, r.text)
            assert "needs operator; you are viewer" in r.text
    async with site.aclient() as c:
        await sign_in(c, site.tokens["ann"])
        page = await c.get("/silences")
        made = await c.post(
            "/silences",
            data={"csrf": csrf_of(page), "matchers": "service=api kind=log_match", "for": "2s"},
        )
        assert made.status_code == 303, made.text
        listed = await c.get("/silences")
        assert "service=api kind=log_match" in listed.text and "token:ann" in listed.text
        bad = await c.post(
            "/silences", data={"csrf": csrf_of(page), "matchers": "service", "for": "1h"}
        )
        assert bad.status_code == 400 and "NAME=VALUE" in bad.text
    with site.db.session() as s:
        (row,) = s.exec(select(Silence)).all()
    assert row.by == "token:ann" and [m["name"] for m in row.matchers] == ["service", "kind"]
    refused = site.audited("human.refused")
    assert [e.data["verb"] for e in refused] == ["silence", "resolve", "mute"]
    assert [e.actor for e in site.audited("human.silence")] == ["token:ann"]
