"""The record a detector returns, with the matched text redacted.

A finding must be safe to log and to store in the audit trail, so a secret's excerpt
never contains the secret: it keeps a little context and replaces the value with its
length and a short hash prefix (enough to correlate repeated leaks, not to recover them).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Literal

import msgspec

FindingKind = Literal["secret", "injection"]

_CONTEXT = 24  # characters of context kept on each side of a redacted value
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


def redact_secret(text: str, start: int, end: int, others: Sequence[tuple[int, int]] = ()) -> str:
    """Context around text[start:end] with the value replaced; any other secret span in
    `others` that reaches into the context is masked too."""
    value = text[start:end]
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    lo, hi = max(0, start - _CONTEXT), min(len(text), end + _CONTEXT)
    left = _mask(text, lo, start, others)
    right = _mask(text, end, hi, others)
    return f"{_one_line(left)}[REDACTED len={len(value)} sha256={digest}]{_one_line(right)}"


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
