"""Dictionary words (zxcvbn's frequency lists): whether a value is words, how much of it
is, how guessable it is, and whether it names a credential instead of being one.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from zxcvbn import matching as zxcvbn_matching
from zxcvbn import scoring as zxcvbn_scoring

_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")

# zxcvbn's estimate below which a password value is a stand-in: under 10^4 guesses is a
# dictionary word, a common password or an obvious variant of one ("testpass", "bar1").
GUESSABLE_LOG10 = 4.0
_GUESSABLE_MAX_CHARS = 16  # zxcvbn's cost grows fast with length; longer values are not among them


_CREDENTIAL_WORD = re.compile(r"(?i)pass(?:wor)?d|passwd|pwd|secret|token|key|credential")
_WORD_PARTS = re.compile(r"[_\-.\s:/]+|(?<=[a-z0-9])(?=[A-Z])")


def names_a_credential(value: str) -> bool:
    """The value is words that name a credential instead of being one: dictionary words
    (and short numbers) only, one of them a credential word ("some-password",
    "your_client_secret", "somesecretkey", "testToken1", "wrong_pass", "pwd1"), l33t
    spellings too ("s3cr3t4", "p4ssw0rd"): the classic fixtures of test suites."""
    parts = [_unleet(p) for p in _WORD_PARTS.split(value) if p]
    # "pass" only as a whole part: inside a word it is "compass", "passenger".
    if not parts or not any(_CREDENTIAL_WORD.search(p) or p.rstrip("0123456789").lower() == "pass" for p in parts):
        return False
    # A one- or two-letter part is an article or abbreviation ("a-secret", "db_pass") when
    # a longer word is there; a credential word with a short number ("pwd1") is one word.
    return all(
        (p.isdigit() and len(p) <= 4)
        or (p.isalpha() and len(p) <= 2)
        or re.fullmatch(r"(?i)pass|pwd|pw", p.rstrip("0123456789"))
        or is_words(p)
        for p in parts
    )


@lru_cache(maxsize=4096)
def _unleet(part: str) -> str:
    """`part` with digits standing for letters in one dictionary word read back, as zxcvbn
    reads l33t ("s3cr3t4" -> "secret4", "p4ssw0rd" -> "password"); else unchanged. Symbols
    and capitals ("P@ssw0rd$1", "S3cretPw9") are left alone: they are put in to pass a
    complexity rule, as passwords in use are."""
    letters = part.rstrip("0123456789")
    if (len(letters) < 4 or len(letters) > _GUESSABLE_MAX_CHARS or letters.isalpha() or not letters.isalnum()
            or letters.lower() != letters):
        return part
    for m in zxcvbn_matching.l33t_match(letters.lower()):
        if m["i"] == 0 and m["j"] == len(letters) - 1:
            return m["matched_word"] + part[len(letters):]
    return part


@lru_cache(maxsize=4096)
def is_words(part: str) -> bool:
    """`part` is made of zxcvbn dictionary words (a trailing number allowed): "secretkey",
    "Configuration", "test1"; not "fedejbynbe"."""
    if len(part) > _GUESSABLE_MAX_CHARS or not part.isalnum():
        return False
    letters = part.rstrip("0123456789")
    if len(part) - len(letters) > 4 or not letters:
        return False
    return all(dictionary_coverage(letters.lower()))


def dictionary_coverage(low: str, min_len: int = 1) -> bytearray:
    """Which characters of `low` (lower case) lie inside a zxcvbn dictionary word of `min_len`+
    characters: the spans `zxcvbn.matching.dictionary_match` finds, looked up in one set of all
    its frequency lists' words and only up to the longest word's length (the same spans, a
    fraction of the cost: it looks each substring up in every list and builds a match for each
    hit, most of the policy's cost on a token it has not seen before)."""
    words, longest = _dictionary_words()
    n = len(low)
    covered = bytearray(n)
    for i in range(n):
        for j in range(i + min_len, min(n, i + longest) + 1):
            if low[i:j] in words:
                covered[i:j] = b"\x01" * (j - i)
    return covered


@lru_cache(maxsize=1)
def _dictionary_words() -> tuple[frozenset[str], int]:
    words = frozenset(w for name, ranked in zxcvbn_matching.RANKED_DICTIONARIES.items() if name != "user_inputs"
                      for w in ranked)
    return words, max(map(len, words))


@lru_cache(maxsize=4096)
def is_guessable(value: str) -> bool:
    """True when zxcvbn (Dropbox's password strength estimator: common passwords, English
    words, names, keyboard patterns, l33t and sequences) needs fewer than 10^4 guesses."""
    if len(value) > _GUESSABLE_MAX_CHARS:
        return False
    return guesses_log10(value) < GUESSABLE_LOG10


def guesses_log10(value: str) -> float:
    """zxcvbn's `guesses_log10` for `value` (no user inputs), without its feedback and attack
    times, and with its word lists merged into one (each word at its best rank): the same
    number, since of matches on one span the search keeps the fewest guesses, and a third of
    the cost (three matchers look every substring up in every list)."""
    matches = zxcvbn_matching.omnimatch(value, _merged_dictionaries())
    return float(zxcvbn_scoring.most_guessable_match_sequence(value, matches)["guesses_log10"])


@lru_cache(maxsize=4096)
def word_starts(run: str, known: frozenset[str] = frozenset()) -> frozenset[int]:
    """Where words start in `run`, a one-case run of letters written without separators
    ("stripeapikey" -> 0, 6, 9: "stripe api key"): the cheapest split into zxcvbn's words and
    `known`, a word costing the log of its frequency rank (wordninja's unigram segmentation,
    with zxcvbn's lists merged at best rank as the frequencies), a known word as much as a
    common one (rank 1000), a letter in no word as much as the rarest. A longer common word
    beats its parts ("monkey" is no "mon key", "bypass" no "by pass")."""
    low = run.lower()
    ranked = _merged_dictionaries()["merged"]
    _, longest = _dictionary_words()
    n = len(low)
    log_n = math.log(len(ranked))
    unknown = math.log((len(ranked) + 1) * log_n)
    best = [0.0] + [math.inf] * n
    back = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(max(0, j - longest), j):
            word = low[i:j]
            rank = _KNOWN_RANK if word in known else ranked.get(word)
            if rank is not None:
                cost = math.log((min(rank, ranked.get(word, rank)) + 1) * log_n)
            elif j - i == 1:
                cost = unknown
            else:
                continue
            if best[i] + cost < best[j]:
                best[j], back[j] = best[i] + cost, i
    starts = set()
    j = n
    while j > 0:
        j = back[j]
        starts.add(j)
    return frozenset(starts)


_KNOWN_RANK = 1000


@lru_cache(maxsize=1)
def _merged_dictionaries() -> dict[str, dict[str, int]]:
    merged: dict[str, int] = {}
    for name, ranked in zxcvbn_matching.RANKED_DICTIONARIES.items():
        if name != "user_inputs":
            for word, rank in ranked.items():
                merged[word] = min(rank, merged.get(word, rank))
    return {"merged": merged}


# An identifier's parts: an acronym before a capitalised word ("HTTP" of "HTTPResponse"), a
# word with its capital, a run of capitals.
_IDENTIFIER_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+")


def random_letters(v: str) -> bool:
    """Letters only, 20+, and not words: a key drawn from the 52 letters or from one case's 26
    ("ZdHeICdTjPJWIPhCWEHdbRMdDjLatVll", "xsmzukxrezozsmgviabp"). In both cases: under a
    quarter of the letters in camelCase parts of 3+ letters that are dictionary words
    (`word_letters`): the camelCase and PascalCase names it could pass for are words for the
    most part ("AbstractSingletonProxyFactoryBean" all of it, "IOErrorIdToUrlMapV" over a
    quarter), random letters' parts are short and not words (under a quarter in 2997 of 3000
    seeded keys). In one case, a single part, under half of the letters inside dictionary words
    of 3+ letters found anywhere in it (`dictionary_share`): words run together
    ("sessioncookiesigningkey", "SHIPPINGBUCKETENTITY") are covered all through, even with
    abbreviations among them (98.6% of 2000 compounds of Wikipedia words and 35% "svc", "k8s",
    "grpc"...), random letters hardly (no seeded key of 3000 reached half)."""
    if len(v) < 20 or not v.isascii() or not v.isalpha():
        return False
    if v.islower() or v.isupper():
        return dictionary_share(v) < 0.5
    letters, in_words = word_letters(v)
    return in_words * 4 < letters


def word_letters(v: str) -> tuple[int, int]:
    """How many letters `v` has, and how many of them lie in its camelCase parts of 3+ letters
    that are dictionary words (`is_words`): "5tSomethingVeryLong" 18 and 17."""
    parts = _IDENTIFIER_PART.findall(v)
    return sum(map(len, parts)), sum(len(p) for p in parts if len(p) >= 3 and is_words(p))


def dictionary_share(v: str) -> float:
    """The share of `v`'s letters inside zxcvbn dictionary words of 3+ letters, the words
    looked for in each camelCase part (a one-case run is one part): "sessioncookiesigningkey"
    1.0, "5tSerializerProviderFeatureLogge" 0.74 ("serial" of "Serializer"), random letters
    and base64 near 0."""
    letters = covered = 0
    for part in _IDENTIFIER_PART.findall(v[:64]):
        letters += len(part)
        if len(part) >= 3:
            covered += _covered_letters(part.lower())
    return covered / max(1, letters)


@lru_cache(maxsize=4096)
def _covered_letters(part: str) -> int:
    return sum(dictionary_coverage(part, 3))
