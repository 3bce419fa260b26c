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


def test_runs_are_summarised_as_median_with_min_and_max() -> None:
    from bench.compare import summarise

    runs: list[dict[str, float | None]] = [
        {"mttr.p50_ratio": 1.4, "detection.p50_ratio": None},
        {"mttr.p50_ratio": 1.1, "detection.p50_ratio": 1.3},
        {"mttr.p50_ratio": 1.2, "detection.p50_ratio": 1.5},
    ]
    rows = {r.key: r for r in summarise(runs, {"mttr.p50_ratio": Recorded(1.2, "lower")})}
    assert (rows["mttr.p50_ratio"].now, rows["mttr.p50_ratio"].low) == (1.2, 1.1)
    assert rows["mttr.p50_ratio"].high == 1.4 and not rows["mttr.p50_ratio"].regression
    assert rows["detection.p50_ratio"].now == 1.4  # the median of the runs that gave it
    text = render(list(rows.values()))
    assert text.splitlines()[0].split()[:4] == ["figure", "now", "min", "max"]
    assert "1.1" in text.splitlines()[1] and "1.4" in text.splitlines()[1]


def test_the_background_load_spins_while_the_block_runs_and_not_after() -> None:
    import os
    import time

    from bench.load import background_load

    def cpu(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    with background_load(2) as pids:
        assert len(pids) == 2
        before = [cpu(p) for p in pids]
        time.sleep(1.0)
        assert all(cpu(p) > b for p, b in zip(pids, before, strict=True))
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")]  # killed and reaped
