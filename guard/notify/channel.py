"""The Channel port: what the durable outbox needs of a chat channel (``CHANNELS``, the console).

A channel posts a message (text, or a picture with a caption, optionally with buttons and in
reply to one of its messages) and returns its id, edits one, and finds a post whose outcome a
crash left unknown. Everything else (the queue, order, retries, grouping, edits named by
incident, at most one post per event) is the outbox's (``guard.notify.outbox``), the same for
every channel. Message ids are one increasing sequence per chat.

A channel signals failures with three errors: ``Retry`` (the channel asks to wait ``after``
seconds; nothing was posted), ``Rejected`` (refused for good: the outbox marks the row failed
and moves on) and ``Unreachable`` (a network failure; with ``uncertain`` the post may have gone
out, and the outbox looks for it with ``find`` before it posts again).

Its ``markup`` renders what the outbox and the notifier put in messages, in the channel's
format (``guard.notify.plain.PlainMarkup`` for plain text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from guard.notify.base import HumanRequest, IncidentUpdate
    from guard.store.models import Incident, MessageGroupMember

Buttons = list[list[tuple[str, str]]]
"""Rows of ``(label, data)`` buttons; ``data`` is an approval id, or ``fix:ID`` for a prompt."""


class ChannelError(Exception):
    """A call to a channel failed."""


class Retry(ChannelError):
    """The channel asks Guard to wait ``after`` seconds; the call did not post."""

    def __init__(self, after: float, why: str = "") -> None:
        super().__init__(why or f"retry after {after:g}s")
        self.after = after


class Rejected(ChannelError):
    """The channel refused the call for good (a bad request, a chat that went away)."""


class Unreachable(ChannelError):
    """The channel could not be reached; with ``uncertain`` the call may still have posted."""

    def __init__(self, why: str, *, uncertain: bool = True) -> None:
        super().__init__(why)
        self.uncertain = uncertain


@dataclass(frozen=True)
class Post:
    """One message to post: text (a caption with ``photo``) and buttons, maybe a reply."""

    chat: str
    text: str
    buttons: list[list[tuple[str, str]]] = field(default_factory=list)
    photo: bytes | None = None
    reply_to: str | None = None


class Markup(Protocol):
    """A channel's rendering of what Guard says (escaping, limits, labels)."""

    limit: int
    run_command: str
    """The label of a button that runs a command its own message shows whole."""

    def escape(self, text: object) -> str: ...

    def cut(self, text: str, limit: int | None = None, more: str = "") -> str: ...

    def code(self, text: object) -> str:
        """``text`` escaped and shown as code (a command, a usage line)."""
        ...

    def bold(self, text: object) -> str:
        """``text`` escaped and shown in bold (a heading, a name)."""
        ...

    def request(self, req: HumanRequest, signal: str = "") -> tuple[str, Buttons]:
        """An incident's question and its buttons."""
        ...

    def header(self, incident_id: int, title: str, severity: str, target: str, count: int) -> str:
        """An incident's first lines."""
        ...

    def closed(self, header: str, state: str, text: str) -> str:
        """An incident's message once its question is over (its buttons go)."""
        ...

    def update(self, update: IncidentUpdate) -> str:
        """An outcome, posted in the incident's thread."""
        ...

    def pointer(self, incident_id: int) -> str:
        """Where the whole text of a cut message is."""
        ...

    def member_line(self, incident: Incident | None, incident_id: int) -> str:
        """An incident's line in a grouped message."""
        ...

    def closed_line(self, incident: Incident | None, incident_id: int, closed: str) -> str:
        """A grouped incident's line once its question is over (``closed``: the edit's text)."""
        ...

    def group(self, members: list[MessageGroupMember]) -> tuple[str, Buttons]:
        """A grouped message's text and buttons."""
        ...


@runtime_checkable
class Channel(Protocol):
    name: str
    """The ``channel`` its rows are stored under."""

    @property
    def markup(self) -> Markup:
        """How this channel renders text."""
        ...

    async def post(self, post: Post) -> str:
        """Post and return the new message's id (as the channel spells it)."""
        ...

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        """Replace a message's text (a picture's caption) and buttons; the same content again
        is no error."""
        ...

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        """The id of ``post`` if an interrupted call posted it: a message above ``floor`` (the
        highest id Guard knew before the call) with exactly that content; ``known`` is the
        highest id Guard knows now. None if it is not there."""
        ...
