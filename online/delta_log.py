"""The delta: writes acknowledged since the published snapshot, searchable before the next
snapshot holds them.

They are the inbox events after the snapshot watermark, read by sequence number before each
request and folded with `pipelines.forgetting.fold_served` (`fold_events`, the same fold the pipeline
uses, so ids agree), embedded once per item version and searched exactly. Every worker
process reads the same inbox, so a write through one is recalled through another on the
next request. The worker that accepts a write embeds the items it makes before appending
it and shares the vectors through the inbox (`DeltaLog.share`, keyed by model and text),
so the other workers fold the write without embedding it again. When a snapshot with a
higher watermark lands the delta is rebuilt from the events after it: what the snapshot
now contains drops out of the overlay.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from itertools import chain
from types import MappingProxyType
from typing import Mapping

import numpy as np

from online.snapshot_holder import SnapshotState
from pipelines.embedders import Embedder, EmbedderUnavailable
from pipelines.forgetting import fold_served
from pipelines.inbox import InboxBackend, InboxError
from pipelines.item_history import last_published
from pipelines.materialize import fold_events, item_ids_touched
from pipelines.message_context import embedding_hash, item_vectors
from pipelines.recall.corpus import MemoryCorpus
from pipelines.records import Event, MemoryItem, sha256_text

log = logging.getLogger("loci.online")

EMBED_RETRY_S = 5.0  # how often a delta left unembedded (embedder down) is retried
FREEZE_SEGMENT_ITEMS = 256
# Vectors (and embedding hashes) of item versions the delta no longer holds are dropped
# once there are more than the delta's items plus this many (`DeltaLog._drop_stale`):
# not on every fold, which then touches only the items it makes.
STALE_KEPT = 256
POOLED_KEPT = 256  # pooled windows remembered between a write's `share` and its fold
# Vectors `embed_shared` made or read lately, kept in the process: a proposal is embedded to
# find its nearest claims, again for its cosine with each (`MemoryService.cosine_to`), and
# its item once more when the write lands (`share`): one inbox read, not three.
RECENT_VECTORS = 64
HISTORY_KINDS = frozenset({"turn", "proposal", "memory.write", "memory.update", "memory.link",
                           "memory.palace.assign", "memory.review"})


@dataclass(frozen=True)
class DeltaState:
    """Items created or changed by inbox events after the snapshot watermark.

    Searched as a few segments, oldest first, sizes roughly halving (an LSM-style log): a
    new batch of items is a small segment of its own, merged with the one before it once it
    is at least half that one's size. A write then costs a small rebuild (amortised
    O(log n) per item) instead of rebuilding the whole delta, which grows until the next
    snapshot. A later segment's copy of an item shadows earlier ones (RecallEngine)."""

    items: Mapping[str, MemoryItem]
    segments: tuple[MemoryCorpus, ...]
    max_seq: int  # highest inbox seq folded in (>= the snapshot watermark)
    touches: Mapping[str, tuple[Event, ...]]  # item id -> history events after the watermark
    events: int = 0  # events folded since the watermark
    embed_problem: str | None = None
    inbox_problem: str | None = None  # the inbox ends before the snapshot's watermark

    @classmethod
    def empty(cls, from_seq: int) -> "DeltaState":
        return cls(MappingProxyType({}), (), from_seq, MappingProxyType({}))


class DeltaLog:
    """Builds `DeltaState`s from the inbox: from scratch after a snapshot, or by folding the
    events that arrived since the last one. Keeps one vector per item and embedding inputs
    (`embedding_hash`: a new context after a snapshot means a new vector; the embedder runs
    once per version). Not thread-safe: the service folds under its own lock."""

    def __init__(self, inbox: InboxBackend, embedder: Embedder) -> None:
        self.inbox = inbox
        self.embedder = embedder
        self._vector_cache: dict[tuple[str, str], np.ndarray] = {}
        # item id -> (the version hashed, its `embedding_hash`): a fold hashes only the
        # versions it has not seen (every fold used to hash the whole delta: ~3 us an item).
        self._hashes: dict[str, tuple[MemoryItem, str]] = {}
        # Pooled windows read by `share` are read again by the fold that follows: kept for it.
        self._pooled: OrderedDict[tuple[str, ...], tuple[np.ndarray, list[np.ndarray]]] = OrderedDict()
        self._pool_model = (getattr(embedder, "pool_windows_online", None)
                            or getattr(embedder, "pool_windows", None))
        self._embed_retry_at = time.monotonic()
        # Shared vectors are keyed by the model `embed_online` runs and the text.
        self._model = str(getattr(embedder, "online_name", None) or embedder.name)
        # `embed_shared` runs in request threads (a proposal's neighbours), unlike the fold
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()
        # Vectors `embed_shared` made in a write (this thread), kept to be shared in the
        # write's own append (`deferred_shares`) instead of a commit of their own.
        self._deferred = threading.local()

    @contextmanager
    def deferred_shares(self) -> Iterator[dict[str, bytes]]:
        """While open, the vectors `embed_shared` makes on this thread are put in the dict
        yielded (key -> bytes) instead of being shared at once: a write hands them to its
        append (`InboxBackend.append_sharing`), one transaction. Re-entrant (the outermost
        owns the dict); what is still in it when the outermost closes is shared then."""
        pending = getattr(self._deferred, "pending", None)
        if pending is not None:
            yield pending
            return
        pending = self._deferred.pending = {}
        try:
            yield pending
        finally:
            self._deferred.pending = None
            if pending:
                self._share_now(pending)

    def _share_now(self, vectors: dict[str, bytes]) -> None:
        try:
            self.inbox.share_vectors(vectors)
        except InboxError as exc:
            log.warning("could not share delta vectors: %s", exc)

    def share(self, snap: SnapshotState, delta: DeltaState, events: Sequence[Event]) -> None:
        """Before `events` are appended: embed the items they will make and share the
        vectors through the inbox, so every worker folding them (this one included) reads
        them instead of embedding. Never fails the write: an embedder that is down or a
        vector that cannot be shared leaves the embedding to the fold, as without sharing."""
        if not all(isinstance(ev, Event) for ev in events):
            return  # the append refuses them
        known = delta.items
        try:
            overlay = fold_events(events, base=lambda i: known.get(i) or snap.get(i))
            if not overlay.items:
                return
            made = {**known, **overlay.items}
            item_vectors(list(overlay.items.values()), self.embed_shared, lambda i: made.get(i) or snap.get(i),
                         pool=self._pool)
        except EmbedderUnavailable:
            return
        except Exception:  # an optimisation: the write goes ahead whatever happens here
            log.warning("could not share the vectors of a write; the fold embeds them", exc_info=True)

    @property
    def _pool(self):
        return self._pool_remembered if self._pool_model is not None else None

    def _pool_remembered(self, windows: list[list[str]]) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """The embedder's online window pooling (`pool_windows_online`; a message edited
        after it was consolidated is read in its pooled windows), each window read once per
        process while it is among the last POOLED_KEPT."""
        keys = [tuple(parts) for parts in windows]
        todo = list(dict.fromkeys(k for k in keys if k not in self._pooled))
        if todo:
            assert self._pool_model is not None
            self._pooled.update(zip(todo, self._pool_model([list(k) for k in todo])))
        for k in keys:
            self._pooled.move_to_end(k)
        out = [self._pooled[k] for k in keys]
        while len(self._pooled) > POOLED_KEPT:
            self._pooled.popitem(last=False)
        return out

    def embed_shared(self, texts: list[str]) -> np.ndarray:
        """`embed_online` for the delta's texts: a vector another worker shared for the same
        model and text is reused, a new one is shared; one made or read lately in this process
        (`RECENT_VECTORS`) is taken without reading the inbox."""
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        keys = [sha256_text(f"{self._model}\n{text}") for text in texts]
        with self._recent_lock:
            found = {k: self._recent[k] for k in keys if k in self._recent}
        if len(found) == len(set(keys)):
            return np.stack([found[k] for k in keys])
        try:
            stored = self.inbox.shared_vectors([k for k in keys if k not in found])
        except InboxError as exc:
            log.warning("shared vectors unreadable (%s); embedding", exc)
            stored = {}
        dim = int(self.embedder.dim) if stored else 0
        found |= {k: np.frombuffer(v, dtype=np.float32) for k, v in stored.items() if len(v) == 4 * dim}
        missing = [i for i, k in enumerate(keys) if k not in found]
        fresh = (np.asarray(self.embedder.embed_online([texts[i] for i in missing]), dtype=np.float32)
                 if missing else None)
        if fresh is not None:
            shared = {keys[i]: fresh[j].tobytes() for j, i in enumerate(missing)}
            pending = getattr(self._deferred, "pending", None)
            if pending is not None:
                pending.update(shared)
            else:
                self._share_now(shared)
        if not found:
            out = fresh
        else:
            out = np.empty((len(texts), fresh.shape[1] if fresh is not None else dim), dtype=np.float32)
            for i, k in enumerate(keys):
                if k in found:
                    out[i] = found[k]
            if fresh is not None:
                out[missing] = fresh
        self._remember(keys, out)
        return out

    def _remember(self, keys: list[str], vectors: np.ndarray) -> None:
        """Keep the last RECENT_VECTORS of `keys` (a fold of thousands keeps its last few)."""
        with self._recent_lock:
            for k, vector in zip(keys[-RECENT_VECTORS:], vectors[-RECENT_VECTORS:]):
                self._recent[k] = vector
                self._recent.move_to_end(k)
            while len(self._recent) > RECENT_VECTORS:
                self._recent.popitem(last=False)

    def rebuild(self, snap: SnapshotState) -> DeltaState:
        """Replay every event after the snapshot's watermark (start-up and after a swap)."""
        delta = DeltaState.empty(snap.watermark)
        top = self.inbox.max_seq()
        if top < snap.watermark:  # seqs never go back: another inbox than the snapshot's
            problem = (f"the inbox ends at seq {top}, before the snapshot's watermark {snap.watermark}: it is "
                       "not the inbox this snapshot was made from (a new inbox_url?), and writes are not "
                       f"recalled until seq {snap.watermark + 1}; copy the old inbox into it (loci inbox-copy, "
                       "docs/deploy.md)")
            log.error(problem)
            delta = replace(delta, inbox_problem=problem)
        events = self.inbox.read_after(snap.watermark)
        return self.fold(snap, delta, events) if events else delta

    def catch_up(self, snap: SnapshotState, delta: DeltaState) -> DeltaState | None:
        """The delta with the events after `delta.max_seq` folded in, or with its vectors
        once an embedder that was down answers again; None when nothing changed."""
        events = self.inbox.read_after(delta.max_seq)
        if events:
            return self.fold(snap, delta, events)
        if delta.embed_problem and time.monotonic() - self._embed_retry_at > EMBED_RETRY_S:
            # The embedder was down when the delta was built: try again now and then.
            self._embed_retry_at = time.monotonic()
            items = list(delta.items.values())
            corpus, problem = self._segment(items, delta.items, snap)
            if problem is None:
                return replace(delta, segments=(corpus,), embed_problem=None)
        return None

    def fold(self, snap: SnapshotState, prev: DeltaState, events: Sequence[Event]) -> DeltaState:
        """Fold new events on top of the previous delta. Most requests only add a `usage` or
        `audit` event: then nothing is copied and the corpus is reused as it is."""
        known = prev.items
        # A claim forgotten: the turns that said it, and their neighbours' contexts, forget it now.
        overlay, made = fold_served(events, lambda i: known.get(i) or snap.get(i),
                                    lambda: chain(snap.loaded.items if snap.loaded else (), known.values()),
                                    lambda i: last_published(snap.loaded, i),
                                    lambda: ((it.id, link.to, link.rel) for it in known.values() for link in it.links))
        touched = [(item_id, ev) for ev in events if ev.kind in HISTORY_KINDS
                   for item_id in item_ids_touched(ev)]
        touches = prev.touches
        if touched:
            grown = dict(prev.touches)  # only the touched items' tuples are rebuilt
            for item_id, ev in touched:
                grown[item_id] = (*grown.get(item_id, ()), ev)
            touches = MappingProxyType(grown)
        max_seq = max(prev.max_seq, overlay.max_seq, events[-1].seq)
        if not made:  # usage / audit / rejections only: the corpus is unchanged
            return DeltaState(prev.items, prev.segments, max_seq, touches, prev.events + len(events),
                              prev.embed_problem, prev.inbox_problem)
        items = {**prev.items, **made}
        segment, problem = self._segment([items[i] for i in made], items, snap)
        segments = [*prev.segments, segment]
        while len(segments) > 1 and 2 * segments[-1].n >= segments[-2].n:
            merged_ids = dict.fromkeys(it.id for seg in segments[-2:] for it in seg.items)
            merged, merge_problem = self._segment([items[i] for i in merged_ids], items, snap)
            segments[-2:] = [merged]
            problem = problem or merge_problem
            if merged.n >= FREEZE_SEGMENT_ITEMS:
                # A big segment lives until the next snapshot: out of the cyclic GC's full
                # passes too (the swap unfreezes and collects everything).
                gc.freeze()
        if problem is None and prev.embed_problem and any(seg.vectors is None and seg.n for seg in segments):
            problem = prev.embed_problem  # an older segment is still searched lexically only
        return DeltaState(MappingProxyType(items), tuple(segments), max_seq, touches,
                          prev.events + len(events), problem, prev.inbox_problem)

    def _embedding_hash(self, item: MemoryItem) -> str:
        """`embedding_hash(item)`, computed once per item version (items are replaced, never
        changed in place, when a fold makes a new version)."""
        known = self._hashes.get(item.id)
        if known is not None and known[0] is item:
            return known[1]
        digest = embedding_hash(item)
        self._hashes[item.id] = (item, digest)
        return digest

    def _drop_stale(self, every: Mapping[str, MemoryItem]) -> None:
        """Forget the vectors and hashes of item versions no longer in the delta (older
        versions of updated items, items a snapshot now holds). Only memory: a vector is
        looked up by its inputs' hash, so a stale one is never read for another input."""
        live = {(item_id, self._embedding_hash(it)) for item_id, it in every.items()}
        for stale in [k for k in self._vector_cache if k not in live]:
            del self._vector_cache[stale]
        self._hashes = {item_id: self._hashes[item_id] for item_id in every}

    def _segment(self, items: list[MemoryItem], every: Mapping[str, MemoryItem],
                 snap: SnapshotState) -> tuple[MemoryCorpus, str | None]:
        """Embed what is new (once per item version) and build an exact corpus of `items`
        (one delta segment; `every` is the whole delta, whose vectors stay cached). A vector
        is made as the pipeline makes it (`item_vectors`: a message with recorded context
        turns composed with theirs, found in the delta or the snapshot). When the embedder
        is down the delta is still searchable lexically. `items` are among `every`."""
        keys = [(it.id, self._embedding_hash(it)) for it in items]
        missing = [(k, it) for k, it in zip(keys, items) if k not in self._vector_cache]
        problem = None
        if missing:
            try:
                # Transient vectors (the snapshot replaces them): the online model.
                vecs = item_vectors([it for _, it in missing], self.embed_shared,
                                    lambda i: every.get(i) or snap.get(i), pool=self._pool)
                for (key, _), vec in zip(missing, vecs):
                    self._vector_cache[key] = np.asarray(vec, dtype=np.float32)
            except EmbedderUnavailable as exc:
                problem = f"delta not embedded ({exc}); searched lexically"
                log.warning(problem)
        if problem is None:
            if max(len(self._vector_cache), len(self._hashes)) > 2 * len(every) + STALE_KEPT:
                self._drop_stale(every)
            matrix = (np.stack([self._vector_cache[k] for k in keys])
                      if keys else np.zeros((0, self.embedder.dim), np.float32))
            return MemoryCorpus(items, matrix, source="delta"), None
        return MemoryCorpus(items, None, source="delta"), problem
