"""What the service serves: the published snapshot, the delta of fresh inbox events, and the
recall engine over both. Usable without HTTP (`MemoryService(settings).recall(...)`).

The service never opens the DuckDB warehouse (only Dagster runs write it). It answers from:

- the snapshot named by `<snapshots>/CURRENT` (FAISS + items), loaded at start-up and
  hot-swapped when CURRENT changes. The check is cheap (a tiny file read, at most every
  `check_interval_ms`) and runs before a request; the new snapshot is loaded off to the
  side, then one reference is replaced, so in-flight requests finish on the corpus they
  started with and no request waits for a load;
- the delta: inbox events after the snapshot watermark, read by sequence number before each
  request, folded with `pipelines.materialize.fold_events` (the same fold the pipeline
  uses, so ids agree), embedded once per item version and searched exactly. Every worker
  process reads the same inbox, so a write through one is recalled through another on the
  next request. When a snapshot with a higher watermark lands the delta is rebuilt from
  the events after it: what the snapshot now contains drops out of the overlay.

A missing, corrupt or wrong-embedder snapshot never takes the service down: it serves the
delta and reports the problem (`report()`, `/readyz`, `/v1/stats`).
"""

from __future__ import annotations

import atexit
import gc
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import msgspec
import numpy as np

from pipelines.capture import CaptureResult, capture_turn
from pipelines.consolidate import embed_text
from pipelines.embedders import Embedder, EmbedderUnavailable, make_embedder
from pipelines.inbox import Inbox
from pipelines.materialize import fold_events, message_item_id, proposal_item_id
from pipelines.records import Event, Identity, MemoryItem, ProposedItem, sha256_text, stable_id
from pipelines.recall.corpus import MemoryCorpus
from pipelines.recall.conflicts import find_conflicts
from pipelines.recall.engine import RecallEngine, RecallResult
from pipelines.recall.lexical import normalise_label
from pipelines.settings import Settings
from pipelines.snapshot import CURRENT_FILE, LoadedSnapshot, load_latest_good

log = logging.getLogger("loci.online")

DEFAULT_CHECK_INTERVAL_MS = 250
EMBED_RETRY_S = 5.0  # how often a delta left unembedded (embedder down) is retried
HISTORY_KINDS = frozenset({"turn", "proposal", "memory.write", "memory.update", "memory.link"})


def embedding_text(item: MemoryItem) -> str:
    """What gets embedded for a delta item: exactly what the pipeline embeds for the
    snapshot (`pipelines.consolidate.embed_text`), so both corpora score alike."""
    return embed_text(item)


def item_ids_touched(event: Event) -> list[str]:
    """Ids of the items an event creates or changes (for an item's history)."""
    p = event.payload
    if event.kind == "turn" and p.get("turn_id"):
        return [message_item_id(p["turn_id"])]
    if event.kind == "proposal":
        verdict = p.get("verdict") or {}
        return [] if verdict.get("action") == "reject" else [proposal_item_id(event.event_id)]
    if event.kind == "memory.write":
        item = p.get("item") or {}
        return [item["id"]] if isinstance(item, dict) and item.get("id") else []
    if event.kind == "memory.update" and p.get("item_id"):
        return [p["item_id"]]
    if event.kind == "memory.link":
        return [x for x in (p.get("src_id"), p.get("dst_id")) if isinstance(x, str)]
    return []


# -- immutable serving state ------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotState:
    """The published snapshot being served (or none), and what loading it reported."""

    loaded: LoadedSnapshot | None
    corpus: MemoryCorpus
    problems: tuple[str, ...] = ()
    marker: str | None = None  # CURRENT's contents when this state was decided

    @property
    def version(self) -> str | None:
        return self.loaded.version if self.loaded else None

    @property
    def watermark(self) -> int:
        return self.loaded.manifest.watermark if self.loaded else 0

    def get(self, item_id: str) -> MemoryItem | None:
        if self.loaded is None:
            return None
        row = self.loaded.row_of.get(item_id)
        return None if row is None else self.loaded.items[row]



FREEZE_SEGMENT_ITEMS = 256
_UNFREEZE_AT_EXIT = False


def freeze_long_lived() -> None:
    """Move what is alive now (the snapshot just loaded: its items, corpus, BM25 index) out
    of the cyclic GC's reach until the next swap. Full collections otherwise walk every one
    of those objects under the GIL: measured 150-250 ms pauses every ~100 writes at 10k
    items, the whole p99 tail of a mixed load. Refcounting still frees them after a swap;
    objects in reference cycles are collected at the next swap (which unfreezes first), so a
    snapshot an in-flight request still held at a swap lingers one snapshot at most."""
    global _UNFREEZE_AT_EXIT
    if not _UNFREEZE_AT_EXIT:
        # A process that never closes its service (a CLI recall) must still let the final
        # collection see everything, or extension modules report "leaked" objects at exit.
        atexit.register(gc.unfreeze)
        _UNFREEZE_AT_EXIT = True
    gc.unfreeze()
    gc.collect()
    gc.freeze()

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

    @classmethod
    def empty(cls, from_seq: int) -> "DeltaState":
        return cls(MappingProxyType({}), (), from_seq, MappingProxyType({}))


@dataclass(frozen=True)
class View:
    """One consistent pair (snapshot, delta). A request takes one view and keeps it."""

    snap: SnapshotState
    delta: DeltaState
    loaded_at: float = field(default_factory=time.time)

    @property
    def corpora(self) -> list[MemoryCorpus]:
        # Later corpora shadow earlier ones: a delta update hides the snapshot version.
        return [self.snap.corpus, *self.delta.segments]

    def get(self, item_id: str) -> MemoryItem | None:
        return self.delta.items.get(item_id) or self.snap.get(item_id)

    def source_of(self, item_id: str) -> str | None:
        if item_id in self.delta.items:
            return "delta"
        return "snapshot" if self.snap.get(item_id) is not None else None

    def visible_items(self, who: Identity) -> list[MemoryItem]:
        """Every active item `who` may see (delta versions win), in a stable order."""
        out: dict[str, MemoryItem] = {}
        for corpus in self.corpora:
            if corpus.n == 0:
                continue
            for row in np.flatnonzero(corpus.visible_mask(who)):
                item = corpus.items[int(row)]
                out[item.id] = item
        for item_id, item in self.delta.items.items():  # a delta version may hide the snapshot's
            if not (item.active and item.scope.visible_to(who)):
                out.pop(item_id, None)
        return sorted(out.values(), key=lambda it: it.id)


# -- the service ---------------------------------------------------------------------------------


class MemoryService:
    """Snapshot holder + delta overlay + recall engine, thread-safe, no HTTP.

    `embedder` defaults to `make_embedder(settings)`; `policy` to `pipelines.policy.Policy`.
    `check_interval_ms`: how often (at most) a request looks at CURRENT. With
    `swap_in_background` (default) a changed CURRENT is loaded on a side thread while
    requests keep being answered from the current view; `reload()` loads synchronously.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        embedder: Embedder | None = None,
        policy: Any | None = None,
        check_interval_ms: float = DEFAULT_CHECK_INTERVAL_MS,
        swap_in_background: bool = True,
    ) -> None:
        from pipelines.policy import Policy  # heavy rules; imported where needed

        self.settings = settings or Settings()
        self.embedder = embedder or make_embedder(self.settings)
        self.policy = policy or Policy(self.settings)
        self.engine = RecallEngine(self.settings, self.embedder)
        self.snapshots_root = Path(self.settings.snapshots_path)
        self.inbox = Inbox(self.settings.inbox_path)
        self.check_interval_s = max(0.0, float(check_interval_ms) / 1000.0)
        self._vector_cache: dict[tuple[str, str], np.ndarray] = {}
        self._delta_lock = threading.Lock()  # one fold at a time; never held during a load
        self._swap_lock = threading.Lock()  # one snapshot load at a time
        self._last_check = 0.0
        self.swap_in_background = swap_in_background
        self._swap_thread: threading.Thread | None = None
        self._embed_retry_at = time.monotonic()
        self.started_at = time.time()
        snap = self._load_snapshot(previous=None, marker=self._read_marker())
        self._view = View(snap, self._rebuild_delta(snap))
        freeze_long_lived()
        self._last_check = time.monotonic()

    # -- views -----------------------------------------------------------------------------

    @property
    def current(self) -> View:
        """The view being served right now, without checking for anything new."""
        return self._view

    def view(self) -> View:
        """Check (throttled) for a new snapshot, fold new inbox events, return the view."""
        self._maybe_swap()
        self._catch_up()
        return self._view

    def reload(self) -> View:
        """Check CURRENT now (not throttled) and retry a snapshot that failed before."""
        self._maybe_swap(force=True)
        self._catch_up()
        return self._view

    def close(self) -> None:
        self.inbox.close()
        gc.unfreeze()  # let the interpreter's final collection see everything again

    def warm(self) -> list[str]:
        """Load the embedding model now (one tiny embed) instead of on the first request.
        Returns problems (an unreachable embedder is reported, not raised)."""
        try:
            self.embedder.embed(["warm-up"])
            online = getattr(self.embedder, "embed_online", None)
            if online is not None:
                online(["warm-up"])  # builds the int8 copy, if configured
        except EmbedderUnavailable as exc:
            log.warning("embedder not available at start-up: %s", exc)
            return [str(exc)]
        return []

    # -- snapshot ----------------------------------------------------------------------------

    def _read_marker(self) -> str | None:
        """CURRENT's contents (a few bytes): the cheap "has a new snapshot landed?" check."""
        try:
            return (self.snapshots_root / CURRENT_FILE).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            return f"unreadable:{exc}"

    def _load_snapshot(self, previous: SnapshotState | None, marker: str | None) -> SnapshotState:
        started = time.perf_counter()
        loaded, problems = load_latest_good(self.snapshots_root, expected_embedder=self.embedder.name)
        if previous is not None and previous.loaded is not None:
            if loaded is None or loaded.version < previous.loaded.version:
                # CURRENT names something unusable: keep serving what we have (never go back).
                kept = tuple(dict.fromkeys([*problems, f"kept serving snapshot {previous.version}"]))
                return SnapshotState(previous.loaded, previous.corpus, kept, marker)
            if loaded.version == previous.loaded.version:
                return SnapshotState(previous.loaded, previous.corpus, tuple(problems), marker)
        if loaded is None:
            if problems:
                log.warning("no usable snapshot; serving the inbox delta only: %s", "; ".join(problems))
            return SnapshotState(None, MemoryCorpus.empty("snapshot"), tuple(problems), marker)
        # Build the lexical index now (on the loading thread), not on the first request.
        corpus = MemoryCorpus(loaded.items, loaded.vectors, loaded.index, source="snapshot").warm()
        log.info("loaded snapshot %s (%d items, watermark %d) in %.0f ms", loaded.version,
                 len(loaded.items), loaded.manifest.watermark, 1000 * (time.perf_counter() - started))
        return SnapshotState(loaded, corpus, tuple(problems), marker)

    def _maybe_swap(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_check < self.check_interval_s:
            return
        self._last_check = now
        marker = self._read_marker()
        if not force and marker == self._view.snap.marker:
            return
        if force:
            with self._swap_lock:
                self._swap(marker, force=True)
            return
        # A load is already under way: keep serving the current view, don't queue up.
        if not self._swap_lock.acquire(blocking=False):
            return
        if not self.swap_in_background:
            try:
                self._swap(marker)
            finally:
                self._swap_lock.release()
            return

        def work() -> None:
            try:
                self._swap(marker)
            except Exception:  # a failed load must never kill the service; next check retries
                log.exception("snapshot swap failed")
            finally:
                self._swap_lock.release()

        # Load off to the side: the request that noticed the change is not held up either.
        self._swap_thread = threading.Thread(target=work, name="loci-snapshot-swap", daemon=True)
        self._swap_thread.start()

    def _swap(self, marker: str | None, force: bool = False) -> None:
        """Load what CURRENT names (caller holds the swap lock) and publish the new view."""
        current = self._view.snap
        if not force and marker == current.marker:
            return
        fresh = self._load_snapshot(current, marker)
        changed = fresh.loaded is not current.loaded
        with self._delta_lock:
            delta = self._view.delta
            if changed:
                delta = self._rebuild_delta(fresh)
            self._view = View(fresh, delta)  # the atomic swap: one reference
        if changed:
            del current, fresh, delta  # not kept alive (and frozen) by this frame
            freeze_long_lived()

    def wait_for_swap(self, timeout_s: float = 10.0) -> View:
        """Wait until a background snapshot load (if any) has finished; return the view."""
        thread = self._swap_thread
        if thread is not None:
            thread.join(timeout_s)
        return self._view

    # -- delta -------------------------------------------------------------------------------

    def _rebuild_delta(self, snap: SnapshotState) -> DeltaState:
        """Replay every event after the snapshot's watermark (start-up and after a swap)."""
        delta = DeltaState.empty(snap.watermark)
        events = self.inbox.read_after(snap.watermark)
        return self._fold(snap, delta, events) if events else delta

    def _catch_up(self) -> None:
        with self._delta_lock:
            view = self._view
            events = self.inbox.read_after(view.delta.max_seq)
            if events:
                self._view = View(view.snap, self._fold(view.snap, view.delta, events), view.loaded_at)
            elif view.delta.embed_problem and time.monotonic() - self._embed_retry_at > EMBED_RETRY_S:
                # The embedder was down when the delta was built: try again now and then.
                self._embed_retry_at = time.monotonic()
                items = list(view.delta.items.values())
                corpus, problem = self._delta_corpus(items, items)
                if problem is None:
                    self._view = View(view.snap, replace(view.delta, segments=(corpus,), embed_problem=None),
                                      view.loaded_at)

    def _fold(self, snap: SnapshotState, prev: DeltaState, events: Sequence[Event]) -> DeltaState:
        """Fold new events on top of the previous delta. Most requests only add a `usage` or
        `audit` event: then nothing is copied and the corpus is reused as it is."""
        known = prev.items
        overlay = fold_events(events, base=lambda i: known.get(i) or snap.get(i))
        touched = [(item_id, ev) for ev in events if ev.kind in HISTORY_KINDS
                   for item_id in item_ids_touched(ev)]
        touches = prev.touches
        if touched:
            grown = {k: list(v) for k, v in prev.touches.items()}
            for item_id, ev in touched:
                grown.setdefault(item_id, []).append(ev)
            touches = MappingProxyType({k: tuple(v) for k, v in grown.items()})
        max_seq = max(prev.max_seq, overlay.max_seq, events[-1].seq)
        if not overlay.items:  # usage / audit / rejections only: the corpus is unchanged
            return DeltaState(prev.items, prev.segments, max_seq, touches, prev.events + len(events),
                              prev.embed_problem)
        items = {**prev.items, **overlay.items}
        every = list(items.values())
        segment, problem = self._delta_corpus([items[i] for i in overlay.items], every)
        segments = [*prev.segments, segment]
        while len(segments) > 1 and 2 * segments[-1].n >= segments[-2].n:
            merged_ids = dict.fromkeys(it.id for seg in segments[-2:] for it in seg.items)
            merged, merge_problem = self._delta_corpus([items[i] for i in merged_ids], every)
            segments[-2:] = [merged]
            problem = problem or merge_problem
            if merged.n >= FREEZE_SEGMENT_ITEMS:
                # A big segment lives until the next snapshot: out of the cyclic GC's full
                # passes too (the swap unfreezes and collects everything).
                gc.freeze()
        if problem is None and prev.embed_problem and any(seg.vectors is None and seg.n for seg in segments):
            problem = prev.embed_problem  # an older segment is still searched lexically only
        return DeltaState(MappingProxyType(items), tuple(segments), max_seq, touches,
                          prev.events + len(events), problem)

    def _delta_corpus(self, items: list[MemoryItem], every: list[MemoryItem]) -> tuple[MemoryCorpus, str | None]:
        """Embed what is new (once per item version) and build an exact corpus of `items`
        (one delta segment; `every` is the whole delta, whose vectors stay cached). When the
        embedder is down the delta is still searchable lexically (seed 004)."""
        keys = [(it.id, it.content_hash) for it in items]
        missing = [(k, it) for k, it in zip(keys, items) if k not in self._vector_cache]
        problem = None
        if missing:
            try:
                # Transient vectors (the snapshot replaces them): the online model.
                embed = getattr(self.embedder, "embed_online", None) or self.embedder.embed
                vecs = embed([embedding_text(it) for _, it in missing])
                for (key, _), vec in zip(missing, vecs):
                    self._vector_cache[key] = np.asarray(vec, dtype=np.float32)
            except EmbedderUnavailable as exc:
                problem = f"delta not embedded ({exc}); searched lexically"
                log.warning(problem)
        if problem is None:
            live = {(it.id, it.content_hash) for it in every}
            for stale in [k for k in self._vector_cache if k not in live]:
                del self._vector_cache[stale]  # older versions of updated items
            matrix = (np.stack([self._vector_cache[k] for k in keys])
                      if keys else np.zeros((0, self.embedder.dim), np.float32))
            return MemoryCorpus(items, matrix, source="delta"), None
        return MemoryCorpus(items, None, source="delta"), problem

    # -- reads ---------------------------------------------------------------------------------

    def recall(
        self,
        query: str,
        identity: Identity,
        *,
        mode: str | None = None,
        k: int | None = None,
        tags: Sequence[str] = (),
        tier: str | None = None,
        type: str | None = None,  # noqa: A002 - the tool API's name
        scope: str | None = None,
        filters: Any = None,
        trace: bool = False,
        record_usage: bool = True,
        view: View | None = None,
    ) -> RecallResult:
        """Recall over snapshot + delta for `identity`; records one `usage` event with the
        returned ids (the pipeline later increments usage_count)."""
        view = view or self.view()
        result = self.engine.recall(
            query, identity, view.corpora, mode=mode, k=k, tags=tuple(tags), tier=tier,
            type=type, scope=scope, filters=filters, trace=trace,
        )
        if record_usage and result.used_ids:
            self.record_usage(identity, list(result.used_ids), query)
        return result

    def get_item(self, item_id: str, identity: Identity, view: View | None = None) -> MemoryItem | None:
        """The item if it exists and `identity` may see it; otherwise None (an invisible item
        and an unknown id are indistinguishable to the caller)."""
        view = view or self.view()
        item = view.get(item_id)
        if item is None or not item.scope.visible_to(identity):
            return None
        return item

    def item_history(self, item_id: str, view: View) -> tuple[list[dict], list[dict]]:
        """(revisions, history) of an item: revisions when the snapshot carries them, and the
        inbox events that created or changed it."""
        revisions: list[dict] = []
        source = getattr(view.snap.loaded, "revisions", None) if view.snap.loaded else None
        if callable(source):
            revisions = [msgspec.to_builtins(r) for r in source(item_id) or ()]
        elif isinstance(source, Mapping):
            revisions = [msgspec.to_builtins(r) for r in source.get(item_id, ())]
        events: dict[str, Event] = {}
        item = view.get(item_id)
        if item is not None:
            for event_id in item.provenance.event_ids[:50]:
                found = self.inbox.get(event_id)
                if found is not None:
                    events[found.event_id] = found
            seq = item.metadata.get("inbox_seq")
            if isinstance(seq, int) and seq > 0:
                for found in self.inbox.read_after(seq - 1, limit=1):
                    if item_id in item_ids_touched(found):
                        events[found.event_id] = found
        for ev in view.delta.touches.get(item_id, ()):
            events[ev.event_id] = ev
        history = [
            {"seq": ev.seq, "event_id": ev.event_id, "kind": ev.kind, "at": ev.at,
             "identity": msgspec.to_builtins(ev.identity), "payload": ev.payload, "sha256": ev.sha256}
            for ev in sorted(events.values(), key=lambda e: e.seq)
        ]
        return revisions, history

    def existing_like(self, identity: Identity, view: View) -> Callable[[ProposedItem], list[MemoryItem]]:
        """For the policy's duplicate check: visible items with the same title or content."""

        def find(proposal: ProposedItem) -> list[MemoryItem]:
            title = normalise_label(proposal.title)
            content = proposal.content.strip()
            out: dict[str, MemoryItem] = {}
            for corpus in view.corpora:
                rows = corpus.title_rows.get(title) if title else None
                for row in (() if rows is None else rows):
                    item = corpus.items[int(row)]
                    if item.scope.visible_to(identity):
                        out[item.id] = item
            for item in view.delta.items.values():
                if item.content.strip() == content and item.scope.visible_to(identity):
                    out[item.id] = item
            return list(out.values())[:20]

        return find

    def conflicts(self, identity: Identity, view: View | None = None) -> list[tuple[MemoryItem, MemoryItem, str]]:
        """Pairs of claims `identity` can see that conflict, by the rule recall applies
        (`pipelines.recall.conflicts`)."""
        view = view or self.view()

        def vector_of(item: MemoryItem):
            for corpus in reversed(view.corpora):
                row = corpus.row_of.get(item.id)
                if row is not None:
                    return corpus.vectors[row] if corpus.vectors is not None else None
            return None

        return find_conflicts(view.visible_items(identity), vector_of)

    # -- writes --------------------------------------------------------------------------------

    def append(self, events: Sequence[Event]) -> list[Event]:
        return self.inbox.append(events)

    def capture(self, identity: Identity, role: str, text: str, **kw: Any) -> CaptureResult:
        """Govern and land one turn (see `pipelines.capture.capture_turn`)."""
        view = self.view()
        kw.setdefault("existing", self.existing_like(identity, view))
        return capture_turn(self.inbox, self.policy, identity, role, text, **kw)

    def record_usage(self, identity: Identity, item_ids: list[str], query: str = "") -> None:
        self.append([Event(
            event_id=stable_id("evt", "usage", uuid.uuid4().hex),
            kind="usage",
            identity=identity,
            payload={"item_ids": item_ids, "query_sha256": sha256_text(query)},
        )])

    def audit(self, identity: Identity, action: str, args: Any, result_ids: Iterable[str] = (),
              **extra: Any) -> Event:
        """An `audit` event for a read (or a refused write): hashes and ids, never content."""
        ids = list(result_ids)
        payload = {
            "action": action,
            "args_sha256": sha256_text(msgspec.json.encode(args, order="sorted").decode()),
            "result_ids": ids[:200],
            "result_count": len(ids),
            **extra,
        }
        return self.append([Event(event_id=stable_id("evt", "audit", uuid.uuid4().hex),
                                  kind="audit", identity=identity, payload=payload)])[0]

    # -- reporting -----------------------------------------------------------------------------

    def problems(self, view: View | None = None) -> list[str]:
        view = view or self.current
        out = list(view.snap.problems)
        if view.delta.embed_problem:
            out.append(view.delta.embed_problem)
        return out

    def report(self, view: View | None = None, *, counts: bool = False) -> dict[str, Any]:
        view = view or self.current
        out: dict[str, Any] = {
            "ready": True,
            "embedder": self.embedder.name,
            "snapshot_version": view.snap.version,
            "watermark": view.snap.watermark,
            "last_seq": view.delta.max_seq,
            "delta_items": len(view.delta.items),
            "snapshot_items": len(view.snap.loaded.items) if view.snap.loaded else 0,
            "problems": self.problems(view),
        }
        if counts:
            out["counts"] = {
                "snapshot": _counts(view.snap.loaded.items if view.snap.loaded else ()),
                "delta": _counts(view.delta.items.values()),
                "delta_events": view.delta.events,
            }
        return out


def _counts(items: Iterable[MemoryItem]) -> dict[str, dict[str, int]]:
    tiers: Counter[str] = Counter()
    types: Counter[str] = Counter()
    for it in items:
        tiers[it.tier] += 1
        types[it.type] += 1
    return {"tier": dict(sorted(tiers.items())), "type": dict(sorted(types.items()))}

