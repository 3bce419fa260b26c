"""The console on a real ``guard run`` over real HTTP: tokens made and revoked with the CLI,
as a user would, take effect at once; wrong ones are refused, then held back."""

from __future__ import annotations

import re

import httpx

from tests.conftest import GuardHome
from tests.helpers.agent import running_guard
from tests.webui.helpers import LOCAL, cli_token, console_url


def test_guard_run_serves_the_console_to_a_live_token_only(home: GuardHome) -> None:
    home.write_config(LOCAL)
    vic = cli_token(home, "vic", "viewer")
    with running_guard(home) as (_, log), httpx.Client(base_url=console_url(log)) as c:
        assert c.get("/").status_code == 401
        page = c.get("/", headers={"Authorization": f"Bearer {vic}"})
        assert page.status_code == 200 and "signed in as" in page.text
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert c.get("/healthz").status_code in (200, 503)  # the probes are as they were
        assert "never (run <code>guard audit verify</code>)" in page.text
        home.cli("audit", "verify")
        page = c.get("/", headers={"Authorization": f"Bearer {vic}"})
        assert re.search(r'id="verified">\S+: ok, \d+ entries up to #\d+<', page.text), page.text
        home.cli("access", "revoke", "vic")
        assert c.get("/", headers={"Authorization": f"Bearer {vic}"}).status_code == 401
        wrong = {"Authorization": "Bearer gat_" + "B" * 43}
        codes = [c.get("/audit", headers=wrong).status_code for _ in range(10)]
        assert codes == [401] * 9 + [429]  # the revoked token was this address's first miss
        held = c.get("/audit", headers=wrong)
        assert held.status_code == 429 and 1 <= int(held.headers["retry-after"]) <= 61
    home.cli("audit", "verify")  # the chain still holds
