"""Text helpers shared by the detectors: normalisation and Shannon entropy."""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

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


_ASCII_CLASSES = (re.compile("[a-z]"), re.compile("[A-Z]"), re.compile("[0-9]"), re.compile("[^A-Za-z0-9]"))


def char_classes(value: str) -> int:
    """How many of lower, upper, digit, other appear in `value`."""
    if value.isascii():  # the same four tests, each one regex search
        return sum(rx.search(value) is not None for rx in _ASCII_CLASSES)
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


# In a leading set: the match starts at a line start (position 0, or after a newline).
LINE_START = ""


def leading_literals(pattern: re.Pattern) -> frozenset[str] | None:
    """Lower-case ASCII strings one of which every match of `pattern` starts with, read like
    `required_literals` (zero-width assertions before them are skipped; a class of literal
    characters is one string per character; a branch that is only `^` under MULTILINE starts
    at `LINE_START`); None when the start is not such a literal. Such a pattern can only
    match where `fold_case(text)` holds one of them: `matches_at` tries only there (even one
    character, such as a clause's punctuation, leaves far fewer starts than a scan tries)."""
    from re import _parser

    found = _leading(list(_parser.parse(pattern.pattern, pattern.flags)), bool(pattern.flags & re.MULTILINE))
    return frozenset(found) if found else None


def _leading(items, multiline: bool) -> set[str] | None:
    from re import _constants as c

    i = 0
    while i < len(items) and items[i][0] is c.AT:
        i += 1
    if i == len(items):
        # only zero-width assertions: a line start when one of them says so
        ats = {av for _, av in items}
        return {LINE_START} if multiline and c.AT_BEGINNING in ats or c.AT_BEGINNING_LINE in ats else None
    op, av = items[i]
    if op is c.LITERAL:
        run = []
        while i < len(items) and items[i][0] is c.LITERAL and chr(items[i][1]).isascii():
            run.append(chr(items[i][1]).lower())
            i += 1
        return {"".join(run)} if run else None
    if op is c.IN:
        if all(o is c.LITERAL and chr(a).isascii() for o, a in av):
            return {chr(a).lower() for _, a in av}
        return None
    if op is c.SUBPATTERN:
        return _leading(list(av[3]), multiline)
    if op is c.BRANCH:
        branches = [_leading(list(b), multiline) for b in av[1]]
        return set().union(*branches) if all(branches) else None
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        body = _leading(list(av[2]), multiline)
        if av[0] >= 1 or body is None:
            return body
        rest = _leading(items[i + 1:], multiline)  # an optional start: what follows may start the match
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
            if lit == LINE_START:
                positions.append(0)
                at = folded.find("\n")
                while at >= 0:
                    positions.append(at + 1)
                    at = folded.find("\n", at + 1)
            else:
                at = folded.find(lit)
                while at >= 0:
                    positions.append(at)
                    at = folded.find(lit, at + 1)
        starts.update(positions)
    return sorted(starts)


# What Hyperscan reads instead of a text: one ASCII character for each character, of the same
# kind for Python's `re` (digit, other word character, space, anything else), so every atom
# of a pattern that accepts the character accepts its stand-in and word boundaries stay
# where they were. Letters that IGNORECASE matches to an ASCII letter stand for that letter.
# Python's `\s` also matches \x1c-\x1f, Hyperscan's not: those stand as spaces too.
_STAND_INS = frozenset("a0 \x7fksi")
_CASE_ASCII = {"\u212a": "k", "\u017f": "s", "\u0130": "i", "\u0131": "i"}
_ASCII_SPACES = re.compile("[\x0b\x0c\x1c-\x1f]")


class _StandIns(dict):
    def __missing__(self, code: int) -> str:
        c = chr(code)
        if c.isascii() and not _ASCII_SPACES.match(c):
            out = c
        elif c.isdecimal():
            out = "0"
        elif c.isspace():
            out = " "
        elif c.isalnum():
            out = _CASE_ASCII.get(c, "a")
        else:
            out = "\x7f"
        self[code] = out
        return out


_STAND_IN = _StandIns()


def ascii_stand_in(text: str) -> str:
    """`text` with every character replaced by its ASCII stand-in (see `_STAND_INS`)."""
    if text.isascii() and _ASCII_SPACES.search(text) is None:
        return text
    return text.translate(_STAND_IN)


class OnePass:
    """Which of several regexes can match a text, found in one pass over it.

    Hyperscan compiles every pattern in prefilter mode (look-arounds and back-references
    widened away, so each reports a superset of its matches) into one automaton and reads the
    text's ASCII stand-in (`ascii_stand_in`, pattern characters outside ASCII mapped alike);
    a pattern it does not report cannot match, and is not scanned by `re`. Patterns whose
    stand-in could lose a match (a negated class excluding a stand-in character, flags other
    than IGNORECASE, MULTILINE and DOTALL) or that Hyperscan cannot compile are always
    candidates. `candidates` returns None when Hyperscan is not installed or fails: then every
    pattern is a candidate.
    The automaton is built on first use (~1 s) and cached on disk per pattern set."""

    def __init__(self, patterns: Sequence[re.Pattern]) -> None:
        self.patterns = tuple(patterns)
        self.screened = tuple(k for k, p in enumerate(self.patterns) if _stand_in_safe(p))
        self._db = None
        self._local = threading.local()  # Hyperscan's scratch space serves one scan at a time
        self._hyperscan = None
        self._lock = threading.Lock()
        self._broken = False

    def candidates(self, text: str) -> set[int] | None:
        """Indexes (into `patterns`) of the patterns that may match `text`, or None."""
        if self._db is None and not self._broken:
            with self._lock:
                if self._db is None and not self._broken:
                    self._broken = not self._build()
        if self._broken:
            return None
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hyperscan.Scratch(self._db)
        found = set(range(len(self.patterns))).difference(self.screened)
        self._db.scan(ascii_stand_in(text).encode("ascii"), match_event_handler=_collect, context=found,
                      scratch=scratch)
        return found

    def _build(self) -> bool:
        try:
            import hyperscan
        except ImportError:
            return False
        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY
        same = ((re.IGNORECASE, hyperscan.HS_FLAG_CASELESS), (re.MULTILINE, hyperscan.HS_FLAG_MULTILINE),
                (re.DOTALL, hyperscan.HS_FLAG_DOTALL))
        flags = [base | sum(hs for py, hs in same if self.patterns[k].flags & py) for k in self.screened]
        exprs = [_stand_in_pattern(self.patterns[k].pattern).encode("ascii") for k in self.screened]
        key = hashlib.sha256(repr((getattr(hyperscan, "__version__", ""), flags, exprs)).encode()).hexdigest()[:24]
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "loci" / f"onepass-{key}.hsdb"
        try:
            db = hyperscan.loadb(path.read_bytes(), hyperscan.HS_MODE_BLOCK)
            db.scan(b"", match_event_handler=_collect, context=set(), scratch=hyperscan.Scratch(db))
        except Exception:  # no cache yet, or built for another CPU or library version
            try:
                db = self._compile(hyperscan, exprs, flags)
            except Exception:
                return False
            try:
                if len(self.screened) < len(exprs):
                    raise OSError("not cached: a set with patterns left out is compiled anew")
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(hyperscan.dumpb(db))
                tmp.replace(path)
            except OSError:
                pass
        self._hyperscan = hyperscan
        self._db = db  # last: other threads use it once it is set
        return True

    def _compile(self, hyperscan, exprs: list[bytes], flags: list[int]):
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            db.compile(expressions=exprs, ids=list(self.screened), flags=flags)
        except hyperscan.error:  # leave out (as always candidates) the patterns it cannot compile
            keep = []
            for n in range(len(exprs)):
                try:
                    hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK).compile(expressions=[exprs[n]], ids=[0],
                                                                             flags=[flags[n]])
                    keep.append(n)
                except hyperscan.error:
                    pass
            self.screened = tuple(self.screened[n] for n in keep)
            db.compile(expressions=[exprs[n] for n in keep], ids=list(self.screened), flags=[flags[n] for n in keep])
        return db


def _collect(pattern_id: int, start: int, end: int, flags: int, found: set[int]) -> None:
    found.add(pattern_id)


def _stand_in_pattern(source: str) -> str:
    """The pattern Hyperscan compiles: characters outside ASCII replaced by their stand-ins."""
    return "".join(c if c.isascii() else "\\x7f" if _STAND_IN[ord(c)] == "\x7f" else _STAND_IN[ord(c)]
                   for c in source)


def _stand_in_safe(pattern: re.Pattern) -> bool:
    """True when Hyperscan reading stand-ins finds every text `pattern` matches: no flags but
    IGNORECASE, MULTILINE and DOTALL (Hyperscan has the same; VERBOSE where it is a no-op),
    every character outside ASCII written as itself, and no negated class or `[^x]` that
    excludes a stand-in character (in either case) or one outside ASCII."""
    from re import _constants as c
    from re import _parser

    if pattern.flags & (re.ASCII | re.LOCALE):
        return False
    if pattern.flags & re.VERBOSE and re.search(r"[\s#]", pattern.pattern):
        return False  # without white space or "#", VERBOSE changes nothing (detect-secrets sets it)
    stand_ins = {ord(x) for x in _STAND_INS} | {ord(x.upper()) for x in _STAND_INS}

    def excluded(code: int) -> bool:
        return code > 0x7f or code in stand_ins or bool(_ASCII_SPACES.match(chr(code)))

    def safe(items) -> bool:
        for op, av in items:
            if op is c.LITERAL and (av > 0x7f and chr(av) not in pattern.pattern or _ASCII_SPACES.match(chr(av))):
                return False
            if op is c.NOT_LITERAL and excluded(av):
                return False
            if op is c.IN:
                negated = any(o is c.NEGATE for o, _ in av)
                for o, a in av:
                    if o is c.LITERAL and (a > 0x7f and chr(a) not in pattern.pattern or _ASCII_SPACES.match(chr(a))
                                           or negated and excluded(a)):
                        return False
                    if o is c.RANGE and (a[1] > 0x7f or negated and any(a[0] <= x <= a[1] for x in stand_ins)):
                        return False
            elif op in (c.SUBPATTERN,):
                if not safe(av[3]):
                    return False
            elif op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                if not safe(av[2]):
                    return False
            elif op is c.BRANCH:
                if not all(safe(b) for b in av[1]):
                    return False
            elif op in (c.ASSERT, c.ASSERT_NOT):
                if not safe(av[1]):
                    return False
            elif op is c.ATOMIC_GROUP:
                if not safe(av):
                    return False
            elif op in (c.GROUPREF_EXISTS,):
                return False
        return True

    return safe(_parser.parse(pattern.pattern, pattern.flags))
