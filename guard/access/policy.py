"""The role policy: every actor gets a role, and a verb needs one (``roles.needed``).

Who has which role:

- a chat user: the role their channel's table gives their id (``access.<channel>``; an id
  only in ``<channel>.allowed_user_ids`` is an approver, built by
  ``guard.notify.running_gate``); an id in no table: no opinion (the allowlist after this
  policy refuses strangers as before);
- a token (``Actor("token", NAME)``): the live token's role, read from the store at the moment
  of asking, so a revoked token is refused at once;
- a trusted channel (the CLI inside the container, which holds the volume): its fixed role,
  ``admin``.

A refusal names the role missing: ``needs approver; you are viewer``.
"""

from __future__ import annotations

from collections.abc import Mapping

from guard.access.roles import Role, needed
from guard.access.tokens import role_of
from guard.incidents.gate import Actor, Allowed, Decision, Refused
from guard.store.db import Database
from guard.store.models import Incident

TOKEN = "token"  # the channel of an actor signed in with a token; its id is the token's name


class RolePolicy:
    """A ``guard.incidents.gate`` policy: allow a verb iff the actor's role covers it."""

    def __init__(
        self,
        roles: Mapping[str, Mapping[str, Role]] | None = None,
        *,
        trusted: Mapping[str, Role] | None = None,
        tokens: Database | None = None,
    ) -> None:
        self.roles = {channel: dict(ids) for channel, ids in (roles or {}).items()}
        self.trusted = dict({"cli": Role.admin} if trusted is None else trusted)
        self.tokens = tokens

    def role(self, actor: Actor) -> Role | None:
        """The actor's role, or None when this policy does not know them."""
        if actor.channel in self.trusted:
            return self.trusted[actor.channel]
        if actor.channel == TOKEN:
            return role_of(self.tokens, actor.id) if self.tokens is not None else None
        return self.roles.get(actor.channel, {}).get(actor.id)

    def decide(self, actor: Actor, verb: str, incident: Incident | None) -> Decision | None:
        role = self.role(actor)
        if role is None:
            if actor.channel == TOKEN:
                return Refused(f"no live token named {actor.id} (unknown or revoked)")
            return None
        need = needed(verb)
        if role >= need:
            trusted = f" (trusted channel {actor.channel})" if actor.channel in self.trusted else ""
            return Allowed(by=f"role {role.name}{trusted}")
        return Refused(f"needs {need.name}; you are {role.name}")
