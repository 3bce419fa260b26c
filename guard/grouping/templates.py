"""``TemplateBook``: the template miner backed by the ``log_template`` table.

The miner lives in memory; every template it founds or generalises is written in the caller's
transaction (triage's), and its id comes from the table. On the first use after a start the
table is read back into a fresh miner (``TemplateMiner.seed``), so the same line lands on the
same template id, and so on the same incident, across restarts and releases. If the caller's
transaction fails, ``reset`` throws the in-memory state away; the next use reloads it.
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, col, select

from guard.domain.records import utcnow
from guard.grouping.drain import TemplateMiner
from guard.store.models import LogTemplate

SIMILARITY = 0.7  # measured on the labelled corpus: docs/GROUPING.md
DEPTH = 4


class TemplateBook:
    """Assigns each masked message a durable template id."""

    def __init__(self, *, similarity: float = SIMILARITY, depth: int = DEPTH) -> None:
        self.similarity = similarity
        self.depth = depth
        self._miner: TemplateMiner | None = None
        self._next_id = 1

    def begin(self, session: Session) -> None:
        """Start a batch: new templates are numbered after every stored one (ids are given
        here, so a new template costs no round trip to the database)."""
        self._loaded(session)
        highest = session.exec(select(func.max(LogTemplate.id))).one()
        self._next_id = max(self._next_id, int(highest or 0) + 1)

    def assign(self, session: Session, content: str, lines: int = 1) -> tuple[int, bool]:
        """The template id of ``content`` (masked tokens separated by spaces), and whether the
        template is new (then nothing can belong to it yet); ``lines``: how many lines the
        signal folded (they count towards settling the template's words)."""
        miner = self._loaded(session)
        tokens = content.split()
        mined = miner.add(tokens, lines)
        if mined.cluster is None:
            template_id, self._next_id = self._next_id, self._next_id + 1
            session.add(LogTemplate(id=template_id, template=" ".join(tokens)))
            miner.found(template_id, tokens, lines)
            return template_id, True
        if mined.changed:
            stored = session.get(LogTemplate, mined.cluster.id)
            if stored is not None:
                stored.template = mined.cluster.template
                stored.updated_at = utcnow()
                session.add(stored)
        return mined.cluster.id, False

    def text(self, template_id: int) -> str | None:
        """The current text of a template this book has assigned (None if unknown)."""
        cluster = self._miner.cluster(template_id) if self._miner is not None else None
        return None if cluster is None else cluster.template

    def reset(self) -> None:
        """Forget the in-memory miner (after a rolled-back transaction)."""
        self._miner = None

    def _loaded(self, session: Session) -> TemplateMiner:
        if self._miner is None:
            miner = TemplateMiner(depth=self.depth, similarity=self.similarity)
            for row in session.exec(select(LogTemplate).order_by(col(LogTemplate.id))):
                assert row.id is not None
                miner.seed(row.id, row.template)
                self._next_id = max(self._next_id, row.id + 1)
            self._miner = miner
        return self._miner


def template_text(session: Session, template_id: object) -> str | None:
    """The current text of a template (it may have generalised since the incident opened)."""
    if not isinstance(template_id, int):
        return None
    row = session.get(LogTemplate, template_id)
    return None if row is None else row.template
