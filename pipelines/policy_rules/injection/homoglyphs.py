"""Words mixing Latin letters with Cyrillic or Greek look-alikes: text made to slip past filters."""

from __future__ import annotations

import re

from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.text import lookalike_letters

# A word mixing Latin letters with Cyrillic or Greek look-alikes ("іgnоrе" with Cyrillic
# і, о, е): no language spells a word that way, it is text made to slip past filters.
_LOOKALIKES = "".join(sorted(lookalike_letters()))
_MIXED_WORD = re.compile(
    rf"\b(?=[A-Za-z{_LOOKALIKES}]*[A-Za-z])(?=[A-Za-z{_LOOKALIKES}]*[{_LOOKALIKES}])[A-Za-z{_LOOKALIKES}]{{2,}}\b"
)


def find_homoglyph_words(unfolded: str) -> list[InjectionHit]:
    """Two or more mixed-script words in `unfold(text)` (one can be a typo on a Russian
    keyboard; two are obfuscation). Run before the look-alikes are folded away: afterwards
    the words read as plain English. Offsets also index `normalise(text)`."""
    if unfolded.isascii():
        return []
    words = list(_MIXED_WORD.finditer(unfolded))
    if len(words) < 2:
        return []
    return [InjectionHit("hard.injection.homoglyph", m.start(), m.end()) for m in words]
