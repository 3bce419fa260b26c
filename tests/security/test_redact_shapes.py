"""Secrets around punctuation (issue 39): a token before ``)``/``,``/``.``/``]``/``>``, headers
with their own names and presigned URLs' signatures, framework secrets, ``&`` in a password,
YAML and prompt echoes, and a key's prefixed body lines when Guard never saw its ``BEGIN``."""

from __future__ import annotations

import pytest

from guard.domain.records import Signal
from guard.redact import Policy, redact_signal
from guard.redact.keys import KeyLines
from tests.helpers.secret_corpus_heldout import pieces
from tests.helpers.secret_corpus_shapes import shapes, verdict

pytestmark = pytest.mark.unit


def _entry(name: str, seed: str = "t") -> tuple[str, list[str]]:
    return next((s, ls) for _, n, s, ls in shapes(seed) if n == name)


def _redacted(lines: list[str]) -> str:
    policy, keys = Policy(), KeyLines()
    return "\n".join(policy.redact(keys.redact("src", line)) for line in lines)


# representative shapes of each of the bullets (the bench measures all of them)
_PUNCTUATION: tuple[str, ...] = (
    "digitalocean then paren",
    "digitalocean then bracket",
    "grafana sa then period",
)
_PUNCTUATION += ("shippo then period-eol", "alibaba then angle", "notion then paren-comma")
_HEADERS: tuple[str, ...] = ("cloudflare x-auth-key beside x-auth-email", "x-auth-key header line")
_HEADERS += ("azure apim subscription key", "honeycomb team header", "datadog application key")
_SIGNATURES: tuple[str, ...] = ("s3 presigned signature", "s3 presigned signature in quotes")
_SIGNATURES += ("gcs signed url signature", "s3 v2 signature", "cloudfront signature")
_FRAMEWORK: tuple[str, ...] = (
    "rails secret_key_base=",
    "rails SECRET_KEY_BASE env",
    "phoenix secret_key_base",
)
_FRAMEWORK += ("django SECRET_KEY bare", "password=ab&cd", "jdbc password with &")
_YAML_AND_PROMPTS: tuple[str, ...] = (
    "yaml password with &",
    "yaml lower-case password",
    "yaml list password",
)
_YAML_AND_PROMPTS += ("sudo prompt echo", "git credential prompt echo", "psql prompt echo")


@pytest.mark.parametrize(
    "name", [*_PUNCTUATION, *_HEADERS, *_SIGNATURES, *_FRAMEWORK, *_YAML_AND_PROMPTS]
)
def test_each_bullets_shapes_are_caught_whole(name: str):
    secret, lines = _entry(name)
    out = _redacted(lines)
    assert verdict(secret, lines, out) == "caught", out
    if name in _PUNCTUATION:
        mark = lines[0][lines[0].index(secret) + len(secret)]
        assert "]" + mark in out, out  # the punctuation after the token stays


def test_a_query_keeps_the_parameters_after_a_password_and_a_second_password_is_caught():
    policy = Policy()
    first, second = "aB3dE5&fG7hJ", "zY9xW8vU7tS6"
    out = policy.redact(f"POST /signup?user=bob&password={first}&pwd={second}&lang=en")
    assert first[-5:] not in out and second not in out and out.endswith("&lang=en"), out
    assert policy.redact("GET /v1/data?api_key=x&q=1") == "GET /v1/data?api_key=x&q=1"


@pytest.mark.parametrize(
    "line",
    [
        "passwd: password updated successfully",
        "Failed password for root from 10.0.0.1 port 22 ssh2",
        "Failed password for invalid user admin from 10.0.0.1 port 52 ssh2",
        "password for alice: incorrect",
        "  password: ${DB_PASSWORD}",
        "  password: changed",
        "see https://example.com/a?sig=x), then retry.",
        "Accepted publickey for deploy from 10.0.0.5 port 51022 ssh2: RSA SHA256:"
        "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY2zA4bC6dE8f",
        '<script integrity="sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC">',
    ],
)
def test_lines_near_these_shapes_that_hold_no_secret_are_left_alone(line: str):
    assert _redacted([line]) == line


@pytest.mark.parametrize(
    "name",
    [
        "rsa body with timestamps, then END",
        "rsa body with timestamps, no END",
        "pkcs8 body from docker",
        "openssh body, 70 columns",
        "body from its middle",
        "last lines only",
    ],
)
def test_a_keys_prefixed_body_lines_are_caught_without_its_begin_line(name: str):
    secret, lines = _entry(name)
    out = [redact_signal(Signal("m-k", "logfile", f"/l/{name}", "line", x)).message for x in lines]
    assert not [p for p in pieces(secret) if p in "\n".join(out)], out
    for line, o in zip(lines, out, strict=True):
        assert o.startswith(line[: line.index(" ") + 1])  # each line keeps its log prefix
    if lines[-1].endswith("-----"):
        assert out[-1] == lines[-1]  # the END line is left as it was


def test_the_line_after_a_prefixed_body_line_is_left_alone_when_it_is_no_key_line():
    keys, policy = KeyLines(), Policy()
    secret, lines = _entry("rsa body with timestamps, no END")
    body = policy.redact(keys.redact("src", lines[3]))
    after = "2026-12-04T10:00:04.123Z app[4242]: GET /healthz 200 in 3 ms"
    assert secret.splitlines()[3] not in body
    assert policy.redact(keys.redact("src", after)) == after
