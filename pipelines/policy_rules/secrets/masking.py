"""What a verbatim record (a captured chat turn) must not keep: wider than what a proposal is
refused for.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pipelines.policy_rules.secrets.find import find_secrets
from pipelines.policy_rules.secrets.hit import SecretHit, _dedupe


@lru_cache(maxsize=1)
def _base64_entropy_plugin():
    """detect-secrets' base64 high-entropy plugin: its character set and entropy limit."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString()


def find_secrets_to_mask(text: str) -> list[SecretHit]:
    """What a verbatim record (a captured chat turn) must not keep: everything
    `find_secrets` reports, and credential-shaped strings that judging a proposal lets
    pass on purpose (it errs towards keeping prose): documentation example values and
    random-looking strings with slashes or long capital runs. Here the rule is
    detect-secrets' own: a run of its base64 characters above its entropy limit (4.5
    bits/char), mixing upper case, lower case and digits. Masking a word too many in a
    stored turn costs little; keeping a key costs a leak every time the turn is recalled."""
    hits = find_secrets(text, stand_ins=True)
    plugin = _base64_entropy_plugin()
    for m in _BASE64_RUN.finditer(text):
        token = m.group().strip("=")
        if (len(token) >= 20 and re.search(r"[a-z]", token) and re.search(r"[A-Z]", token)
                and re.search(r"\d", token) and plugin.calculate_shannon_entropy(token) > plugin.entropy_limit):
            hits.append(SecretHit("hard.secret.high_entropy", m.start(), m.end()))
    return _dedupe(hits)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/\-_=]{20,}")
