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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pipelines.embedders import l2_normalise
from pipelines.message_context import COMPOSITION, bare_text, said_on, session_key, turn_line, turn_order

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
