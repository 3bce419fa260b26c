"""gitleaks' default rules, loaded as data: the vendor token shapes the field keeps up to date.

``guard/data/gitleaks.toml`` is gitleaks' ``config/gitleaks.toml`` at the tag named in
``VERSION`` (MIT licence, ``guard/data/LICENSE-gitleaks.txt``), unmodified; updating it is
replacing the file (see docs/REDACTION.md). Its regexes are Go's RE2 syntax, which is what
``guard.redact.engine`` runs. Each rule becomes a ``Rule`` of kind ``<its id>`` (digits spelled
out, so a fingerprint's number masking leaves the placeholder alone) with:

- its keywords as the keyword prefilter, its ``entropy`` as a minimum for the secret;
- the secret its ``secretGroup`` (else its first non-empty group, else the whole match);
- its allow-lists (``regexes`` on the secret or the match, ``stopwords``) and the global ones;
- every open-ended repeat capped (``bound_repeats``), so a match spans a bounded text;
- its trailing boundary (a space, a quote, ``;`` or the line's end) widened to the punctuation
  a log puts after a token, ``)``, ``,``, ``.``, ``]``, ``>``, ``}``, ``&``, ``|`` (issue 39).

``SKIPPED`` rules are left out: Guard's own rules cover them with placeholders it already
promises (``private-key``, ``jwt``), or they read a name and any value (``generic-api-key``) and
changed lines of real logs that hold no secret (``bench.redaction --real``).
"""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any

import re2

from guard.redact.engine import FIRST_GROUP, Rule, bound_repeats, compile_rule, entropy

VERSION = "v8.30.0"  # the gitleaks tag guard/data/gitleaks.toml was taken from
PATH = Path(__file__).parent.parent / "data" / "gitleaks.toml"
REPEAT_CAP = 512  # the longest run of one repeat in a bounded rule
SKIPPED = frozenset({"generic-api-key", "private-key", "jwt", "jwt-base64", "pkcs12-file"})
# the rules whose repeats nest, with the cap RE2 accepts (``largest_cap``): recorded, not probed
# at start-up, where compiling every bounded rule cost each ``guard`` process ~0.1 s
NESTED_CAPS = {"curl-auth-header": 128, "curl-auth-user": 128}
# gitleaks' "end of the secret" group, and the same with the punctuation a log line puts there
_BOUNDARY = r"""(?:[\x60'"\s;]|\\[nr]|$)"""
_LOG_BOUNDARY = r"""(?:[\x60'"\s;,.)\]>}&|]|\\[nr]|$)"""
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_DIGITS = dict(zip("0123456789", _NUMBERS, strict=True))


def kind_of(rule_id: str) -> str:
    """A placeholder kind (lower-case letters and dashes) for a gitleaks rule id."""
    spelled = "".join(_DIGITS[c] + "-" if c.isdigit() else c for c in rule_id.lower())
    words = "".join(c if c.isalpha() else "-" for c in spelled).split("-")
    return "-".join(w for w in words if w)


def _any(patterns: list[str]) -> Any:
    return re2.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


@functools.lru_cache(maxsize=1)
def rules() -> list[Rule]:
    """The gitleaks rules Guard runs, in the file's order."""
    with PATH.open("rb") as f:
        config = tomllib.load(f)
    glob = config.get("allowlist", {})
    global_allow = _any(glob.get("regexes", []))
    global_stop = tuple(w.lower() for w in glob.get("stopwords", []))
    out = []
    for spec in config["rules"]:
        if spec["id"] in SKIPPED or "regex" not in spec:
            continue
        allow, stop = [], list(global_stop)
        for a in spec.get("allowlists", []):
            if a.get("paths") or a.get("regexTarget") == "line":
                continue  # about files, or the whole line: nothing a log line can use
            allow += a.get("regexes", [])
            stop += [w.lower() for w in a.get("stopwords", [])]
        out.append(
            Rule(
                kind=kind_of(spec["id"]),
                pattern=_bounded(spec["id"], spec["regex"].replace(_BOUNDARY, _LOG_BOUNDARY)),
                group=spec.get("secretGroup", FIRST_GROUP),
                needs=tuple(spec.get("keywords", ())),
                check=_Check(spec.get("entropy", 0.0), _any(allow), global_allow, tuple(stop)),
                source=f"gitleaks:{spec['id']}",
            )
        )
    return out


def _bounded(rule_id: str, pattern: str) -> str:
    """``pattern`` with its repeats capped: at ``REPEAT_CAP``, or at ``NESTED_CAPS[rule_id]``
    where repeats nest (RE2 refuses a nesting whose counts multiply past 1000)."""
    return bound_repeats(pattern, NESTED_CAPS.get(rule_id, REPEAT_CAP))


def largest_cap(pattern: str) -> int:
    """The largest cap (``REPEAT_CAP`` divided by a power of 4) at which RE2 reads ``pattern``
    bounded: what ``NESTED_CAPS`` records for a rule below ``REPEAT_CAP``."""
    cap = REPEAT_CAP
    while True:
        try:
            compile_rule(Rule("probe", bound_repeats(pattern, cap)))
            return cap
        except re2.error:
            if cap <= 8:
                raise
            cap //= 4


class _Check:
    """A gitleaks rule's last word on a secret: entropy, allow-lists and stopwords."""

    def __init__(self, entropy: float, allow: Any, global_allow: Any, stop: tuple[str, ...]):
        self.entropy, self.allow, self.global_allow, self.stop = entropy, allow, global_allow, stop

    def __call__(self, secret: str) -> bool:
        if self.entropy and entropy(secret) < self.entropy:
            return False
        for rx in (self.allow, self.global_allow):
            if rx is not None and rx.search(secret):
                return False
        lower = secret.lower()
        return not any(w in lower for w in self.stop)
