"""Memory on the data volume: episodic (the SQL store), semantic (LanceDB), conversation."""

from guard.memory.embedders import Embedder, HashingEmbedder
from guard.memory.semantic import Recollection, SemanticMemory

__all__ = ["Embedder", "HashingEmbedder", "Recollection", "SemanticMemory"]
