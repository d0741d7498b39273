"""Adversarial padding: one unit repeated many times, and stacks of combining marks."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

import numpy as np

from pipelines.policy_rules.injection.hit import InjectionHit
from pipelines.policy_rules.recovery_phrases import test_vector_covers

# Six or more combining marks on one base letter ("Zalgo" text, stacked Thai tone marks):
# no script stacks that many, so it is adversarial padding however short the run.
_COMBINING_STACK = re.compile(
    "[\u0300-\u036f\u0483-\u0489\u0591-\u05c7\u0610-\u061a\u064b-\u065f\u0e31\u0e34-\u0e3a\u0e47-\u0e4e"
    "\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]{6,}"
)


def _flood_hits(norm: str) -> Iterator[InjectionHit]:
    """Adversarial padding: one unit repeated many times ("ö ö ö ...", ") ] } ) ] }",
    "tokentoken..." glitch strings, combining-mark stacks).

    Short units (1-12 chars) must repeat 20+ times over 40+ chars; word-sized units (5-30
    chars, with a letter) 5+ times over 80+ chars. A single repeated character is layout
    (`=====`, `......`) unless it is a combining mark. Periodic runs are found with one
    vectorised comparison per period (a backtracking regex was the slowest rule)."""
    n = len(norm)
    if n < 40:
        return
    codes = np.frombuffer(norm.encode("utf-32-le"), dtype=np.uint32)
    if n <= 4096:
        # Short text: one 2-D pass for all periods. equal[i, p-1] says text[i] == text[i+p];
        # a flood at period p needs a run of 40 - p >= 10 equalities, and any run of 9 or more
        # holds an aligned block of 5: periods without one cannot hold a flood (the passes
        # below find the runs themselves).
        padded_codes = np.concatenate((codes, np.full(31 + 4, 0xFFFFFFFF, dtype=np.uint32)))
        window = np.lib.stride_tricks.sliding_window_view(padded_codes, 31)[: (n + 4) // 5 * 5]
        equal = window[:, 1:] == window[:, :1]
        blocks = equal.reshape(-1, 5, 30).all(axis=1).any(axis=0)
        candidates = [p for p in range(1, 31) if blocks[p - 1]]
    else:
        candidates = list(range(1, 31))  # long text: per-period 1-D passes, bounded memory
    reported_until = -1
    for period in candidates:
        same = codes[period:] == codes[:-period]
        # runs of consecutive equal positions: text[i:i+L] repeats at distance `period`
        padded = np.concatenate(([False], same, [False]))
        edges = np.flatnonzero(padded[1:] != padded[:-1])
        starts, stops = edges[::2], edges[1::2]
        keep = (stops - starts + period) >= 40  # the shortest flood either rule accepts
        for start, stop in zip(starts[keep], stops[keep]):
            span = int(stop - start) + period
            unit = norm[start : start + period]
            short = period <= 12 and span >= 20 * period and span >= 40
            long = 5 <= period and span >= 5 * period and span >= 80 and any(c.isalpha() for c in unit)
            if not (short or long) or start < reported_until:
                continue
            if not unit.strip():
                continue
            if len(set(unit)) <= (2 if long and not short else 1) and not _is_combining(unit.strip()):
                continue  # "=====", "-----", "abab" rulers
            if _filler_words(unit):
                continue  # "...EXAMPLEEXAMPLE...": a documented key padded with a filler word
            if test_vector_covers(norm, int(start), int(start) + span):
                continue  # "abandon abandon ... about": the BIP-39 standard's example phrase
            reported_until = int(start) + span
            yield InjectionHit("hard.injection.token_flood", int(start), int(start) + span)


# Words documentation pads example keys and values with ("AKIA...EXAMPLEEXAMPLE...",
# "SAMPLESAMPLE..."): repeated, they fill a value's length; they pad nothing a model reads.
_FILLER_WORDS = ("example", "sample", "placeholder", "redacted", "dummy", "changeme")


def _filler_words(unit: str) -> bool:
    """The repeated unit is one filler word (`_FILLER_WORDS`, any rotation, any case)
    repeated."""
    u = unit.lower()
    return any(len(u) % len(w) == 0 and u in w * (len(u) // len(w) + 1) for w in _FILLER_WORDS)


def _is_combining(unit: str) -> bool:
    return bool(unit) and all(unicodedata.combining(c) for c in unit)
