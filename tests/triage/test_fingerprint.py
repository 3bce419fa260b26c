"""Fingerprints fold repeats of one fault together and keep different faults apart."""

from __future__ import annotations

import pytest

from guard.domain.fingerprint import fingerprint, mask, mask_many

pytestmark = pytest.mark.unit


def test_variable_parts_are_masked():
    a = (
        "2026-12-02T18:06:48.123Z req 550e8400-e29b-41d4-a716-446655440000 from 10.1.2.3:5432 "
        "id=89bbae50 took 123ms code 0x1F"
    )
    b = (
        "2026-11-30 01:02:03,999 req 123e4567-e89b-12d3-a456-426614174000 from 192.168.0.1:80 "
        "id=abbfddfa took 9s code 0xAB"
    )
    assert mask(a) == mask(b)
    assert "<ts>" in mask(a) and "<uuid>" in mask(a) and "<ip>" in mask(a) and "<id>" in mask(a)


def test_syslog_and_nginx_timestamps():
    assert mask("Dec  2 18:06:48 host x") == mask("Jan 10 01:00:00 host x")
    assert mask('[02/Dec/2026:18:06:48 +0000] "GET /"') == mask(
        '[01/Jan/2027:00:00:00 +0000] "GET /"'
    )


def test_different_faults_differ():
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint(
        "logfile", "/a", "err", "x failed"
    )
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint(
        "logfile", "/b", "err", "disk full"
    )
    assert fingerprint("logfile", "/a", "err", "disk full") != fingerprint(
        "logfile", "/a", "oom", "disk full"
    )
    assert fingerprint("docker", "api", "container_exited", "exited with code 1") == fingerprint(
        "docker", "api", "container_exited", "exited with code 137"
    )


def _mask_every_pass(message: str) -> str:
    """What ``mask`` must equal: every pattern's pass in order, then whitespace folded."""
    import re

    from guard.domain.fingerprint import _MASKS

    out = message
    for pattern, placeholder, _ in _MASKS:
        out = pattern.sub(placeholder, out)
    return re.sub(r"\s+", " ", out).strip()


def test_skipping_passes_that_cannot_match_changes_nothing():
    import random

    pieces = [
        "2026-12-02T18:06:48.123Z",
        "2026-12-02 18:06:48,5",
        "+02:00",
        "Dec  2 18:06:48",
        "02/Dec/2026:18:06:48 +0000",
        "18:06:48",
        "6f1c2a9e-1b2c-4d5e-8f90-123456789abc",
        "10.0.0.7:5432",
        "fe80::1:2:3",
        "0xdeadBEEF",
        "89bbae50",
        "abbfddfa",
        "12ms",
        "3.5s",
        "42",
        "-",
        ":",
        ".",
        "/",
        "0x",
        "x",
        "ERROR",
        "req=",
        " ",
        "  ",
        "\t",
        "\u00a0",
        "\u2003",
        "\x1c",
        "\n",
        "é",
        "٣",
        "Dec",
        "a-b",
        "1:2:3:4",
    ]
    rng = random.Random(3)
    for _ in range(20_000):
        message = "".join(rng.choices(pieces, k=rng.randrange(0, 12)))
        assert mask(message) == _mask_every_pass(message), repr(message)


_PIECES = [
    "2026-12-02T18:06:48.123Z",
    "Dec  2 18:06:48",
    "02/Dec/2026:18:06:48 +0000",
    "6f1c2a9e-1b2c-4d5e-8f90-123456789abc",
    "10.0.0.7:5432",
    "fe80::1:2:3",
    "0xdeadBEEF",
    "89bbae50",
    "12ms",
    "42",
    "E031",
    "-",
    ":",
    " ",
    "\t",
    "\u2003",
    "\x1c",
    "\n",
    "é",
    "x",
    "Dec",
]


def test_masking_many_at_once_gives_each_its_own_mask():
    import random

    rng = random.Random(5)
    for _ in range(500):
        batch = [
            "".join(rng.choices(_PIECES, k=rng.randrange(0, 8)))
            for _ in range(rng.randrange(0, 30))
        ]
        assert mask_many(batch) == [mask(m) for m in batch], batch


def test_masking_many_plain_ascii_skips_only_passes_that_find_nothing():
    import random

    plain = [p for p in _PIECES if p.isascii() and p.isprintable()] + ["Dec  2 18:06:48", "1:2:3:4"]
    rng = random.Random(6)
    for _ in range(1000):
        batch = [
            "".join(rng.choices(plain, k=rng.randrange(0, 8))) for _ in range(rng.randrange(2, 12))
        ]
        assert mask_many(batch) == [mask(m) for m in batch], batch


def test_masking_many_keeps_a_message_with_a_nul_apart():
    batch = ["id 89bbae50\x00", "\x0012ms", "2026-12-02T18:06:48Z x"]
    assert mask_many(batch) == [mask(m) for m in batch]
    # a timestamp or an id never spans two messages
    assert mask("89bbae50") == "<id>"
    assert mask_many(["89bb", "ae50"]) == ["89bb", "ae50"]
