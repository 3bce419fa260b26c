"""Memory on the data volume: episodic (the SQL store), semantic (LanceDB), conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from guard.memory.embedders import Embedder, HashingEmbedder
from guard.memory.semantic import IncidentMemory, Recollection, SemanticMemory

if TYPE_CHECKING:
    from guard.config import Settings


def open_memory(settings: Settings) -> IncidentMemory:
    """The semantic memory ``settings`` ask for: in a helper process (default) or in this one."""
    folder = settings.data_dir / "memory.lance"
    if settings.memory.isolate:
        from guard.memory.process import MemoryProcess

        return MemoryProcess(folder, idle_timeout=settings.memory.idle_timeout)
    return SemanticMemory(folder)


__all__ = [
    "Embedder",
    "HashingEmbedder",
    "IncidentMemory",
    "Recollection",
    "SemanticMemory",
    "open_memory",
]
