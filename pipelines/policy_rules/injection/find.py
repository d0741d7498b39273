"""`find_injections`: the rules, mentions, floods, encoded payloads and obfuscated views over
one text, screened by one pass over a long text.
"""

from __future__ import annotations

from pipelines.policy_rules.injection.encoded import _ENCODED, _encoded_hits
from pipelines.policy_rules.injection.flood import _COMBINING_STACK, _flood_hits
from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.injection.homoglyphs import find_homoglyph_words
from pipelines.policy_rules.injection.mentions import _FIRST_PERSON, _NEGATED, _QUOTED, _unmentioned
from pipelines.policy_rules.injection.obfuscation import _VIEW_SCREENS, _deobfuscated_hits
from pipelines.policy_rules.injection.rules import _LEADING, _NEEDS_NON_ASCII, _ONE_PASS_INDEX, _REQUIRED, _RULES
from pipelines.policy_rules.injection.screen import _ANCHOR_PATTERNS, absent_families
from pipelines.policy_rules.text import (
    OnePass,
    fold_case,
    fold_lookalikes,
    literal_starts,
    matches_at,
    may_match,
    unfold,
)

# Shorter texts are scanned by every rule of a family left: the test would cost more than it saves.
_PREFILTER_CHARS = 300


def find_injections(text: str) -> list[InjectionHit]:
    """Instruction-like spans in `text`; positions index `normalise(text)`."""
    if not text:
        return []
    unfolded = unfold(text)
    hits = find_homoglyph_words(unfolded) + find_injections_normalised(fold_lookalikes(unfolded))
    return sorted(hits, key=lambda h: (h.start, h.end))


def find_injections_normalised(norm: str, *, decode: bool = True) -> list[InjectionHit]:
    """`find_injections` for text already passed through `normalise` (without the
    mixed-script check, which needs the text before look-alikes are folded).

    With `decode`, Base64, hex and 8-bit binary payloads are decoded and scanned too (one level)."""
    hits = []
    folded = fold_case(norm) if len(norm) > _PREFILTER_CHARS else ""
    screened = _ONE_PASS.candidates(norm) if folded else None
    skip = absent_families(norm.lower(), screened)
    seen: dict[str, bool] = {}
    starts: dict[str, list[int]] = {}
    ascii_only = norm.isascii()
    for k, ((rule_id, rx), required, leading) in enumerate(zip(_RULES, _REQUIRED, _LEADING)):
        if rule_id in skip or (ascii_only and k in _NEEDS_NON_ASCII):
            continue
        if screened is not None and k in _ONE_PASS_INDEX:  # the one pass decides: no literal test needed
            if _ONE_PASS_INDEX[k] not in screened:
                continue
        elif folded and not may_match(required, folded, seen):
            continue
        found = rx.finditer(norm) if not folded or leading is None else \
            matches_at(rx, norm, literal_starts(leading, folded, starts))
        for m in found:
            if rule_id == "hard.injection.override" and _NEGATED.search(norm, max(0, m.start() - 16), m.start()):
                continue
            if rule_id == "hard.injection.memory_poisoning" and \
                    _FIRST_PERSON.search(norm, max(0, m.start() - 40), m.start()):
                continue
            hits.append(InjectionHit(rule_id, m.start(), m.end()))
    if hits and _QUOTED.search(norm):
        hits = _unmentioned(norm, hits)
    hits.extend(_flood_hits(norm))
    hits.extend(
        InjectionHit("hard.injection.token_flood", m.start(), m.end()) for m in _COMBINING_STACK.finditer(norm)
    )
    if decode:
        hits.extend(_encoded_hits(norm, screened))
        hits.extend(_deobfuscated_hits(norm, screened))
    hits.sort(key=lambda h: (h.start, h.end))
    return hits


_ONE_PASS = OnePass([*(_RULES[k][1] for k in _ONE_PASS_INDEX), *_ENCODED, *_ANCHOR_PATTERNS, *_VIEW_SCREENS])
