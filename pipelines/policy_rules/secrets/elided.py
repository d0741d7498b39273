"""Tokens shown with their secret part masked or cut short, and private key blocks with lines
left out: the value that would work is not there.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.secrets.armour import _private_block
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.vendors import _VENDOR_RULES

_MASK_RUN = re.compile(r"[#*\u2022]{3,}")
_MASKED_TAIL = re.compile(r"[-_.:]?[#*\u2022]{3,}")
_CUT_TAIL = re.compile(r"\.{3}|\u2026")


def _masked_or_cut(text: str, hit: SecretHit, elided: dict[tuple[int, int], bool] | None = None) -> bool:
    """A token shown with its secret part masked ("xoxb-1234-5678-####", "sk-live-abc***")
    or cut short ("ops_eyJzaWdu..."), as consoles, logs and documentation print keys: the
    value that would work is not there; so is a private key block whose body has lines left
    out ("MIIEpAIB...\n    ...\n-----END"). An ellipsis after a complete vendor-format key
    only ends the sentence: that key is all there. (A stored turn still masks what is left.)
    `elided`: the blocks of this text already read (a long block holds many hits)."""
    if _MASK_RUN.search(text, hit.start, hit.end) or _MASKED_TAIL.match(text, hit.end):
        return True
    if _CUT_TAIL.match(text, hit.end) and hit.rule_id not in _VENDOR_RULES:
        return True
    block = _private_block(text, hit.start)
    if block is None:
        return False
    elided = {} if elided is None else elided
    if block not in elided:
        elided[block] = _ELIDED_LINE.search(text, *block) is not None
    return elided[block]


_ELIDED_LINE = re.compile(r"^[ \t]*(?:\.{3,}|\u2026)[ \t]*$", re.MULTILINE)
