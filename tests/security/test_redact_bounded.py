"""Every redaction rule is bounded (issue 33): RE2 (no backtracking), every repeat capped, and it
runs on adversarial lines at the 64 KiB line limit without changing what is no secret. The time
per rule and line is measured in ``bench.redaction`` (``hostile``), not asserted here."""

from __future__ import annotations

import pytest

from guard.redact import Policy, builtin_rules
from guard.redact_engine import MAX_MATCH, Engine, bound_repeats, compile_rule, max_width
from tests.secret_corpus import LINE_LIMIT, hostile_lines

pytestmark = pytest.mark.unit

RULES = builtin_rules()


def test_there_are_guards_and_gitleaks_rules():
    sources = {r.source.split(":")[0] for r in RULES}
    assert sources == {"guard", "gitleaks"} and len(RULES) > 200


def test_every_rule_is_an_re2_regex_whose_matches_are_bounded():
    for rule in RULES:
        compile_rule(rule)  # RE2 compiles it: linear in the text, whatever the text holds
        assert max_width(rule.pattern) <= MAX_MATCH, (rule.source, rule.pattern)


def test_open_ended_repeats_are_capped_outside_classes_and_escapes():
    assert bound_repeats(r"a+b*c{2,}[+*]\+x{3}", 9) == r"a{1,9}b{0,9}c{2,9}[+*]\+x{3}"
    assert max_width(bound_repeats(r"(?i)\bkey(?:[\w.-]+)+=(\S+?)", 64)) < 10_000


def test_issue_33s_two_slow_lines_and_other_hostile_lines_change_nothing():
    policy = Policy()
    for line in hostile_lines(("eyJ", "sk-")):
        assert len(line) == LINE_LIMIT
        out = policy.redact(line)
        assert "[REDACTED" not in out or line.startswith(("password=", "://a:")), line[:20]


def test_every_rule_runs_on_hostile_lines_at_the_line_limit():
    for rule in RULES:
        engine = Engine([rule])
        for line in hostile_lines(rule.needs[:2]):
            out = engine.redact(line)  # returns: no rule can loop or backtrack on it
            assert len(out) <= len(line) + 64 * (line.count("\n") + len(line) // 8 + 1)
