"""``TemplateBook``: the template miner backed by the ``log_template`` table.

The miner lives in memory; every template it founds or generalises is written in the caller's
transaction (triage's), and its id comes from the table. On the first use after a start the
table is read back into a fresh miner (``TemplateMiner.seed``), so the same line lands on the
same template id, and so on the same incident, across restarts and releases. If the caller's
transaction fails, ``reset`` throws the in-memory state away; the next use reloads it.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from guard.grouping.drain import TemplateMiner
from guard.records import utcnow
from guard.store.models import LogTemplate

SIMILARITY = 0.7  # measured on the labelled corpus: docs/GROUPING.md
DEPTH = 4


class TemplateBook:
    """Assigns each masked message a durable template id."""

    def __init__(self, *, similarity: float = SIMILARITY, depth: int = DEPTH) -> None:
        self.similarity = similarity
        self.depth = depth
        self._miner: TemplateMiner | None = None

    def assign(self, session: Session, content: str) -> int:
        """The template id of ``content`` (masked tokens separated by spaces)."""
        miner = self._loaded(session)
        tokens = content.split()
        mined = miner.add(tokens)
        if mined.cluster is None:
            row = LogTemplate(template=" ".join(tokens))
            session.add(row)
            session.flush()
            assert row.id is not None
            miner.found(row.id, tokens)
            return row.id
        if mined.changed:
            stored = session.get(LogTemplate, mined.cluster.id)
            if stored is not None:
                stored.template = mined.cluster.template
                stored.updated_at = utcnow()
                session.add(stored)
        return mined.cluster.id

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
            self._miner = miner
        return self._miner


def template_text(session: Session, template_id: object) -> str | None:
    """The current text of a template (it may have generalised since the incident opened)."""
    if not isinstance(template_id, int):
        return None
    row = session.get(LogTemplate, template_id)
    return None if row is None else row.template
