"""A streaming log-template miner in the style of Drain (He et al., ICWS 2017).

A message is a list of tokens, its variable parts already masked (``tokens.py``). Clusters are
found through a fixed-depth prefix tree: first by token count, then by the first
``depth - 2`` tokens (a token holding a digit or punctuation such as ``.:/@=<``, or one past
``max_children`` distinct values, goes down the wildcard branch). In the leaf, the cluster whose
template shares the largest share of positions with the message wins if that share reaches
``similarity`` (ties: the more general, then the older template); the message then generalises
the template (positions that differ become ``<*>``). A message that finds nothing in its leaf is
compared with the recent clusters of its length that start with the same word, so a value early
in a message ("user alice ...") does not found a cluster per value. Otherwise it founds a new
cluster. A template that has taken ``SETTLED`` lines without its last word varying keeps it: a
message ending otherwise (``client SPP.`` after 608 ``client WindowsUpdateAgent.``) is another
event, however alike the rest; a word is a token of letters only (values hold digits,
placeholders or inner punctuation, and keep generalising; a word inside a message is as often a
user name, ``for root from``), and a ``key=value`` anywhere keeps its key
and the kind of its value (none, a word, other: ``rhost=<ip>`` is not ``rhost=``). Each
comparison looks at a bounded number of clusters (``SCAN``, ``NEIGHBOURS``), so a storm of
distinct messages costs the same per message as a quiet day.

Unlike drain3, a cluster's id is given from outside: the store assigns it, and ``seed`` puts
persisted templates back into a fresh tree, so an id (and the incident fingerprint made from it)
survives restarts, a template's later generalisation and changes to this module.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

WILDCARD = "<*>"
SCAN = 256  # clusters of one leaf compared with a message, most recently matched first
NEIGHBOURS = 64  # clusters per (length, first token) that the fallback compares
SETTLED = 64  # lines after which a template's words are the event's (measured: docs/GROUPING.md)
_WORD = re.compile(r"\(?[A-Za-z]+[.,;:)]?")  # "client", "SPP.", "(usable)"; not "v<num>", "a.b"


@dataclass
class Cluster:
    """One event template: ``tokens`` with ``<*>`` where values varied."""

    id: int
    tokens: list[str]
    size: int = 1  # lines taken since founded or seeded (not stored: counted anew after a start)

    @property
    def template(self) -> str:
        return " ".join(self.tokens)


@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    clusters: list[Cluster] = field(default_factory=list)


@dataclass(frozen=True)
class Mined:
    """What ``TemplateMiner.add`` did with one message."""

    cluster: Cluster | None  # None: no cluster matched; the caller founds one with ``found``
    changed: bool = False  # the template generalised (the caller persists the new text)


def keyed(event: str) -> str:
    """The first token of a message whose header holds an ``event`` key (``«404»``)."""
    return f"«{event}»"


def key_length(tokens: Sequence[str]) -> int:
    """1 when the first token is an event key (``keyed``): a template then takes only messages
    of that key, and the key does not count in their similarity; else 0."""
    return 1 if tokens and tokens[0].startswith("«") and tokens[0].endswith("»") else 0


def _has_digit(token: str) -> bool:
    return any(c.isdigit() or c in ".:/@=<" for c in token)


def _settled(cluster: Cluster, words: Sequence[str]) -> bool:
    """Whether ``words`` differ from ``cluster``'s template in its last word or in a key."""
    k = len(cluster.tokens) - len(words)
    last = len(words) - 1
    return any(
        have != got and have != WILDCARD and _structural(have, got, i == last)
        for i, (have, got) in enumerate(zip(cluster.tokens[k:], words, strict=True))
    )


def _structural(have: str, got: str, last: bool) -> bool:
    """Whether ``got`` differs from a settled template token ``have`` in what the event says:
    ``have`` is the ``last`` word, or a ``key=value`` whose key differs or value changes kind."""
    if _WORD.fullmatch(have):
        return last
    key, eq, value = have.partition("=")
    if not eq:
        return False
    got_key, got_eq, got_value = got.partition("=")
    return got_key != key or not got_eq or _kind(value) != _kind(got_value)


def _kind(value: str) -> int:
    """A value's kind: none, a word, anything else."""
    return 0 if not value else 1 if _WORD.fullmatch(value) else 2


class TemplateMiner:
    """Clusters token lists into templates; see the module docstring."""

    def __init__(self, *, depth: int = 4, similarity: float = 0.5, max_children: int = 100) -> None:
        if depth < 3:
            raise ValueError("depth must be at least 3")
        self.prefix_depth = depth - 2
        self.similarity = similarity
        self.max_children = max_children
        self._root = _Node()
        self._clusters: dict[int, Cluster] = {}
        self._neighbours: dict[tuple[object, ...], OrderedDict[int, Cluster]] = {}

    def __len__(self) -> int:
        return len(self._clusters)

    def clusters(self) -> list[Cluster]:
        return list(self._clusters.values())

    def cluster(self, cluster_id: int) -> Cluster | None:
        return self._clusters.get(cluster_id)

    def seed(self, cluster_id: int, template: str) -> Cluster:
        """Put back a persisted template under its id."""
        cluster = Cluster(cluster_id, template.split())
        leaf = self._leaf(cluster.tokens, create=True)
        assert leaf is not None
        leaf.clusters.append(cluster)
        self._clusters[cluster_id] = cluster
        self._touch(cluster)
        return cluster

    def match(self, tokens: Sequence[str]) -> Cluster | None:
        """The cluster ``tokens`` belong to, without changing anything.

        First among the clusters of its leaf (Drain); failing that, among the clusters of its
        length that start with the same token, so a value early in the message ("user alice
        ...", "user bob ...") does not found a cluster per value.
        """
        leaf = self._leaf(tokens, create=False)
        found = None if leaf is None else self._best(leaf.clusters[-SCAN:], tokens)
        k = key_length(tokens)
        if found is not None or len(tokens) <= k or "<" in tokens[k]:
            return found  # a first token that is a value says nothing about neighbours
        near = [
            *self._neighbours.get((len(tokens), *tokens[: k + 1]), {}).values(),
            *self._neighbours.get((len(tokens), *tokens[:k], WILDCARD), {}).values(),
        ]
        return self._best(near, tokens)

    def add(self, tokens: Sequence[str], lines: int = 1) -> Mined:
        """Match ``tokens``, generalising the matched template if needed; ``lines``: how many
        lines these tokens stand for (a monitor folds identical lines into one signal)."""
        cluster = self.match(tokens)
        if cluster is None:
            return Mined(None)
        leaf = self._leaf(tokens, create=True)
        assert leaf is not None
        if leaf.clusters and leaf.clusters[-1] is not cluster:  # most recently matched last
            if cluster in leaf.clusters:
                leaf.clusters.remove(cluster)
            leaf.clusters.append(cluster)  # (found by its neighbours: next time, on the way)
        elif not leaf.clusters:
            leaf.clusters.append(cluster)
        self._touch(cluster)
        cluster.size += lines
        changed = False
        for i, (have, got) in enumerate(zip(cluster.tokens, tokens, strict=True)):
            if have != got and have != WILDCARD:
                cluster.tokens[i] = WILDCARD
                changed = True
        return Mined(cluster, changed)

    def found(self, cluster_id: int, tokens: Sequence[str], lines: int = 1) -> Cluster:
        """Start a new cluster from ``tokens`` (after ``add`` found none)."""
        cluster = self.seed(cluster_id, " ".join(tokens))
        cluster.size = lines
        return cluster

    # -- the tree ---------------------------------------------------------------------------

    def _leaf(self, tokens: Sequence[str], *, create: bool) -> _Node | None:
        """The leaf for ``tokens``: found (``create=False``) or made on the way down."""
        node = self._root.children.get(str(len(tokens)))
        if node is None:
            if not create:
                return None
            node = self._root.children[str(len(tokens))] = _Node()
        for token in tokens[: self.prefix_depth]:
            if token in node.children:
                node = node.children[token]
            elif not create:
                if WILDCARD not in node.children:
                    return None
                node = node.children[WILDCARD]
            else:
                node = node.children.setdefault(self._branch(node, token), _Node())
        return node

    def _branch(self, node: _Node, token: str) -> str:
        """The branch a new ``token`` takes below ``node``: its own, or the wildcard."""
        if _has_digit(token):
            return WILDCARD
        room = self.max_children - len(node.children) - (0 if WILDCARD in node.children else 1)
        return token if room > 0 else WILDCARD

    def _touch(self, cluster: Cluster) -> None:
        """Keep ``cluster`` among the recent neighbours of its length and first token."""
        k = key_length(cluster.tokens)
        if len(cluster.tokens) <= k:
            return
        recent = self._neighbours.setdefault(
            (len(cluster.tokens), *cluster.tokens[: k + 1]), OrderedDict()
        )
        recent[cluster.id] = cluster
        recent.move_to_end(cluster.id)
        if len(recent) > NEIGHBOURS:
            recent.popitem(last=False)

    def _best(self, clusters: Sequence[Cluster], tokens: Sequence[str]) -> Cluster | None:
        """The most similar cluster (the share of positions that agree), if similar enough;
        ties go to the more general template, then to the older one (as in Drain)."""
        best: Cluster | None = None
        best_key = (-1.0, -1, 0)
        k = key_length(tokens)
        words = tokens[k:]
        for cluster in clusters:
            if k and cluster.tokens[0] != tokens[0]:
                continue  # another event's key: never the same template
            same = wild = 0
            for have, got in zip(cluster.tokens[k:], words, strict=True):
                if have == WILDCARD:
                    wild += 1
                elif have == got:
                    same += 1
            if same + wild < len(words) and cluster.size >= SETTLED and _settled(cluster, words):
                continue  # a word it held for SETTLED lines differs: another event
            key = (same / len(words) if words else 1.0, wild, -cluster.id)
            if key > best_key:
                best, best_key = cluster, key
        if best is None or best_key[0] < self.similarity:
            return None
        return best
