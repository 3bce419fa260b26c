"""Secrets around punctuation (issue 39): FAKE secrets in the shapes and places a held-out
review found leaking, as their own group of the held-out corpus.

Written from the review's four findings, not from the rules: a token followed by ``)``, ``,``,
``.``, ``]``, ``>`` (gitleaks' rules want a space, a quote or the end of the line after it);
credentials in headers with their own names and presigned storage URLs' signatures; framework
secrets as ``name=value``, a password holding ``&``, a plain lower-case YAML ``password:``, a
password echoed after a ``password for USER:`` prompt; a private key's body lines, each with a
log prefix, when Guard never saw the ``BEGIN`` line. Every value is generated from a seed (as in
``tests/helpers/secret_corpus_heldout.py``): none is, or was, a real credential.

Each entry is ``(subgroup, name, secret, lines)``, fed one line at a time from one source;
``verdict`` says whether it was caught, leaked (a piece of the secret survives whole) or caught
only in part (a fragment of four or more characters survives, e.g. what follows a ``&``).
"""

from __future__ import annotations

import re

from tests.helpers.secret_corpus_heldout import _AZ, _D, Entry, _armour, _Gen, _key_body, _p
from tests.helpers.secret_corpus_heldout import pieces as _pieces

GROUP = "shapes"
SUBGROUPS = ("punctuation", "headers", "framework", "key-lines")
_TIMES = "2026-12-04T10:{:02d}:{:02d}.123Z app[4242]: {}"

# how a token ends a phrase: the mark after it, in a sentence a log would print
_MARKS = (
    ("paren", "auth failed (token {s}) for org acme"),
    ("comma", "tokens: {s}, retrying in 5s"),
    ("period", "401 Unauthorized: invalid token {s}."),
    ("bracket", "loaded credentials [{s}] from env"),
    ("angle", "sending credential <{s}> upstream"),
    ("brace", "config {{token={s}}} rejected"),
    ("paren-comma", "client(url=https://api.example.com, key={s}), retry=3"),
    ("period-eol", "Using {s}."),
)


def _tokens(g: _Gen) -> list[tuple[str, str]]:
    return [
        ("digitalocean", _p("do", "p_v1_") + g.hex(64)),
        ("databricks", _p("da", "pi") + g.hex(32)),
        ("pulumi", _p("pu", "l-") + g.hex(40)),
        ("hugging face", _p("h", "f_") + g(_AZ + _AZ.lower(), 34)),
        ("postman", _p("PM", "AK-") + g.hex(24) + "-" + g.hex(34)),
        ("rubygems", _p("ruby", "gems_") + g.hex(48)),
        ("vault", _p("hv", "s.") + g.u(95)),
        ("grafana sa", _p("gl", "sa_") + g.an(32) + "_" + g.hex(8)),
        ("readme", _p("rd", "me_") + g(_AZ.lower() + _D, 70)),
        ("infracost", _p("ic", "o-") + g.an(32)),
        ("prefect", _p("pn", "u_") + g.an(36)),
        ("notion", _p("nt", "n_") + g.d(11) + g.an(35)),
        ("alibaba", _p("LT", "AI") + g.an(20)),
        ("brevo", _p("xkey", "sib-") + g.hex(64) + "-" + g.an(16)),
        ("square", _p("EA", "AA") + g.u(60)),
        ("shippo", _p("shippo", "_live_") + g.hex(40)),
    ]


def _punctuation(g: _Gen) -> list[tuple[str, str, str]]:
    out = []
    for i, (vendor, token) in enumerate(_tokens(g)):
        for mark, template in (_MARKS[i % len(_MARKS)], _MARKS[(i + 3) % len(_MARKS)]):
            out.append((f"{vendor} then {mark}", token, template.replace("{s}", token)))
    return out


def _headers(g: _Gen) -> list[tuple[str, str, str]]:
    sig_b64 = g.b64(27) + "%2B" + g.b64(8) + "%3D"
    return [
        (
            "x-api-key beside x-user-email",
            p := g.hex(32),
            f"headers={{'X-User-Email': 'alice@example.com', 'X-Api-Key': '{p}'}}",
        ),
        (
            "cloudflare x-auth-key beside x-auth-email",
            p := g.hex(37),
            f'curl -H "X-Auth-Email: ops@example.com" -H "X-Auth-Key: {p}" https://api.example.com/zones',
        ),
        ("x-auth-key header line", p := g.hex(37), f"> X-Auth-Key: {p}"),
        ("x-auth-token openstack", p := g.an(32), f"REQ: curl -g -i -H 'X-Auth-Token: {p}'"),
        ("x-auth-token uuid", p := g.uuid(), f"< X-Auth-Token: {p}"),
        (
            "api-key beside x-user-email",
            p := g.an(40),
            f"request headers: X-User-Email=bob@example.com Api-Key={p} Accept=*/*",
        ),
        (
            "api-key in header dump",
            p := g.an(32),
            f'{{"X-User-Email": "carol@example.com", "Api-Key": "{p}"}}',
        ),
        ("azure apim subscription key", p := g.hex(32), f"Ocp-Apim-Subscription-Key: {p}"),
        ("honeycomb team header", p := g.an(22), f"-> X-Honeycomb-Team: {p}"),
        ("datadog application key", p := g.hex(40), f"DD-APPLICATION-KEY: {p}"),
        ("rapidapi key", p := g.hex(50), f"X-RapidAPI-Key: {p} X-RapidAPI-Host: x.p.rapidapi.com"),
        ("gitlab private-token", p := _p("gl", "pat-") + g.u(20), f"PRIVATE-TOKEN: {p}"),
        ("postmark server token", p := g.uuid(), f"X-Postmark-Server-Token: {p}"),
        ("x-api-secret", p := g.an(40), f"X-Api-Secret: {p}, X-Api-Client: web"),
        (
            "s3 presigned signature",
            p := g.hex(64),
            "GET https://acme.s3.amazonaws.com/a.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Date=20261204T100000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
            f"&X-Amz-Signature={p} 403",
        ),
        (
            "s3 presigned signature in quotes",
            p := g.hex(64),
            f'url="https://b.s3.eu-west-1.amazonaws.com/k?X-Amz-Expires=60&X-Amz-Signature={p}"',
        ),
        (
            "gcs signed url signature",
            p := g.hex(512),
            "GET https://storage.googleapis.com/acme/o.bin?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            f"&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature={p} 200",
        ),
        (
            "azure sas sig at the end",
            sig_b64,
            f"download (https://acme.blob.core.windows.net/c/b.txt?sp=r&sr=b&sig={sig_b64}) failed",
        ),
        (
            "s3 v2 signature",
            p := g.b64(27) + "%3D",
            f"GET /b/k?AWSAccessKeyId=AKIDEXAMPLE&Expires=1767225600&Signature={p} 403",
        ),
        (
            "cloudfront signature",
            p := g(_AZ + _AZ.lower() + _D + "~-", 172),
            f"https://d1.cloudfront.net/v.mp4?Expires=1767225600&Signature={p}&Key-Pair-Id=K2JCJMDEHXQW5F",
        ),
        (
            "s3 security token in url",
            p := "IQoJb3JpZ2luX2Vj" + g.an(120) + "%2F" + g.an(60) + "%3D",
            f"GET /k?X-Amz-Security-Token={p}&X-Amz-Signature=abc 403",
        ),
    ]


def _framework(g: _Gen) -> list[tuple[str, str, str]]:
    django = "abcdefghijklmnopqrstuvwxyz0123456789!@#%^&*(-_=+)"
    return [
        ("rails secret_key_base=", p := g.hex(128), f"secret_key_base={p}"),
        ("rails SECRET_KEY_BASE env", p := g.hex(128), f"+ SECRET_KEY_BASE={p} bin/rails s"),
        (
            "rails config.secret_key_base",
            p := g.hex(128),
            f'config.secret_key_base = "{p}"',
        ),
        ("rails credentials yaml", p := g.hex(128), f"  secret_key_base: {p}"),
        ("phoenix secret_key_base", p := g.b64(64), f'  secret_key_base: "{p}",'),
        ("devise secret_key", p := g.hex(128), f"config.secret_key = '{p}'"),
        ("django SECRET_KEY bare", p := g(django, 50), f"SECRET_KEY={p}"),
        ("django env file", p := "django-insecure-" + g(django, 50), f"DJANGO_SECRET_KEY={p}"),
        ("laravel APP_KEY", p := "base64:" + g.b64(43) + "=", f"APP_KEY={p}"),
        ("nextauth secret", p := g.b64(43) + "=", f"NEXTAUTH_SECRET={p}"),
        ("password=ab&cd", p := g.an(5) + "&" + g.an(6), f"login failed: user=admin password={p}"),
        (
            "jdbc password with &",
            p := g.an(6) + "&" + g.an(5),
            f"jdbc:mysql://db:3306/app?user=app&password={p}&useSSL=true",
        ),
        ("env PASSWORD with &", p := g.an(4) + "&" + g.an(4) + "&" + g.an(4), f"DB_PASSWORD={p}"),
        ("yaml password with &", p := g.an(5) + "&" + g.an(6), f"  password: {p}"),
        ("yaml lower-case password", p := g(_AZ.lower(), 11), f"  password: {p}"),
        ("yaml list password", p := g(_AZ.lower(), 9), f"- password: {p}"),
        ("yaml db_password lower-case", p := g(_AZ.lower(), 10), f"db_password: {p}"),
        ("sudo prompt echo", p := g(_AZ.lower(), 7) + g.d(1), f"[sudo] password for alice: {p}"),
        (
            "git credential prompt echo",
            p := g.an(12),
            f"Password for 'https://bob@github.com': {p}",
        ),
        ("psql prompt echo", p := g(_AZ.lower(), 10), f"Password for user postgres: {p}"),
        ("ssh prompt echo", p := g.an(10), f"deploy@10.0.0.5's password: {p}"),
        ("su prompt echo", p := g(_AZ.lower(), 8), f"Password for root: {p}"),
    ]


def _key_lines(g: _Gen) -> list[Entry]:
    """A key's body lines with a log prefix, its ``BEGIN`` line never seen by this source."""
    rsa = _key_body(g, "MIIEow", 25, 64)
    pkcs8 = _key_body(g, "MIIEvQ", 26, 64)
    ossh = _key_body(g, "b3BlbnNzaC1rZXktdjEAAAAA", 6, 70)
    wide = _key_body(g, "MIIEvg", 20, 76)
    end = _armour("RSA PRIVATE KEY", [])[-1]
    syslog = "Dec  4 10:00:{:02d} web-3 app[812]: {}"
    k8s = "2026-12-04T10:00:{:02d}.123456789Z stdout F {}"
    docker = "api-1  | {}"

    def stamp(lines: list[str], fmt: str = _TIMES) -> list[str]:
        return [fmt.format(i // 60, i % 60, x) for i, x in enumerate(lines)]

    def fmt1(fmt: str, lines: list[str]) -> list[str]:
        return [fmt.format(i % 60, x) for i, x in enumerate(lines)]

    out: list[Entry] = [
        ("key-lines", "rsa body with timestamps, then END", "\n".join(rsa), stamp([*rsa, end])),
        ("key-lines", "rsa body with timestamps, no END", "\n".join(rsa), stamp(rsa)),
        (
            "key-lines",
            "pkcs8 body from docker",
            "\n".join(pkcs8),
            [docker.format(x) for x in pkcs8],
        ),
        ("key-lines", "pkcs8 body in syslog", "\n".join(pkcs8), fmt1(syslog, [*pkcs8, end])),
        ("key-lines", "rsa body from kubernetes", "\n".join(rsa), fmt1(k8s, [*rsa, end])),
        ("key-lines", "openssh body, 70 columns", "\n".join(ossh), stamp([*ossh, end])),
        ("key-lines", "76-column body", "\n".join(wide), stamp([*wide, end])),
        ("key-lines", "body from its middle", "\n".join(rsa[9:]), stamp([*rsa[9:], end])),
        ("key-lines", "last lines only", "\n".join(pkcs8[-3:]), stamp([*pkcs8[-3:], end])),
    ]
    return out


def shapes(seed: str = "s") -> list[Entry]:
    """The group: ``(subgroup, name, secret, lines)`` for each shape; ``seed`` varies values."""
    g = _Gen(seed)
    entries: list[Entry] = []
    for sub, rows in (
        ("punctuation", _punctuation(g)),
        ("headers", _headers(g)),
        ("framework", _framework(g)),
    ):
        entries += [(sub, name, secret, [line]) for name, secret, line in rows]
    return entries + _key_lines(g)


_SPLIT = re.compile(r"[^A-Za-z0-9+/=_~-]+|%[0-9A-F]{2}")


def verdict(secret: str, lines: list[str], out: str) -> str:
    """``caught``, ``partial`` (no piece of the secret survives whole, but a fragment of 4+
    characters between its punctuation does, more often than the lines hold it elsewhere) or
    ``leaked``."""
    whole = _pieces(secret) or [secret]
    if any(p in out for p in whole):
        return "leaked"
    rest = "\n".join(lines)
    for p in sorted({secret, *whole}, key=len, reverse=True):
        rest = rest.replace(p, "\0")
    fragments = {f for p in whole for f in _SPLIT.split(p) if len(f) >= 4}
    return "partial" if any(out.count(f) > rest.count(f) for f in fragments) else "caught"
