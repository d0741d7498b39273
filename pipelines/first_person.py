"""The words in which a writer speaks of themselves ("I'm allergic", "my sister Lena").

One home for what both the write policy (a request about one's own memory,
`policy_rules.preferences`) and recall (a turn stating something of its writer,
`recall.episodic`) read as the first person singular. No imports: the policy rules and
recall both load it, and neither may load the other at import time.
"""

from __future__ import annotations

import re

FIRST_PERSON_SINGULAR = frozenset({"i", "me", "my", "mine", "myself"})
# The same words inside running text; "I'm", "I've", "I’d" hold "I" as a word.
FIRST_PERSON_SINGULAR_WORD = re.compile(
    r"\b(?:" + "|".join(sorted(FIRST_PERSON_SINGULAR, key=len, reverse=True)) + r")\b", re.IGNORECASE)

__all__ = ["FIRST_PERSON_SINGULAR", "FIRST_PERSON_SINGULAR_WORD"]
