"""Every redaction rule is bounded (issue 33): RE2 (no backtracking), every repeat capped, and it
runs on adversarial lines at the 64 KiB line limit without changing what is no secret. The time
per rule and line is measured in ``bench.redaction`` (``hostile``), not asserted here."""

from __future__ import annotations

import tomllib

import pytest

from guard.redact import Policy, builtin_rules, gitleaks
from guard.redact.engine import MAX_CHECKED, WINDOW, Engine, Rule, bound_repeats, compile_rule
from tests.helpers.secret_corpus import LINE_LIMIT, hostile_lines

pytestmark = pytest.mark.unit

RULES = builtin_rules()


def test_there_are_guards_and_gitleaks_rules():
    sources = {r.source.split(":")[0] for r in RULES}
    assert sources == {"guard", "gitleaks"} and len(RULES) > 200


def test_every_rule_is_an_re2_regex_with_no_open_ended_repeat_before_more_pattern():
    for rule in RULES:
        compile_rule(rule)  # RE2 compiles it: linear in the text, whatever the text holds
        assert bound_repeats(rule.pattern, 10**6) == rule.pattern, (rule.source, rule.pattern)


def test_each_gitleaks_rule_is_capped_at_the_largest_cap_re2_reads():
    """``NESTED_CAPS`` is what probing finds: after a gitleaks update, add a new nesting rule."""
    with gitleaks.PATH.open("rb") as f:
        specs = tomllib.load(f)["rules"]
    found = {}
    for spec in specs:
        if spec["id"] in gitleaks.SKIPPED or "regex" not in spec:
            continue
        pattern = spec["regex"].replace(gitleaks._BOUNDARY, gitleaks._LOG_BOUNDARY)
        if bound_repeats(pattern, gitleaks.REPEAT_CAP) != pattern:
            cap = gitleaks.largest_cap(pattern)
            if cap != gitleaks.REPEAT_CAP:
                found[spec["id"]] = cap
    assert found == gitleaks.NESTED_CAPS


def test_open_ended_repeats_are_capped_outside_classes_and_escapes_but_a_trailing_one():
    assert bound_repeats(r"a+b*c{2,}[+*]\+x{3}", 9) == r"a{1,9}b{0,9}c{2,9}[+*]\+x{3}"
    assert bound_repeats(r"key(?:[\w.-]+)+=(\S+)", 64) == r"key(?:[\w.-]{1,64}){1,64}=(\S+)"
    assert bound_repeats(r"a+|b+", 5) == r"a{1,5}|b+"  # b+ ends its branch
    assert bound_repeats(r"(?:a+|b)c", 5) == r"(?:a{1,5}|b)c"


def test_a_storm_of_matches_is_replaced_whole_past_the_check_limit():
    engine = Engine([Rule("x", r"tok_[0-9]{4}", needs=("tok_",), check=lambda v: v != "tok_0000")])
    decoys = "tok_0000 " * (MAX_CHECKED + 10)
    assert engine.redact(decoys) == "tok_0000 " * MAX_CHECKED + "[REDACTED:x]"  # fail closed
    assert engine.redact("tok_0000 tok_1234") == "tok_0000 [REDACTED:x]"


def test_a_text_longer_than_the_window_is_redacted_in_pieces_cut_at_line_ends():
    engine = Engine([Rule("x", r"tok_[0-9]{4}", needs=("tok_",))])
    text = ("filler line\n" * (WINDOW // 12)) + "tok_1234\n"
    assert len(text.encode()) > WINDOW and engine.redact(text).endswith("[REDACTED:x]\n")


def test_issue_33s_two_slow_lines_hold_no_secret_and_stay_as_they_are():
    policy = Policy()
    for line in hostile_lines(("eyJ", "sk-"))[:4]:
        assert len(line) == LINE_LIMIT and line.startswith(("eyJ", "sk-"))
        assert policy.redact(line) == line


def test_every_rule_runs_on_hostile_lines_at_the_line_limit():
    for rule in RULES:
        engine = Engine([rule])
        for line in hostile_lines(rule.needs[:2]):
            out = engine.redact(line)  # returns: no rule can loop or backtrack on it
            assert len(out) <= len(line) + 64 * (line.count("\n") + len(line) // 8 + 1)
