"""The web console over HTTP (in process, through ASGI): sign-in, sessions, CSRF, the gate on
its forms, the limit on wrong tokens, and hostile incident text shown as text."""

from __future__ import annotations

import pytest

from guard.access.tokens import revoke_token
from guard.web.console.signin import SESSION_AGE, Proxies, Signer
from tests.conftest import GuardHome
from tests.webui.helpers import Site, csrf_of, sign_in

pytestmark = pytest.mark.unit

PAGES = ("/", "/incidents/1", "/skills", "/monitors", "/audit")


async def test_every_page_needs_a_token(home: GuardHome) -> None:
    site = Site(home)
    site.incident()
    async with site.aclient() as c:
        for path in PAGES:
            r = await c.get(path)
            assert r.status_code == 401, path
            assert r.headers["www-authenticate"].startswith("Bearer")
            assert "sign in at /login" in r.text
        r = await c.get("/", headers={"Authorization": "Bearer gat_" + "x" * 43})
        assert r.status_code == 401


async def test_a_bearer_token_reads_every_page(home: GuardHome) -> None:
    site = Site(home)
    site.runtime.monitors_health = [
        {"id": "web", "type": "http", "healthy": True, "last_check": None},  # its check runs
        {"id": "db", "type": "tcp", "healthy": True, "last_check": None},
        {"id": "queue", "type": "tcp", "healthy": False, "last_check": None},
        {"id": "new", "type": "tcp", "healthy": None, "last_check": None},
    ]
    inc = site.incident(title="api is down", monitor_id="web")
    async with site.aclient() as c:
        for path in PAGES:
            r = await c.get(path, headers=site.bearer("vic"))
            assert r.status_code == 200, (path, r.text[:500])
            assert 'id="who">vic<' in r.text
        overview = await c.get("/", headers=site.bearer("vic"))
        assert f'href="/incidents/{inc}"' in overview.text and "api is down" in overview.text
        assert '<span class="up">1</span> / <span class="down">2</span>' in overview.text
        monitors = (await c.get("/monitors", headers=site.bearer("vic"))).text
        assert ">down (1 open incident)<" in monitors  # web: the service it watches is down
        assert ">down (the check itself fails)<" in monitors and ">not checked yet<" in monitors
        r = await c.get("/incidents/999", headers=site.bearer("vic"))
        assert r.status_code == 404


async def test_login_sets_a_strict_http_only_session_cookie(home: GuardHome) -> None:
    site = Site(home)
    async with site.aclient() as c:
        r = await sign_in(c, site.tokens["vic"])
        assert r.status_code == 303 and r.headers["location"] == "/"
        cookie = next(v for v in r.headers.get_list("set-cookie") if v.startswith("guard_session="))
        flags = {part.strip().lower() for part in cookie.split(";")}
        assert {"httponly", "samesite=strict", "path=/"} <= flags
        assert "secure" not in flags  # plain http: a Secure cookie would never come back
        assert token_free(cookie, site.tokens["vic"])
        assert (await c.get("/")).status_code == 200  # the cookie alone signs in


def token_free(cookie: str, token: str) -> bool:
    return token not in cookie and token.removeprefix("gat_")[:20] not in cookie


async def test_the_cookie_is_secure_over_https_and_behind_a_trusted_proxy(home: GuardHome) -> None:
    site = Site(home, proxies=Proxies("", ["10.0.0.0/8"]))
    async with site.aclient(base="https://guard.test") as c:
        r = await sign_in(c, site.tokens["vic"])
        assert "secure" in r.headers["set-cookie"].lower()
    async with site.aclient(address="10.1.2.3") as c:
        form = await c.get("/login")
        r = await c.post(
            "/login",
            data={"csrf": csrf_of(form), "token": site.tokens["vic"]},
            headers={"X-Forwarded-Proto": "https"},
        )
        assert r.status_code == 303 and "secure" in r.headers["set-cookie"].lower()
    async with site.aclient(address="192.0.2.7") as c:  # not a trusted proxy: not believed
        form = await c.get("/login")
        r = await c.post(
            "/login",
            data={"csrf": csrf_of(form), "token": site.tokens["vic"]},
            headers={"X-Forwarded-Proto": "https"},
        )
        assert r.status_code == 303 and "secure" not in r.headers["set-cookie"].lower()


async def test_a_trusted_proxys_header_signs_in_only_from_the_proxy(home: GuardHome) -> None:
    site = Site(home, proxies=Proxies("X-Forwarded-User", ["10.0.0.5"]))
    async with site.aclient(address="10.0.0.5") as c:
        r = await c.get("/", headers={"X-Forwarded-User": "vic"})
        assert r.status_code == 200 and 'id="who">vic<' in r.text
        assert (await c.get("/", headers={"X-Forwarded-User": "nobody"})).status_code == 401
    async with site.aclient(address="10.0.0.6") as c:
        assert (await c.get("/", headers={"X-Forwarded-User": "vic"})).status_code == 401


async def test_a_form_post_without_its_csrf_token_is_refused(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident()
    async with site.aclient() as c:
        form = await c.get("/login")
        r = await c.post("/login", data={"token": site.tokens["ann"]})  # no CSRF token
        assert r.status_code == 403 and "CSRF" in r.text
        assert "guard_session" not in r.headers.get("set-cookie", "")
        assert (await sign_in(c, site.tokens["ann"])).status_code == 303
        for data in ({"skill": "restart"}, {"skill": "restart", "csrf": csrf_of(form)}):
            r = await c.post(f"/incidents/{inc}/approve", data=data)  # forged: none, or another's
            assert r.status_code == 403 and "CSRF" in r.text
    assert site.commands() == []


async def test_a_viewers_approve_is_refused_audited_and_queues_nothing(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident(details={"options": ["restart-api"]})
    async with site.aclient() as c:
        await sign_in(c, site.tokens["vic"])
        page = await c.get(f"/incidents/{inc}")
        assert page.status_code == 200
        assert "/approve" not in page.text and "/deny" not in page.text
        assert "/fix" not in page.text  # no forms for a viewer
        csrf = csrf_of(page)  # the sign-out form's: a valid token for this session
        for verb in ("approve", "deny", "fix"):
            r = await c.post(
                f"/incidents/{inc}/{verb}",
                data={"csrf": csrf, "skill": "restart-api", "fix": "echo hi"},
            )
            assert r.status_code == 403, r.text
            assert "needs approver; you are viewer" in r.text
    assert site.commands() == []
    refused = site.audited("human.refused")
    assert [(e.actor, e.data["verb"]) for e in refused] == [
        ("token:vic", "approve"),
        ("token:vic", "deny"),
        ("token:vic", "reply"),
    ]
    assert all(e.data["reason"] == "needs approver; you are viewer" for e in refused)


async def test_an_approvers_approve_and_fix_are_queued_under_the_tokens_name(
    home: GuardHome,
) -> None:
    site = Site(home)
    inc = site.incident(details={"options": ["restart-api"]})
    async with site.aclient() as c:
        await sign_in(c, site.tokens["ann"])
        page = await c.get(f"/incidents/{inc}")
        assert f'action="/incidents/{inc}/approve"' in page.text
        assert f'action="/incidents/{inc}/deny"' in page.text
        r = await c.post(
            f"/incidents/{inc}/approve", data={"csrf": csrf_of(page), "skill": "restart-api"}
        )
        assert r.status_code == 303
        assert r.headers["location"].startswith(f"/incidents/{inc}?queued=")
        fix = {"csrf": csrf_of(page), "fix": "docker.restart api"}
        assert (await c.post(f"/incidents/{inc}/fix", data=fix)).status_code == 303
        empty = await c.post(f"/incidents/{inc}/fix", data={"csrf": csrf_of(page), "fix": " "})
        assert empty.status_code == 400
    approve, reply = site.commands()
    assert (approve.verb, approve.skill, approve.actor, approve.status) == (
        "approve",
        "restart-api",
        "token:ann",
        "queued",
    )
    assert (reply.verb, reply.fix, reply.actor) == ("reply", "docker.restart api", "token:ann")
    (entry,) = site.audited("human.approve")
    assert entry.actor == "token:ann" and entry.data["allowed"] == "role approver"


async def test_a_bearer_script_answers_without_a_csrf_token(home: GuardHome) -> None:
    site = Site(home)
    inc = site.incident()
    async with site.aclient() as c:
        r = await c.post(f"/incidents/{inc}/deny", headers=site.bearer("ann"))
        assert r.status_code == 303
        r = await c.post(f"/incidents/{inc}/deny", headers=site.bearer("vic"))
        assert r.status_code == 403
    assert [(c.verb, c.actor) for c in site.commands()] == [("deny", "token:ann")]


async def test_a_revoked_token_stops_working_at_once(home: GuardHome) -> None:
    site = Site(home)
    async with site.aclient() as c:
        await sign_in(c, site.tokens["vic"])
        assert (await c.get("/")).status_code == 200
        assert (await c.get("/", headers=site.bearer("vic"))).status_code == 200
        assert revoke_token(site.db, "vic")
        assert (await c.get("/")).status_code == 401  # its session too
        assert (await c.get("/", headers=site.bearer("vic"))).status_code == 401


async def test_wrong_tokens_are_rate_limited_per_address(home: GuardHome) -> None:
    site = Site(home)
    wrong = {"Authorization": "Bearer gat_" + "A" * 43}
    async with site.aclient(address="192.0.2.1") as c:
        for _ in range(10):
            assert (await c.get("/", headers=wrong)).status_code == 401
        r = await c.get("/", headers=wrong)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        r = await c.get("/", headers=site.bearer("vic"))  # even a right one, until it passes
        assert r.status_code == 429
        r = await sign_in(c, site.tokens["vic"])
        assert r.status_code == 429
    async with site.aclient(address="192.0.2.2") as c:  # another address is not held back
        assert (await c.get("/", headers=site.bearer("vic"))).status_code == 200


async def test_hostile_incident_text_is_shown_as_text(home: GuardHome) -> None:
    site = Site(home)
    long_line = "A" * 1_000_000
    inc = site.incident(
        title='<script>alert("t")</script>',
        message=f"<img src=x onerror=alert(1)>\n\x1b[31mred\x1b[0m\x07 and \x1b]8;;http://x\x1b\\link\n{long_line}",
        target='"><b>target</b>',
        details={"evidence": "</pre><script>alert(2)</script>", "options": ['x"><script>']},
    )
    async with site.aclient() as c:
        for path in (f"/incidents/{inc}", "/"):
            r = await c.get(path, headers=site.bearer("ann"))
            assert r.status_code == 200
            body = r.text
            assert "<script>" not in body and "<img" not in body and "<b>target" not in body
            assert "\x1b" not in body and "\x07" not in body
        assert "&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;" in body
        page = (await c.get(f"/incidents/{inc}", headers=site.bearer("ann"))).text
        assert "&lt;img src=x onerror=alert(1)&gt;" in page
        assert "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in page
        assert "\ufffd[31mred" in page  # the escape made visible, not obeyed
        assert "more characters)" in page and len(page) < 400_000  # the long line is cut


async def test_a_proposal_is_approved_only_as_the_page_showed_it(home: GuardHome) -> None:
    from guard.store.models import Incident
    from guard.util.commandtext import digest

    site = Site(home)
    proposal = {
        "fix": "systemctl restart api",
        "reason": "it hung",
        "confidence": 0.8,
        "model": "m",
    }
    inc = site.incident(details={"options": ["proposal"], "proposal": proposal})
    async with site.aclient() as c:
        await sign_in(c, site.tokens["ann"])
        page = await c.get(f"/incidents/{inc}")
        shown = digest("systemctl restart api")
        assert f'name="digest" value="{shown}"' in page.text
        with site.db.session() as s:  # the proposal changes after the page was read
            row = s.get(Incident, inc)
            assert row is not None
            row.details = {"options": ["proposal"], "proposal": proposal | {"fix": "rm -rf /"}}
            s.add(row)
        form = {"csrf": csrf_of(page), "skill": "proposal", "digest": shown}
        r = await c.post(f"/incidents/{inc}/approve", data=form)
        assert r.status_code == 409 and "nothing queued" in r.text
        assert site.commands() == []
        page = await c.get(f"/incidents/{inc}")
        now = digest("rm -rf /")
        form = {"csrf": csrf_of(page), "skill": "proposal", "digest": now}
        assert (await c.post(f"/incidents/{inc}/approve", data=form)).status_code == 303
    (cmd,) = site.commands()
    assert (cmd.skill, cmd.fix) == ("proposal", now)  # bound to the text the page showed


async def test_skills_show_their_files_review_and_the_incidents_they_match(home: GuardHome) -> None:
    from types import SimpleNamespace

    from tests.helpers.telegram import write_http_skill

    site = Site(home)
    write_http_skill(home, SimpleNamespace(base="http://svc"), "web-fix")  # type: ignore[arg-type]
    scripts = home.root / "skills" / "web-fix" / "scripts"
    scripts.mkdir()
    (scripts / "fix.sh").write_text("echo '<b>fixed</b>'\n")
    async with site.aclient() as c:
        listing = await c.get("/skills", headers=site.bearer("vic"))
        assert 'href="/skills/web-fix"' in listing.text and "<td>approval</td>" in listing.text
        page = await c.get("/skills/web-fix", headers=site.bearer("vic"))
        assert page.status_code == 200
        assert "## When to use" in page.text  # SKILL.md, as text
        assert (
            "scripts/fix.sh" in page.text and "echo &#39;&lt;b&gt;fixed&lt;/b&gt;&#39;" in page.text
        )
        assert "Not in a git checkout." in page.text
        missing = await c.get("/skills/nope", headers=site.bearer("vic"))
        assert missing.status_code == 404
        matching = site.incident("open")  # http_status from http: the skill's trigger
        other = site.incident("open", source="logfile", kind="log_pattern")
        page = await c.get(f"/incidents/{matching}", headers=site.bearer("vic"))
        candidates = page.text.split('id="candidates"')[1].split("</table>")[0]
        assert 'href="/skills/web-fix"' in candidates and "trigger: " in candidates
        page = await c.get(f"/incidents/{other}", headers=site.bearer("vic"))
        assert "No skill's triggers match this incident." in page.text


async def test_a_forged_cookie_or_csrf_token_of_any_characters_is_refused(home: GuardHome) -> None:
    site = Site(home)
    async with site.aclient() as c:
        forged = [(b"cookie", b"guard_session=bm9wZQ.\xc3\xa9\xc3\xa9")]  # non-ASCII bytes
        assert (await c.get("/", headers=forged)).status_code == 401
        await sign_in(c, site.tokens["ann"])
        inc = site.incident()
        r = await c.post(f"/incidents/{inc}/deny", data={"csrf": "\u00e9" * 43})
        assert r.status_code == 403
    assert site.commands() == []


async def test_the_overview_says_when_the_audit_chain_was_last_found_broken(
    home: GuardHome,
) -> None:
    from guard.store.audit import VERIFIED
    from guard.store.state import put_state

    site = Site(home)
    async with site.aclient() as c:
        page = await c.get("/", headers=site.bearer("vic"))
        assert "never (run <code>guard audit verify</code>)" in page.text
        with site.db.session() as s:
            put_state(
                s,
                VERIFIED,
                {
                    "at": "2026-12-05T11:00:00",
                    "ok": False,
                    "seq": 7,
                    "reason": "<b>hash</b> differs",
                },
            )
        page = await c.get("/", headers=site.bearer("vic"))
        assert "BROKEN at entry #7: &lt;b&gt;hash&lt;/b&gt; differs" in page.text


async def test_signing_out_ends_the_session_even_for_a_replayed_cookie(home: GuardHome) -> None:
    site = Site(home)
    async with site.aclient() as c:
        await sign_in(c, site.tokens["vic"])
        page = await c.get("/")
        kept = c.cookies["guard_session"]
        r = await c.post("/logout", data={"csrf": csrf_of(page)})
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert (await c.get("/")).status_code == 401
        c.cookies.set("guard_session", kept)  # the old cookie, replayed
        assert (await c.get("/")).status_code == 401


@pytest.mark.parametrize("age", [-60, SESSION_AGE + 1])
def test_a_session_is_good_for_its_age_only(age: int) -> None:
    now = [1_000_000.0]
    signer = Signer(b"k" * 32, clock=lambda: now[0])
    cookie = signer.session("ann")
    found = signer.read(cookie)
    assert found is not None and (found.name, found.via) == ("ann", "session")
    now[0] += age
    assert signer.read(cookie) is None
    tampered = cookie.replace(cookie[0], "A" if cookie[0] != "A" else "B", 1)
    now[0] -= age
    assert signer.read(tampered) is None
