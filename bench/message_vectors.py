"""Message-vector prototypes for `loci bench locomo --prototypes vec_...`: other ways to give a
chat turn a vector that knows its conversation, cheaper than embedding every message together
with its context text (the default, about four model passes over each turn's words).

Each variant keeps the served items as they are (their context text stays in BM25) and
replaces only the message vectors; other items keep theirs. Neighbours are the same
session's turns in inbox order (`pipelines.message_context`), as the product finds them.
The composed product mode (`message_context_composed`) is measured end to end with
`loci bench locomo --composed`, not here.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pipelines.embedders import l2_normalise
from pipelines.message_context import (
    COMPOSITION,
    bare_text,
    pooled_vector,
    said_on,
    session_key,
    turn_line,
    turn_order,
    window_parts,
)

LATE_CHUNK_TOKENS = 256  # MiniLM's max_seq_length
LATE_TURN_TOKENS = 100  # about NEIGHBOUR_MAX_CHARS


def sessions_of(items: Sequence[Any]) -> list[list[Any]]:
    """The message items grouped by session, each in turn order."""
    found: dict[tuple[str, str, str], list[Any]] = {}
    for it in items:
        if it.type == "message":
            found.setdefault(session_key(it), []).append(it)
    return [sorted(turns, key=turn_order) for turns in found.values()]


def _dated(it: Any) -> str:
    said = said_on(it.created_at)
    return f"(said on {said})" if said else ""


def bare(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], _embedder: Any) -> np.ndarray:
    """Each message's own words only: no context in the vector."""
    return embed([bare_text(it) for it in items])


def composed_with_date(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], _embedder: Any,
                       date_weight: float = 0.4) -> np.ndarray:
    """The product's composition plus `date_weight` x the vector of "(said on <day>)"."""
    vectors = embed([bare_text(it) for it in items]).copy()
    own = {it.id: vectors[k] for k, it in enumerate(items)}
    row = {it.id: k for k, it in enumerate(items)}
    days = sorted({_dated(it) for it in items if _dated(it)})
    day_vectors = dict(zip(days, embed(days))) if days else {}
    for turns in sessions_of(items):
        for i, it in enumerate(turns):
            before = [own[t.id] for t in turns[max(0, i - 2):i]]
            after = [own[t.id] for t in turns[i + 1:i + 2]]
            v = COMPOSITION.compose(own[it.id], np.array(before).reshape(-1, vectors.shape[1]),
                                    np.array(after).reshape(-1, vectors.shape[1]))
            if _dated(it):
                v = v + date_weight * day_vectors[_dated(it)]
            vectors[row[it.id]] = v
    return l2_normalise(vectors)


def own_previous_date(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], _embedder: Any,
                      weight: float = 0.3) -> np.ndarray:
    """Two passes a turn: the message with the previous turn and the day embedded together,
    the turn before that and the next turn added as `weight` x their bare vectors."""
    vectors = embed([bare_text(it) for it in items]).copy()
    own = {it.id: vectors[k] for k, it in enumerate(items)}
    row = {it.id: k for k, it in enumerate(items)}
    order = [(turns, i) for turns in sessions_of(items) for i in range(len(turns))]

    def text(turns: list[Any], i: int) -> str:
        parts = [bare_text(turns[i])]
        if i > 0:
            parts.append("(in reply to " + turn_line(turns[i - 1]) + ")")
        return "\n".join([*parts, _dated(turns[i])]).rstrip()

    joint = embed([text(turns, i) for turns, i in order])
    for (turns, i), v in zip(order, joint):
        extra = [own[t.id] for t in turns[max(0, i - 2):max(0, i - 1)]] + [own[t.id] for t in turns[i + 1:i + 2]]
        vectors[row[turns[i].id]] = v + weight * sum(extra) if extra else v
    return l2_normalise(vectors)


def late_chunks(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], embedder: Any) -> np.ndarray:
    """Late chunking: a session goes through the model in passes of at most
    LATE_CHUNK_TOKENS word pieces ("(said on <day>)" then "speaker: text" per turn), passes
    overlapping so every turn has its window (two previous turns, the next one) in one;
    a message's vector is the mean of that pass's hidden states over its window's tokens."""
    vectors = embed([bare_text(it) for it in items]).copy()
    row = {it.id: k for k, it in enumerate(items)}
    runner = embedder.runner(embedder.precision)
    tok = runner.tokenizer
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")

    def pieces(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False).ids[:LATE_TURN_TOKENS]

    for turns in sessions_of(items):
        turn_ids = [pieces(turn_line(t)) for t in turns]
        head = [cls, *pieces(_dated(turns[0]))]
        start, n = 0, len(turns)
        while start < n:
            ids, spans, end = list(head), {}, start
            while end < n and (len(ids) + len(turn_ids[end]) < LATE_CHUNK_TOKENS or end == start):
                spans[end] = (len(ids), len(ids) + len(turn_ids[end]))
                ids += turn_ids[end]
                end += 1
            ids.append(sep)
            first = start if start == 0 else start + 2  # earlier turns lack their previous ones here
            last = end if end == n else max(first + 1, end - 1)  # the last one lacks its answer
            batch = np.array([ids], dtype=np.int64)
            hidden = runner.hidden(batch, np.ones_like(batch))[0]
            for i in range(first, min(last, end)):
                window = [r for j in range(max(0, i - 2), i + 2) if j in spans for r in range(*spans[j])]
                vectors[row[turns[i].id]] = hidden[[*range(len(head)), *window, len(ids) - 1]].mean(axis=0)
            if last >= n:
                break
            start = max(last - 2, start + 1)
    return l2_normalise(vectors)


# name -> (vectors(items, embed, embedder), what it is)
VECTOR_VARIANTS: dict[str, tuple[Callable[..., np.ndarray], str]] = {
    "vec_bare": (bare, "message vector = its own words only (context only in BM25)"),
    "vec_composed_date": (composed_with_date, "composed (own + 0.3 mean(previous) + 0.5 next) + 0.4 x the day"),
    "vec_own_prev_date": (own_previous_date, "own + previous turn + day embedded together, + 0.3 x 2nd previous, next"),
    "vec_late_chunk": (late_chunks, f"late chunking: session passes of <= {LATE_CHUNK_TOKENS} pieces, window-pooled"),
}


def _window_text(turns: Sequence[Any]) -> str:
    """A run of consecutive turns as one text: "speaker: text" per turn, then the day of its
    first turn (the default context's line format and neighbour cap; `window_parts`)."""
    return "\n".join(window_parts(turns)).rstrip()


def _best_window(i: int, starts: Sequence[int], size: int, n: int) -> int:
    """Of the windows holding turn i, the one most like the default context: the most of
    its two previous turns and its next one inside, then the one starting latest."""
    def covered(s: int) -> tuple[int, int]:
        end = min(s + size, n)
        return (min(i - s, 2) + min(end - 1 - i, 1), s)
    return max((s for s in starts if s <= i < s + size), key=covered)


def shared_windows(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], _embedder: Any,
                   size: int = 4, stride: int = 2, own: float = 0.0, pool: str = "best") -> np.ndarray:
    """Shared windows: each session is cut into windows of `size` consecutive turns every
    `stride` turns, each window embedded once (the model still reads turns together); a
    turn's vector is the window most like its default context (`pool="best"`) or the mean
    of every window holding it (`"mean"`), plus `own` x its bare vector (0: not embedded).
    Model work per turn: about size / stride windowed turns (+1 bare turn when own > 0)."""
    bare_rows = [k for k, it in enumerate(items) if own or it.type != "message"]  # other items keep theirs
    row = {it.id: k for k, it in enumerate(items)}
    plans: list[tuple[int, list[str]]] = []
    texts: dict[str, int] = {}
    for turns in sessions_of(items):
        n = len(turns)
        starts = list(range(0, max(n - size, 0) + 1, stride))
        if starts[-1] + size < n:
            starts.append(n - size)
        for i, it in enumerate(turns):
            chosen = [_best_window(i, starts, size, n)] if pool == "best" else \
                [s for s in starts if s <= i < s + size]
            keys = [_window_text(turns[s:s + size]) for s in chosen]
            for key in keys:
                texts.setdefault(key, len(texts))
            plans.append((row[it.id], keys))
    joint = embed([*(bare_text(items[k]) for k in bare_rows), *texts])
    vectors = np.zeros((len(items), joint.shape[1]), dtype=np.float32)
    vectors[bare_rows] = joint[:len(bare_rows)]
    for k, keys in plans:
        window = joint[[len(bare_rows) + texts[key] for key in keys]].mean(axis=0)
        vectors[k] = own * vectors[k] + window
    return l2_normalise(vectors)


def capped_context(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], _embedder: Any,
                   cap: int = 400, previous: int = 2, following: int = 1) -> np.ndarray:
    """The default recipe (message + context in one text) with each neighbour capped at
    `cap` characters and `previous` / `following` turns: the shorter-context curve."""
    from unittest import mock

    from pipelines import message_context as mc

    row = {it.id: k for k, it in enumerate(items)}
    texts = [mc.embedding_text(it) for it in items]
    window = mc.ContextWindow(previous, following)
    with mock.patch.object(mc, "NEIGHBOUR_MAX_CHARS", cap):
        for turns in sessions_of(items):
            for i, it in enumerate(turns):
                context = mc.build_context(turns, i, window)
                texts[row[it.id]] = bare_text(it) + ("\n" + context if context else "")
    return embed(texts)


def _variant(fn: Callable[..., np.ndarray], **kw: Any) -> Callable[..., np.ndarray]:
    return lambda items, embed, embedder: fn(items, embed, embedder, **kw)


for _size, _stride in ((3, 1), (4, 2), (5, 2), (6, 3), (3, 3), (4, 4)):
    for _own in (0.0, 0.25, 0.5, 0.75, 1.0, 1.5):
        for _pool in ("best", "mean"):
            VECTOR_VARIANTS[f"vec_win{_size}s{_stride}_own{_own:g}_{_pool}"] = (
                _variant(shared_windows, size=_size, stride=_stride, own=_own, pool=_pool),
                f"shared windows of {_size} turns every {_stride}, {_pool} window + {_own:g} x own bare vector")
for _cap in (120, 160, 200, 250, 400):
    for _prev in (1, 2):
        VECTOR_VARIANTS[f"vec_cap{_cap}_p{_prev}"] = (
            _variant(capped_context, cap=_cap, previous=_prev),
            f"message + context ({_prev} previous, next, day), neighbours capped at {_cap} characters")


_POOLED: dict[tuple[Any, ...], dict[str, tuple[np.ndarray, list[np.ndarray]]]] = {}


def pooled_windows(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], embedder: Any,
                   size: int = 4, stride: int = 2, own: float | None = 1.0, aligned: bool = False,
                   offset: int = 0, timed: bool = False) -> np.ndarray:
    """Shared windows, each read once by the model, pooled twice: over the whole window
    (the `shared_windows` vector) and over each turn's own tokens in it (a late-chunking
    read of the turn, with its neighbours attended). A turn's vector: the mean over the
    windows holding it of normalise(window) + `own` x normalise(its own tokens). No bare pass:
    model work per turn is size / stride windowed turns. `aligned`: windows start only at
    multiples of `stride` (the last ones shorter), as an incremental session would cut them;
    `offset` shifts that cut (the first window then holds `offset` turns). `own=None`: own
    tokens only, the product's recipe (`message_context.POOLING`, `pooled_vector`); the
    window reading and pooling is `embedder.pool_windows`, the product's."""
    vectors = embed([bare_text(it) for it in items]).copy()  # cached; other items keep theirs
    row = {it.id: k for k, it in enumerate(items)}
    memo = _POOLED.setdefault((size, stride, getattr(embedder, "precision", "")), {})
    plans: list[tuple[int, list[tuple[str, int]]]] = []
    todo: dict[str, list[str]] = {}
    for turns in sessions_of(items):
        n = len(turns)
        starts = list(range(0, n if aligned else max(n - size, 0) + 1, stride))
        spans = [(s, s + size) for s in starts]
        if offset:  # windows cut at offset + k * stride, clipped to the session
            first = offset - stride * ((size + offset) // stride + 1)
            spans = [(max(s, 0), min(s + size, n)) for s in range(first, n, stride) if s + size > 0]
        for s, e in spans:
            key = _window_text(turns[s:e])
            if key not in memo:
                todo[key] = window_parts(turns[s:e])
        for i, it in enumerate(turns):
            plans.append((row[it.id], [(_window_text(turns[s:e]), i - s) for s, e in spans if s <= i < e]))
    cpu = time.process_time()
    memo.update(zip(todo, embedder.pool_windows(list(todo.values()))))  # the product's token pooling
    if timed:
        cpu = time.process_time() - cpu
        print(f"pooled {size}s{stride}: {len(todo)} windows, model CPU {cpu:.2f} s", file=sys.stderr)
    for k, held in plans:  # (not aligned, a session's last turn can be in no window: a zero vector, as measured)
        vectors[k] = pooled_vector([(memo[key][0], memo[key][1][pos]) for key, pos in held], own) if held else 0.0
    return vectors


for _own in (0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 1000.0):
    VECTOR_VARIANTS[f"vec_pooled4s2_own{_own:g}"] = (
        _variant(pooled_windows, size=4, stride=2, own=_own),
        f"shared windows of 4 turns every 2, read once: window + {_own:g} x the turn's own tokens")
    VECTOR_VARIANTS[f"vec_pooled4s2_own{_own:g}_aligned"] = (
        _variant(pooled_windows, size=4, stride=2, own=_own, aligned=True),
        f"as vec_pooled4s2_own{_own:g}, windows only at even turns (shorter at a session's end)")
for _size, _stride in ((4, 4), (3, 3), (6, 3), (6, 4)):
    for _own in (2.0, 1000.0):
        VECTOR_VARIANTS[f"vec_pooled{_size}s{_stride}_own{_own:g}_aligned"] = (
            _variant(pooled_windows, size=_size, stride=_stride, own=_own, aligned=True),
            f"pooled windows of {_size} turns every {_stride} (aligned): window + {_own:g} x the turn's own tokens")
for _offset in (1, 2, 3):
    VECTOR_VARIANTS[f"vec_pooled4s4_own1000_offset{_offset}"] = (
        _variant(pooled_windows, size=4, stride=4, own=1000.0, aligned=True, offset=_offset),
        f"pooled windows of 4 without overlap cut at turns {_offset}, {_offset + 4}, ...: the turn's own tokens")
VECTOR_VARIANTS["vec_pooled4s2_owntokens_aligned"] = (
    _variant(pooled_windows, size=4, stride=2, own=None, aligned=True),
    "pooled windows of 4 every 2 at even turns, own tokens only: the product's message_context_pooled")
for _size, _stride in ((4, 3), (3, 2), (5, 3), (6, 4), (5, 4), (4, 2)):
    VECTOR_VARIANTS[f"vec_pooled{_size}s{_stride}_owntokens_aligned_timed"] = (
        _variant(pooled_windows, size=_size, stride=_stride, own=None, aligned=True, timed=True),
        f"pooled windows of {_size} every {_stride} (aligned), own tokens only; model CPU-s printed")
VECTOR_VARIANTS["vec_pooled4s2_own1000_offset1"] = (
    _variant(pooled_windows, size=4, stride=2, own=1000.0, aligned=True, offset=1),
    "pooled windows of 4 every 2 cut at odd turns: the turn's own tokens")


def mixed_store(items: Sequence[Any], embed: Callable[[list[str]], np.ndarray], embedder: Any,
                newer: str = "pooled", every: int = 0, older: str = "default") -> np.ndarray:
    """A store whose older sessions were embedded by one recipe and its newer ones by
    another, as after a change of the message-vector default without `loci reembed`: in each
    user's conversation, sessions in time order, the first half keep the default vector
    (message + context text) and the second half get `vec_pooled4s2_owntokens_aligned`
    (`newer="pooled"`), or the other way round (`newer="default"`); `every` > 0 alternates
    instead (every other session pooled; 1: every session the newer way). `older="pooled", newer="bf16"`: pooled windows
    both, the older half float32 and the newer half bf16 (a store made before and after
    `minilm_precision = "auto"` on a CPU with AVX512_BF16)."""
    from pipelines.embedders import MiniLMEmbedder
    from pipelines.message_context import embedding_text

    if older == "pooled":
        default = pooled_windows(items, embed, MiniLMEmbedder(cache_size=0, precision="float32"), own=None,
                                 aligned=True)
        pooled = pooled_windows(items, embed, MiniLMEmbedder(cache_size=0, precision="bf16"), own=None,
                                aligned=True)
        newer = "pooled"
    else:
        pooled = pooled_windows(items, embed, embedder, own=None, aligned=True)
        default = embed([embedding_text(it) for it in items])
    by_user: dict[tuple[str, str], list[list[Any]]] = {}
    for turns in sessions_of(items):
        by_user.setdefault(session_key(turns[0])[:2], []).append(turns)
    row = {it.id: k for k, it in enumerate(items)}
    out = default.copy()
    for sessions in by_user.values():
        sessions.sort(key=lambda turns: turn_order(turns[0]))
        half = len(sessions) // 2
        for s, turns in enumerate(sessions):
            later = every == 1 or (s % 2 == 1 if every else s >= half)
            if later == (newer == "pooled"):
                rows = [row[t.id] for t in turns]
                out[rows] = pooled[rows]
    return out


VECTOR_VARIANTS["vec_mixed_default_then_pooled"] = (
    _variant(mixed_store, newer="pooled"),
    "older half of each conversation's sessions default vectors, newer half pooled windows")
VECTOR_VARIANTS["vec_mixed_pooled_then_default"] = (
    _variant(mixed_store, newer="default"),
    "older half of each conversation's sessions pooled windows, newer half default vectors")
VECTOR_VARIANTS["vec_mixed_alternate"] = (
    _variant(mixed_store, every=2),
    "every other session of each conversation pooled windows, the rest default vectors")
VECTOR_VARIANTS["vec_mixed_pooled_f32_then_bf16"] = (
    _variant(mixed_store, older="pooled", newer="bf16"),
    "pooled windows, older half of each conversation's sessions float32, newer half bf16")
VECTOR_VARIANTS["vec_pooled_bf16"] = (
    _variant(mixed_store, older="pooled", newer="bf16", every=1),
    "pooled windows, every session bf16")
