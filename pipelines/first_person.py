"""The words in which a writer speaks of themselves ("I'm allergic", "my sister Lena").

One home for what both the write policy (a request about one's own memory,
`policy_rules.preferences`) and recall (a turn stating something of its writer,
`recall.episodic`) read as the first person singular, and for what the conflict rule
(`recall.conflicts`, at write time and at recall) reads as a claim about its writer alone
(`of_the_writer`). No imports: the policy rules and recall both load it, and neither may
load the other at import time.
"""

from __future__ import annotations

import re

FIRST_PERSON_SINGULAR = frozenset({"i", "me", "my", "mine", "myself"})
# The same words inside running text; "I'm", "I've", "I’d" hold "I" as a word.
FIRST_PERSON_SINGULAR_WORD = re.compile(
    r"\b(?:" + "|".join(sorted(FIRST_PERSON_SINGULAR, key=len, reverse=True)) + r")\b", re.IGNORECASE)
# The writer vouching for, or deciding, what follows, not its subject: "I think the standup
# is at 10", "I decided the API timeout is 30 seconds".
_VOUCHING = re.compile(
    r"\bI(?:['’]m| am)?\s+(?:think|believe|guess|suppose|reckon|assume|recall|remember|heard|hear|was told|said|"
    r"decided|agreed|proposed|suggested|suggest|set|"
    r"(?:pretty |quite |fairly )?(?:sure|certain))\b", re.IGNORECASE)
# What a group shares: "our release day", "we deploy", "let's", "the team's standup", "everyone";
# a possessive other than a pronoun's contraction ("it's", "that's") names an owner, maybe
# no one of the two ("Acme's", "my sister's"): read as shared, so compared as before.
_SHARED = re.compile(
    r"\b(?:we|us|our|ours|ourselves|let['’]s|team|everyone|everybody)\b"
    r"|\b(?!(?:it|that|what|there|here|he|she|who|where|how|when|why|this|one)['’]s\b)\w+['’]s\b",
    re.IGNORECASE)


def of_the_writer(text: str) -> bool:
    """Whether `text` speaks of its writer alone: in the first person singular ("I work from
    home on Fridays", "My laptop is a MacBook"), not only to vouch for what follows ("I think
    the standup is at 10"), and naming nothing a group shares ("our release day", "the team's
    standup"). Two such claims by two people are about two people: never one subject."""
    return FIRST_PERSON_SINGULAR_WORD.search(_VOUCHING.sub(" ", text)) is not None and _SHARED.search(text) is None


__all__ = ["FIRST_PERSON_SINGULAR", "FIRST_PERSON_SINGULAR_WORD", "of_the_writer"]
