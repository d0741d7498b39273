"""What a merger proposes for a cluster (`MergeDraft`), the `Merger` protocol, and the
deterministic `ExtractiveMerger`: the canonical item's text plus the other members'
sentences not already covered (every other merger's fallback)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

import msgspec

from pipelines.recall.conflicts import (
    NEGATION,
)
from pipelines.recall.lexical import Stems, lemma, words
from pipelines.records import (
    MemoryItem,
    parse_time,
)
from pipelines.settings import Settings

FALLBACK_NAME = "extractive-fallback"
EXTRACTIVE_NAME = "extractive"
# Ties in the "most common type" vote: the more binding kind wins.
TYPE_PRIORITY: tuple[str, ...] = (
    "decision", "constraint", "definition", "fact", "preference", "pattern", "todo",
    "pointer", "summary", "note", "message",
)  # fmt: skip
MAX_TITLE_CHARS = 300  # the policy's hard limit for titles
_COVERED_JACCARD = 0.85  # a sentence this similar (token Jaccard) to a kept one adds nothing


class MergeError(ValueError):
    """Unusable cluster: empty, not MemoryItems, duplicate ids, several owner partitions."""


class MergeDraft(msgspec.Struct, kw_only=True):
    """What a merger proposes for a cluster (before the policy and the item envelope)."""

    title: str
    content: str
    type: str
    tags: list[str] = []
    entities: list[str] = []
    importance: int = 5
    merger: str = EXTRACTIVE_NAME
    fallback_reason: str | None = None


@runtime_checkable
class Merger(Protocol):
    name: str

    def draft(self, cluster: Sequence[MemoryItem]) -> MergeDraft: ...


def canonical_order(cluster: Sequence[MemoryItem]) -> list[MemoryItem]:
    """Highest confidence first, then newest (updated_at), then smallest id."""
    epoch = datetime.min.replace(tzinfo=timezone.utc)

    def key(item: MemoryItem) -> tuple[float, float, str]:
        updated = parse_time(item.updated_at) or epoch
        return (-float(item.confidence), -(updated - epoch).total_seconds(), item.id)

    return sorted(cluster, key=key)


def union_stable(values: Sequence[Sequence[str]]) -> list[str]:
    """Union in first-seen order, case-insensitively de-duplicated (first spelling kept)."""
    seen: dict[str, str] = {}
    for group in values:
        for v in group:
            text = str(v).strip()
            if text and text.lower() not in seen:
                seen[text.lower()] = text
    return list(seen.values())


def majority_type(cluster: Sequence[MemoryItem]) -> str:
    counts = Counter(i.type for i in cluster)
    rank = {t: n for n, t in enumerate(TYPE_PRIORITY)}
    return min(counts, key=lambda t: (-counts[t], rank.get(t, len(rank)), t))


def checked_cluster(cluster: Sequence[MemoryItem]) -> list[MemoryItem]:
    items = list(cluster) if not isinstance(cluster, (str, bytes)) else None
    if not items:
        raise MergeError("a cluster needs at least one MemoryItem")
    for item in items:
        if not isinstance(item, MemoryItem):
            raise MergeError(f"clusters hold MemoryItem records, not {type(item).__name__}")
    ids = [i.id for i in items]
    if len(set(ids)) != len(ids):
        raise MergeError(f"duplicate item ids in cluster: {sorted(i for i in set(ids) if ids.count(i) > 1)}")
    partitions = sorted({i.scope.partition_key() for i in items})
    if len(partitions) > 1:
        raise MergeError(f"a cluster must stay within one owner partition, got {partitions}")
    return items


# -- extractive ------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_SENTENCE_SPLIT = re.compile(r"((?<=[.!?])\s+|\n+)")  # the same, keeping the separators
# Sentences compare as the Snowball stems of their words' lemmas (recall's tokeniser and
# simplemma), so a restatement in another inflection ("In the mornings Priya prefers tea" /
# "Priya prefers tea in the morning") says nothing new. Stopwords stay: "not" is a fact.
_STEMS = Stems(max_memo=50_000, lemmas=True)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text or "") if s.strip()]


def _tokens(text: str) -> frozenset[str]:
    """Lemma stems, except that a word in the past keeps its own form: "Sam worked at Acme"
    is news beside "Sam works at Acme" (the job may have ended), not a restatement."""
    said = words(text or "")
    return frozenset(w if _in_the_past(w) else s for w, s in zip(said, _STEMS(said), strict=True))


def _in_the_past(word: str) -> bool:
    """A word whose lemma is another word and which is no plural or -ing form: "worked",
    "went", "drank" (a plural such as "children" is read alike: it only keeps a sentence)."""
    base = lemma(word)
    return base != word and (word.endswith("ed") or not word.endswith(("s", "ing")))


class ExtractiveMerger:
    """Deterministic merge without a model: the canonical item's text plus every other
    item's sentences not already covered, lossless up to `max_chars`. A later sentence that
    says all a kept one says and more ("Orion metrics are stored in TimescaleDB, per the
    team" after "... in TimescaleDB.") takes its place rather than repeating it."""

    name = EXTRACTIVE_NAME

    def __init__(self, max_chars: int = Settings().max_content_chars) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise ValueError(f"max_chars must be a positive int, got {max_chars!r}")
        self.max_chars = max_chars

    def draft(self, cluster: Sequence[MemoryItem]) -> MergeDraft:
        items = canonical_order(checked_cluster(cluster))
        head = items[0]
        # The head's text as it was written: sentences at even places, what separated them
        # (spaces, line breaks) at odd ones; later sentences are appended after a space.
        parts = _SENTENCE_SPLIT.split(head.content.strip())
        kept = {n: _tokens(part) for n, part in enumerate(parts) if n % 2 == 0 and part.strip()}
        covered = set(_tokens(head.content) | _tokens(head.title))
        for item in items[1:]:
            for s in _sentences(item.content):
                toks = _tokens(s)
                if _is_covered(toks, covered, list(kept.values())):
                    continue
                length = sum(map(len, parts))
                wider = next((n for n, k in kept.items() if k < toks and _negated(s) == _negated(parts[n])), None)
                if wider is not None and length - len(parts[wider]) + len(s) <= self.max_chars:
                    parts[wider] = s
                    kept[wider] = toks
                elif wider is None and length + len(s) + 1 <= self.max_chars:
                    parts.extend((" ", s) if length else ("", s))
                    kept[len(parts) - 1] = toks
                else:
                    continue  # a shorter later sentence may still fit
                covered |= toks
        return MergeDraft(
            title=head.title,
            content="".join(parts).strip(),
            type=majority_type(items),
            tags=union_stable([i.tags for i in items]),
            entities=union_stable([i.entities for i in items]),
            importance=max(i.importance for i in items),
            merger=EXTRACTIVE_NAME,
        )


def _is_covered(toks: frozenset[str], covered: set[str], kept: list[frozenset[str]]) -> bool:
    """Nothing new: every word already said, or a near-copy (token Jaccard >= 0.85) of a
    kept sentence whose only new words carry no digits (a different time or amount is a
    new fact, kept)."""
    if toks <= covered:
        return True
    if any(c.isdigit() for t in toks - covered for c in t):
        return False
    return any(_jaccard(toks, k) >= _COVERED_JACCARD for k in kept)


def _negated(sentence: str) -> bool:
    return NEGATION.search(sentence) is not None


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0
