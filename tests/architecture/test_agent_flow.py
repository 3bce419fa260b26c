"""After a human's answer, the agent's work flows one way: human -> remediation -> learning ->
closing (issue 26: "remediation, learning and closing in a line, not a triangle"). Imports
inside functions and under TYPE_CHECKING count, as in the layer contract."""

from __future__ import annotations

from itertools import pairwise

import grimp
import pytest

pytestmark = pytest.mark.unit

LINE = ["human", "remediation", "learning", "closing"]  # each may import only the next one


def edges_among(graph: grimp.ImportGraph, names: list[str]) -> set[tuple[str, str]]:
    """``(importer, imported)`` pairs between the named ``guard.agent`` modules."""
    modules = {f"guard.agent.{n}": n for n in names}
    return {
        (modules[a], modules[b])
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b in modules
    }


def is_a_line(order: list[str], edges: set[tuple[str, str]]) -> bool:
    return edges == set(pairwise(order))


def test_human_remediation_learning_and_closing_import_each_other_in_a_line() -> None:
    graph = grimp.build_graph("guard", exclude_type_checking_imports=False)
    edges = edges_among(graph, LINE)
    assert is_a_line(LINE, edges), sorted(edges)


def test_the_checker_tells_a_line_from_a_triangle() -> None:
    assert is_a_line(["a", "b", "c"], {("a", "b"), ("b", "c")})
    assert not is_a_line(["a", "b", "c"], {("a", "b"), ("b", "c"), ("a", "c")})  # sideways
    assert not is_a_line(["a", "b", "c"], {("a", "b"), ("b", "c"), ("c", "b")})  # back
