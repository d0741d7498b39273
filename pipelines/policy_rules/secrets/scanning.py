"""How a layer scans a whole text for one pattern: skipping the patterns the one pass
(`find._ruled_out`) ruled out, and trying keyword patterns only where their leading literals stand.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.text import fold_case, leading_literals, literal_starts, matches_at


def _scan(rx: re.Pattern, text: str, out: frozenset[re.Pattern]) -> Iterator[re.Match]:
    if out and rx in out:
        return iter(())
    leading = _LEADING.get(rx)
    if leading is not None and len(text) > _PREFILTER_CHARS:  # tried only where a match can start
        return matches_at(rx, text, literal_starts(leading, fold_case(text)))
    return rx.finditer(text)


# The keyword patterns' leading literals (`text.leading_literals`): every match starts with one.
# Entered by the modules that own them (`keywords._KW`, `sentences._SENTENCE_KEYWORD`).
_LEADING: dict[re.Pattern, frozenset[str] | None] = {}


def tried_at_leading_literals(rx: re.Pattern) -> None:
    """In a long text, `_scan` tries `rx` only where one of its leading literals stands."""
    _LEADING[rx] = leading_literals(rx)

# Longer texts skip the formats whose literals they lack (exact: no hit is skipped); in
# shorter ones the test would cost more than the scan it saves.
_PREFILTER_CHARS = 300
