"""The embedded notifier: writes to the log (and so the console) and to conversation memory.

Humans answer with ``guard approve|deny|reply``; the message says exactly which commands.
"""

from __future__ import annotations

from loguru import logger

from guard.memory.conversation import record_message
from guard.notify.base import HumanRequest, IncidentUpdate
from guard.store.db import Database

CHAT = "console"


class ConsoleNotifier:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _out(self, text: str, incident_id: int | None = None) -> None:
        logger.warning("\n{}", text) if incident_id else logger.info("{}", text)
        record_message(self.db, chat=CHAT, direction="out", author="guard", text=text,
                       incident_id=incident_id)

    async def ask(self, request: HumanRequest) -> None:
        lines = [
            f"Incident #{request.incident_id} needs a human: {request.title} "
            f"[{request.severity}] x{request.count}",
            f"  {request.question}",
        ]
        if request.evidence:
            lines.append("  evidence:")
            lines += [f"    {line}" for line in request.evidence.splitlines()[:40]]
        for opt in request.options:
            lines.append(f"  approve:  guard approve {request.incident_id} --skill {opt.name}"
                         f"   ({opt.description})")
        lines.append(f"  fix:      guard reply {request.incident_id} -- COMMAND  "
                     "(a shell command for the sandbox, or an action like docker.restart NAME)")
        lines.append(f"  deny:     guard deny {request.incident_id}")
        self._out("\n".join(lines), request.incident_id)

    async def update(self, update: IncidentUpdate) -> None:
        self._out(f"Incident #{update.incident_id} {update.state}: {update.title}. {update.text}",
                  update.incident_id)

    async def send_text(self, text: str) -> None:
        self._out(text)
