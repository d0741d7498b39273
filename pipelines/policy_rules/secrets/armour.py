"""Armoured ("-----BEGIN ...-----") blocks: which are public by design, and the private key
block a position lies in.
"""

from __future__ import annotations

import re


def _private_block(text: str, pos: int) -> tuple[int, int] | None:
    """The span of the "-----BEGIN ... PRIVATE KEY-----" block `pos` is in (its BEGIN line
    included), up to its END line or the end of the text."""
    begin = text.rfind("-----BEGIN ", 0, pos + len("-----BEGIN "))
    if begin < 0 or "-----END " in text[begin:pos]:
        return None
    m = _PEM_BEGIN.match(text, begin)
    if m is None or "PRIVATE" not in m.group(1):
        return None
    end = text.find("-----END ", begin)
    return begin, len(text) if end < 0 else end


_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]{1,40})-----")


def _in_public_block(text: str, pos: int) -> bool:
    """Inside an armoured block that is public by design: a public key, certificate or
    signature ("-----BEGIN PGP PUBLIC KEY BLOCK-----" up to its END line)."""
    begin = text.rfind("-----BEGIN ", 0, pos)
    if begin < 0 or "-----END " in text[begin:pos]:
        return False
    m = _PEM_BEGIN.match(text, begin)
    return _public_armour(m.group(1) if m else "PRIVATE")


def _public_armour(kind: str) -> bool:
    """An armoured block's kind ("PGP PUBLIC KEY BLOCK", "CERTIFICATE") is public by design."""
    return "PRIVATE" not in kind and re.search(r"PUBLIC|CERTIFICATE|SIGNATURE", kind) is not None
