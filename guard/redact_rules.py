"""The built-in secret detectors: known credential shapes, then secrets by context.

Each ``Rule`` is a regex, the placeholder kind it leaves (``[REDACTED:<kind>]``), the group that
holds the secret (0: the whole match) and literals of which one must occur in the text before the
regex runs at all (a cheap ``in`` test keeps clean lines cheap). Specific shapes come first; the
context rules (``password=``, ``Authorization:``, ``user:pass@``) come last and skip a value that
is already a placeholder, so redacting twice changes nothing. Kinds hold letters and dashes only,
so the fingerprint's number masking leaves a placeholder alone.

Written by hand after measuring detect-secrets' plugins on the same corpus (``bench.redaction``):
the shapes are those of detect-secrets and gitleaks (as data), kept to ones with a fixed prefix or
a required context, so a random id in a log line is not a secret.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

Check = Callable[[str], bool]


@dataclass(frozen=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int | str = 0  # the part of the match that is the secret
    needs: tuple[str, ...] = ()  # one of these must be in the text (lower-cased if ``fold``)
    fold: bool = False  # ``needs`` are tested against the lower-cased text
    check: Check | None = None  # a last test of the secret (e.g. its entropy)
    min_length: int = 0  # skip texts shorter than this


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def credential_like(value: str) -> bool:
    """Not a plain word (``Authorization: required``): 8+ characters with a digit or mixed case."""
    return len(value) >= 8 and (
        any(c.isdigit() for c in value) or not value.isalpha() or not value.islower()
    )


def random_looking(value: str) -> bool:
    """Long enough, mixed letters and digits, and high entropy: a token rather than a word."""
    return (
        len(value) >= 16
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and entropy(value) >= 3.0
    )


# not a placeholder already, nor a reference to one (``$DB_PASSWORD``, ``%(password)s``): a
# skill's command that names a secret must keep working
_NOT_PLACEHOLDER = r"(?!\[REDACTED|\$|%\()"
# ``=``, or ``:`` then a space or a quote (``secret:prod/db`` in an ARN is not an assignment)
_ASSIGN = r"(?:=|:(?=[\s\"']))\s*[\"']?"
# a value in an assignment or header: up to a quote, separator or markup
_VALUE = r"[^\s\"'`,;&<>()\[\]{}]+"
_SECRET_NAMES = r"password|passwd|passphrase|secret|client[_-]?secret"
_TOKEN_NAMES = (
    r"token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|account[_-]?key"
    r"|auth[_-]?token|session[_-]?key|signing[_-]?key"
)

_EMPTY_WORDS = frozenset(
    {
        "null",
        "none",
        "nil",
        "true",
        "false",
        "empty",
        "required",
        "invalid",
        "missing",
        "incorrect",
        "wrong",
        "expired",
        "changed",
        "reset",
        "****",
        "*****",
        "******",
        "********",
        "xxx",
        "redacted",
        "hidden",
        "unset",
        "authentication",
        "auth",
        "for",
        "the",
        "policy",
    }
)


def _assigned(value: str) -> bool:
    return len(value) >= 3 and value.lower() not in _EMPTY_WORDS and value.strip("*x") != ""


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


RULES: list[Rule] = [
    Rule(
        "private-key",
        _rx(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        needs=("PRIVATE KEY",),
    ),
    # the body of a PEM block logged line by line: the first line of every DER key starts MII
    Rule(
        "private-key",
        _rx(r"(?<![A-Za-z0-9+/])MII[A-Za-z0-9+/]{61}(?![A-Za-z0-9+/=])"),
        needs=("MII",),
        min_length=64,
    ),
    # any other line of such a body: 64 base64 characters alone on a line, mixed case and digits
    Rule(
        "private-key",
        _rx(r"(?m)^[ \t]*([A-Za-z0-9+/]{64})[ \t]*$"),
        group=1,
        min_length=64,
        check=lambda v: (
            not (v.isalnum() and (v.islower() or v.isupper()))
            and any(c.isdigit() for c in v)
            and entropy(v) >= 4.5
        ),
    ),
    Rule(
        "jwt",
        _rx(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        needs=("eyJ",),
    ),
    Rule(
        "aws-access-key",
        _rx(r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16}\b"),
        needs=("AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA"),
    ),
    Rule(
        "aws-secret-key",
        _rx(
            r"(?i)aws.{0,24}?(?:secret|private)[\w.-]{0,24}[\"']?\s*[=:]\s*[\"']?"
            r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
        needs=("aws",),
        fold=True,
    ),
    Rule("github-token", _rx(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b"), needs=("gh",)),
    Rule("github-token", _rx(r"\bgithub_pat_[A-Za-z0-9_]{60,255}\b"), needs=("github_pat_",)),
    Rule("gitlab-token", _rx(r"\bgl(?:pat|dt|ptt|rt|oas)-[A-Za-z0-9_-]{20,}"), needs=("gl",)),
    Rule("slack-token", _rx(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}"), needs=("xox",)),
    Rule(
        "slack-webhook",
        _rx(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+"),
        needs=("hooks.slack.com",),
    ),
    Rule("telegram-bot-token", _rx(r"(?<![0-9])\d{6,12}:AA[A-Za-z0-9_-]{30,40}"), needs=(":AA",)),
    Rule(
        "discord-token",
        _rx(
            r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\."
            r"[A-Za-z0-9_-]{27,40}"
        ),
        check=random_looking,
        min_length=40,
    ),
    Rule(
        "stripe-key",
        _rx(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
        needs=("_live_", "_test_"),
    ),
    Rule("stripe-key", _rx(r"\bwhsec_[A-Za-z0-9]{24,}"), needs=("whsec_",)),
    Rule("google-api-key", _rx(r"\bAIza[0-9A-Za-z_-]{35}"), needs=("AIza",)),
    Rule(
        "openai-key",
        _rx(
            r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ"
            r"[A-Za-z0-9_-]{20,}|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"
        ),
        needs=("sk-",),
    ),
    Rule("anthropic-key", _rx(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), needs=("sk-ant-",)),
    Rule("npm-token", _rx(r"\bnpm_[A-Za-z0-9]{36}\b"), needs=("npm_",)),
    Rule("pypi-token", _rx(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"), needs=("pypi-",)),
    Rule("sendgrid-key", _rx(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"), needs=("SG.",)),
    Rule("twilio-key", _rx(r"\bSK[0-9a-f]{32}\b"), needs=("SK",)),
    Rule(
        "azure-storage-key",
        _rx(r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)"),
        group=1,
        needs=("accountkey=",),
        fold=True,
    ),
    # context: credentials in a URL, an Authorization header, name=value assignments
    Rule(
        "url-password",
        _rx(
            r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@\[\]\"'<>]{0,128}:"
            + _NOT_PLACEHOLDER
            + r"([^\s/?#@\"'<>]{1,256})@(?=[^\s@]*(?:[/\s?#\"'<>]|$))"
        ),
        group=1,
        needs=("://",),
    ),
    Rule(
        "authorization",
        _rx(
            r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest"
            r"|bot|apikey|aws4-hmac-sha256)\s+)?+" + _NOT_PLACEHOLDER + r"(" + _VALUE + r")"
        ),
        group=1,
        needs=("authorization",),
        fold=True,
        check=credential_like,
    ),
    Rule(
        "cookie",
        _rx(r"(?i)\b(?:set-)?cookie[\"']?\s*:\s*[\w.-]+=" + _NOT_PLACEHOLDER + r"([^\s;,\"'<>]+)"),
        group=1,
        needs=("cookie",),
        fold=True,
        check=lambda v: (
            len(v) >= 16 and (entropy(v) >= 4 or (entropy(v) >= 3.5 and not v.isalpha()))
        ),
    ),
    Rule(
        "bearer-token",
        _rx(r"(?i)\bbearer\s+" + _NOT_PLACEHOLDER + r"([A-Za-z0-9._~+/-]{12,}=*)"),
        group=1,
        needs=("bearer",),
        fold=True,
    ),
    # ``password=value`` and ``"password": "value"``: any value but an empty word
    Rule(
        "password",
        _rx(
            r"(?i)(?<![/\\])(?:\b|_)(?:" + _SECRET_NAMES + r")s?"
            r"(?:[\"']?\s*=\s*[\"']?|[\"']?\s*:\s*[\"'])" + _NOT_PLACEHOLDER + r"(" + _VALUE + r")"
        ),
        group=1,
        needs=("pass", "secret"),
        fold=True,
        check=_assigned,
    ),
    # ``password: value`` (YAML, JSON, headers) is also how prose reads ("passwd: updated"), so
    # a plain word is not taken for a password there; a name in a path (/etc/passwd) is no name
    Rule(
        "password",
        _rx(
            r"(?i)(?<![/\\])(?:\b|_)(?:"
            + _SECRET_NAMES
            + r")s?\s*:\s+"
            + _NOT_PLACEHOLDER
            + r"("
            + _VALUE
            + r")"
        ),
        group=1,
        needs=("pass", "secret"),
        fold=True,
        check=lambda v: _assigned(v) and not (v.isalpha() and v.islower()),
    ),
    Rule(
        "token",
        _rx(
            r"(?i)(?<![/\\])(?:\b|_)(?:"
            + _TOKEN_NAMES
            + r")s?[\"']?\s*"
            + _ASSIGN
            + _NOT_PLACEHOLDER
            + r"("
            + _VALUE
            + r")"
        ),
        group=1,
        needs=("token", "key"),
        fold=True,
        check=random_looking,
    ),
]
