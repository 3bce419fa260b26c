"""The web console's incident page lists the signals that joined the incident."""

from __future__ import annotations

from guard.store.correlation import RelatedSignal
from tests.conftest import GuardHome
from tests.webui.helpers import Site


async def test_the_incident_page_lists_its_related_signals(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident(title="container exited on shop", monitor_id="shop-container")
    bare = site.incident(title="disk full", monitor_id="disk")
    with site.db.session() as s:
        s.add(
            RelatedSignal(
                incident_id=inc,
                fingerprint="fp",
                check_key="shop-http",
                monitor_id="shop-http",
                source="http",
                target="http://shop:8080/<healthz>",
                kind="http_unreachable",
                severity="critical",
                count=7,
            )
        )
    async with site.aclient() as c:
        page = (await c.get(f"/incidents/{inc}", headers=site.bearer("vic"))).text
        other = (await c.get(f"/incidents/{bare}", headers=site.bearer("vic"))).text
    assert '<table id="related">' in page
    assert "http_unreachable on http://shop:8080/&lt;healthz&gt;" in page  # text, escaped
    assert "<td>shop-http</td><td>7</td>" in page
    assert 'id="related"' not in other
