"""Private keys: a block in one text, and a key logged one line per signal, with per-line
prefixes, remembered per source until its END line."""

from __future__ import annotations

import pytest

from guard.domain.records import Signal
from guard.redact import Policy, redact_signal
from guard.redact.keys import MAX_BODY_LINES, KeyLines, redact_blocks
from tests.helpers.secret_corpus_heldout import heldout, pieces

pytestmark = pytest.mark.unit

KEY = "[REDACTED:private-key]"


def _key(name: str) -> tuple[str, list[str]]:
    (secret, lines) = next((s, ls) for _, n, s, ls in heldout("keys") if n == name)
    return secret, lines


def _signal(monitor: str, line: str) -> Signal:
    return Signal(monitor, "logfile", f"/var/log/{monitor}.log", "line", line)


@pytest.mark.parametrize(
    "name",
    [
        "rsa line by line with timestamps",
        "pkcs8 line by line with docker prefix",
        "openssh line by line with timestamps",
        "dsa line by line bare",
        "76-column key line by line",
    ],
)
def test_a_key_logged_one_line_per_signal_leaves_no_body_line(name: str):
    secret, lines = _key(name)
    out = [redact_signal(_signal(f"m-{name[:3]}", line)).message for line in lines]
    text = "\n".join(out)
    assert pieces(secret) and not [p for p in pieces(secret) if p in text]
    assert out[0].endswith(KEY) and "END" in out[-1]  # armour aside, each line keeps its prefix
    prefixed = [
        (line, o) for line, o in zip(lines, out, strict=True) if line[:4] in ("2026", "api-")
    ]
    assert all(o.startswith(line[:8]) for line, o in prefixed)


def test_the_line_after_a_key_header_is_key_material_even_without_the_end():
    secret, lines = _key("header then one lone 64-col line")
    keys = KeyLines()
    out = [keys.redact("api", line) for line in lines]
    assert secret not in "\n".join(out) and out[1].endswith(KEY)


def test_another_sources_lines_and_lines_after_the_end_are_left_alone():
    keys = KeyLines()
    edge = "-" * 5
    keys.redact("a", f"t1 {edge}BEGIN RSA PRIVATE KEY{edge}")
    assert keys.redact("b", "t2 GET /healthz 200") == "t2 GET /healthz 200"
    assert keys.redact("a", "t3 abcDEF123+/") == "t3 " + KEY
    assert (
        keys.redact("a", f"t4 {edge}END RSA PRIVATE KEY{edge}")
        == f"t4 {edge}END RSA PRIVATE KEY{edge}"
    )
    assert keys.redact("a", "t5 GET /healthz 200") == "t5 GET /healthz 200"


def test_a_source_that_never_ends_its_key_is_let_go():
    keys = KeyLines()
    keys.redact("a", "-" * 5 + "BEGIN PRIVATE KEY" + "-" * 5)
    for _ in range(MAX_BODY_LINES):
        assert keys.redact("a", "ok abc123") == "ok " + KEY
    assert keys.redact("a", "ok abc123") == "ok abc123"


def test_a_block_in_one_text_goes_whole_even_cut_before_its_end():
    _, lines = _key("rsa block in one text")
    assert redact_blocks(lines[0]) == f"loaded key:\n{KEY}\nthen crashed"
    cut = lines[0][: len(lines[0]) // 2]
    assert redact_blocks(cut) == "loaded key:\n" + KEY
    assert Policy().redact(cut) == "loaded key:\n" + KEY
