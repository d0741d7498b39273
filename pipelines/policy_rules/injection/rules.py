"""The rule table: each rule a general linguistic pattern by family (override, role hijack,
reply control, system prompt, authority claim, memory poisoning, fake delimiters, exfiltration,
...), with the literals every match holds or starts with.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.injection.families import (
    authority,
    data_access,
    delimiters,
    generic,
    memory_writes,
    override,
    reply,
    role,
    system_prompt,
)
from pipelines.policy_rules.text import leading_literals, required_literals

_FLAGS = re.IGNORECASE | re.MULTILINE

_NEEDS_NON_ASCII: set[int] = set()


def _rules() -> tuple[tuple[str, re.Pattern[str]], ...]:
    r = []

    def add(rule_id: str, pattern: str, one_pass: bool = True, non_ascii: bool = False) -> None:
        if non_ascii:  # every match holds a character outside ASCII: ASCII text is not scanned
            _NEEDS_NON_ASCII.add(len(r))
        r.append((rule_id, re.compile(pattern, _FLAGS), one_pass))

    for family in (override, role, system_prompt, memory_writes, reply, data_access, delimiters, authority, generic):
        family.add_rules(add)
    return tuple(r)


_ALL_RULES = _rules()
_RULES = tuple((rule_id, rx) for rule_id, rx, _ in _ALL_RULES)
# Per rule, the literals every match holds (`text.required_literals`): on a long text a rule
# whose literals are absent is not scanned. Exact, unlike `_ANCHORS`: it skips no hit.
_REQUIRED = tuple(required_literals(rx) for _, rx in _RULES)
# Per rule, the literals every match starts with (`text.leading_literals`), or None: on a
# long text such a rule is tried only where one of them starts (same matches as a scan).
_LEADING = tuple(leading_literals(rx) for _, rx in _RULES)

# On a long text the rules are screened in one pass (`text.OnePass`): only those it reports
# can match and are scanned (with `matches_at` where a leading literal places them).
# The encoded payloads' patterns (`_ENCODED`, below) are screened in the same pass.
_ONE_PASS_INDEX = {k: n for n, k in enumerate(k for k, (_, _, one_pass) in enumerate(_ALL_RULES) if one_pass)}
