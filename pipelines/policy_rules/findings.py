"""The record a detector returns, with the matched text redacted.

A finding must be safe to log, to store in the audit trail and to echo in a verdict's
reasons, so a secret's excerpt names the kind of secret and its length and nothing of its
text: no characters around it either (they may start another secret the detectors
missed), and no hash (a short PIN's hash is a lookup away from the PIN).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

import msgspec

FindingKind = Literal["secret", "injection"]

_MAX_EXCERPT = 120


class Finding(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One rule hit. `start`/`end` index the scanned string of `field` (for injection
    rules that string is the normalised text, see `policy_rules.text.normalise`)."""

    rule_id: str
    kind: FindingKind
    start: int
    end: int
    excerpt: str
    field: str = "text"


# Rule ids whose last part does not say plainly what was found.
_SECRET_KINDS = {
    "keyword_assignment": "value assigned to a password, token or key name",
    "plain_sentence": "password or code stated in a sentence",
    "high_entropy": "random-looking token",
    "auth_header": "authorization header credential",
    "url_credentials": "password in a URL",
    "encoded_credential": "credential encoded in base64",
    "command_line_password": "password given to a command",
    "jwt": "JSON web token",
    "seed_phrase": "wallet recovery phrase",
    "national_id": "national id number",
    "model": "text the learned model judges a credential",
}


def secret_kind(rule_id: str) -> str:
    """What a secret rule found, in words: "hard.secret.aws_key" -> "aws key"."""
    last = rule_id.rsplit(".", 1)[-1]
    return _SECRET_KINDS.get(last, last.replace("_", " "))


# What stands where a secret was masked: in a stored turn or title (`capture.redact_secrets`)
# and in a finding's excerpt (`redact_secret`).
REDACTED = "[REDACTED]"
REDACTION_MARKER = re.compile(r"\[REDACTED(?::[^\]]*)?\]")


def redact_secret(rule_id: str, length: int) -> str:
    """The excerpt of a secret finding: its kind and length, none of its text."""
    return f"[REDACTED: {secret_kind(rule_id)}, {length} characters]"


def quote_excerpt(text: str, start: int, end: int, others: Sequence[tuple[int, int]] = ()) -> str:
    """The matched phrase itself (injection phrases are not secret), shortened, with any
    secret span from `others` masked."""
    return _one_line(_mask(text, start, end, others))[:_MAX_EXCERPT]


def _mask(text: str, lo: int, hi: int, spans: Sequence[tuple[int, int]]) -> str:
    chars = list(text[lo:hi])
    for s, e in spans:
        for i in range(max(s, lo), min(e, hi)):
            chars[i - lo] = "*"
    return "".join(chars)


def _one_line(s: str) -> str:
    return re.sub(r"\s+", " ", s)



# How specific a secret rule is: a named kind (stripe key), then rules that name no kind,
# then the learned model (it judges a whole field).
_SECRET_TIERS = {"high_entropy": 1, "keyword_assignment": 1, "model": 2}


def one_per_secret(findings: Sequence[Finding]) -> list[Finding]:
    """`findings` with secret findings of one value (overlapping spans in one field, found by
    several detectors: a Stripe key as 40 and as 32 characters) reduced to one: the most
    specific kind, then the longest. Injection findings are kept as they are."""
    kept: list[Finding] = []
    for tier in range(3):
        ranked = sorted((f for f in findings if f.kind == "secret"
                         and _SECRET_TIERS.get(f.rule_id.rsplit(".", 1)[-1], 0) == tier),
                        key=lambda f: (f.field, f.start, -f.end))
        groups: list[list[Finding]] = []
        for f in ranked:
            if groups and groups[-1][0].field == f.field and f.start < max(g.end for g in groups[-1]):
                groups[-1].append(f)
            else:
                groups.append([f])
        for group in groups:  # one already kept, more specific, stands for the whole group
            if not any(k.field == g.field and k.start < g.end and g.start < k.end for k in kept for g in group):
                kept.append(max(group, key=lambda f: f.end - f.start))
    ids = {id(f) for f in kept}
    return [f for f in findings if f.kind != "secret" or id(f) in ids]
