"""A credential whose name is one field and whose value another (a title "Bank PIN" over
the content "4471").
"""

from __future__ import annotations

import re

from pipelines.policy_rules.secrets.find import find_secrets
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.sentences import _CREDENTIAL_NOUN

_MAX_LABELLED_VALUE = 200  # a value, not a note that happens to sit under such a title


def find_labelled_value(label: str, value: str) -> list[SecretHit]:
    """A credential whose name is one field and whose value is another: a memory titled "Bank
    PIN" holding "4471", or "Wifi password" holding "BlueFalcon!2024". The two are read as one
    `label: value` line, and the hits inside the value are returned in its offsets (the value
    alone is a bare number or word, which no rule may block)."""
    label = label.strip()
    if not value.strip() or len(value) > _MAX_LABELLED_VALUE or not _CREDENTIAL_NOUN.search(label):
        return []
    said = _IT_IS.match(value)  # "it is 4471": the value refers to the title
    cut = said.end() if said else 0
    offset = len(label) + 2 - cut
    return [SecretHit(h.rule_id, h.start - offset, h.end - offset)
            for h in find_secrets(f"{label}: {value[cut:]}") if h.start - offset >= cut]


_IT_IS = re.compile(r"(?i)[ \t]*(?:it(?:'s|\u2019s|[ \t]+is)|(?:that|this)(?:'s|[ \t]+is)|is)[ \t]+(?:now[ \t]+)?")
