"""The console's pages and who may see them (the forms are in ``guard.web.console.forms``)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from typing import TYPE_CHECKING, Any, Protocol

from guard.config import Settings
from guard.domain.records import IncidentState, utcnow
from guard.incidents import silences
from guard.incidents.ending import ends_for
from guard.incidents.gate import Actor, Allowed, Gate, Refused
from guard.ports.running import HealthSource
from guard.skills.files import MAX_FILE_BYTES
from guard.skills.ladder import Standing, describe
from guard.skills.library import Candidate, Skill, SkillLibrary
from guard.skills.outcomes import Outcome
from guard.store import audit
from guard.store.db import Database
from guard.util.commandtext import digest
from guard.web.console import reads
from guard.web.console.render import render
from guard.web.console.signin import COOKIE, Limiter, Proxies, Signer, Tokens, Who, load_key

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

ASKING = (IncidentState.awaiting_human, IncidentState.escalated)
SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class Source(HealthSource, Protocol):
    """What the console reads of a running Guard (``guard.ports.running.Runtime`` is one)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...


class Console:
    """The web console of one running Guard."""

    def __init__(
        self,
        runtime: Source,
        gate: Gate,
        tokens: Tokens | None,
        *,
        proxies: Proxies | None = None,
        limiter: Limiter | None = None,
        key: bytes | None = None,
    ) -> None:
        self.runtime = runtime
        self.db = runtime.db
        self.gate = gate
        self.tokens = tokens
        self.proxies = proxies or Proxies()
        self.limiter = limiter or Limiter()
        self._skills: SkillLibrary | None = None
        self._library_lock = threading.Lock()
        self.signer = Signer(key if key is not None else load_key(runtime.settings.data_dir))

    # -- who asks -------------------------------------------------------------------------------

    def address(self, request: Request) -> str:
        """The client's address: the TCP peer, or a trusted proxy's last ``X-Forwarded-For``
        hop (``guard.access.proxies``)."""
        host = request.client.host if request.client else None
        return self.proxies.client(host, request.headers.getlist("x-forwarded-for"))

    def https(self, request: Request) -> bool:
        if request.url.scheme == "https":
            return True
        host = request.client.host if request.client else None
        proto = request.headers.get("x-forwarded-proto", "")
        return self.proxies.trusted(host) and proto.lower() == "https"

    async def check_token(self, request: Request, secret: str) -> str | Response:
        """The token's name, or the refusal to send (401, or 429 past the limit)."""
        address = self.address(request)
        wait = self.limiter.retry_after(address)
        if wait is not None:
            return self.message(
                request,
                None,
                429,
                "Too many wrong tokens",
                f"too many wrong tokens from {address}; try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        name = None if self.tokens is None else await asyncio.to_thread(self.tokens.verify, secret)
        if name is None:
            self.limiter.failed(address)
            return self.message(
                request,
                None,
                401,
                "Not signed in",
                "that token is wrong or revoked",
                headers={"WWW-Authenticate": 'Bearer realm="guard"'},
            )
        return name

    async def who(self, request: Request) -> Who | Response:
        """The signed-in token, or the response that says it is not (401/429)."""
        scheme, _, secret = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and secret.strip():
            found = await self.check_token(request, secret.strip())
            return found if not isinstance(found, str) else Who(found, "bearer")
        host = request.client.host if request.client else None
        if self.proxies.header and self.proxies.trusted(host):
            user = request.headers.get(self.proxies.header, "").strip()
            if user and await self._active(user):
                return Who(user, "proxy", f"proxy:{user}")
        cookie = request.cookies.get(COOKIE)
        session = self.signer.read(cookie) if cookie else None
        if session is not None and await self._active(session.name):
            return session
        return self.message(
            request,
            None,
            401,
            "Not signed in",
            "sign in at /login with an access token, or send Authorization: Bearer TOKEN",
            back="/login",
            headers={"WWW-Authenticate": 'Bearer realm="guard"'},
        )

    async def _active(self, name: str) -> bool:
        return self.tokens is not None and await asyncio.to_thread(self.tokens.active, name)

    def actor(self, who: Who) -> Actor:
        return Actor("token", who.name)

    def may(self, who: Who, verb: str, incident: Any = None) -> bool:
        return isinstance(self.gate.authorise(self.actor(who), verb, incident), Allowed)

    async def viewer(self, request: Request) -> Who | Response:
        """``who``, and the gate's say on viewing (a refusal is audited, as every refusal is)."""
        found = await self.who(request)
        if not isinstance(found, Who):
            return found
        decision = await asyncio.to_thread(self.gate.authorise, self.actor(found), "view", None)
        if isinstance(decision, Refused):
            await asyncio.to_thread(self._audit_refusal, found, "view", request.url.path, decision)
            return self.message(request, found, 403, "Refused", decision.reason)
        return found

    def _audit_refusal(self, who: Who, verb: str, subject: str, decision: Refused) -> None:
        with self.db.session() as session:
            audit.append(
                session,
                actor=self.actor(who).name,
                action="human.refused",
                subject=subject,
                data={"verb": verb, "reason": decision.reason, "channel": "token"},
            )

    # -- responses ------------------------------------------------------------------------------

    def csrf(self, who: Who | None) -> str:
        return self.signer.csrf(who.nonce) if who is not None and who.nonce else ""

    def page(
        self,
        who: Who | None,
        template: str,
        status: int = 200,
        headers: dict[str, str] | None = None,
        *,
        csrf: str | None = None,
        **context: Any,
    ) -> Response:
        from starlette.responses import HTMLResponse

        token = self.csrf(who) if csrf is None else csrf
        body = render(template, who=who, csrf=token, **context)
        return HTMLResponse(body, status_code=status, headers=SECURITY_HEADERS | (headers or {}))

    def message(
        self,
        request: Request,
        who: Who | None,
        status: int,
        heading: str,
        text: str,
        *,
        back: str = "",
        headers: dict[str, str] | None = None,
    ) -> Response:
        kind = "refused" if status >= 400 else "note"
        return self.page(
            who,
            "message.html.j2",
            status,
            headers,
            heading=heading,
            text=text,
            kind=kind,
            back=back,
        )

    async def rendered(self, who: Who, template: str, **context: Any) -> Response:
        return await asyncio.to_thread(self.page, who, template, **context)

    # -- pages ----------------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        o = await asyncio.to_thread(reads.overview, self.db)
        monitors = await self._monitors()
        up = sum(1 for m in monitors if m["up"])
        down = sum(1 for m in monitors if m["state"].startswith("down"))
        return await self.rendered(who, "overview.html.j2", o=o, up=up, down=down)

    async def incident(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        incident_id = int(request.path_params["incident_id"])
        p = await asyncio.to_thread(reads.incident_page, self.db, incident_id)
        if p is None:
            return self.message(request, who, 404, "No such incident", f"no incident {incident_id}")
        details = p.incident.details if isinstance(p.incident.details, dict) else {}
        proposal = details.get("proposal") if isinstance(details.get("proposal"), dict) else None
        candidates = await asyncio.to_thread(self._candidates, p.incident)
        can_approve, can_fix = await asyncio.to_thread(  # the gate reads the token's role
            lambda: (self.may(who, "approve", p.incident), self.may(who, "reply", p.incident))
        )
        queued = request.query_params.get("queued", "")
        can_end = await asyncio.to_thread(self.may, who, "resolve", p.incident)
        return await self.rendered(
            who,
            "incident.html.j2",
            ends=self._ends(p.incident),
            can_end=can_end,
            p=p,
            evidence=str(details.get("evidence") or ""),
            proposal=proposal,
            proposal_digest=digest(str(proposal.get("fix") or "")) if proposal else "",
            options=[str(o) for o in details.get("options") or []],
            candidates=candidates,
            asking=p.incident.state in ASKING,
            can_approve=can_approve,
            can_fix=can_fix,
            queued=queued if queued.isdigit() else "",
        )

    def _ends(self, incident: Any) -> str:
        """How the incident ends, by its monitor's playbook entry (``guard.incidents.ending``)."""
        books = getattr(self.runtime, "playbooks", None) or []
        spec = next((m for b in books for m in b.monitors if m.id == incident.monitor_id), None)
        return ends_for(incident, spec, self.runtime.settings.triage.auto_resolve)

    async def silences(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        rows = await asyncio.to_thread(silences.listed, self.db, everything=True)
        can_silence = await asyncio.to_thread(self.may, who, "silence")
        return await self.rendered(
            who,
            "silences.html.j2",
            rows=[(s, silences.describe(s)) for s in rows],
            can_silence=can_silence,
            now=utcnow(),
        )

    def _library(self) -> SkillLibrary:
        """The skills on disk, reloaded only when a file changed (one lock: a reload at a time)."""
        with self._library_lock:
            if self._skills is None:
                self._skills = SkillLibrary(
                    self.runtime.settings.skills_dir, self.runtime.settings.builtin_skills_dir
                )
            else:
                self._skills.refresh()
            return self._skills

    def _records(self, skills: list[Skill]) -> dict[str, tuple[Outcome, Standing]]:
        """Each skill's outcomes and standing on the ladder (``guard.skills.ladder``)."""
        with self.db.session() as session:
            return describe(session, skills, self.runtime.settings.skills)

    def _candidates(self, incident: Any) -> list[Candidate]:
        """The skills whose triggers match ``incident`` now, best first."""
        return self._library().candidates(incident)

    async def skills(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        library = await asyncio.to_thread(self._library)
        return await self.rendered(
            who,
            "skills.html.j2",
            skills=library.skills,
            records=await asyncio.to_thread(self._records, library.skills),
            quarantined=library.quarantined,
            review_text=review_text,
        )

    async def skill(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        name = request.path_params["name"]
        found = (await asyncio.to_thread(self._library)).get(name)
        if found is None:
            return self.message(request, who, 404, "No such skill", f"no skill {name}")
        skill_md, scripts, history = await asyncio.to_thread(_skill_files, found)
        return await self.rendered(
            who,
            "skill.html.j2",
            s=found,
            record=(await asyncio.to_thread(self._records, [found]))[found.name],
            skill_md=skill_md,
            scripts=scripts,
            history=history,
            review_text=review_text,
        )

    async def monitors(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        return await self.rendered(who, "monitors.html.j2", monitors=await self._monitors())

    async def _monitors(self) -> list[dict[str, Any]]:
        open_ = await asyncio.to_thread(reads.open_by_monitor, self.db)
        return reads.monitor_states(self.runtime.health(), open_)

    async def audit(self, request: Request) -> Response:
        who = await self.viewer(request)
        if not isinstance(who, Who):
            return who
        entries = await asyncio.to_thread(reads.recent_audit, self.db)
        return await self.rendered(who, "audit.html.j2", entries=entries, short=reads.short)


def review_text(skill: Skill) -> str:
    """A skill's review state, in words."""
    if skill.review is None:
        return "trusted as shipped" if skill.spec.trust == "trusted" else ""
    state = "pending review" if skill.pending else skill.review.status
    return f"{state}: {skill.review.link} (learned from incident #{skill.review.incident})"


def _skill_files(skill: Skill) -> tuple[str, list[tuple[str, str]], str]:
    """``SKILL.md``, each script (within the size limit) and the folder's git log."""
    skill_md = _read(skill.path / "SKILL.md")
    scripts: list[tuple[str, str]] = []
    folder = skill.path / "scripts"
    if folder.is_dir() and not folder.is_symlink():
        for path in sorted(folder.iterdir())[:20]:
            resolved = skill.script(f"scripts/{path.name}")
            if resolved is not None:
                scripts.append((f"scripts/{path.name}", _read(resolved)))
    try:
        history = subprocess.run(
            ["git", "log", "-n", "20", "--format=%h %ad %an: %s", "--date=short", "--", "."],
            cwd=skill.path,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        log = history.stdout if history.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        log = ""
    return skill_md, scripts, log


def _read(path: Any) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
