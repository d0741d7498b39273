"""Text helpers shared by the detectors: normalisation and Shannon entropy."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

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


# Characters `re.IGNORECASE` matches to an ASCII letter that `str.lower` does not lower to
# it (İ lowers to two characters; dotless ı and long ſ are case-equivalents of i and s).
_CASE_FIXES = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def fold_case(text: str) -> str:
    """Lower-cased text in which every character an ASCII literal matches, with or without
    `re.IGNORECASE`, is that literal lower-cased: what `required_literals` looks in."""
    return text.translate(_CASE_FIXES).lower()


def required_literals(pattern: re.Pattern) -> tuple[frozenset[str], ...]:
    """Sets of lower-case ASCII strings such that every match of `pattern` holds one string
    of each set (empty: nothing known). Read from the parsed pattern: consecutive literals
    form a string, an alternation needs one of its branches' strings, a repeat of at least
    one needs its body's; everything else (classes, optional parts, look-arounds) is
    unknown. So `may_match(required_literals(p), fold_case(text))` is False only when `p`
    cannot match `text`: a cheap test that skips a regex scan of a long text, never a hit."""
    from re import _parser

    sets = [s for s in _literal_sets(_parser.parse(pattern.pattern, pattern.flags)) if min(map(len, s)) >= 3]
    return tuple(frozenset(s) for s in sets)


def may_match(required: tuple[frozenset[str], ...], folded: str, seen: dict[str, bool] | None = None) -> bool:
    """False when `folded` (`fold_case(text)`) lacks every string of one of the sets.
    `seen`: answers already looked up in this text (rules share their words)."""
    seen = {} if seen is None else seen
    for group in required:
        for s in group:
            found = seen.get(s)
            if found is None:
                found = seen[s] = s in folded
            if found:
                break
        else:
            return False
    return True


def _literal_sets(items) -> list[set[str]]:
    """One set per element of a parsed sequence that must occur in every match (see
    `required_literals`)."""
    from re import _constants as c

    out: list[set[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            out.append({"".join(run)})
            run.clear()

    for op, av in items:
        if op is c.LITERAL and chr(av).isascii():
            run.append(chr(av).lower())
            continue
        flush()
        if op is c.SUBPATTERN:
            best = _best(_literal_sets(av[3]))
        elif op is c.ATOMIC_GROUP:
            best = _best(_literal_sets(av))
        elif op is c.BRANCH:
            branches = [_best(_literal_sets(b)) for b in av[1]]
            best = set().union(*branches) if branches and all(branches) else None
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT) and av[0] >= 1:
            best = _best(_literal_sets(av[2]))
        else:
            best = None
        if best:
            out.append(best)
    flush()
    return out


def _best(sets: list[set[str]]) -> set[str] | None:
    """The most selective set: longest shortest string, then fewest strings."""
    return max(sets, key=lambda s: (min(map(len, s)), -len(s)), default=None)


def leading_literals(pattern: re.Pattern) -> frozenset[str] | None:
    """Lower-case ASCII strings (3+ characters) one of which every match of `pattern` starts
    with, read like `required_literals` (zero-width assertions before them are skipped);
    None when the start is not such a literal. Such a pattern can only match where
    `fold_case(text)` holds one of them: `matches_at` tries only there."""
    from re import _parser

    found = _leading(list(_parser.parse(pattern.pattern, pattern.flags)))
    return frozenset(found) if found and min(map(len, found)) >= 3 else None


def _leading(items) -> set[str] | None:
    from re import _constants as c

    i = 0
    while i < len(items) and items[i][0] is c.AT:
        i += 1
    if i == len(items):
        return None
    op, av = items[i]
    if op is c.LITERAL:
        run = []
        while i < len(items) and items[i][0] is c.LITERAL and chr(items[i][1]).isascii():
            run.append(chr(items[i][1]).lower())
            i += 1
        return {"".join(run)} if run else None
    if op is c.SUBPATTERN:
        return _leading(list(av[3]))
    if op is c.BRANCH:
        branches = [_leading(list(b)) for b in av[1]]
        return set().union(*branches) if all(branches) else None
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        body = _leading(list(av[2]))
        if av[0] >= 1 or body is None:
            return body
        rest = _leading(items[i + 1:])  # an optional start: what follows may start the match
        return body | rest if rest else None
    return None


def matches_at(pattern: re.Pattern, text: str, starts: list[int]) -> Iterator[re.Match]:
    """`pattern.finditer(text)` when every match starts at one of `starts` (sorted): the same
    matches, trying only those positions (`match` at a position sees the text before it, as
    `finditer` does, for word boundaries and look-behinds)."""
    end = 0
    for start in starts:
        if start < end:
            continue
        m = pattern.match(text, start)
        if m is not None:
            yield m
            end = max(m.end(), start + 1)


def literal_starts(literals: frozenset[str], folded: str, found: dict[str, list[int]] | None = None) -> list[int]:
    """Sorted positions in `folded` where one of `literals` starts. `found`: positions already
    looked up in this text, per literal (rules share their words)."""
    found = {} if found is None else found
    starts: set[int] = set()
    for lit in literals:
        positions = found.get(lit)
        if positions is None:
            positions = found[lit] = []
            at = folded.find(lit)
            while at >= 0:
                positions.append(at)
                at = folded.find(lit, at + 1)
        starts.update(positions)
    return sorted(starts)
