"""Values that stand in for a credential: placeholders and templates, documentation
fillers ("ghp_xxxx..."), test values and password hashes.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.text import may_match, required_literals

_PLACEHOLDER_WORDS = (
    r"example|placeholder|changeme|change_me|dummy|fake|sample|redacted|masked|"
    r"your[_\-\s]?(?:password|pass|token|key|secret|api)|insert|replace|xxxx|\*\*\*|todo|fixme|not_?set|"
    r"secret_?here|key_?here|_here$"
)
_PLACEHOLDER_VALUE = re.compile(
    r"(?ix)^(?:"
    r"\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|%\(?\w*\)?[sdv]?|%[A-Z_]+%|\{\{.*\}\}|\{[\w.\-]*\}|<[^>]*>|"
    r"\[[^\]]*\]|\(\(.*\)\)|"
    r"[x*•·.#_\-?]+|(.)\1{2,}|0x[0-9a-f]+|"
    r".*(?:" + _PLACEHOLDER_WORDS + r").*"
    r")$"
)
# A cheap test before that regex on an ASCII value: only these first characters (or a first
# one repeated) start its other branches, and the last needs one of the words' literals.
_PLACEHOLDER_FIRST = frozenset("$%{<[(0x*.#_-?")
_PLACEHOLDER_LITERALS = required_literals(re.compile(r"(?i)(?:" + _PLACEHOLDER_WORDS + r")"))
_NON_SECRET_WORDS = frozenset(
    """
    password passwd pass pwd pw secret secrets token tokens key keys apikey api_key auth
    credential credentials null none nil undefined true false yes no on off string str
    int integer bool boolean number empty blank default value values required optional
    object any test testing tests foo bar baz qux foobar hidden unknown invalid valid new
    old current self this that it env environ config settings param params args kwargs data
    input text plain hash bcrypt sha256 md5 argon2 base64 utf8 ascii json xml yaml header
    bearer basic digest ntlm oauth oauth2 jwt session cookie login logout signin wrong
    incorrect bad secure mypassword mysecret mytoken demo guest
    """.split()
)
_TEST_VALUE = re.compile(
    r"(?i)^(?:(?:test|new|my|old|some|default|dummy|fake|sample|temp|tmp|the)?[-_]?"
    r"(?:test|pass|passw(?:or)?d|pwd|pw|secret|s3cr3t|key|token)|foo|bar|baz|demo|sample|user|abc|qwerty)"
    r"[-_]?\d{0,6}$"
)
_HASHED_VALUE = re.compile(
    r"^(?:\$(?:2[abxy]?|\d{1,2}|md5|sha1|gy|argon2(?:id|i|d)|scrypt|pbkdf2[\w-]*|y|7)\$|\{(?:CRYPT|SSHA|SHA|SMD5|MD5|ARGON2|PBKDF2)\})"
)


def _is_placeholder_token(token: str) -> bool:
    """Format-valid tokens that are documentation fillers: "ghp_xxxxxxxx...", "AKIAXXXX..."."""
    body = re.sub(r"^[A-Za-z0-9]{2,6}[_\-.]", "", token)
    if re.search(r"(?i)x{6,}", body):
        return True
    if body and max(body.count(c) for c in set(body)) > 0.6 * len(body):
        return True
    low = token.lower()
    return "example" in low and "examplekey" not in low or "placeholder" in low


def _is_placeholder(value: str) -> bool:
    v = value.strip()
    if not v:
        return True
    low = v.lower()
    if low in _NON_SECRET_WORDS:
        return True
    if v.isascii() and low[0] not in _PLACEHOLDER_FIRST and low[:1] != low[1:2] \
            and not may_match(_PLACEHOLDER_LITERALS, low):
        return False  # no branch of the regex can match (checked against it, property-tested)
    return bool(_PLACEHOLDER_VALUE.match(v))
