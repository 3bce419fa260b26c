"""Semantic memory: a LanceDB table of incident summaries and what resolved them.

It lives on the data volume (``data_dir/memory.lance``), so a restart loses nothing. LanceDB
(and pyarrow) are imported only when memory is first used; they cost seconds and megabytes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from guard.domain.fingerprint import mask
from guard.memory.embedders import Embedder, HashingEmbedder
from guard.redact import redact

TABLE = "incidents"


@dataclass(frozen=True)
class Recollection:
    incident_id: int
    score: float  # cosine similarity, 1.0 = identical
    title: str
    text: str
    resolution: str
    skill: str
    kind: str
    target: str


@runtime_checkable
class IncidentMemory(Protocol):
    """Where Guard remembers resolved incidents and recalls similar ones."""

    def warm(self) -> None:
        """Get ready for a first recall (may do nothing)."""
        ...

    def remember(self, incident: Any, *, resolution: str, skill: str = "") -> None:
        """Store (or replace) what resolved ``incident``."""
        ...

    def search(self, text: str, limit: int = 5) -> list[Recollection]:
        """Past incidents most similar to ``text``, best first."""
        ...

    def close(self) -> None:
        """Release what it holds; a later call may open it again."""
        ...


def summary(incident: Any) -> str:
    return redact(f"{incident.title}. {mask(incident.message)} ({incident.source} {incident.kind})")


class SemanticMemory:
    """LanceDB in this process (``MemoryProcess`` runs this in a helper process)."""

    def __init__(self, folder: Path, embedder: Embedder | None = None) -> None:
        self.folder = folder
        self.embedder = embedder or HashingEmbedder()
        self._table: Any = None
        self._lock = threading.Lock()

    def _open(self, create: bool) -> Any:
        if self._table is not None:
            return self._table
        import pyarrow as pa

        from guard.memory.lance_import import import_lancedb

        lancedb = import_lancedb()
        self.folder.mkdir(parents=True, exist_ok=True)
        db = lancedb.connect(str(self.folder))
        try:
            self._table = db.open_table(TABLE)
        except (FileNotFoundError, ValueError):
            if not create:
                return None
            schema = pa.schema(
                [
                    pa.field("incident_id", pa.int64()),
                    pa.field("title", pa.string()),
                    pa.field("text", pa.string()),
                    pa.field("resolution", pa.string()),
                    pa.field("skill", pa.string()),
                    pa.field("kind", pa.string()),
                    pa.field("target", pa.string()),
                    pa.field("embedder", pa.string()),
                    pa.field("vector", pa.list_(pa.float32(), self.embedder.dim)),
                ]
            )
            self._table = db.create_table(TABLE, schema=schema)
        return self._table

    def warm(self) -> None:
        """Import LanceDB and open the table now, so the first recall is not slow."""
        with self._lock:
            self._open(create=False)

    def close(self) -> None:
        with self._lock:
            self._table = None

    def remember(self, incident: Any, *, resolution: str, skill: str = "") -> None:
        """Store (or replace) what resolved ``incident``."""
        text = summary(incident)
        row = {
            "incident_id": int(incident.id),
            "title": redact(incident.title),
            "text": text,
            "resolution": redact(resolution),
            "skill": skill,
            "kind": incident.kind,
            "target": redact(incident.target),
            "embedder": self.embedder.name,
            "vector": self.embedder.embed(text),
        }
        with self._lock:
            table = self._open(create=True)
            table.delete(f"incident_id = {int(incident.id)}")
            table.add([row])

    def search(self, text: str, limit: int = 5) -> list[Recollection]:
        """Past incidents most similar to ``text``, best first."""
        with self._lock:
            table = self._open(create=False)
            if table is None:
                return []
            rows = table.search(self.embedder.embed(text)).metric("cosine").limit(limit).to_list()
        return [
            Recollection(
                int(r["incident_id"]),
                round(1.0 - float(r["_distance"]), 4),
                r["title"],
                r["text"],
                r["resolution"],
                r["skill"],
                r["kind"],
                r["target"],
            )
            for r in rows
        ]
