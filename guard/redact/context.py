"""Secrets found by their context: the value after a secret-ish name, a header, a flag, a URL.

These run after every shape rule. A value that is already a placeholder, or a reference to a
secret (``$DB_PASSWORD``, ``${TOKEN}``, ``%(pw)s``, ``{{ .Values.pw }}``, the name of a variable
in Guard's environment), is left alone, so redacting twice changes nothing and a skill's command
that names a secret keeps working. A name with more after it is no secret name (``secret_name=``,
``password_expires_in=``, ``max_tokens=``), nor is a name in a path (``/etc/passwd:``) or a plain
word after a colon (``passwd: updated``).

Forms: ``k=v``, ``k := v``, ``k => v``, ``k: "v"``, ``"k": "v"``, ``k: v``; ``--k=v`` and
``--k v``; ``-p'v'``; ``mysql -pv``, ``sshpass -p v``, ``redis-cli -a v``, Redis ``AUTH v`` and
``requirepass v``; ``curl -u user:pass``; env assignments (``PGPASSWORD=``, ``MYSQL_PWD=``,
``*_PASS``, ``*_PASSWORD``, ``*_KEY``, ``*_TOKEN``); a quoted value holds any character but its
quote. URL userinfo may hold ``@``, ``/`` and ``#``; ``Basic`` credentials are recognised by
decoding them; every random-looking cookie value of a ``Cookie`` header is replaced.

Issue 39 added: a bare value holding ``&`` unless a parameter's name follows it; a whole
``NAME=value`` line to its end (Django's ``SECRET_KEY=k#(9&…``); a YAML ``password: value`` line,
a plain lower-case word too; ``secret_key_base``; a prompt's echo (``[sudo] password for alice:
v``); headers named for their vendor (``X-Auth-Key``, ``Ocp-Apim-Subscription-Key``,
``X-Honeycomb-Team``) and presigned URLs' signatures (``X-Amz-Signature``, ``X-Goog-Signature``,
``Signature``).
"""

from __future__ import annotations

import os
import re

from guard.redact.engine import FIRST_GROUP, Check, Rule, entropy
from guard.redact.rules import basic_credentials, credential_like, random_looking

_EMPTY_WORDS = frozenset(
    {
        *("null", "none", "nil", "true", "false", "empty", "required", "invalid", "missing"),
        *("incorrect", "wrong", "expired", "changed", "reset", "xxx", "redacted", "hidden"),
        *("unset", "authentication", "auth", "for", "the", "policy", "updated", "set", "ok"),
        *("failed", "yes", "no"),
    }
)
_SCHEMES = frozenset(
    {"bearer", "basic", "token", "digest", "bot", "apikey", "aws4-hmac-sha256", "negotiate"}
)


_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _reference(value: str) -> bool:
    return value.startswith(("[REDACTED", "$", "%(", "{{", "<", "***")) or _variable(value)


def _variable(value: str) -> bool:
    """The name of a variable in Guard's environment (``secret=PG_GUARD_URL``, an action's
    argument naming what it reads): the human approving must see which one."""
    return _VARIABLE_NAME.fullmatch(value) is not None and value in os.environ


def _assigned(value: str) -> bool:
    """Any value but an empty word, a mask or a reference."""
    return (
        len(value) >= 3
        and value.lower() not in _EMPTY_WORDS
        and value.strip("*x.") != ""
        and not _reference(value)
    )


def _not_a_word(value: str) -> bool:
    return _assigned(value) and not (value.isalpha() and value.islower())


def _credential(value: str) -> bool:
    return credential_like(value) and not _reference(value) and value.lower() not in _SCHEMES


def _token(value: str) -> bool:
    return random_looking(value) and not _reference(value)


def _bare_token(value: str) -> bool:
    """A token after ``name: `` in prose: random-looking, and not an object's name
    (``android.os.BinderProxy@2bd79ce``)."""
    return _token(value) and "@" not in value and value.count(".") < 2


def _cookie_value(value: str) -> bool:
    return len(value) >= 16 and (
        entropy(value) >= 4 or (entropy(value) >= 3.5 and not value.isalpha())
    )


def _cookies(header: str) -> str | None:
    """The ``Cookie`` header with each session-looking value replaced (None: none is)."""
    parts = header.split(";")
    for i, part in enumerate(parts):
        name, eq, value = part.partition("=")
        value = value.strip().strip('"')
        if eq and _cookie_value(value) and not _reference(value):
            parts[i] = f"{name}=[REDACTED:cookie]"
    new = ";".join(parts)
    return new if new != header else None


_QUOTED = r"\"([^\"\r\n]{1,256})\"|'([^'\r\n]{1,256})'"
_BARE = r"([^\s\"'`,;&<>()\[\]{}]{1,256})"
# a bare value holding ``&`` (``password=ab&cd``), but not a query's next parameter
# (``password=ab&useSSL=true``): a segment after ``&`` must end at a delimiter, ``&`` or the end
# (tried before ``_BARE``, which takes a value without ``&``)
_BARE_AMP = (
    r"([^\s\"'`,;&<>()\[\]{}]{1,256}(?:&[^\s\"'`,;&<>()\[\]{}=]{1,64}){1,6})"
    r"(?:[\s\"'`,;&<>()\[\]{}]|$)"
)
_EDGE = r"(?:^|[^A-Za-z0-9_./\\-])"
_PREFIX = r"(?:[A-Za-z0-9]{1,40}[_.-]){0,4}"
_PASSWORDS = (
    r"password|passwd|passphrase|pwd|pass|secret|client[_-]?secret|secret[_-]?key"
    r"|secret[_-]?key[_-]?base|pgpassword"
    r"|mysql_pwd|sharedaccesskey|[a-z0-9]{1,30}password"
)
_TOKENS = (
    r"token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|account[_-]?key|auth[_-]?token"
    r"|private[_-]?key[_-]?id|access[_-]?token|refresh[_-]?token|session[_-]?key|signing[_-]?key|client[_-]?key"
    r"|[a-z0-9]{1,30}_key|[a-z0-9]{1,30}_token"
)
_CREDENTIALS = r"auth|credentials?|creds"
_EQ = r"[\"']?[ \t]{0,3}(?:=|:=|=>)[ \t]{0,3}"
_COLON = r"[\"']?[ \t]{0,3}:[ \t]{0,3}"
_COLON_SPACE = r"[\"']?[ \t]{0,3}:[ \t]{1,3}"
_PASSWORD_WORDS = ("pass", "secret", "pwd", "sharedaccesskey")
_TOKEN_WORDS = ("token", "key")


def _named(kind: str, names: str, needs: tuple[str, ...], check: Check, bare: Check) -> list[Rule]:
    """``name = value`` (quoted, bare, or bare holding ``&``; a whole ``NAME=value`` line to its
    end), ``name: "value"``, a YAML line ``name: value`` (any value), and ``name: value`` in
    prose (bare, checked with ``bare``)."""
    head = rf"(?i){_EDGE}{_PREFIX}(?:{names})s?"
    line = rf"(?im)^[ \t]{{0,40}}(?:(?:export|ENV|-|\+)[ \t]{{1,3}})?{_PREFIX}(?:{names})s?"
    return [
        # a whole line: ``NAME=value`` (an env file, ``export``, a Dockerfile's ``ENV``) runs to
        # the line's end, punctuation and all (Django's ``SECRET_KEY=k#(9&…``); a YAML
        # ``password: value`` takes any value, a plain lower-case word too
        Rule(
            kind,
            rf"{line}(?:[ \t]{{0,3}}=[ \t]{{0,3}}([^\s\"'][^\s]{{0,255}})"
            rf"|:[ \t]{{1,3}}([^\s\"'#&*!|>{{\[][^\s]{{0,255}}))[ \t]{{0,64}}$",
            FIRST_GROUP,
            needs,
            check,
        ),
        Rule(kind, rf"{head}{_EQ}(?:{_QUOTED}|{_BARE_AMP}|{_BARE})", FIRST_GROUP, needs, check),
        Rule(kind, rf"{head}{_COLON}(?:{_QUOTED})", FIRST_GROUP, needs, check),
        Rule(kind, rf"{head}{_COLON_SPACE}(?:{_BARE_AMP}|{_BARE})", FIRST_GROUP, needs, bare),
    ]


_FLAG_VALUE = rf"(?:{_QUOTED}|([^\s\"'\-][^\s\"']{{0,255}}))"

CONTEXT: list[Rule] = [
    Rule(
        "url-password",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/?#@\[\]\"'<>]{0,128}:([^\s\"'<>]{1,256})"
        r"@[A-Za-z0-9.\[\]:_-]{1,253}(?:[/?#\s\"'<>,;)]|$)",
        group=1,
        needs=("://",),
        check=lambda v: not _reference(v),
    ),
    Rule(
        "authorization",
        r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?"
        r"(?:(?:bearer|basic|token|digest|bot|apikey|aws4-hmac-sha256)[ \t]{1,3})?"
        r"([^\s\"'`,;&<>()\[\]{}]+)",
        group=1,
        needs=("authorization",),
        check=_credential,
    ),
    Rule(
        "cookie",
        r"(?i)\b(?:set-)?cookie[\"']?[ \t]{0,3}:[ \t]{0,3}([^\r\n]+)",
        group=1,
        needs=("cookie",),
        rewrite=_cookies,
    ),
    Rule(
        "bearer-token",
        r"(?i)\bbearer[ \t]{1,3}([A-Za-z0-9._~+/=-]{12,})",
        group=1,
        needs=("bearer",),
    ),
    Rule(
        "authorization",
        r"(?i)\bbasic[ \t]{1,3}([A-Za-z0-9+/]{8,1000}={0,2})",
        group=1,
        needs=("basic",),
        check=basic_credentials,
    ),
    Rule(
        "password",
        r"(?i)\bcurl\b[^\r\n]{0,512}?[ \t](?:-u|--user)(?:=|[ \t]{1,3})[\"']?[^\s\"':\[\]]{1,128}:"
        r"([^\s\"']{1,256})",
        group=1,
        needs=("curl",),
        check=_assigned,
    ),
    Rule(
        "password",
        rf"(?i)(?:^|[ \t\"'])--?(?:[a-z0-9]{{1,20}}-){{0,3}}(?:password|passwd|pass|pwd|secret"
        rf"|token|api-?key|access-token|auth-token|client-secret)(?:=|[ \t]{{1,3}}){_FLAG_VALUE}",
        group=FIRST_GROUP,
        needs=("--", "-pass", "-pwd", "-token", "-secret", "-key"),
        check=_assigned,
    ),
    Rule("password", rf"(?:^|[ \t])-p(?:{_QUOTED})", FIRST_GROUP, ("-p'", '-p"'), _assigned),
    Rule(
        "password",
        r"(?i)\bmysql(?:dump|admin|sh|import|check)?\b[^\r\n]{0,256}?[ \t]"
        r"-p([^\s'\"\-][^\s'\"]{2,255})",
        group=1,
        needs=("mysql",),
        check=_assigned,
    ),
    Rule(
        "password",
        rf"(?i)\b(?:sshpass\b[^\r\n]{{0,64}}?[ \t]-p|redis-cli\b[^\r\n]{{0,256}}?[ \t]-a)"
        rf"[ \t]{{0,3}}{_FLAG_VALUE}",
        group=FIRST_GROUP,
        needs=("sshpass", "redis-cli"),
        check=_assigned,
    ),
    Rule(
        "password",
        rf"(?i)\b(?:requirepass|masterauth)[ \t]{{1,3}}{_FLAG_VALUE}",
        group=FIRST_GROUP,
        needs=("requirepass", "masterauth"),
        check=_assigned,
    ),
    Rule(  # Redis MONITOR and slowlog print a command's arguments quoted
        "password",
        r"(?i)\"auth\"(?:[ \t]{1,3}\"[^\"\r\n]{1,64}\")?[ \t]{1,3}\"([^\"\r\n]{1,256})\"",
        group=1,
        needs=('"auth"',),
        check=_assigned,
    ),
    Rule(
        "password",
        r"(?:^|[ \t\"'])AUTH[ \t]{1,3}(?:[A-Za-z0-9_.-]{1,64}[ \t]{1,3})?([^\s\"']{8,256})",
        group=1,
        needs=("AUTH ",),
        check=lambda v: _credential(v) and not v.isupper(),
    ),
    Rule(  # a prompt's echo: ``[sudo] password for alice: v``, git's ``Password for 'url': v``
        "password",
        r"(?i)\b(?:password|passphrase)[ \t]{1,3}for[ \t]{1,3}(?:(?:user|key)[ \t]{1,3})?"
        r"(?:'[^'\r\n]{1,200}'|[^\s:'\"]{1,128}):[ \t]{1,3}([^\s]{1,256})",
        group=1,
        needs=("password for", "passphrase for"),
        check=_assigned,
    ),
    Rule(  # a header named for its vendor: X-Auth-Key, Ocp-Apim-Subscription-Key, DD-API-KEY
        "token",
        r"(?i)(?:^|[\s\"'{(,;<])(?:[a-z0-9]{1,20}-){1,4}(?:key|token|secret|signature|auth"
        r"|credentials?|team)[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?([A-Za-z0-9+/=_.~-]{16,})",
        group=1,
        needs=("-key", "-token", "-secret", "-signature", "-auth", "-credential", "-team"),
        check=_token,
    ),
    Rule(  # a presigned URL's signature: S3 (v4 and v2), GCS, CloudFront; its session token
        "url-signature",
        r"(?i)[?&;](?:x-amz-signature|x-goog-signature|signature|x-amz-security-token)"
        r"=([A-Za-z0-9%+/=_~.-]{16,})",
        group=1,
        needs=("signature=", "security-token="),
        check=lambda v: entropy(v) >= 3.0 and not _reference(v),
    ),
    *_named("password", _PASSWORDS, _PASSWORD_WORDS, _assigned, _not_a_word),
    *_named("token", _TOKENS, _TOKEN_WORDS, _token, _bare_token),
    *_named("credentials", _CREDENTIALS, ("auth", "cred"), _credential, _credential),
]
