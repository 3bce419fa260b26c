"""``python -m bench --compare``: the recorded figures are read from the docs, and a change for
the worse beyond the tolerance is flagged whichever way "better" points."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.compare import DOC, Recorded, Row, recorded_figures, render

pytestmark = pytest.mark.unit

TABLE = """# Benchmarks

## Recorded figures (quick profile)

| figure | recorded | better | measured |
|---|---|---|---|
| `mttr.p50_ratio` | 1.20 | lower | 2026-12-05 |
| logscan.vs_grep_1pct | 2.5 | higher | 2026-12-05 |

## Another section

| `not.a.figure` | 9 | lower | x |
"""


def test_figures_are_read_from_their_section_only(tmp_path: Path) -> None:
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text(TABLE)
    figures = recorded_figures(doc)
    assert figures == {
        "mttr.p50_ratio": Recorded(1.2, "lower"),
        "logscan.vs_grep_1pct": Recorded(2.5, "higher"),
    }


def test_a_regression_is_flagged_past_the_tolerance_in_both_directions() -> None:
    lower = Recorded(1.0, "lower")
    higher = Recorded(2.0, "higher")
    assert not Row("a", 1.14, lower).regression
    assert Row("a", 1.2, lower).regression
    assert not Row("a", 0.5, lower).regression  # better
    assert not Row("b", 1.8, higher).regression  # 11 % worse
    assert Row("b", 1.6, higher).regression  # 25 % worse
    assert not Row("b", 4.0, higher).regression  # better
    assert Row("c", None, lower).change is None
    assert Row("c", 1.0, None).change is None


def test_the_rendered_table_names_each_flag() -> None:
    text = render(
        [
            Row("mttr.p50_ratio", 1.5, Recorded(1.2, "lower")),
            Row("logscan.vs_grep_1pct", 2.6, Recorded(2.5, "higher")),
            Row("new.figure", 3.0, None),
        ]
    )
    lines = text.splitlines()
    assert "REGRESSION" in lines[1] and "-25 %" in lines[1]
    assert "REGRESSION" not in lines[2] and "+4 %" in lines[2]
    assert "(not recorded)" in lines[3]


def test_the_docs_record_every_figure_the_quick_profile_prints() -> None:
    figures = recorded_figures(DOC)
    from bench import compare

    keys = {
        "detection.p50_ratio",
        "mttr.p50_ratio",
        "mttr.p95_ratio",
        "logscan.vs_grep_1pct",
        "logscan.vs_grep_0.1pct",
        "grouping.mean_accuracy_all",
    }
    assert keys <= set(figures), sorted(keys - set(figures))
    assert {name for name, _ in compare.PROFILE} >= {"detection", "mttr", "logscan", "grouping"}
