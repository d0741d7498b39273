"""Obfuscations that keep the words but change their letters (leetspeak, spaced letters,
ROT13): undone into views of the text that the rules scan again.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.injection.rescan import find_injections_normalised
from pipelines.policy_rules.injection.screen import _FIRST_VIEW_SCREEN

# Obfuscations that keep the words but change their letters; each is undone into a "view"
# of the text that the rules scan again (one level, no Base64 in it), and a hit there that
# covers an undone character flags the original span as `hard.injection.obfuscated`.
# - leetspeak: digits and symbols for letters in words with letters ("1gn0r3", "pr3v10u5",
#   "!nstruct!ons"), once one word has them between two letters; numbers alone ("2000") and
#   hex ids ("4c5f97c8") stay;
# - spaced letters: four or more single letters joined by one separator ("i g n o r e",
#   "D.i.s.r.e.g.a.r.d", "y-o-u-r"; three different letters or more, and not hundreds of them:
#   "k k k k" and "A A A ... B" are padding), the other separators of the run marking word breaks;
# - ROT13: when three or more words turn into common English words ("gur" -> "the").
_LEET = {"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s", "!": "i"}
_LEET_WORD = re.compile(r"(?<![\w@$!])[\w@$!]*[A-Za-z][\w@$!]*")
_LEET_CHAR = re.compile(r"[013457@$]|!(?=[A-Za-z])")
_LEET_INSIDE = re.compile(r"[A-Za-z][013457@$!]+[A-Za-z]")
_SPACED_RUN = re.compile(r"(?<![A-Za-z])[A-Za-z](?:(?:[ .\-_*]|[ ]{2,4})[A-Za-z](?![A-Za-z])){3,}")
_ROT13 = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "NOPQRSTUVWXYZABCDEFGHIJKLMnopqrstuvwxyzabcdefghijklm"
)
_VIEW_MARGIN = 120
_HEX_WORD = re.compile(r"[0-9A-Fa-f]+")  # ids and digests ("4c5f97c8", "ac4a"), not words
_SPACED_MAX = 240  # longer runs of single letters are padding ("A A A ... B C"), not words
_COMMON_WORDS = frozenset("the and you your is to of all this that with for are".split())
# the common words as ROT13 writes them ("gur", "naq", "lbhe"), none an English word
_ROT13_COMMON = re.compile(rf"\b(?:{'|'.join(sorted(w.translate(_ROT13) for w in _COMMON_WORDS))})\b", re.IGNORECASE)
# What `_views` looks for first, screened in the one pass too: a view whose pattern it rules
# out is not made.
_VIEW_SCREENS = (_LEET_INSIDE, _SPACED_RUN, _ROT13_COMMON)


def _deobfuscated_hits(norm: str, screened: set[int] | None = None) -> Iterator[InjectionHit]:
    if not any(c.isascii() and c.isalpha() for c in norm):
        return
    for view, index, changed in _views(norm, screened):
        # only the undone part and a sentence or two around it are scanned again
        first, last = changed.index(True), len(changed) - 1 - changed[::-1].index(True)
        lo, hi = max(0, first - _VIEW_MARGIN), last + _VIEW_MARGIN
        for h in find_injections_normalised(view[lo:hi], decode=False):
            if any(changed[lo + h.start : lo + h.end]):
                yield InjectionHit("hard.injection.obfuscated", index[lo + h.start], index[lo + h.end - 1] + 1)


def _word_start(norm: str, k: int) -> int:
    while k > 0 and (norm[k - 1].isalnum() or norm[k - 1] in "_@$!"):
        k -= 1
    return k


def _views(norm: str, screened: set[int] | None = None) -> Iterator[tuple[str, list[int], list[bool]]]:
    """(view, position in `norm` of each view character, whether it was changed). `screened`:
    the one pass's candidates for `norm` (a view whose `_VIEW_SCREENS` pattern it rules out
    would be none)."""
    leet, spaced, rot13 = (screened is None or _FIRST_VIEW_SCREEN + n in screened for n in range(3))
    identity = range(len(norm))
    # leetspeak: one character for one, offsets kept; only when some word has a stand-in
    # between two letters ("1gn0r3", "prev!ous"; not "3pm", "mp3", "4b")
    if leet and any(not _HEX_WORD.fullmatch(w.group()) for m in _LEET_INSIDE.finditer(norm)
                    for w in [_LEET_WORD.search(norm, _word_start(norm, m.start()))] if w):
        chars, changed = list(norm), [False] * len(norm)
        for w in _LEET_WORD.finditer(norm):
            if _HEX_WORD.fullmatch(w.group()):
                continue
            for c in _LEET_CHAR.finditer(w.group()):
                k = w.start() + c.start()
                chars[k], changed[k] = _LEET[norm[k]], True
        yield "".join(chars), list(identity), changed
    # spaced letters: the run's commonest separator joins, the others break words
    runs = [m for m in (_SPACED_RUN.finditer(norm) if spaced else ()) if len(m.group()) <= _SPACED_MAX
            and len({c.lower() for c in m.group() if c.isalpha()}) >= 3]
    if runs:
        out, index, flags, pos = [], [], [], 0
        for m in runs:
            out.extend(norm[pos : m.start()])
            index.extend(range(pos, m.start()))
            flags.extend([False] * (m.start() - pos))
            seps = re.findall(r"[^A-Za-z]+", m.group())
            joiner = max(set(seps), key=seps.count)
            for part in re.finditer(r"[A-Za-z]|[^A-Za-z]+", m.group()):
                k = m.start() + part.start()
                if part.group()[0].isalpha() or part.group() != joiner:
                    out.append(part.group() if part.group()[0].isalpha() else " ")
                    index.append(k)
                    flags.append(True)
            pos = m.end()
        out.extend(norm[pos:])
        index.extend(range(pos, len(norm)))
        flags.extend([False] * (len(norm) - pos))
        yield "".join(out), index, flags
    # ROT13
    if rot13 and len(_ROT13_COMMON.findall(norm)) >= 3:
        yield norm.translate(_ROT13), list(identity), [True] * len(norm)
