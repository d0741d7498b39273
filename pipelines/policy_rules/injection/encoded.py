"""An instruction hidden in Base64, hex or 8-bit binary: decoded once and scanned again."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.injection.rescan import find_injections_normalised
from pipelines.policy_rules.injection.rules import _ONE_PASS_INDEX
from pipelines.policy_rules.text import normalise

# Encoded payloads: a Base64 run (16+ characters) or six or more 8-bit binary groups.
# (a run may follow `=` or `:`: `payload=<base64>`, a query or config value)
_BASE64 = re.compile(r"(?<![\w+/])(?<![\w+/]==)[A-Za-z0-9+/]{16,}={0,2}(?![\w+/=])")
_BINARY = re.compile(r"\b[01]{8}(?:[ \t]+[01]{8}){5,}\b")
# Hex: 16+ bytes as one run, separated by spaces or colons, or as \x escapes.
_NO_MATCH = re.compile(r"(?!)")
_HEX = re.compile(
    r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){16,}(?![0-9A-Za-z])"
    r"|(?<![0-9A-Za-z])[0-9A-Fa-f]{2}(?:[ :][0-9A-Fa-f]{2}){15,}(?![0-9A-Za-z])"
    r"|(?:\\x[0-9A-Fa-f]{2}){16,}"
)


_ENCODED = (_BASE64, _BINARY, _HEX)
_NOT_ALL_LOWER = re.compile(r"[0-9+/=A-Z]")  # Base64 of text has one; a run of lower-case letters is a word


def _encoded_hits(norm: str, screened: set[int] | None = None) -> Iterator[InjectionHit]:
    """An instruction hidden in Base64, hex or binary: decode, and if the decoded text is
    printable prose that itself holds an injection, flag the encoded span. `screened`: the
    one pass's candidates for `norm` (a pattern it does not report is not scanned)."""
    base64_, binary, hex_ = (
        rx if screened is None or len(_ONE_PASS_INDEX) + n in screened else _NO_MATCH
        for n, rx in enumerate(_ENCODED)
    )
    for m in base64_.finditer(norm):
        token = m.group()
        if _NOT_ALL_LOWER.search(token) is None:
            continue
        try:
            raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if _scan_decoded(raw):
            yield InjectionHit("hard.injection.encoded_payload", m.start(), m.end())
    for m in binary.finditer(norm):
        raw = bytes(int(group, 2) for group in m.group().split())
        if _scan_decoded(raw):
            yield InjectionHit("hard.injection.encoded_payload", m.start(), m.end())
    for m in hex_.finditer(norm):
        digits = re.sub(r"[^0-9A-Fa-f]", "", m.group().replace("\\x", ""))
        if _scan_decoded(bytes.fromhex(digits)):
            yield InjectionHit("hard.injection.encoded_payload", m.start(), m.end())


def _scan_decoded(raw: bytes) -> bool:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if not text or sum(c.isprintable() or c in "\n\t" for c in text) < 0.95 * len(text) or " " not in text:
        return False
    return bool(find_injections_normalised(normalise(text), decode=False))
