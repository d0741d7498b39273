"""Text helpers shared by the detectors: normalisation and Shannon entropy."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter

# Zero-width and bidi control characters used to split trigger words ("ig\u200bnore").
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# Cyrillic/Greek letters that render like Latin ones, the usual homoglyph substitutions.
_CONFUSABLES = str.maketrans(
    {
        "а": "a",
        "е": "e",
        "о": "o",
        "р": "p",
        "с": "c",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "А": "A",
        "В": "B",
        "Е": "E",
        "К": "K",
        "М": "M",
        "Н": "H",
        "О": "O",
        "Р": "P",
        "С": "C",
        "Т": "T",
        "Х": "X",
        "ο": "o",
        "Ο": "O",
        "α": "a",
        "ι": "i",
        "ν": "v",
        "Ι": "I",
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2013": "-",
        "\u2014": "-",
    }
)


def normalise(text: str) -> str:
    """NFKC, invisible characters removed, look-alikes mapped to ASCII.

    Used for instruction detection only: full-width letters, zero-width joiners and
    Cyrillic look-alikes must not hide "ignore previous instructions"."""
    return fold_lookalikes(unfold(text))


def unfold(text: str) -> str:
    """The first steps of `normalise`: NFKC and invisible characters removed, look-alike
    letters still as they are (so mixed-script words can be seen)."""
    return _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))


def fold_lookalikes(text: str) -> str:
    """The last step of `normalise`: look-alike letters to ASCII, one character for one,
    so offsets in `unfold(text)` stay valid."""
    return text.translate(_CONFUSABLES)


def lookalike_letters() -> frozenset[str]:
    """The Cyrillic and Greek letters that `normalise` maps to Latin ones."""
    return frozenset(chr(c) for c, v in _CONFUSABLES.items() if chr(c).isalpha() and str(v).isascii()
                     and str(v).isalpha())


def shannon_entropy(value: str) -> float:
    """Bits per character of `value` (0 for the empty string)."""
    if not value:
        return 0.0
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def char_classes(value: str) -> int:
    """How many of lower, upper, digit, other appear in `value`."""
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )
