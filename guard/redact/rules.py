"""Guard's own secret detectors: the shapes gitleaks' rules miss, and private key material.

Each ``Rule`` (``guard.redact.engine``) is an RE2 regex with every repeat bounded, the
placeholder kind it leaves (``[REDACTED:<kind>]``), the group that holds the secret and keywords
of which one must occur in the text before the regex runs at all. These run before gitleaks'
rules (``guard.redact.gitleaks``), so the kinds Guard has always promised keep their names; the
context rules (``guard.redact.context``: ``password=``, headers, URLs, flags) run last and skip a
value that is already a placeholder, so redacting twice changes nothing. Kinds hold letters and
dashes only, so the fingerprint's number masking leaves a placeholder alone.

Tested by ``tests/security/test_redact.py``.
"""

from __future__ import annotations

import base64
import binascii

from guard.redact.engine import Rule, entropy

_B64 = "A-Za-z0-9+/"


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


def key_line(value: str) -> bool:
    """A line of a key's base64 body rather than of a hash or a word: mixed case, digits,
    high entropy."""
    return (
        not (value.isalnum() and (value.islower() or value.isupper()))
        and any(c.isdigit() for c in value)
        and entropy(value) >= 4.5
    )


def basic_credentials(value: str) -> bool:
    """Base64 of ``user:password`` (what HTTP Basic auth carries)."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _not_hex_word(value: str) -> bool:
    return entropy(value) >= 3.0


SHAPES: list[Rule] = [
    # the body of a PEM key logged line by line: the first line of a DER RSA/DSA/PKCS#8 key
    # starts MII; EC (SEC1) MHcCAQEE / MIGHAgEA / MIGkAgEB, Ed25519 PKCS#8 MC4CAQAw
    Rule(
        "private-key",
        rf"(?:^|[^{_B64}])((?:MII|MHcCAQEE|MIGHAgEA|MIGkAgEB|MC4CAQAw)[{_B64}]{{40,76}}={{0,2}})"
        rf"(?:[^{_B64}=]|$)",
        group=1,
        needs=("MII", "MHcCAQEE", "MIGHAgEA", "MIGkAgEB", "MC4CAQAw"),
        min_length=48,
    ),
    # an OpenSSH key body ("openssh-key-v1\0" in base64), and a PEM file base64-encoded whole
    # (kubeconfig client-key-data, a Kubernetes Secret's tls.key)
    Rule(
        "private-key", rf"b3BlbnNzaC1rZXktdjE[{_B64}]{{0,80}}={{0,2}}", needs=("b3BlbnNzaC1rZXkt",)
    ),
    Rule(
        "private-key",
        rf"LS0tLS1CRUdJTi[{_B64}=]{{20,}}",
        needs=("LS0tLS1CRUdJTi",),
    ),
    # any other line of such a body: 64, 70 or 76 base64 characters ending a line, alone or
    # after a log prefix (a timestamp, ``api-1  | ``)
    Rule(
        "private-key",
        rf"(?m)(?:^|[ \t])([{_B64}]{{76}}|[{_B64}]{{70}}|[{_B64}]{{64}})={{0,2}}[ \t]{{0,16}}$",
        group=1,
        min_length=64,
        check=key_line,
    ),
    Rule(
        "private-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", needs=("AGE-",)
    ),
    Rule(
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,1000}\.eyJ[A-Za-z0-9_-]{8,1000}\.[A-Za-z0-9_-]{8,}",
        needs=("eyJ",),
    ),
    Rule(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AROA|AIDA)[0-9A-Z]{16}\b",
        needs=("AKIA", "ASIA", "ABIA", "ACCA", "AROA", "AIDA"),
    ),
    Rule(
        "aws-secret-key",
        r"(?i)aws.{0,24}?(?:secret|private)[\w.-]{0,24}[\"']?\s{0,3}[=:]\s{0,3}[\"']?"
        r"([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)",
        group=1,
        needs=("aws",),
    ),
    Rule("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b", needs=("gh",)),
    Rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{60,255}\b", needs=("github_pat_",)),
    Rule(
        "gitlab-token",
        r"\bgl(?:pat|dt|ptt|rt|oas|cbt|ft|imt|agent|soat|ffct|wt|deploy)-[A-Za-z0-9_.-]{20,255}",
        needs=("gl",),
    ),
    Rule("guard-token", r"\bgat_[A-Za-z0-9_-]{40,100}", needs=("gat_",)),
    Rule("slack-token", r"\bxox[abeoprsc]-[A-Za-z0-9-]{10,255}", needs=("xox",)),
    Rule("slack-token", r"\bxapp-\d-[A-Z0-9]{1,20}-\d{1,20}-[a-z0-9]{20,128}", needs=("xapp-",)),
    Rule(
        "slack-webhook",
        r"(?i)hooks\.slack\.com(?:/|%2F)(?:services|workflows|triggers)(?:/|%2F)[A-Za-z0-9/%_-]{8,255}",
        needs=("hooks.slack.com",),
    ),
    Rule(
        "discord-webhook",
        r"(?i)discord(?:app)?\.com(?:/|%2F)api(?:/|%2F)webhooks(?:/|%2F)\d{5,30}(?:/|%2F)[A-Za-z0-9_-]{20,100}",
        needs=("discord",),
    ),
    Rule(
        "telegram-bot-token",
        r"(?:^|[^0-9])(\d{6,12}:AA[A-Za-z0-9_-]{30,40})",
        group=1,
        needs=(":AA",),
    ),
    Rule(
        "discord-token",
        r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}",
        check=random_looking,
        min_length=40,
    ),
    Rule(
        "stripe-key",
        r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,255}",
        needs=("_live_", "_test_"),
    ),
    Rule("stripe-key", r"\bwhsec_[A-Za-z0-9]{24,255}", needs=("whsec_",)),
    Rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}", needs=("AIza",)),
    Rule(
        "openai-key",
        r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,255}T3BlbkFJ[A-Za-z0-9_-]{20,255}"
        r"|\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,255}",
        needs=("sk-",),
    ),
    Rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,255}", needs=("sk-ant-",)),
    Rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", needs=("npm_",)),
    Rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", needs=("pypi-",)),
    Rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", needs=("SG.",)),
    Rule("twilio-key", r"\bSK[0-9a-f]{32}\b", needs=("SK",)),
    Rule("mailgun-key", r"\bkey-[0-9a-f]{32}\b", needs=("key-",)),
    Rule("mailchimp-key", r"\b[0-9a-f]{32}-us\d{1,2}\b", needs=("-us",)),
    Rule("heroku-key", r"\bHRKU-[A-Za-z0-9_-]{20,80}", needs=("HRKU-",)),
    Rule("datadog-key", r"\bdd[ap]_[A-Za-z0-9]{20,80}", needs=("dda_", "ddp_")),
    Rule(
        "cloudflare-token", r"\bcf(?:ut|at|k)_[A-Za-z0-9]{30,80}", needs=("cfut_", "cfat_", "cfk_")
    ),
    # documented prefixes gitleaks' rules (v8.30.0) miss, or find only next to a vendor's name
    Rule("sentry-token", r"\bsntry[su]_[A-Za-z0-9_+/=-]{40,400}", needs=("sntry",)),
    Rule("new-relic-key", r"\bNR(?:AK|II|JS|RA|AA)-[A-Za-z0-9_-]{19,40}", needs=("NR",)),
    Rule("atlassian-token", r"\bATATT3[A-Za-z0-9_=-]{150,250}", needs=("ATATT3",)),
    Rule("google-oauth", r"\bGOCSPX-[A-Za-z0-9_-]{28}", needs=("GOCSPX-",)),
    Rule("google-oauth", r"\bya29\.[A-Za-z0-9_-]{30,}", needs=("ya29.",)),
    Rule("square-token", r"\bsq0(?:atp|csp|idp)-[A-Za-z0-9_-]{22,60}", needs=("sq0",)),
    Rule("docker-hub-token", r"\bdckr_(?:pat|oat)_[A-Za-z0-9_-]{27,40}", needs=("dckr_",)),
    Rule("typeform-token", r"\btfp_[A-Za-z0-9_.=-]{40,70}", needs=("tfp_",)),
    Rule("onepassword-token", r"\bops_eyJ[A-Za-z0-9+/=_-]{100,}", needs=("ops_eyJ",)),
    Rule("pinecone-key", r"\bpcsk_[A-Za-z0-9_]{40,100}", needs=("pcsk_",)),
    Rule("buildkite-token", r"\bbkua_[a-f0-9]{40}\b", needs=("bkua_",)),
    Rule(
        "azure-storage-key",
        r"(?i)AccountKey=([A-Za-z0-9+/]{86}==)",
        group=1,
        needs=("accountkey=",),
    ),
    Rule(
        "azure-sas",
        r"(?i)[?&;]sig=([A-Za-z0-9%+/=]{30,200})",
        group=1,
        needs=("sig=",),
        check=_not_hex_word,
    ),
    Rule(
        "azure-key",
        r"(?i)SharedAccessKey=([A-Za-z0-9+/=]{20,100})",
        group=1,
        needs=("sharedaccesskey=",),
    ),
]
