"""Who is believed about the client, on a real ``guard run`` over real HTTP: the proxy header
and every ``X-Forwarded-*`` only from a TCP peer listed in ``access.trusted_proxies``. A
loopback client that claims to be a listed proxy is no proxy; wrong tokens are counted by the
TCP peer (by a trusted proxy's last hop), on the console and on ``/mcp``; a real proxy on
loopback, listed, signs its users in. docs/ACCESS.md shows the same."""

from __future__ import annotations

from sqlmodel import select

from guard.store.models import AuditEntry
from tests.conftest import GuardHome
from tests.helpers.agent import running_guard
from tests.helpers.intake import am_alert, am_payload, am_source
from tests.webui.helpers import LOCAL, cli_token, console_url, from_address, reverse_proxy

USER = "X-Forwarded-User"
WRONG = {"Authorization": "Bearer gat_" + "W" * 43}
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def spoofed(i: int) -> dict[str, str]:
    """A wrong token from a client claiming another address each time, and to be ann."""
    return {**WRONG, "X-Forwarded-For": f"10.0.{i}.{i + 1}", USER: "ann"}


def test_an_untrusted_loopback_peer_is_no_proxy_whatever_it_forwards(home: GuardHome) -> None:
    access = {"proxy_header": USER, "trusted_proxies": ["10.9.9.9"]}  # never sent to
    home.write_config({**LOCAL, "access": access, "intake": [am_source()]})
    cli_token(home, "ann", "approver")
    with running_guard(home) as (_, log), from_address("127.0.0.1", console_url(log)) as c:
        for forwarded in ("10.9.9.9", "127.0.0.1, 10.9.9.9", "10.9.9.9, 10.9.9.9"):
            claim = {"X-Forwarded-For": forwarded, USER: "ann", "X-Forwarded-Proto": "https"}
            r = c.get("/", headers=claim)
            assert r.status_code == 401, (forwarded, r.text[:300])
        codes = [c.get("/audit", headers=spoofed(i)).status_code for i in range(11)]
        assert codes == [401] * 10 + [429]  # one peer, one budget, whatever it forwards
        mcp = [c.post("/mcp", content=b"{}", headers={**MCP, **spoofed(i)}) for i in range(11)]
        assert [r.status_code for r in mcp] == [401] * 10 + [429]
        hook = c.post(
            "/hooks/am",
            json=am_payload(am_alert("Down", "api")),
            headers={**WRONG, "X-Forwarded-For": "203.0.113.9"},
        )
        assert hook.status_code == 401
        assert "replica" in c.get("/readyz").json()  # loopback: the details
        forwarded_ready = c.get("/readyz", headers={"X-Forwarded-For": "203.0.113.9"}).json()
        assert "replica" not in forwarded_ready  # relayed by a proxy not listed: not local
    with home.database().session() as s:
        refused = s.exec(select(AuditEntry).where(AuditEntry.action == "intake.unauthorized"))
        [entry] = refused.all()
    assert entry.data["last_peer"] == "127.0.0.1"  # the TCP peer, not what it claimed


def test_a_listed_proxy_on_loopback_signs_its_users_in(home: GuardHome) -> None:
    home.write_config({**LOCAL, "access": {"proxy_header": USER, "trusted_proxies": ["127.0.0.1"]}})
    cli_token(home, "ann", "approver")
    with (
        running_guard(home) as (_, log),
        reverse_proxy(console_url(log), USER, {"127.0.0.2": "ann"}) as proxy,
        from_address("127.0.0.2", proxy) as ann,
        from_address("127.0.0.4", proxy) as mallory,  # the proxy signs mallory in as nobody
        from_address("127.0.0.2", console_url(log)) as direct,
    ):
        page = ann.get("/")
        assert page.status_code == 200 and '<span id="who">ann</span>' in page.text, page.text
        assert direct.get("/", headers={USER: "ann"}).status_code == 401  # 127.0.0.2: no proxy
        assert mallory.get("/", headers={USER: "ann"}).status_code == 401  # the proxy drops it
        codes = [mallory.get("/audit", headers=spoofed(i)).status_code for i in range(11)]
        assert codes == [401] * 10 + [429]  # counted by the hop the proxy appended
        mcp = [
            mallory.post("/mcp", content=b"{}", headers={**MCP, **spoofed(i)}) for i in range(11)
        ]
        assert [r.status_code for r in mcp] == [401] * 10 + [429]
        assert ann.get("/audit", headers=WRONG).status_code == 401  # ann's own budget
        assert ann.post("/mcp", content=b"{}", headers={**MCP, **WRONG}).status_code == 401
        assert ann.get("/").status_code == 200
