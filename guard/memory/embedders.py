"""The Embedder port, and the default embedder that needs no model download.

``HashingEmbedder`` maps text to a fixed-size vector by feature hashing: masked words (with a
small table folding an SRE's synonyms together: crashed/died/exited, OOM/out of memory...),
word pairs and character trigrams. It finds an incident again from a paraphrase of its message
that shares a few words or their synonyms; it does not understand language. A model-based
embedder would implement the same ``Embedder`` port.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from typing import Protocol, runtime_checkable

from guard.domain.fingerprint import mask

SYNONYMS = {
    "crashed": "exit",
    "crash": "exit",
    "crashes": "exit",
    "died": "exit",
    "dies": "exit",
    "dead": "exit",
    "exited": "exit",
    "exits": "exit",
    "stopped": "exit",
    "terminated": "exit",
    "down": "unavailable",
    "unreachable": "unavailable",
    "refused": "unavailable",
    "killed": "kill",
    "kills": "kill",
    "oom": "oom",
    "memory": "oom",
    "oomkilled": "oom",
    "unhealthy": "unhealthy",
    "sick": "unhealthy",
    "failing": "fail",
    "failed": "fail",
    "failure": "fail",
    "fails": "fail",
    "error": "fail",
    "errors": "fail",
    "broken": "fail",
    "timeout": "timeout",
    "timed": "timeout",
    "hangs": "timeout",
    "hung": "timeout",
    "slow": "slow",
    "latency": "slow",
    "connections": "connection",
    "clients": "connection",
    "client": "connection",
    "db": "database",
    "postgres": "database",
    "postgresql": "database",
    "pg": "database",
    "mysql": "database",
    "restarting": "restart",
    "restarted": "restart",
    "rebooted": "restart",
    "reboot": "restart",
    "app": "service",
    "application": "service",
    "svc": "service",
    "disk": "disk",
    "full": "full",
    "space": "full",
    "enospc": "full",
}
_STOP_WORDS = (
    "a an the is was were be been of on in at to for with and or it its this that "
    "has had have by from as code"
)
STOP = frozenset(_STOP_WORDS.split())
_WORD = re.compile(r"[a-z0-9]+")


@runtime_checkable
class Embedder(Protocol):
    """Turns text into a vector of ``dim`` floats (unit length)."""

    dim: int
    name: str

    def embed(self, text: str) -> list[float]: ...


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    words = [w for w in _WORD.findall(mask(text).lower()) if w not in STOP]
    return [SYNONYMS.get(w) or SYNONYMS.get(_stem(w)) or _stem(w) for w in words]


class HashingEmbedder:
    """Feature-hashed bag of terms, term pairs and character trigrams."""

    name = "hashing-v1"

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def _add(self, vec: list[float], feature: str, weight: float) -> None:
        digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        vec[h % self.dim] += weight if (h >> 63) & 1 else -weight

    def embed(self, text: str) -> list[float]:
        vec = [0.0] * self.dim
        words = terms(text)
        for w in words:
            self._add(vec, "w:" + w, 1.0)
            for i in range(len(w) - 2):
                self._add(vec, "c:" + w[i : i + 3], 0.25)
        for a, b in itertools.pairwise(words):
            self._add(vec, f"b:{a} {b}", 0.5)
        norm = math.sqrt(sum(x * x for x in vec)) or 1.0
        return [x / norm for x in vec]
