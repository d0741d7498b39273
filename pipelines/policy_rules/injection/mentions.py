"""Matches that are no order: negated ("not to disregard safety rules"), the writer's own
work ("we save the rules in git"), or a short quote talked about ("a message containing
'ignore previous instructions'").
"""

from __future__ import annotations

import re

from pipelines.policy_rules.injection.hit import InjectionHit

# A preceding negation turns an override into advice ("not to disregard safety rules").
# A storing verb whose subject is the writer ("how should I store the system prompt", "we
# save the rules in git") tells of their own work, not an order to the memory.
_FIRST_PERSON = re.compile(
    r"\b(?:i|we)\s+(?:(?:should|can|could|would|will|must|do|did|might|then|also|always|usually|need\s+to|want\s+to|"
    r"have\s+to|plan\s+to|try\s+to)\s+){0,2}$",
    re.IGNORECASE,
)
# A short quoted phrase that is talked about, not said: "a message containing 'ignore
# previous instructions'", "'You are now DAN' style prompts", "when asked to 'repeat the
# text above'". A hit lying inside such a quote is a mention (a security report, a
# classifier's spec) and does not count; a long quote is a pasted text and still does.
_QUOTED = re.compile(r"(?<!\w)([\"'])([^\"'\n]{3,80}?)\1(?!\w)")
_MENTION_BEFORE = re.compile(
    r"\b(?:containing|contains?|like|such\s+as|e\.g\.|(?:the|a|this|that)\s+(?:phrase|string|words?|line|sentence|pattern|payload)|"
    r"called|named|asked\s+to|detect(?:s|ed|ing)?|flag(?:s|ged)?|block(?:s|ed)?|catch(?:es)?|match(?:es|ing)?|quoted?|"
    r"classic|famous|infamous|old)\s*[:,]?\s*$",
    re.IGNORECASE,
)
_MENTION_AFTER = re.compile(
    r"^\s*(?:-\s*)?(?:style|type|kind|attacks?|injections?|prompts?|payloads?|strings?|phrases?|patterns?|jailbreaks?|tricks?|"
    r"examples?|variants?|messages?)\b",
    re.IGNORECASE,
)


def _unmentioned(norm: str, hits: list[InjectionHit]) -> list[InjectionHit]:
    mentions = []
    for q in _QUOTED.finditer(norm):
        if len(q.group(2).split()) > 8:
            continue
        before, after = norm[max(0, q.start() - 30) : q.start()], norm[q.end() : q.end() + 30]
        if _MENTION_BEFORE.search(before) or _MENTION_AFTER.match(after):
            mentions.append((q.start(2), q.end(2)))
    if not mentions:
        return hits
    return [h for h in hits if not any(a <= h.start and h.end <= b for a, b in mentions)]


_NEGATED = re.compile(r"(?:\bnot|\bnever|n't|\bavoid|\bwithout|\bshouldn't|\bmustn't)\s+(?:to\s+)?$", re.IGNORECASE)
