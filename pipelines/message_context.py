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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import msgspec

from pipelines.records import MemoryItem, sha256_text

CONTEXT_KEY = "context"
NEIGHBOUR_MAX_CHARS = 400  # a long neighbour would drown the turn itself in its vector


@dataclass(frozen=True)
class ContextWindow:
    """How much conversation a message's retrieval context holds."""

    previous: int = 2
    following: int = 1
    date: bool = True

    @property
    def enabled(self) -> bool:
        return self.previous > 0 or self.following > 0 or self.date


def context_of(item: MemoryItem) -> str:
    value = item.metadata.get(CONTEXT_KEY) if item.type == "message" else None
    return value if isinstance(value, str) else ""


def embedding_text(item: MemoryItem) -> str:
    """The text an item's vector is made from, in the pipeline and in the service alike:
    title, content, tags, and for a message its conversational context. The stored hash is
    `embedding_hash(item)`, so a tag-only change is not re-embedded."""
    text = f"{item.title}\n{item.content}"
    if item.tags:
        text += "\ntags: " + ", ".join(item.tags)
    context = context_of(item)
    if context:
        text += "\n" + context
    return text


def lexical_text(item: MemoryItem) -> str:
    """What BM25 indexes: title, content, tags, entities and a message's context."""
    return " ".join([item.title, item.content, " ".join(item.tags), " ".join(item.entities), context_of(item)])


def embedding_hash(item: MemoryItem) -> str:
    """Which text a stored vector was made from: the content hash, extended by the context
    for a message that has one (so a message is re-embedded when its answer arrives)."""
    context = context_of(item)
    return sha256_text(f"{item.content_hash}\n{context}") if context else item.content_hash


def _said_on(iso: str | None) -> str | None:
    if not iso:
        return None
    try:
        return datetime.fromisoformat(iso).strftime("%-d %B %Y")
    except ValueError:
        return None


def _line(item: MemoryItem) -> str:
    content = " ".join(item.content.split())
    if len(content) > NEIGHBOUR_MAX_CHARS:
        content = content[:NEIGHBOUR_MAX_CHARS].rstrip() + "…"
    return f"{item.title}: {content}"


def build_context(turns: Sequence[MemoryItem], i: int, window: ContextWindow) -> str:
    """The retrieval context of turns[i], given its session's turns in order."""
    parts = []
    before = [_line(t) for t in turns[max(0, i - window.previous):i]] if window.previous else []
    after = [_line(t) for t in turns[i + 1:i + 1 + window.following]] if window.following else []
    if before:
        parts.append("(in reply to " + " / ".join(before) + ")")
    if after:
        parts.append("(answered by " + " / ".join(after) + ")")
    said = _said_on(turns[i].created_at) if window.date else None
    if said:
        parts.append(f"(said on {said})")
    return "\n".join(parts)


def session_key(item: MemoryItem) -> tuple[str, str, str]:
    return (item.scope.org_id, item.scope.user_id, str(item.metadata.get("session_id", "")))


def turn_order(item: MemoryItem) -> tuple[int, str, str]:
    seq = item.metadata.get("inbox_seq")
    return (int(seq) if isinstance(seq, int) else 0, item.created_at, item.id)


def contextualise(
    new_items: Mapping[str, MemoryItem],
    stored_tails: Iterable[MemoryItem],
    window: ContextWindow,
) -> tuple[dict[str, MemoryItem], dict[str, str]]:
    """Give the new message items their context, and say which already stored messages
    (the last turns of a session before this batch) get a new context now that the turns
    answering them arrived.

    `stored_tails`: the stored messages of the sessions touched, at least the last
    `tail_size(window)` of each (fewer stored turns are fine; more are ignored). Returns
    (new items with context, {stored id: new context}).
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
    changed: dict[str, str] = {}
    for key, news in added.items():
        tail = sorted(stored.get(key, []), key=turn_order)[-tail_size(window):] if tail_size(window) else []
        turns = tail + sorted(news, key=turn_order)
        # Only the last `following` stored turns can gain an answer; older ones keep theirs
        # (their own earlier turns are not loaded, so their context is not rebuilt here).
        rebuild = {t.id for t in tail[len(tail) - window.following:]} if window.following else set()
        for i, turn in enumerate(turns):
            if turn.id in fresh:
                context = build_context(turns, i, window)
                meta = {**turn.metadata, CONTEXT_KEY: context} if context else turn.metadata
                out[turn.id] = msgspec.structs.replace(turn, metadata=meta)
            elif turn.id in rebuild:
                context = build_context(turns, i, window)
                if context != context_of(turn):
                    changed[turn.id] = context
    return out, changed


def tail_size(window: ContextWindow) -> int:
    """How many stored turns per session `contextualise` needs: the new turns' previous
    ones, and for each stored turn that gains an answer, its own previous ones."""
    return window.previous + window.following
