"""Wallet recovery phrases (BIP-39 mnemonics), found by their checksum.

A BIP-39 phrase is 12, 15, 18, 21 or 24 words of one 2,048-word list whose last word carries
a checksum of the others (Trezor's reference implementation, the `mnemonic` package, holds the
list and the check). Anyone who has the words has the wallet, so a phrase is a secret with or
without a word such as "seed" before it; a run of list words chosen by chance passes the check
one time in 16 (12 words) to 256 (24), and prose never holds 12 list words in a row.

The test vectors are the exception: "abandon abandon ... about" (all-zero entropy), "legal
winner thank year ..." (0x7f repeated), "zoo zoo ... wrong" (0xff) are printed in the standard,
in every wallet library's tests and documentation, and their wallets are public. Like a key
whose body is a filler, a phrase whose entropy is one short unit repeated stands in for a
phrase: it is no secret (and no injection's token flood either).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

PHRASE_LENGTHS = (24, 21, 18, 15, 12)
# A phrase stands alone, or with a few list words of its sentence beside it ("wallet seed:
# ..."); a longer run of list words is text written in them, and judging every window of it
# would cost a checksum per word (a 150,000-word dump of ten list words).
_LONGEST_RUN = 30
# A list item's number ahead of a word ("1.", "2)", "03:"): phrases are often written numbered.
_NUMBERING = re.compile(r"\d{1,2}[.):]?")
_TOKEN = re.compile(r"\S+")
_EDGE = "\"'`()[]{},.;:!?"


@dataclass(frozen=True, slots=True)
class RecoveryPhrase:
    start: int
    end: int
    words: int
    test_vector: bool  # entropy of one short repeated unit: the standard's own examples


@lru_cache(maxsize=1)
def _bip39():
    from mnemonic import Mnemonic

    m = Mnemonic("english")
    return m, frozenset(m.wordlist)


def _word(token: str) -> str:
    return token.strip(_EDGE).lower()


def find_recovery_phrases(text: str) -> list[RecoveryPhrase]:
    """Every checksum-valid BIP-39 English phrase in `text` (words separated by white space
    or commas, list numbers between them allowed), longest first where they overlap."""
    if len(text) < 12 * 4 - 1:  # twelve words of at least three letters and their spaces
        return []
    mnemo, words = _bip39()
    # A cheap first look: twelve list words in a row must be there (split() runs in C).
    run = 0
    fits = False
    numbering = _NUMBERING.fullmatch
    for token in text.lower().split():
        if token.strip(_EDGE) in words:
            run += 1
        elif run and not numbering(token):
            fits = fits or 12 <= run <= _LONGEST_RUN
            run = 0
    if not (fits or 12 <= run <= _LONGEST_RUN):
        return []
    found: list[RecoveryPhrase] = []
    for run_tokens in _runs(text, words):
        i = 0
        while i + 12 <= len(run_tokens):
            for n in PHRASE_LENGTHS:
                if i + n > len(run_tokens):
                    continue
                chunk = [w for w, _, _ in run_tokens[i : i + n]]
                if mnemo.check(" ".join(chunk)):
                    test_vector = _repeated_unit(mnemo.to_entropy(chunk))
                    if not test_vector and len(set(chunk)) * 3 < n * 2:
                        continue  # a generated phrase repeats few words; text in list words many
                    found.append(RecoveryPhrase(run_tokens[i][1], run_tokens[i + n - 1][2], n, test_vector))
                    i += n
                    break
            else:
                i += 1
    return found


def _runs(text: str, words: frozenset[str]) -> list[list[tuple[str, int, int]]]:
    """Runs of 12 to `_LONGEST_RUN` list words (word, start, end), list numbers skipped,
    anything else ending a run."""
    runs: list[list[tuple[str, int, int]]] = []
    current: list[tuple[str, int, int]] = []
    for m in _TOKEN.finditer(text):
        token = m.group()
        w = _word(token)
        if w in words:
            lead = len(token) - len(token.lstrip(_EDGE))
            current.append((w, m.start() + lead, m.start() + lead + len(w)))
        elif not _NUMBERING.fullmatch(token):
            if 12 <= len(current) <= _LONGEST_RUN:
                runs.append(current)
            current = []
    if 12 <= len(current) <= _LONGEST_RUN:
        runs.append(current)
    return runs


def _repeated_unit(entropy: bytes) -> bool:
    """The entropy is one unit of 1-4 bytes repeated (0x00..., 0x7f7f..., 0x8080...)."""
    return any(entropy == entropy[:k] * (len(entropy) // k) for k in (1, 2, 4))


def test_vector_covers(text: str, start: int, end: int) -> bool:
    """A BIP-39 test vector phrase spans text[start:end], white space at its ends aside (the
    token-flood rule's exception)."""
    span = text[start:end]
    start, end = start + len(span) - len(span.lstrip()), end - len(span) + len(span.rstrip())
    return any(p.test_vector and p.start <= start and end <= p.end for p in find_recovery_phrases(text))
