"""The block matcher must give exactly what matching each line with Python's ``re`` gives."""

from __future__ import annotations

import random
import re

import pytest

from guard.monitors import matcher as matcher_module
from guard.monitors.matcher import LineMatcher

pytestmark = pytest.mark.unit

LIMIT = 256


def reference(rules: list[tuple[str, bool]], block: bytes, limit: int) -> list[tuple[int, str]]:
    """The obvious implementation: every line, every rule in order, Python semantics."""
    compiled = [re.compile(p, re.IGNORECASE if ic else 0) for p, ic in rules]
    found = []
    lines = [piece + b"\n" for piece in block.split(b"\n")]
    lines[-1] = lines[-1][:-1]
    for line in filter(None, lines):
        text = line[:limit].rstrip(b"\r\n").decode("utf-8", "replace").replace("\x00", "\ufffd")
        for i, rx in enumerate(compiled):
            if rx.search(text):
                found.append((i, text))
                break
    return found


PIECES = [
    "ERROR",
    "error",
    "Error",
    "WARN",
    "timeout",
    "after",
    "12ms",
    "ok",
    " ",
    "  ",
    "\t",
    "disk",
    "full",
    "\u00e9",
    "\u017f",
    "K",
    "\u212a",
    "\x00",
    "\r",
    "\x0b",
    "\x1c",
    "req=",
    "0x1f",
    "abab",
    "ab",
    "end",
    "start",
    "-",
    ":",
    "FATAL",
    "\xff",
]
ASCII = [p for p in PIECES if (p.isascii() and p.isprintable()) or p == "\t"]


def random_block(rng: random.Random, lines: int) -> bytes:
    """Blocks of printable ASCII (RE2's fast path), or mixed, sometimes with over-long lines."""
    pieces = rng.choice([ASCII, PIECES])
    out = []
    for _ in range(lines):
        words = rng.choices(pieces, k=rng.randrange(0, 8))
        if rng.random() < 0.01:
            words.append("x" * 300)
        raw = "".join(words).encode("utf-8", "surrogateescape")
        if rng.random() < 0.05:
            raw = raw.replace(b"\xc3\xbf", b"\xff")  # invalid UTF-8 now and then
        out.append(raw + b"\n")
    return b"".join(out)


HAS_HYPERSCAN = matcher_module.hyperscan is not None
# rules, and the engine that finds their candidate lines when Hyperscan is there
RULE_SETS: dict[str, tuple[list[tuple[str, bool]], str]] = {
    "literals": (
        [("FATAL", False), (r"\bERROR\b", False), ("timeout after \\d+ms", False)],
        "hyperscan",
    ),
    "ignore_case": ([("error", True), ("disk\\s+full", True), ("k", True)], "hyperscan"),
    "anchors": ([("^start", False), ("end$", False)], "hyperscan"),
    "empty_line": ([("^start", False), ("^$", False)], "re2"),  # can match nothing
    "zero_width": ([(r"\b", False), ("x*", False)], "re2"),
    "spaces_and_unicode": ([(r"\s{2}", False), (r"\w+é", False), (r"\d", False)], "hyperscan"),
    "crossing_newlines": (
        [(r"a[^b]+b", False), (r"d\s+f", False), (r"\S+ \S+:", False)],
        "hyperscan",
    ),
    "divergent_quantifier": ([("ab{,3}a", False), ("ERROR", False)], "python"),
    "backreference": ([(r"(ab)\1", False), ("WARN", False)], "python"),
    "lookahead": ([("ERROR(?!:)", False)], "python"),
    "end_of_string": ([(r"end\Z", False)], "python"),
}
ENGINES: dict[str, tuple[str, ...]] = {"hyperscan": ("hyperscan", "re2"), "re2": ("re2",)}


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_block_scan_equals_line_by_line_python(name: str, engine: str) -> None:
    if engine == "hyperscan" and not HAS_HYPERSCAN:
        pytest.skip("hyperscan is not installed on this machine")
    rules, best = RULE_SETS[name]
    # every stretch through Hyperscan, however short (by default only long ones are)
    matcher = LineMatcher(rules, engines=ENGINES[engine], hyperscan_from=0)  # type: ignore[arg-type]
    expected = best if engine == "hyperscan" or best == "python" else "re2"
    assert matcher.engine == expected
    assert matcher.prefiltered is (expected != "python")
    rng = random.Random(name)
    for _ in range(200):
        block = random_block(rng, rng.randrange(1, 60))
        assert list(matcher.scan(block, LIMIT)) == reference(rules, block, LIMIT)


@pytest.mark.skipif(not HAS_HYPERSCAN, reason="hyperscan is not installed on this machine")
def test_a_rule_matching_everywhere_falls_back_to_re2_for_that_block() -> None:
    rules = [("FATAL", False), (r"[0-9]", False)]
    matcher = LineMatcher(rules)
    assert matcher.engine == "hyperscan"
    block = b"".join(
        b"req %d took %dms%s\n" % (i, i * 7, b" FATAL" * (i % 3 == 0)) for i in range(20_000)
    )
    assert matcher._hyperscan_ends(block, 0, len(block)) is None  # more than HS_STORM matches
    assert list(matcher.scan(block, LIMIT)) == reference(rules, block, LIMIT)


@pytest.mark.skipif(not HAS_HYPERSCAN, reason="hyperscan is not installed on this machine")
def test_hyperscan_is_built_for_the_first_long_stretch_only() -> None:
    """A check that reads a few lines costs no Hyperscan database (memory at scale)."""
    rules = [("FATAL", False), (r"\bERROR\b", False)]
    matcher = LineMatcher(rules)
    few = b"2026-12-07 INFO ok\n2026-12-07 ERROR boom\n"
    assert list(matcher.scan(few, LIMIT)) == reference(rules, few, LIMIT)
    assert matcher._hyperscan is None and matcher._hs_rules is not None
    many = b"".join(b"req %d ok%s\n" % (i, b" FATAL" * (i % 97 == 0)) for i in range(20_000))
    assert len(many) >= matcher_module.HS_FROM
    assert list(matcher.scan(many, LIMIT)) == reference(rules, many, LIMIT)
    assert matcher._hyperscan is not None and matcher.engine == "hyperscan"


def test_without_hyperscan_re2_does_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matcher_module, "hyperscan", None)
    rules = [("FATAL", False), ("ERROR", True)]
    matcher = LineMatcher(rules)
    assert matcher.engine == "re2"
    block = b"ok\nFATAL x\nan error\n"
    assert list(matcher.scan(block, LIMIT)) == [(0, "FATAL x"), (1, "an error")]


def test_first_rule_wins_even_when_a_later_rule_matches_earlier_in_the_line() -> None:
    matcher = LineMatcher([("disk full", False), ("ERROR", False)])
    block = b"ERROR disk full\nERROR other\nnothing\n"
    assert list(matcher.scan(block, LIMIT)) == [(0, "ERROR disk full"), (1, "ERROR other")]


def test_a_match_spanning_lines_does_not_hide_the_next_line() -> None:
    matcher = LineMatcher([(r"a\s+b", False)])  # \s can cross a newline inside a block
    assert list(matcher.scan(b"xa\nb a b\n", LIMIT)) == [(0, "b a b")]


def test_lines_are_cut_at_the_limit_like_before() -> None:
    matcher = LineMatcher([("x$", False), ("TAIL", False)])
    long_line = b"y" * (LIMIT - 1) + b"x" + b"zzz TAIL\n"  # cut after the x: "x$" matches
    assert list(matcher.scan(b"ok\n" + long_line, LIMIT)) == [(0, "y" * (LIMIT - 1) + "x")]


def test_a_final_line_without_newline_is_matched() -> None:
    matcher = LineMatcher([("ERROR", False)])
    assert list(matcher.scan(b"fine\nERROR at the end", LIMIT)) == [(0, "ERROR at the end")]


def test_a_monitor_with_a_python_only_rule_still_works(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from guard.monitors.logfile import LogfileMonitor
    from guard.playbooks.models import LogfileMonitorSpec

    log = tmp_path / "app.log"
    log.write_bytes(b"ok\nretry retry failed\nERROR x\nretry once\n")
    spec = LogfileMonitorSpec.model_validate(
        {
            "id": "m",
            "type": "logfile",
            "path": str(log),
            "start": "beginning",
            "rules": [
                {"kind": "repeated", "pattern": r"(\w+) \1"},  # RE2 has no backreferences
                {"kind": "err", "pattern": "ERROR"},
            ],
        }
    )
    signals = LogfileMonitor(spec).scan({}).signals
    assert sorted((s.kind, s.message) for s in signals) == [
        ("err", "ERROR x"),
        ("repeated", "retry retry failed"),
    ]
