"""A literal judged by the kind of name it is assigned to: a password value (not a
placeholder, template, reference, hash, flag or phrase), a token value (generated-looking) or
the value of a bare `key`; and password values in code that only stand in for one.
"""

from __future__ import annotations

import re

from pipelines.policy_rules.secrets.dictionary import is_guessable, is_words, names_a_credential, random_letters
from pipelines.policy_rules.secrets.generated import (
    _DOTTED,
    _digits,
    _dotted_name,
    _looks_generated,
    _symbol_alphabet_key,
)
from pipelines.policy_rules.secrets.hit import SecretHit
from pipelines.policy_rules.secrets.placeholders import (
    _HASHED_VALUE,
    _PLACEHOLDER_VALUE,
    _TEST_VALUE,
    _is_placeholder,
    _is_placeholder_token,
)
from pipelines.policy_rules.text import shannon_entropy

_CODE_REFERENCE = re.compile(
    r"^(?:[A-Za-z_$][\w$]*(?:(?:!!)?(?:\??\.|::|->)[A-Za-z_$][\w$]*)+(?:\(\))?"  # obj.attr, a!!.b, a?.b
    r"|.*[(){}\[\]&].*"  # calls, subscripts, literals, references
    r"|(?:process\.env|os\.environ|getenv|ENV|System\.getenv).*"
    r"|@?[a-z]+(?:[A-Z][a-z0-9]*)+|[a-z]+(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # identifiers
    r"|[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+"  # PascalCase type names
    r"|[\w.]+\?)$"
)


def _is_bare_key_value(value: str, *, quoted: bool) -> bool:
    """`key = ...` alone names keys of maps and caches far more often than credentials:
    only a long generated-looking value counts."""
    v = value.strip()
    if not re.fullmatch(r"[A-Za-z0-9+/=_\-]{16,}", v):
        return False
    letters = sum(c.isalpha() for c in v)
    digits = sum(c.isdigit() for c in v)
    return letters >= 2 and digits >= 2 and _is_token_value(v, quoted=quoted)


# Values that stand for "no password here" when assigned to a password name.
_PASSWORD_PLACEHOLDERS = frozenset(
    """
    password passwd pwd secret token null none nil undefined true false yes no on off
    string str empty blank required optional default value values hidden redacted masked
    changeme placeholder example your_password yourpassword your-password xxx
    """.split()
)


# How people build passwords: words with a digit run at the end, separated by a dot, dash,
# underscore or symbol, at least one capital or symbol ("Willow.pebble69", "Harbor-biscuit87!");
# code names do not end their last part in two or more digits after a capital word.
_HUMAN_PASSWORD = re.compile(r"(?=.*[A-Z!#$%&*@])[A-Za-z]{3,12}(?:[._\-!#$%&*@][A-Za-z]{2,12}){0,3}"
                             r"[._\-!#$%&*@]?\d{2,6}[!#$%&*@?]?")
# A passphrase of dictionary words joined by dashes ("copper-cactus-willow-violet").
_PASSPHRASE = re.compile(r"[a-z]{3,10}(?:-[a-z]{3,10}){2,7}")


def _is_passphrase(value: str) -> bool:
    return _PASSPHRASE.fullmatch(value) is not None and all(is_words(w) for w in value.split("-"))


def _is_password_value(value: str, *, quoted: bool) -> bool:
    """A literal assigned to a password name: not a placeholder, template, reference, hash,
    flag or phrase. (Guessable and self-describing values are judged after, by
    `_stand_in_password`.)"""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"`":
        v = v[1:-1]  # nested quoting: `'$DOCKER_PASSWORD'`
    if len(v) < 3 or len(v) > 128 or v.lower() in _PASSWORD_PLACEHOLDERS:
        return False
    if _PLACEHOLDER_VALUE.match(v) or _is_placeholder_token(v):
        return False
    if re.search(r"\s", v) or "://" in v or _HASHED_VALUE.match(v):
        return False  # phrases ("Enter previous password: "), URLs, password hashes
    if re.fullmatch(r"[A-Za-z_]\w*=(?:True|False|None|true|false|null|\d+|[A-Za-z_]\w*)", v):
        return False  # "pass `record=False`": a keyword argument quoted in prose, code
    if _IDEOGRAPHS.search(v):
        return False  # Chinese or Japanese text glued to a name (these scripts use no spaces): prose
    if not re.search(r"[A-Za-z0-9]", v):
        return False  # punctuation only, or not Latin at all
    if not quoted and (_CODE_REFERENCE.match(v) or re.fullmatch(r"_?[A-Z][A-Z0-9_]*_?|[a-z]+(?:-[a-z]+)+", v)) \
            and not _generated_capitals(v) and not _symbol_alphabet_key(v) \
            and not (_DOTTED.fullmatch(v) and not _dotted_name(v)) \
            and not _HUMAN_PASSWORD.fullmatch(v) and not _random_letter_groups(v):
        return False  # variables, constants, expressions (not generated values they happen to fit)
    if _SHELL_REFERENCES.fullmatch(v):
        return False  # "$USER:$PASS", "${HOST}/$DB": variables expanded by a shell or template
    if _dotted_name(v) and not _HUMAN_PASSWORD.fullmatch(v):
        return False  # "session.secret": a dotted name, not a value
    if re.fullmatch(r"\d{1,3}|[\d.]+[smhdSMHD]?|0x[0-9a-fA-F]+", v):
        return False  # lengths, durations, small numbers, flags
    return True


def _random_letter_groups(v: str) -> bool:
    """Groups of lower-case letters joined by dashes or underscores, none of them a word
    ("rediz-pkyu-nephaczm"): a generated password, which a name's shape fits; a name in code
    is words ("db_host_name", "some-password")."""
    parts = re.split(r"[-_]", v)
    return (len(parts) >= 2 and sum(map(len, parts)) >= 10 and all(len(p) >= 4 and p.isalpha() and p.islower()
                                                                 for p in parts)
            and not any(is_words(p) for p in parts))


def _generated_capitals(v: str) -> bool:
    """Letters and digits only, long, with digits spread in: a generated value that the
    identifier patterns happen to fit. Capitals and digits with 3.5+ bits a character are a
    base32 secret (a TOTP seed, "JBSWY3DPEHPK3PXP..."), not a constant's name (which has
    underscores); mixed case must pass the strict generated-token test ("hzbS5cLAZoTF59JW...",
    not the camelCase name "getUser2FAToken123")."""
    if len(v) < 16 or not (v.isascii() and v.isalnum()) or _digits(v) < 3:
        return False
    if v.isupper():
        return shannon_entropy(v) >= 3.5
    return _looks_generated(v, min_len=24, strict=True)


_IDEOGRAPHS = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_SHELL_REFERENCES = re.compile(r"(?:\$\{?[A-Za-z_]\w*\}?[/:@.,\-]*)+")
_PASSWORD_VALUE_RULES = frozenset(
    {"hard.secret.keyword_assignment", "hard.secret.url_credentials", "hard.secret.command_line_password"})


def _stand_in_password(hit: SecretHit, value: str) -> bool:
    """A password value in code that is among the most guessable (`is_guessable`: "pass",
    "testing", the fixtures of test suites and documentation) or names a credential
    (`names_a_credential`: "test-user-password"). Weak passwords stated in a sentence ("our
    Netflix password is swordfish") are the sentence rule's, which keeps them. A test word
    with a short number ("test123456", "demo42") is a stand-in in code as in sentences."""
    return hit.rule_id in _PASSWORD_VALUE_RULES and (
        bool(_TEST_VALUE.match(value)) or names_a_credential(value) or is_guessable(value))  # zxcvbn last


def _is_token_value(value: str, *, quoted: bool) -> bool:
    v = value.strip()
    if _IDEOGRAPHS.search(v):
        return False  # generated tokens are ASCII; ideographs make it prose
    if _is_placeholder(v) or _is_placeholder_token(v) or "://" in v or _HASHED_VALUE.match(v):
        return False
    if not quoted and (re.search(r"[(){}\[\]&]", v) and not _symbol_alphabet_key(v)
                       or (_CODE_REFERENCE.match(v) and not re.search(r"\d", v) and not random_letters(v))):
        return False
    if _dotted_name(v):
        return False  # "ed25519.PrivateKey": a qualified name
    return _looks_generated(v, min_len=10)
