"""The console's forms: sign-in and out, an approver's approve, deny and fix, and an operator's
resolve, mute (``for``: how long), unmute and silence (``POST /silences``).

Every form carries a CSRF token bound to the session (a bearer request needs none); a post
without it is refused 403 and nothing else is read. An answer goes through ``queue_command``
as ``Actor("token", NAME)`` and its gate: a refusal ("needs approver; you are viewer") is
audited there, queues nothing and is shown with 403.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from guard.domain.durations import parse_duration
from guard.domain.exceptions import GuardError
from guard.incidents import silences
from guard.incidents.commands import UnknownIncident, queue_command
from guard.incidents.gate import NotAuthorised
from guard.store.models import Incident
from guard.util.commandtext import digest
from guard.web.console.signin import COOKIE, LOGIN_COOKIE, SESSION_AGE, Who

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from guard.web.console.site import Console

MAX_FORM = 64 * 1024  # bytes of a form body
VERBS = {  # path -> command verb
    "approve": "approve",
    "deny": "deny",
    "fix": "reply",
    "resolve": "resolve",
    "mute": "mute",
    "unmute": "unmute",
}


class TooLarge(Exception):
    pass


async def read_form(request: Request) -> dict[str, str]:
    """A URL-encoded form body (at most ``MAX_FORM`` bytes), first value of each field."""
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise TooLarge
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items()}


class Forms:
    def __init__(self, console: Console) -> None:
        self.c = console

    def _flags(self, request: Request) -> dict[str, Any]:
        """HttpOnly, SameSite=Strict, and Secure when the request came over https."""
        return {
            "httponly": True,
            "samesite": "strict",
            "secure": self.c.https(request),
            "path": "/",
        }

    async def _form(self, request: Request, bound: str) -> dict[str, str] | Response:
        """The form, once its CSRF token matches ``bound`` (else the 403 or 413 to send)."""
        try:
            form = await read_form(request)
        except TooLarge:
            return self.c.message(
                request, None, 413, "Too large", f"a form is at most {MAX_FORM} bytes"
            )
        if not self.c.signer.csrf_ok(bound, form.get("csrf", "")):
            return self.c.message(
                request,
                None,
                403,
                "Refused",
                "missing or wrong CSRF token: reload the page and retry",
            )
        return form

    # -- sign-in --------------------------------------------------------------------------------

    async def login_form(self, request: Request) -> Response:
        return self._login_page(request)

    def _login_page(self, request: Request, problem: str = "", status: int = 200) -> Response:
        nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(16)
        response = self.c.page(
            None, "login.html.j2", status, csrf=self.c.signer.csrf(nonce), problem=problem
        )
        response.set_cookie(LOGIN_COOKIE, nonce, max_age=3600, **self._flags(request))
        return response

    async def login(self, request: Request) -> Response:
        """Check the token, then set the session cookie and go to the overview."""
        form = await self._form(request, request.cookies.get(LOGIN_COOKIE, ""))
        if not isinstance(form, dict):
            return form
        found = await self.c.check_token(request, form.get("token", "").strip())
        if not isinstance(found, str):
            if found.status_code == 401:
                return self._login_page(request, "That token is wrong or revoked.", 401)
            return found
        response = _redirect("/")
        response.set_cookie(
            COOKIE, self.c.signer.session(found), max_age=SESSION_AGE, **self._flags(request)
        )
        response.delete_cookie(LOGIN_COOKIE, path="/")
        return response

    async def logout(self, request: Request) -> Response:
        who = await self.c.who(request)
        if not isinstance(who, Who):
            return who
        form = await self._form(request, who.nonce)
        if not isinstance(form, dict):
            return form
        self.c.signer.end(who)
        response = _redirect("/login")
        response.delete_cookie(COOKIE, path="/")
        return response

    # -- answers --------------------------------------------------------------------------------

    async def answer(self, request: Request) -> Response:
        """``POST /incidents/{id}/approve|deny|fix``: queue the answer through the gate."""
        verb = VERBS.get(request.path_params["verb"])
        if verb is None:
            return self.c.message(
                request, None, 404, "Not found", "approve, deny, fix, resolve, mute or unmute"
            )
        posted = await self._posted(request)
        if not isinstance(posted, tuple):
            return posted
        who, form = posted
        incident_id = int(request.path_params["incident_id"])
        if verb == "mute" and form.get("for", "").strip():
            try:
                form["fix"] = str(parse_duration(form["for"]))
            except ValueError as exc:
                return self.c.message(request, who, 400, "Bad duration", f"for: {exc}")
        skill = form.get("skill") or None if verb == "approve" else None
        fix = form.get("fix", "").strip() or None if verb in ("reply", "mute") else None
        if verb == "reply" and fix is None:
            return self.c.message(request, who, 400, "No fix", "the fix is empty", back=".")
        if verb == "approve" and skill == "proposal":
            now = await asyncio.to_thread(self._proposal_digest, incident_id)
            if not now or form.get("digest", "") != now:
                return self.c.message(
                    request,
                    who,
                    409,
                    "Proposal changed",
                    "nothing queued: the proposal is no longer the text the page showed; "
                    "reload it and read it again",
                    back=f"/incidents/{incident_id}",
                )
            fix = now
        try:
            cmd = await asyncio.to_thread(
                queue_command,
                self.c.db,
                incident_id=incident_id,
                verb=verb,
                actor=self.c.actor(who),
                gate=self.c.gate,
                skill=skill,
                fix=fix,
            )
        except NotAuthorised as exc:
            return self.c.message(
                request, who, 403, "Refused", str(exc), back=f"/incidents/{incident_id}"
            )
        except UnknownIncident as exc:
            return self.c.message(request, who, 404, "No such incident", str(exc))
        return _redirect(f"/incidents/{incident_id}?queued={cmd.id}")

    async def _posted(self, request: Request) -> tuple[Who, dict[str, str]] | Response:
        """Who posted, and the form: a bearer request's as it is (a browser never sends that
        header by itself: no CSRF token), a session's once its CSRF token matches."""
        who = await self.c.who(request)
        if not isinstance(who, Who):
            return who
        if who.via != "bearer":
            form = await self._form(request, who.nonce)
            return (who, form) if isinstance(form, dict) else form
        try:
            return who, await read_form(request)
        except TooLarge:
            return self.c.message(request, who, 413, "Too large", f"at most {MAX_FORM} bytes")

    async def silence(self, request: Request) -> Response:
        """``POST /silences``: matchers (space-separated) for a duration, through the gate."""
        posted = await self._posted(request)
        if not isinstance(posted, tuple):
            return posted
        who, form = posted
        try:
            seconds = silences.seconds_of(form.get("for", "").strip() or "0", "for")
            await asyncio.to_thread(
                silences.create,
                self.c.db,
                form.get("matchers", "").split(),
                seconds,
                self.c.actor(who),
                self.c.gate,
                comment=form.get("comment", "").strip()[:500],
            )
        except NotAuthorised as exc:
            return self.c.message(request, who, 403, "Refused", str(exc), back="/silences")
        except (GuardError, ValueError) as exc:
            return self.c.message(request, who, 400, "Bad silence", str(exc), back="/silences")
        return _redirect("/silences")

    def _proposal_digest(self, incident_id: int) -> str:
        with self.c.db.session() as session:
            inc = session.get(Incident, incident_id)
        proposal = inc.details.get("proposal") if inc and isinstance(inc.details, dict) else None
        return digest(str(proposal.get("fix") or "")) if isinstance(proposal, dict) else ""


def _redirect(to: str) -> Response:
    from starlette.responses import RedirectResponse

    return RedirectResponse(to, status_code=303, headers={"Cache-Control": "no-store"})
