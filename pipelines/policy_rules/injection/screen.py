"""The one pass's layout over a long text: after the rules it screens the encoded payloads'
patterns, every family anchor as a pattern of its own, then the obfuscation views' screens.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.injection.anchors import _ANCHORS
from pipelines.policy_rules.injection.encoded import _ENCODED
from pipelines.policy_rules.injection.rules import _ONE_PASS_INDEX

# Every anchor as a pattern of its own, screened in the same pass: only those it reports are
# looked up (most are absent from most long texts).
_FIRST_ANCHOR = len(_ONE_PASS_INDEX) + len(_ENCODED)
_ANCHOR_LIST = tuple((family, anchor) for family, anchors in _ANCHORS.items() for anchor in anchors)
_ANCHOR_PATTERNS = tuple(re.compile(re.escape(anchor), re.IGNORECASE) for _, anchor in _ANCHOR_LIST)


def absent_families(low: str, screened: set[int] | None = None) -> set[str]:
    """The families of `_ANCHORS` none of whose anchors `low` (lower-cased text) holds.
    `screened`: the one pass's candidates for the text (None: every anchor looked up)."""
    if screened is None:
        return {family for family, anchors in _ANCHORS.items() if not any(a in low for a in anchors)}
    present = {family for n, (family, anchor) in enumerate(_ANCHOR_LIST, _FIRST_ANCHOR)
               if n in screened and anchor in low}
    return set(_ANCHORS).difference(present)


_FIRST_VIEW_SCREEN = _FIRST_ANCHOR + len(_ANCHOR_PATTERNS)
