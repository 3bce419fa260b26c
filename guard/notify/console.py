"""The embedded notifier: writes to the log (and so the console) and to conversation memory.

Humans answer with ``guard approve|deny|reply``; the message says exactly which commands.
Like a chat channel's, questions are grouped: the first after a quiet spell is written at once, the
ones asked within ``group_wait`` of it are written together when that window ends, one line
per incident.
"""

from __future__ import annotations

import asyncio
import time

from loguru import logger

from guard.memory.conversation import record_message
from guard.notify import inbound
from guard.notify.base import HumanRequest, IncidentUpdate, SkillOption
from guard.notify.channel import Buttons, Post, Rejected
from guard.notify.plain import PlainMarkup
from guard.store.db import Database
from guard.util.commandtext import oddities, short

CHAT = "console"


class ConsoleNotifier:
    def __init__(self, db: Database, *, group_wait: float = 0.0) -> None:
        self.db = db
        self.group_wait = group_wait
        self._announced_at = -float("inf")
        self._held: list[HumanRequest] = []
        self._flusher: asyncio.Task[None] | None = None

    def _out(self, text: str, incident_id: int | None = None) -> None:
        logger.warning("\n{}", text) if incident_id else logger.info("{}", text)
        record_message(
            self.db, chat=CHAT, direction="out", author="guard", text=text, incident_id=incident_id
        )

    async def ask(self, request: HumanRequest) -> None:
        now = time.monotonic()
        window_end = self._announced_at + self.group_wait
        if self.group_wait <= 0 or (now >= window_end and not self._held):
            self._announced_at = now
            self._ask_one(request)
            return
        self._held.append(request)
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_after(max(0.0, window_end - now)))

    async def flush(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        await self._flush_after(0.0)

    async def _flush_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        held, self._held, self._flusher = self._held, [], None
        if not held:
            return
        self._announced_at = time.monotonic()
        if len(held) == 1:
            self._ask_one(held[0])
            return
        lines = [f"{len(held)} incidents need a human (opened together):"]
        for r in held:
            lines.append(f"  #{r.incident_id} {r.title} [{r.severity}] x{r.count}")
            for o in r.options:
                lines += ["    " + line for line in option_lines(r.incident_id, o)]
            lines.append(
                f"      fix:      guard reply {r.incident_id} -- COMMAND   |   deny: "
                f"guard deny {r.incident_id}"
            )
            if r.url:
                lines.append(f"      page:     {r.url}")
        text = "\n".join(lines)
        logger.warning("\n{}", text)
        for r in held:
            record_message(
                self.db,
                chat=CHAT,
                direction="out",
                author="guard",
                text=text,
                incident_id=r.incident_id,
            )

    def _ask_one(self, request: HumanRequest) -> None:
        lines = [
            f"Incident #{request.incident_id} needs a human: {request.title} "
            f"[{request.severity}] x{request.count}",
            f"  {request.question}",
        ]
        if request.evidence:
            lines.append("  evidence:")
            lines += [f"    {line}" for line in request.evidence.splitlines()[:40]]
        for opt in request.options:
            lines += option_lines(request.incident_id, opt)
        lines.append(
            f"  fix:      guard reply {request.incident_id} -- COMMAND  ({request.fix_hint})"
        )
        lines.append(f"  deny:     guard deny {request.incident_id}")
        if request.url:
            lines.append(f"  page:     {request.url}")
        if request.ack_id:
            lines.append(f"  ack:      guard ack {request.incident_id}  (stops the escalation)")
        self._out("\n".join(lines), request.incident_id)

    async def update(self, update: IncidentUpdate) -> None:
        self._out(
            f"Incident #{update.incident_id} {update.state}: {update.title}. {update.text}",
            update.incident_id,
        )

    async def send_text(self, text: str) -> None:
        self._out(text)


def option_lines(incident_id: int, opt: SkillOption) -> list[str]:
    """How to approve one option; a command is shown whole (``repr`` if it is odd, and then
    not offered), with the digest ``guard approve --digest`` binds the approval to."""
    if not opt.command:
        return [f"  approve:  guard approve {incident_id} --skill {opt.name}   ({opt.description})"]
    if odd := oddities(opt.command):
        return [f"  {opt.name}: not offered ({'; '.join(odd)}): {opt.command!r}"]
    return [
        f"  approve:  guard approve {incident_id} --skill {opt.name} --digest {short(opt.digest)}"
        f"   ({opt.description})",
        "  runs exactly:",
        *(f"    | {line}" for line in opt.command.split("\n")),
    ]


class ConsoleChannel:
    """The console as a ``Channel`` of the outbox: a post or an edit is a log line (and a
    conversation entry). A log cannot be searched, so ``find`` finds nothing: after a crash in
    flight a line may be written twice, never lost."""

    name = CHAT

    def __init__(self, db: Database | None = None) -> None:
        self.db = db
        self.markup = PlainMarkup()
        self._last = 0
        self._known: set[str] = set()

    def _write(self, text: str) -> None:
        logger.warning("\n{}", text)
        if self.db is not None:
            record_message(self.db, chat=CHAT, direction="out", author="guard", text=text)

    async def post(self, post: Post) -> str:
        if self.db is not None and not self._last:  # go on from the ids stored before
            with self.db.session() as session:
                self._last = inbound.top(session, CHAT, post.chat)
        self._last += 1
        self._known.add(str(self._last))
        lines = [post.text, *(f"  [{label}]" for row in post.buttons for label, _ in row)]
        self._write("\n".join(lines))
        return str(self._last)

    async def edit(self, chat: str, message_id: str, text: str, buttons: Buttons) -> None:
        if message_id not in self._known:
            raise Rejected("message to edit not found")
        self._write(f"(message {message_id} now says:)\n{text}")

    async def find(self, post: Post, floor: int, known: int) -> str | None:
        return None
