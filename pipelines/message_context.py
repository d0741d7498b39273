"""Conversational context for episodic `message` items: what they are *found* by.

A chat turn alone often cannot be found by the question it answers ("Yes, last Tuesday!"
says nothing of what happened last Tuesday). Like contextual chunk embedding for documents,
each message item carries, next to its verbatim content, a short retrieval context: the
previous turns it replies to, the turn that answers it, and the day it was said. The
context is stored in `metadata["context"]` and is used only to find the item (its vector and
its BM25 terms); what recall shows, and the item's provenance, stay exactly its own turn.

Measured on LoCoMo (bench/locomo.py, prototypes): two previous turns, the
next turn and the date lift turn-level recall@10 from 0.61 to 0.77. Neighbours are the same
user's same session, ordered by inbox sequence; nothing looks at questions.

Without pooled windows (below, the default since 2026-11-28) a message's vector embeds its
text together with its context (`embedding_text`, the "text" scheme): each turn's words go
through the model about four times (in its own text and in its neighbours' contexts).
With `ContextWindow.composed` (setting `message_context_composed`) every turn is embedded
once, bare (`bare_text`), and a message's vector is composed from its own bare vector and
its neighbours' (`COMPOSITION`); the neighbours are recorded by id
(`metadata["context_turns"]`), so the item itself says how its vector is made, and the
pipeline, `loci reembed` and the service's delta make it alike (`item_vectors`). Measured
on LoCoMo: several times less model work, but turn recall@10 0.787 against 0.804 (the
model reading a turn with its neighbours beats adding their vectors), so it stays off.

With `ContextWindow.pooled` (setting `message_context_pooled`, on by default) a session is
cut into *pooled windows* (`POOLING`): 5 turns starting at every third turn index (4 at
every even one before 2026-11-28 evening), each window read by the model once; a turn's
vector is the normalised mean, over the one or two windows holding it, of the mean last
hidden state over its own tokens. A message records its index in its session
(`metadata["turn_index"]`, so later turns continue the cut), its windows' turn ids
(`metadata["context_windows"]`, hashed into `embedding_hash`), so the pipeline, `loci
reembed` and the delta make the same vector, and the cut (`metadata["pooling"]`,
`WindowPooling.name`; a message pooled before it was recorded was cut 4/2). Well under half
the model work of text vectors at the same recall (README). Embedders without token states
(`pool_windows`) give such a message its text vector. A store holds one scheme
(`vector_scheme`): consolidation refuses a change of setting until `loci reembed` reads
every session again (`recontextualise`); a store half one way and half the other lost up to
0.006 LoCoMo recall@10 (README). Pooled windows of another cut are another scheme ("pooled
4/2"): refused the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np

from pipelines.records import MemoryItem, ProposedItem, parse_time, sha256_text

CONTEXT_KEY = "context"
CONTEXT_TURNS_KEY = "context_turns"  # {"previous": [item id, ...], "following": [...]}
CONTEXT_WINDOWS_KEY = "context_windows"  # pooled: [[item id, ...] per window holding the turn]
TURN_INDEX_KEY = "turn_index"  # pooled: the turn's index in its session (where windows are cut)
POOLING_KEY = "pooling"  # pooled: the cut its windows were made with (`WindowPooling.name`)
NEIGHBOUR_MAX_CHARS = 400  # a long neighbour would drown the turn itself in its vector


@dataclass(frozen=True)
class ContextWindow:
    """How much conversation a message's retrieval context holds."""

    previous: int = 2
    following: int = 1
    date: bool = True
    composed: bool = False  # record the context's turns: the message's vector is composed
    pooled: bool = False  # record the pooled windows holding the turn (`POOLING`); composed wins

    @property
    def enabled(self) -> bool:
        return self.previous > 0 or self.following > 0 or self.date

    @property
    def vectors(self) -> str | None:
        """How the messages contextualised with this window get their vectors
        (`vector_scheme`); None when they get no context."""
        if not self.enabled:
            return None
        return "composed" if self.composed else "pooled" if self.pooled else "text"

    @classmethod
    def of(cls, settings: Any) -> "ContextWindow":
        """The window `settings` configure (`message_context_*`)."""
        return cls(settings.message_context_previous, settings.message_context_following,
                   settings.message_context_date, settings.message_context_composed,
                   settings.message_context_pooled)


def context_of(item: MemoryItem) -> str:
    value = item.metadata.get(CONTEXT_KEY) if item.type == "message" else None
    return value if isinstance(value, str) else ""


def context_turns(item: MemoryItem) -> tuple[list[str], list[str]] | None:
    """(previous ids, following ids) of the turns a message's context was built from, when
    its vector is composed from theirs; None otherwise (no context, or not composed)."""
    if not context_of(item):
        return None
    value = item.metadata.get(CONTEXT_TURNS_KEY)
    if not isinstance(value, Mapping):
        return None
    previous, following = value.get("previous"), value.get("following")
    if not isinstance(previous, list) or not isinstance(following, list):
        return None
    return [str(i) for i in previous], [str(i) for i in following]


def pooled_windows(item: MemoryItem) -> list[list[str]] | None:
    """The turn ids of the pooled windows holding a message (`ContextWindow.pooled`), each
    in turn order and holding the message itself; None when its vector is not pooled."""
    if not context_of(item):
        return None
    value = item.metadata.get(CONTEXT_WINDOWS_KEY)
    if not isinstance(value, list) or not value or not all(isinstance(w, list) for w in value):
        return None
    windows = [[str(i) for i in w] for w in value]
    return windows if all(item.id in w for w in windows) else None


def recorded_turns(item: MemoryItem) -> set[str]:
    """Every other item id a message's vector is made from (composed or pooled)."""
    ids = {i for group in (context_turns(item) or ()) for i in group}
    ids.update(i for w in (pooled_windows(item) or ()) for i in w)
    ids.discard(item.id)
    return ids


def vector_scheme(item: MemoryItem) -> str | None:
    """How a message's stored vector is made, as its metadata records it: "pooled"
    (`pooled_windows`), "composed" (`context_turns`) or "text" (message + context in one
    text); None for an item without a retrieval context. `ContextWindow.vectors` names the
    configured one; `pipelines.warehouse.embeddings.VECTOR_SCHEME_SQL` is the same in SQL."""
    if not context_of(item):
        return None
    if pooled_windows(item) is not None:
        cut = pooling_of(item)
        return "pooled" if cut == POOLING.name else f"pooled {cut}"
    return "composed" if context_turns(item) is not None else "text"


def pooling_of(item: MemoryItem) -> str:
    """The cut a pooled message's windows were made with (`WindowPooling.name`); a message
    pooled before the cut was recorded has windows of 4 every 2 (`UNMARKED_POOLING`)."""
    value = item.metadata.get(POOLING_KEY)
    return value if isinstance(value, str) and value else UNMARKED_POOLING


def recontextualise(items: Iterable[MemoryItem], window: ContextWindow) -> dict[str, dict[str, Any]]:
    """Every message among `items` (whole sessions: all of a session's stored turns) read
    again with `window`, as `contextualise` reads new turns: {id: its new metadata} for the
    messages whose context fields change (`loci reembed` after a change of
    `message_context_*`, so a store's vectors have one meaning)."""
    messages = {i.id: i for i in items if i.type == "message"}
    out, _ = contextualise(messages, [], window)
    return {i: out[i].metadata for i, item in messages.items() if out[i].metadata != item.metadata}


def bare_text(item: MemoryItem | ProposedItem) -> str:
    """An item's own words, as embedded: title, content, tags (no conversational context);
    a proposal's, as its item's will be."""
    text = f"{item.title}\n{item.content}"
    if item.tags:
        text += "\ntags: " + ", ".join(item.tags)
    return text


def embedding_text(item: MemoryItem) -> str:
    """The one text an item's vector is made from unless it is composed (the default):
    `bare_text`, and for a message its context text too. The stored hash is
    `embedding_hash(item)`, so a tag-only change is not re-embedded."""
    context = context_of(item) if context_turns(item) is None else ""
    return bare_text(item) + ("\n" + context if context else "")


def lexical_text(item: MemoryItem) -> str:
    """What BM25 indexes: title, content, tags, entities and a message's context."""
    return " ".join([item.title, item.content, " ".join(item.tags), " ".join(item.entities), context_of(item)])


@dataclass(frozen=True)
class VectorComposition:
    """A composed message vector: normalise(own + previous * mean(previous turns) +
    following * mean(following turns)), each a bare-turn vector. The weights were the best
    of a 3x3 grid (0.3 / 0.5 / 0.8 each) on LoCoMo's tune conversations."""

    previous: float = 0.3
    following: float = 0.5

    @property
    def recipe(self) -> str:
        """Names the composition in `embedding_hash`: a new recipe means new vectors."""
        return f"composed own+{self.previous:g}*mean(previous)+{self.following:g}*mean(following)"

    def compose(self, own: np.ndarray, previous: np.ndarray, following: np.ndarray) -> np.ndarray:
        """One composed, unit-length float32 vector from (dim,), (p, dim) and (f, dim) bare
        vectors (p or f may be 0)."""
        out = np.asarray(own, dtype=np.float32).copy()
        if len(previous):
            out += np.float32(self.previous) * np.asarray(previous, dtype=np.float32).mean(axis=0)
        if len(following):
            out += np.float32(self.following) * np.asarray(following, dtype=np.float32).mean(axis=0)
        norm = float(np.linalg.norm(out))
        return out / np.float32(norm) if norm > 0 else out


COMPOSITION = VectorComposition()


@dataclass(frozen=True)
class WindowPooling:
    """Pooled windows: a session cut into windows of `size` turns at every `stride`-th turn
    index (the last ones shorter), each read once; a turn's vector is normalise(sum over its
    windows of normalise(mean hidden state over its own tokens)). Measured on LoCoMo
    (bench/message_vectors.py `vec_pooled{size}s{stride}_owntokens_aligned_timed`, int8,
    2026-11-28 evening; all / tune / held out recall@10, model CPU-s of one pass): 4/2 (the
    cut before) 0.834 / 0.852 / 0.816, 61.4 s; **5/3** 0.841 / **0.860** / 0.821, 45.9 s
    (the best on tune, -25%); 6/4 0.838 / 0.851 / 0.824, 44.5 s; 4/3 0.832 / 0.843 / 0.822,
    42.0 s; 3/2 0.829 / 0.849 / 0.809, 42.4 s. A new cut is a new scheme (`vector_scheme`)."""

    size: int = 5
    stride: int = 3

    @property
    def name(self) -> str:
        """The cut, as a pooled message records it (`POOLING_KEY`) and a scheme names it."""
        return f"{self.size}/{self.stride}"

    @property
    def recipe(self) -> str:
        return f"pooled windows of {self.size} every {self.stride}: own tokens"

    def starts(self, index: int) -> list[int]:
        """Start indices of the windows holding the turn at `index` of its session."""
        first = max(0, index - self.size + 1)
        first += -first % self.stride
        return list(range(first, index + 1, self.stride))


POOLING = WindowPooling()
# Messages pooled before the cut was recorded on them (2026-11-28 evening) have windows of 4
# every 2: their scheme is "pooled 4/2", refused beside another cut until `loci reembed`.
UNMARKED_POOLING = "4/2"


def vector_recipe(embedder: Any) -> str:
    """What a run's vectors are made with (recorded per run: a new recipe re-checks all)."""
    pooled = POOLING.recipe if hasattr(embedder, "pool_windows") else "pooled: default text (no token states)"
    return f"{COMPOSITION.recipe}; {pooled}"


def window_parts(turns: Sequence[MemoryItem]) -> list[str]:
    """A pooled window's texts, in order: "speaker: text" per turn (`turn_line`), then the
    day of its first turn ("" when unknown)."""
    said = said_on(turns[0].created_at)
    return [*(turn_line(t) for t in turns), f"(said on {said})" if said else ""]


def window_tokens(parts: Sequence[Sequence[int]], cls: int, sep: int, max_tokens: int
                  ) -> tuple[list[int], list[tuple[int, int]]]:
    """One window's model input ([CLS] parts... [SEP], cut at `max_tokens`) and each part's
    token span in it."""
    ids, spans = [cls], []
    for part in parts:
        spans.append((len(ids), len(ids) + len(part)))
        ids += part
    return [*ids[:max_tokens - 1], sep], spans


def pool_spans(hidden: np.ndarray, length: int, spans: Sequence[tuple[int, int]]
               ) -> tuple[np.ndarray, list[np.ndarray]]:
    """(mean hidden state over the window's `length` tokens, the mean over each part's own
    tokens but the last (the day)); a part cut off by truncation gets the window's mean."""
    whole = hidden[:length].mean(axis=0)
    ends = [min(b, length - 1) for _, b in spans]
    return whole, [hidden[a:e].mean(axis=0) if e > a else whole for (a, _), e in zip(spans[:-1], ends)]


def pooled_vector(held: Sequence[tuple[np.ndarray, np.ndarray]], own: float | None = None) -> np.ndarray:
    """A turn's vector from (window mean, its own-token mean) per window holding it:
    normalise(sum of normalise(own-token mean)), or with `own` a weight (prototypes),
    normalise(sum of normalise(window) + own x normalise(own-token mean))."""
    acc = np.zeros(len(held[0][1]), dtype=np.float32)
    for whole, mine in held:
        part = mine / np.linalg.norm(mine)
        acc += part if own is None else whole / np.linalg.norm(whole) + own * part
    norm = float(np.linalg.norm(acc))
    return acc / np.float32(norm) if norm > 0 else acc


def embedding_hash(item: MemoryItem) -> str:
    """Which inputs a stored vector was made from: the content hash, extended for a message
    with a context by that context (it names the neighbouring turns, so a message is
    re-embedded when its answer arrives) and by the composition recipe when its vector is
    composed. `pipelines.warehouse.embeddings.EMBEDDING_HASH_SQL` is the same in SQL."""
    context = context_of(item)
    if not context:
        return item.content_hash
    windows = pooled_windows(item)
    if windows is not None:
        recorded = json.dumps(item.metadata[CONTEXT_WINDOWS_KEY], separators=(",", ":"))
        return sha256_text(f"{item.content_hash}\n{context}\n{POOLING.recipe}\n{recorded}")
    if context_turns(item) is None:
        return sha256_text(f"{item.content_hash}\n{context}")
    return sha256_text(f"{item.content_hash}\n{context}\n{COMPOSITION.recipe}")


def _window_plan(items: Sequence[MemoryItem], neighbour: Callable[[str], MemoryItem | None]
                 ) -> tuple[dict[tuple[str, ...], tuple[int, list[str]]], dict[int, list[tuple[tuple[str, ...], int]]]]:
    """The distinct pooled windows of `items` (turn ids -> (order, part texts)), each read
    once, and per pooled item (its index) its windows and its place in each."""
    windows: dict[tuple[str, ...], tuple[int, list[str]]] = {}
    pooled: dict[int, list[tuple[tuple[str, ...], int]]] = {}
    for k, item in enumerate(items):
        recorded = pooled_windows(item)
        if recorded is None:
            continue
        held = []
        for ids in recorded:
            found = [item if i == item.id else neighbour(i) for i in ids]
            turns = [t for t in found if t is not None]
            key = tuple(t.id for t in turns)
            if key not in windows:  # a window holds several items: its texts are built once
                windows[key] = (len(windows), window_parts(turns))
            held.append((key, key.index(item.id)))
        pooled[k] = held
    return windows, pooled


def item_windows(items: Sequence[MemoryItem], neighbour: Callable[[str], MemoryItem | None]) -> list[list[str]]:
    """The windows `item_vectors` gives an embedder's `pool_windows` for `items`, in its
    order (what a prefetch of those vectors must read: `MiniLMEmbedder.prefetch_windows`)."""
    return [parts for _, parts in _window_plan(items, neighbour)[0].values()]


def item_vectors(
    items: Sequence[MemoryItem],
    embed: Callable[[list[str]], np.ndarray],
    neighbour: Callable[[str], MemoryItem | None],
    composition: VectorComposition = COMPOSITION,
    pool: Callable[[list[list[str]]], list[tuple[np.ndarray, list[np.ndarray]]]] | None = None,
) -> np.ndarray:
    """The stored-space vectors of `items`, (len(items), dim) float32: the one definition the
    pipeline, `loci reembed` and the service's delta share. Each distinct text is embedded
    once (a turn is usually also its neighbours' neighbour); a message with recorded context
    turns gets `composition` of its bare vector and theirs. `embed` takes texts, returns unit
    rows; `neighbour` finds an item by id (None: gone, and left out of the composition).
    `pool` (an embedder's `pool_windows`): a message with recorded pooled windows gets
    `pooled_vector` of its own-token pools, each distinct window read once; without it such
    a message gets its default text vector (`embedding_text`)."""
    rows: dict[str, int] = {}

    def row(text: str) -> int:
        return rows.setdefault(text, len(rows))

    windows, pooled = _window_plan(items, neighbour) if pool is not None else ({}, {})
    plans: list[tuple[int, list[int], list[int]]] = []
    for k, item in enumerate(items):
        if k in pooled:
            plans.append((-1, [], []))
            continue
        turns = context_turns(item)
        if turns is None:
            plans.append((row(embedding_text(item)), [], []))
            continue
        found = [[neighbour(i) for i in ids] for ids in turns]
        before, after = ([row(bare_text(t)) for t in group if t is not None] for group in found)
        plans.append((row(bare_text(item)), before, after))
    if not items:
        return np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(embed(list(rows)), dtype=np.float32) if rows else None
    if vectors is not None and vectors.shape[0] != len(rows):
        raise ValueError(f"embedder returned {vectors.shape[0]} rows for {len(rows)} texts")
    pooled_out = pool([parts for _, parts in windows.values()]) if pool is not None and windows else []
    dim = vectors.shape[1] if vectors is not None else len(pooled_out[0][0])
    out = np.empty((len(items), dim), dtype=np.float32)
    for k, (own_row, before, after) in enumerate(plans):
        if k in pooled:
            out[k] = pooled_vector([(pooled_out[windows[key][0]][0], pooled_out[windows[key][0]][1][pos])
                                    for key, pos in pooled[k]])
        elif before or after:
            out[k] = composition.compose(vectors[own_row], vectors[before], vectors[after])
        else:
            out[k] = vectors[own_row]
    return out


def said_on(iso: str | None) -> str | None:
    when = parse_time(iso)
    return when.strftime("%-d %B %Y") if when is not None else None


def turn_line(item: MemoryItem) -> str:
    content = " ".join(item.content.split())
    if len(content) > NEIGHBOUR_MAX_CHARS:
        content = content[:NEIGHBOUR_MAX_CHARS].rstrip() + "…"
    return f"{item.title}: {content}"


def forgotten(turn: MemoryItem) -> bool:
    """A turn that said what a user asked to forget (`pipelines.forgetting`): no one's context."""
    return turn.validation == "retracted"


def _neighbours(turns: Sequence[MemoryItem], i: int, window: ContextWindow
                ) -> tuple[Sequence[MemoryItem], Sequence[MemoryItem]]:
    before = turns[max(0, i - window.previous):i] if window.previous else []
    after = turns[i + 1:i + 1 + window.following] if window.following else []
    return [t for t in before if not forgotten(t)], [t for t in after if not forgotten(t)]


# How a context names its neighbours (`build_context`; `context_without` reads them back).
REPLY_TO, ANSWERED_BY, TURN_SEPARATOR = "(in reply to ", "(answered by ", " / "


def build_context(turns: Sequence[MemoryItem], i: int, window: ContextWindow) -> str:
    """The retrieval context of turns[i], given its session's turns in order (a forgotten
    turn left out: its place stays empty)."""
    before, after = _neighbours(turns, i, window)
    parts = []
    if before:
        parts.append(REPLY_TO + TURN_SEPARATOR.join(turn_line(t) for t in before) + ")")
    if after:
        parts.append(ANSWERED_BY + TURN_SEPARATOR.join(turn_line(t) for t in after) + ")")
    said = said_on(turns[i].created_at) if window.date else None
    if said:
        parts.append(f"(said on {said})")
    return "\n".join(parts)


def context_fields(turns: Sequence[MemoryItem], i: int, window: ContextWindow, first: int = 0) -> dict[str, Any]:
    """The metadata fields turns[i] gets: its context text and the ids of the turns in it
    (none when the context is empty). Pooled: turns[0] is the session's turn `first`, and
    the fields record the turn's index and its windows' turn ids (composing, opt-in, wins
    over pooling, the default, when both are set)."""
    context = build_context(turns, i, window)
    if not context:
        return {}
    if window.vectors == "pooled":
        index = first + i
        return {CONTEXT_KEY: context, TURN_INDEX_KEY: index, POOLING_KEY: POOLING.name,
                CONTEXT_WINDOWS_KEY: [[t.id for t in turns[max(0, s - first):s - first + POOLING.size]
                                       if t is turns[i] or not forgotten(t)]
                                      for s in POOLING.starts(index)]}
    if not window.composed:
        return {CONTEXT_KEY: context}
    before, after = _neighbours(turns, i, window)
    return {CONTEXT_KEY: context,
            CONTEXT_TURNS_KEY: {"previous": [t.id for t in before], "following": [t.id for t in after]}}


def context_without(item: MemoryItem, gone: Sequence[MemoryItem]) -> dict[str, Any] | None:
    """The context fields (`context_fields`) of the message `item` once the turns `gone` are
    forgotten: each left out of its context text, its recorded context turns and pooled
    windows, as `build_context` leaves a forgotten turn out (its place stays empty, nothing
    further away comes in); {} when nothing is left. None when its context names none of
    them. Read from the item alone: its session is not needed."""
    context = context_of(item)
    ids = {g.id for g in gone if g.id != item.id}
    lines = [turn_line(g) for g in gone if g.id in ids]
    if not context or not (recorded_turns(item) & ids or any(line in context for line in lines)):
        return None
    parts = []
    for part in context.split("\n"):
        for head in (REPLY_TO, ANSWERED_BY):
            if part.startswith(head) and part.endswith(")"):
                named = _without_lines(part[len(head):-1], lines)
                part = f"{head}{named})" if named else ""
        if part:
            parts.append(part)
    if not parts:
        return {}
    fields: dict[str, Any] = {CONTEXT_KEY: "\n".join(parts)}
    for key in (TURN_INDEX_KEY, POOLING_KEY):
        if key in item.metadata:
            fields[key] = item.metadata[key]
    windows = pooled_windows(item)
    if windows is not None:
        fields[CONTEXT_WINDOWS_KEY] = [[i for i in w if i not in ids] for w in windows]
    turns = context_turns(item)
    if turns is not None:
        fields[CONTEXT_TURNS_KEY] = {"previous": [i for i in turns[0] if i not in ids],
                                     "following": [i for i in turns[1] if i not in ids]}
    return fields


def _without_lines(named: str, lines: Sequence[str]) -> str:
    """`named` ("line / line / ...", `build_context`) without each of `lines` (once each)."""
    sep = TURN_SEPARATOR
    for line in lines:
        if named == line:
            return ""
        if named.startswith(line + sep):
            named = named[len(line + sep):]
        elif named.endswith(sep + line):
            named = named[:-len(sep + line)]
        elif sep + line + sep in named:
            named = named.replace(sep + line + sep, sep, 1)
    return named


def with_context(metadata: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """`metadata` with a message's context replaced by `fields` (`context_fields`)."""
    kept = {k: v for k, v in metadata.items()
            if k not in (CONTEXT_KEY, CONTEXT_TURNS_KEY, CONTEXT_WINDOWS_KEY, TURN_INDEX_KEY, POOLING_KEY)}
    return {**kept, **fields}


def session_key(item: MemoryItem) -> tuple[str, str, str]:
    return (item.scope.org_id, item.scope.user_id, str(item.metadata.get("session_id", "")))


def turn_order(item: MemoryItem) -> tuple[int, str, str]:
    seq = item.metadata.get("inbox_seq")
    return (int(seq) if isinstance(seq, int) else 0, item.created_at, item.id)


def contextualise(
    new_items: Mapping[str, MemoryItem],
    stored_tails: Iterable[MemoryItem],
    window: ContextWindow,
) -> tuple[dict[str, MemoryItem], dict[str, dict[str, Any]]]:
    """Give the new message items their context, and say which already stored messages
    (the last turns of a session before this batch) get a new context now that the turns
    answering them arrived.

    `stored_tails`: the stored messages of the sessions touched, at least the last
    `tail_size(window)` of each (fewer stored turns are fine; more are ignored). Returns
    (new items with context, {stored id: its new context fields (`context_fields`)}).
    """
    out = dict(new_items)
    if not window.enabled:
        return out, {}
    fresh = {i for i, it in new_items.items() if it.type == "message"}
    stored: dict[tuple[str, str, str], list[MemoryItem]] = {}
    for item in stored_tails:
        if item.type == "message" and item.id not in fresh:
            stored.setdefault(session_key(item), []).append(item)
    added: dict[tuple[str, str, str], list[MemoryItem]] = {}
    for item_id in fresh:
        added.setdefault(session_key(new_items[item_id]), []).append(new_items[item_id])
    changed: dict[str, dict[str, Any]] = {}
    for key, news in added.items():
        tail = sorted(stored.get(key, []), key=turn_order)[-tail_size(window):] if tail_size(window) else []
        turns = tail + sorted(news, key=turn_order)
        first = _first_index(tail)
        # Only the last `following` stored turns can gain an answer (pooled: the last
        # `size - 1`, whose windows can reach a new turn); older ones keep theirs (their own
        # earlier turns are not loaded, so their context is not rebuilt here).
        later = max(window.following, POOLING.size - 1 if window.vectors == "pooled" else 0)
        rebuild = {t.id for t in tail[max(0, len(tail) - later):]} if later else set()
        for i, turn in enumerate(turns):
            if turn.id in fresh:
                fields = context_fields(turns, i, window, first)
                if fields:
                    out[turn.id] = msgspec.structs.replace(turn, metadata=with_context(turn.metadata, fields))
            elif turn.id in rebuild:
                fields = context_fields(turns, i, window, first)
                if fields and with_context(turn.metadata, fields) != turn.metadata:
                    changed[turn.id] = fields
    return out, changed


def _first_index(tail: Sequence[MemoryItem]) -> int:
    """The session index of tail[0], from the first tail turn that recorded its own (0 when
    none did: the stored turns were contextualised without pooling)."""
    for k, turn in enumerate(tail):
        index = turn.metadata.get(TURN_INDEX_KEY)
        if isinstance(index, int) and not isinstance(index, bool):
            return max(0, index - k)
    return 0


def tail_size(window: ContextWindow) -> int:
    """How many stored turns per session `contextualise` needs: the new turns' previous
    ones, and for each stored turn that gains an answer, its own previous ones (pooled: a
    window reaches `size - 1` turns either way)."""
    size = window.previous + window.following
    return max(size, 2 * (POOLING.size - 1)) if window.vectors == "pooled" else size
