"""What the service serves: one view of the published snapshot and the delta of fresh inbox
events, and the recall engine over both. Usable without HTTP:

    with MemoryService(settings) as service:
        service.recall(...)

The service never opens the DuckDB warehouse (only Dagster runs write it). Its parts:
`online.snapshot_holder.SnapshotHolder` loads and hot-swaps the snapshot CURRENT names;
`online.delta_log.DeltaLog` folds the inbox events after its watermark into the delta;
`MemoryService` pairs the two in one `View` (replaced as one reference, so a request keeps
the view it started with) and answers reads and writes over it.

A missing, corrupt or wrong-embedder snapshot never takes the service down: it serves the
delta and reports the problem (`report()`, `/readyz`, `/v1/stats`).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from threadpoolctl import threadpool_limits

from online.chat_records import appending_asked, last_asked
from online.delta_log import DeltaLog, DeltaState, item_ids_touched
from online.snapshot_holder import (
    DEFAULT_CHECK_INTERVAL_MS,
    SnapshotHolder,
    SnapshotState,
    freeze_long_lived,
    raise_young_gc_threshold,
)
from online.usage_log import UsageLog
from pipelines.capture import CaptureResult, capture_turn, redact_secrets
from pipelines.embedders import Embedder, EmbedderUnavailable, make_embedder
from pipelines.forgetting import kept_part, kept_turn_id
from pipelines.inbox import AppendCheck, InboxError, open_inbox
from pipelines.item_history import last_published
from pipelines.materialize import in_quarantine, message_item_id, recall_state, standing_replacer
from pipelines.message_context import bare_text, embedding_text
from pipelines.recall.conflicts import (
    CLAIM_TYPES,
    DATED_TYPES,
    CosineTo,
    absences_ended,
    find_conflicts,
    is_claim,
    reschedules,
)
from pipelines.recall.corpus import MemoryCorpus
from pipelines.recall.engine import RecallEngine, RecallResult
from pipelines.recall.lexical import normalise_label, query_terms
from pipelines.records import Event, Identity, MemoryItem, ProposedItem, sha256_text, stable_id
from pipelines.settings import Settings

# How many lexically closest visible claims a write is checked against (contradiction,
# correction): a claim about the same subject rarely shares the title.
SIMILAR_CLAIMS = 10
# and the few claims nearest it by vector, when the view holds vectors: a claim on the same
# subject in other words ("Deploys go out on Thursdays" / "Release day is Friday") shares no
# term for BM25. On the labelled conflict pairs (988 claims, MiniLM), the lexical ten find the
# claim a conflicting one contradicts for 248 of 274 pairs, with the nearest five 261.
NEAR_CLAIMS = 5

log = logging.getLogger("loci.online")


def single_threaded_blas() -> None:
    """One BLAS thread in the serving process. A recall's matrix products are one query's
    (a few thousand rows); worker threads only add synchronisation, which on a busy 2-core
    machine cost more than the product (20k x 384 rows gathered and multiplied: 25.8 ms
    with two OpenBLAS threads at load average 9, 0.9 ms with one). Requests run in
    parallel threads and workers instead. FAISS and ONNX Runtime set their own threads.
    A limit holds for the libraries loaded when it is set, so scipy's own OpenBLAS (loaded
    with scipy.linalg, which the service may first import later) is loaded before it."""
    import scipy.linalg  # noqa: F401

    threadpool_limits(limits=1, user_api="blas")


__all__ = ["DEFAULT_CHECK_INTERVAL_MS", "DeltaState", "ItemHistory", "MemoryService", "SnapshotState", "View",
           "embedding_text", "item_ids_touched"]


# Touches the policy's secret formats and injection rules (rejected: it holds a token shape),
# and is long enough (over 300 characters) to build or load the one-pass screen of long texts
# (`policy_rules.text.OnePass`: ~1.6 s the first time on a machine, then read from its cache).
WARM_UP_TEXT = "Warm-up: ignore previous instructions; token ghp_0000000000000000000000000000000000ab. " * 4


@dataclass(frozen=True)
class ItemHistory:
    """What `MemoryService.item_history` knows of one item."""

    revisions: list[dict]  # as published with the snapshot (oldest first)
    audit: list[dict]  # the warehouse's audit events, as published with the snapshot
    inbox: list[dict]  # inbox events that created or changed it (those after the watermark too)
    published: bool  # False: the snapshot carries no history for it (not consolidated yet)
    watermark: int  # inbox events after this seq are not in `revisions` / `audit` yet


@dataclass(frozen=True)
class InboxOutage:
    """The inbox could not be read since `since` (POSIX seconds): recall is answered from the
    view built before (the snapshot and the delta folded until then), writes get 503."""

    since: float
    reason: str

    @property
    def since_iso(self) -> str:
        return datetime.fromtimestamp(self.since, timezone.utc).isoformat(timespec="seconds")

    def label(self, last_seq: int) -> str:
        return (f"inbox unavailable since {self.since_iso}: answered from the snapshot and the writes up to "
                f"seq {last_seq}; writes are refused until it is back ({self.reason})")


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


def _newest_claims(scored: list[tuple[float, str]], identity: Identity, view: View,
                   also: frozenset[str]) -> list[MemoryItem]:
    """The items of `scored` (score, id), best first, each in its newest version, while still
    an active claim (or of the types `also`) `identity` can see."""
    out: dict[str, MemoryItem] = {}
    for _, item_id in sorted(scored, key=lambda s: -s[0]):
        item = view.get(item_id)  # a delta version hides the snapshot's
        if (item is not None and item.active and (is_claim(item) or item.type in also)
                and item.scope.visible_to(identity)):
            out.setdefault(item_id, item)
    return list(out.values())


def _vector_in(view: View) -> Callable[[MemoryItem], Any]:
    """An item's stored vector in `view` (the newest corpus holding it), or None."""

    def vector_of(item: MemoryItem):
        for corpus in reversed(view.corpora):
            row = corpus.row_of.get(item.id)
            if row is not None:
                return corpus.vectors[row] if corpus.vectors is not None else None
        return None

    return vector_of


class MemoryService:
    """The served view (snapshot + delta) and the recall engine over it, thread-safe, no
    HTTP. A context manager: `close()` (or leaving the `with`) writes the queued usage
    events, closes the inbox and hands the snapshot back to the cyclic GC.

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

        single_threaded_blas()
        raise_young_gc_threshold()
        self.settings = settings or Settings()
        self.embedder = embedder or make_embedder(self.settings)
        self.policy = policy or Policy(self.settings)
        self.engine = RecallEngine(self.settings, self.embedder)
        # A replica started while its inbox is down serves its snapshot until the inbox answers.
        self.inbox = open_inbox(self.settings, retry_open=True)
        self.inbox_outage: InboxOutage | None = None
        self._unfolded: SnapshotState | None = None  # a snapshot loaded whose delta could not be read yet
        # Usage events are batched off the request path (see online.usage_log).
        self.usage = UsageLog(self.inbox.append)
        # A usage event's id: this service's random prefix and a counter, not a uuid4 a recall
        # (`os.urandom` lets go of the GIL, and a recall thread then waits to get it back).
        self._usage_ids = (uuid.uuid4().hex, itertools.count())
        self.started_at = time.time()
        self._delta_lock = threading.Lock()  # one fold at a time; never held during a load
        self._delta_superseded: tuple[object, dict[str, str]] | None = None  # (delta, old id -> new id)
        self.deltas = DeltaLog(self.inbox, self.embedder)
        self.snapshots = SnapshotHolder(
            Path(self.settings.snapshots_path), getattr(self.embedder, "stored_names", self.embedder.name),
            served=lambda: self._unfolded or self._view.snap, publish=self._publish_snapshot,
            check_interval_s=float(check_interval_ms) / 1000.0, swap_in_background=swap_in_background,
        )
        snap = self.snapshots.load_first()
        self._view = View(snap, DeltaState.empty(snap.watermark))
        self._publish_snapshot(snap, True)
        freeze_long_lived()
        self.snapshots.checked_now()

    def __enter__(self) -> "MemoryService":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.usage.close()
        self.inbox.close()
        self.snapshots.close()

    # -- views -----------------------------------------------------------------------------

    @property
    def current(self) -> View:
        """The view being served right now, without checking for anything new."""
        return self._view

    def view(self) -> View:
        """Check (throttled) for a new snapshot, fold new inbox events, return the view."""
        self.snapshots.maybe_swap()
        self._catch_up()
        return self._view

    def reload(self) -> View:
        """Check CURRENT now (not throttled) and retry a snapshot that failed before."""
        self.snapshots.maybe_swap(force=True)
        self._catch_up()
        return self._view

    def wait_for_swap(self, timeout_s: float = 10.0) -> View:
        """Wait until a background snapshot load (if any) has finished; return the view."""
        self.snapshots.wait_for_swap(timeout_s)
        return self._view

    def warm(self) -> list[str]:
        """Load the embedding model and the policy's lazily loaded rules now (one tiny embed,
        one verdict) instead of on the first request (the policy's first verdict costs
        ~0.1 s: detect-secrets' plugins are imported then; its first long text builds the
        one-pass screen). Returns problems (an unreachable embedder is reported, not raised)."""
        self.policy.evaluate(ProposedItem(type="fact", title="warm-up", content=WARM_UP_TEXT))
        try:
            self.embedder.embed(["warm-up"])
            self.embedder.embed_online(["warm-up"])  # builds the int8 copy, if configured
        except EmbedderUnavailable as exc:
            log.warning("embedder not available at start-up: %s", exc)
            return [str(exc)]
        return []

    def _publish_snapshot(self, fresh: SnapshotState, changed: bool) -> None:
        """The swap: a changed snapshot gets the delta of the events after its watermark.
        While the inbox cannot be read the view served stays (its snapshot and the delta
        folded over it: a new snapshot without the writes after its watermark would lose
        acknowledged writes); the new snapshot is swapped in once the inbox answers."""
        with self._delta_lock:
            if not changed:
                self._view = View(fresh, self._view.delta)
                return
            try:
                delta = self.deltas.rebuild(fresh)
            except InboxError as exc:
                self._unfolded = fresh
                self._inbox_failed(exc)
                return
            self._unfolded = None
            self._view = View(fresh, delta)  # the atomic swap: one reference
            self._inbox_answered()

    def _catch_up(self) -> None:
        if self._unfolded is not None:  # loaded during an outage: its delta first
            self._publish_snapshot(self._unfolded, True)
            if self._unfolded is not None:
                return
            freeze_long_lived()
        with self._delta_lock:
            view = self._view
            try:
                delta = self.deltas.catch_up(view.snap, view.delta)
            except InboxError as exc:
                self._inbox_failed(exc)
                return
            self._inbox_answered()
            if delta is not None:
                self._view = View(view.snap, delta, view.loaded_at)

    def _inbox_failed(self, exc: InboxError) -> None:
        if self.inbox_outage is None:
            log.warning("inbox unavailable; answering recalls from the snapshot: %s", exc)
            self.inbox_outage = InboxOutage(time.time(), str(exc))
        else:
            self.inbox_outage = InboxOutage(self.inbox_outage.since, str(exc))

    def _inbox_answered(self) -> None:
        if self.inbox_outage is not None:
            log.warning("inbox available again (unavailable since %s)", self.inbox_outage.since_iso)
            self.inbox_outage = None

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
        said: Sequence[str] = (),
        tz: str | None = None,
        own_words: bool = False,
    ) -> RecallResult:
        """Recall over snapshot + delta for `identity`; queues one `usage` event with the
        returned ids (`record_usage`). `said`: the conversation's messages, whose turns are
        not recalled; `tz`: the asker's time zone; `own_words`: the caller asks what they
        said themselves (`RecallEngine.recall`)."""
        view = view or self.view()
        result = self.engine.recall(
            query, identity, view.corpora, mode=mode, k=k, tags=tuple(tags), tier=tier,
            type=type, scope=scope, filters=filters, trace=trace, said=said, tz=tz, own_words=own_words,
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

    def merged_into(self, item_id: str, identity: Identity, view: View | None = None) -> str | None:
        """The visible item consolidation merged `item_id` into (its `merged_from` names it),
        or None: an id a write acknowledged keeps leading somewhere after a merge."""
        found = self.replaced_by(item_id, identity, view)
        return found[0] if found is not None and found[1] == "merged" else None

    def replaced_by(self, item_id: str, identity: Identity, view: View | None = None
                    ) -> tuple[str, str] | None:
        """(the visible item that took `item_id`'s place, "merged" or "superseded"), or None:
        an id that left recall because consolidation merged it or a correction superseded
        it keeps leading to what replaced it."""
        view = view or self.view()
        if view.get(item_id) is not None:  # a correction since the snapshot: it leaves at the next run
            into = self._superseded_in_delta(view).get(item_id)
            found = (into, "superseded") if into is not None else None
        else:
            loaded = view.snap.loaded
            found = loaded.replaced.get(item_id) if loaded is not None else None
        if found is not None and found[1] == "superseded":
            into = self.standing_in(found[0], view)
            found = (into, "superseded") if into is not None else None
        return found if found is not None and self.get_item(found[0], identity, view) is not None else None

    @staticmethod
    def standing_in(into: str, view: View) -> str | None:
        """The claim that replaces what `into` replaced now: `into` unless it was forgotten,
        then the nearest correction of it that stands (`standing_replacer`: A, B correcting
        it, C correcting B, B forgotten: C, not the forgotten B), None when none stands.
        Read only when a replaced item is asked for; one out of what is served, as last published."""
        def find(item_id: str) -> MemoryItem | None:
            return view.get(item_id) or last_published(view.snap.loaded, item_id)

        found = find(into)
        if found is None or found.validation != "retracted":
            return into

        def correctors(item_id: str) -> list[str]:
            it = find(item_id)
            return [*([it.superseded_by] if it is not None and it.superseded_by else []),
                    *(c.id for c in view.delta.items.values()
                      if any(link.rel == "supersedes" and link.to == item_id for link in c.links))]

        def stands(item_id: str) -> bool:
            return (it := view.get(item_id)) is not None and it.active and recall_state(it) == "recallable"

        def forgotten(item_id: str) -> bool:
            return (it := find(item_id)) is not None and it.validation == "retracted"

        return standing_replacer(into, correctors, stands, forgotten)

    def _superseded_in_delta(self, view: View) -> dict[str, str]:
        """Item id -> the recallable item written since the snapshot that supersedes it (a
        correction, a `supersedes` link); consolidation marks them, until then this does.
        Read once per delta version."""
        cached = self._delta_superseded
        if cached is not None and cached[0] is view.delta:
            return cached[1]
        found: dict[str, str] = {}
        items = view.delta.items
        correctors: dict[str, list[str]] = {}
        for item in items.values():
            for link in item.links:
                if link.rel == "supersedes":
                    correctors.setdefault(link.to, []).append(item.id)

        def stands(item_id: str) -> bool:
            return (it := items.get(item_id)) is not None and it.active and recall_state(it) == "recallable"

        def forgotten(item_id: str) -> bool:
            return (it := items.get(item_id)) is not None and it.validation == "retracted"

        for old in correctors:
            # a correction forgotten while a later one of it stands: that one replaces `old` now
            now = standing_replacer(old, lambda i: correctors.get(i, ()), stands, forgotten)
            if now is not None:
                found[old] = now
        self._delta_superseded = (view.delta, found)
        return found

    def no_item(self, item_id: str, identity: Identity, view: View | None = None,
                found: tuple[str, str] | None = None) -> str:
        """What a caller is told about an id it cannot read: not found, or what replaced it
        (`found`: already known, `read_replaced`)."""
        found = found or self.replaced_by(item_id, identity, view)
        if found is None:
            return f"no item {item_id!r}"
        into, how = found
        if how == "merged":
            return f"no item {item_id!r}: consolidation merged it into {into!r}"
        return f"no item {item_id!r}: {into!r} superseded it (a correction); `loci show {item_id}` lists its history"

    def read_item(self, item_id: str, identity: Identity, action: str
                  ) -> tuple[MemoryItem, View, ItemHistory] | None:
        """One visible item with its history, the read audited as `action` (the JSON API's
        `GET /v1/items/{id}` and the memory browser's card); None when `identity` may not
        see it or it does not exist."""
        view = self.view()
        item = self.get_item(item_id, identity, view)
        if item is None:
            return None
        history = self.item_history(item_id, view)
        self.audit(identity, action, {"id": item_id}, [item_id])
        return item, view, history

    def read_replaced(self, item_id: str, identity: Identity, action: str
                      ) -> tuple[MemoryItem, tuple[str, str] | None, ItemHistory] | None:
        """An item that left recall because a correction superseded it, consolidation
        merged it or archived it (expired, aged out): (the item as its last published
        revision stored it, (the visible item that took its place, "merged" or
        "superseded") or None for an archived one, its history), the read audited as
        `action`. None unless `identity` may see it and what replaced it: what left recall
        keeps its history, shown only to whom it was shown before."""
        found = self.retired(item_id, identity)
        if found is not None:
            self.audit(identity, action, {"id": item_id}, [item_id])
        return found

    def retired(self, item_id: str, identity: Identity, view: View | None = None
                ) -> tuple[MemoryItem, tuple[str, str] | None, ItemHistory] | None:
        """`read_replaced` without the audit (a caller that audits its whole request)."""
        view = view or self.view()
        replaced = self.replaced_by(item_id, identity, view)
        if replaced is None and view.get(item_id) is not None:
            return None  # still served: `read_item`
        history = self.item_history(item_id, view)
        item = self._last_stored(item_id, history)
        if item is None or not item.scope.visible_to(identity):
            return None
        if replaced is None and item.superseded_by is not None:
            # What replaced it left recall since (archived, superseded in turn): it still names
            # its successor, and a merge as a merge (as `LoadedSnapshot.replaced` does).
            now = self.standing_in(item.superseded_by, view)  # not a correction forgotten since
            into = self._last_stored(now, self.item_history(now, view)) if now is not None else None
            if into is not None and into.scope.visible_to(identity):
                replaced = (into.id, "merged" if item_id in (into.metadata.get("merged_from") or ()) else "superseded")
        if replaced is None and not item.archived:
            return None
        return item, replaced, history

    @staticmethod
    def _last_stored(item_id: str, history: ItemHistory | list[dict]) -> MemoryItem | None:
        """The item as its last published revision (of `history`, or of a list of revisions)
        stored it, or None."""
        revisions = history.revisions if isinstance(history, ItemHistory) else history
        if not revisions:
            return None
        try:
            item = msgspec.convert(revisions[-1]["snapshot"], MemoryItem)
        except (msgspec.ValidationError, TypeError):
            return None
        return item if item.id == item_id else None

    def item_history(self, item_id: str, view: View) -> ItemHistory:
        """An item's history as the service can know it without the warehouse: the
        revisions and audit events published with the snapshot (`history.parquet`), and the
        inbox events that created or changed it, including those after the watermark."""
        published = view.snap.loaded.history(item_id) if view.snap.loaded is not None else None
        revisions, audit = published if published is not None else ([], [])
        events: dict[str, Event] = {}
        # One that left recall (superseded, merged, archived) names its events as last stored:
        # who wrote it, when and why stay on its card after a consolidation retired it.
        item = view.get(item_id) or self._last_stored(item_id, revisions)
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
        return ItemHistory(revisions, audit, history, published is not None, view.snap.watermark)

    def existing_like(self, identity: Identity, view: View) -> Callable[[ProposedItem], list[MemoryItem]]:
        """What a proposal is checked against (the policy's duplicate and contradiction
        rules, and a user's correction of their own claim): visible items with the same
        title or content, and the visible claims lexically closest to it and nearest it by
        vector, so a claim on the same subject under another title is seen too."""

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
            # a move ("Dentist moved to Thursday") may name a to-do under another title
            moves = DATED_TYPES if reschedules(proposal.content) else frozenset()
            # a return ("I'm back in the office") may end an absence said in other words ("I work remotely")
            like = f"{proposal.title} {proposal.content} {absences_ended(proposal.content)}"
            for item in self._claims_like(like, identity, view, moves):
                out.setdefault(item.id, item)
            for item in self._claims_near(proposal, identity, view, moves):
                out.setdefault(item.id, item)
            # A claim a correction replaced since the snapshot is no longer established: nothing
            # contradicts it and nothing corrects it again (consolidation then marks it).
            replaced = self._superseded_in_delta(view)
            return [item for item in out.values() if item.id not in replaced][:20 + SIMILAR_CLAIMS + NEAR_CLAIMS]

        return find

    @staticmethod
    def _claims_like(text: str, identity: Identity, view: View, also: frozenset[str] = frozenset()) -> list[MemoryItem]:
        """The SIMILAR_CLAIMS visible claims (and items of the types `also`) with the highest
        BM25 score for `text`, each in its newest version."""
        terms = query_terms(text)
        scored: list[tuple[float, str]] = []
        for corpus in view.corpora:
            scores = corpus.lexical.scores(terms) if corpus.n and terms else None
            if scores is None:
                continue
            rows = np.flatnonzero(corpus.visible_mask(identity) & corpus.type_mask(CLAIM_TYPES | also) & (scores > 0))
            top = rows[np.argsort(-scores[rows], kind="stable")[:SIMILAR_CLAIMS]]
            scored += [(float(scores[r]), corpus.items[int(r)].id) for r in top]
        return _newest_claims(scored, identity, view, also)[:SIMILAR_CLAIMS]

    def _claims_near(self, proposal: ProposedItem, identity: Identity, view: View,
                     also: frozenset[str] = frozenset()) -> list[MemoryItem]:
        """The NEAR_CLAIMS visible claims (and items of the types `also`) whose vectors are
        nearest the proposal's, when the view holds vectors. The proposal is embedded as its
        item will be (`bare_text`), through the vectors a write shares
        (`DeltaLog.embed_shared`): the write then reuses it. None when the embedder is down."""
        corpora = [c for c in view.corpora if c.n and c.vectors is not None]
        query = self._proposal_vector(proposal) if corpora else None
        if query is None:
            return []
        scored: list[tuple[float, str]] = []
        for corpus in corpora:
            if query.shape[0] != corpus.dim:
                continue
            allowed = corpus.visible_mask(identity) & corpus.type_mask(CLAIM_TYPES | also)
            rows, sims = corpus.dense_search(query, allowed, NEAR_CLAIMS, identity)
            scored += [(float(s), corpus.items[int(r)].id) for r, s in zip(rows, sims)]
        return _newest_claims(scored, identity, view, also)[:NEAR_CLAIMS]

    def _proposal_vector(self, proposal: ProposedItem) -> np.ndarray | None:
        """The vector a proposal's item will have (`bare_text`, through `DeltaLog.embed_shared`,
        which keeps it for the write that follows); None when the embedder is down."""
        try:
            return self.deltas.embed_shared([bare_text(proposal)])[0]
        except EmbedderUnavailable:
            return None

    def cosine_to(self, view: View) -> Callable[[ProposedItem], CosineTo | None]:
        """A proposal -> its cosine with a stored item in `view` (None when either has no
        vector): the write-time contradiction check reads the cosine recall reads of two
        stored claims (`conflicts.contradicted`), the proposal's vector being the one its item
        will have. None when the view holds no vectors or the embedder is down."""
        vector_of = _vector_in(view)

        def of(proposal: ProposedItem) -> CosineTo | None:
            if not any(c.n and c.vectors is not None for c in view.corpora):
                return None
            query = self._proposal_vector(proposal)
            if query is None:
                return None

            def cosine(item: MemoryItem) -> float | None:
                vector = vector_of(item)
                return None if vector is None or vector.shape != query.shape else float(np.dot(query, vector))

            return cosine

        return of

    def conflicts(self, identity: Identity, view: View | None = None) -> list[tuple[MemoryItem, MemoryItem, str]]:
        """Pairs of claims `identity` can see that conflict, by the rule recall applies
        (`pipelines.recall.conflicts`)."""
        view = view or self.view()
        return find_conflicts(view.visible_items(identity), _vector_in(view))

    def said_otherwise_by(self, item: MemoryItem, identity: Identity, view: View | None = None) -> list[str]:
        """For a raw turn a claim was said in that curated corrections replaced since, the
        ids of those `identity` may see, the latest first, as recall names them
        (`pipelines.recall.episodic.replaced_by`); [] for any other item."""
        from pipelines.recall import RecallFilters
        from pipelines.recall.candidates import VisibleCorpora
        from pipelines.recall.episodic import is_message, replaced_by

        if not is_message(item):
            return []
        view = view or self.view()
        return replaced_by(VisibleCorpora(view.corpora, identity, RecallFilters()), [item]).get(item.id, [])

    def held_rivals(self, item: MemoryItem, identity: Identity, view: View | None = None) -> list[MemoryItem]:
        """The claims `identity` can see held in quarantine that contradict `item`: changes
        to it waiting for a reviewer (`pipelines.materialize.pending_changes`)."""
        view = view or self.view()
        held = [it for it in view.visible_items(identity) if in_quarantine(it) and it.id != item.id]
        if not held or not is_claim(item):
            return []
        pairs = find_conflicts([item, *held], _vector_in(view))
        return [b if a.id == item.id else a for a, b, _ in pairs if item.id in (a.id, b.id)]

    # -- writes --------------------------------------------------------------------------------

    def append(self, events: Sequence[Event], *, check: AppendCheck | None = None) -> list[Event]:
        """Land `events` in the inbox (`check` as in `InboxBackend.append`). The items they
        make are embedded first and their vectors shared (`DeltaLog.share`): no worker
        folding them embeds them again."""
        events = list(events)
        view = self._view
        with self.deltas.deferred_shares() as pending:
            self.deltas.share(view.snap, view.delta, events)
            vectors = dict(pending)
            pending.clear()
            # the vectors (those of this write's proposals too) in the append's own commit
            return self.inbox.append_sharing(events, vectors, check=check)

    def capture(self, identity: Identity, role: str, text: str, **kw: Any) -> CaptureResult:
        """Govern and land one turn (see `pipelines.capture.capture_turn`). The vectors its
        checks make are shared with its append, in one inbox transaction."""
        with self.deltas.deferred_shares():
            return self._capture(identity, role, text, **kw)

    def _capture(self, identity: Identity, role: str, text: str, **kw: Any) -> CaptureResult:
        view = self.view()
        kw.setdefault("existing", self.existing_like(identity, view))
        kw.setdefault("cosine_to", self.cosine_to(view))
        kw.setdefault("user_said", self.user_said(identity))
        if kw.get("zone") is None:  # the speaker's zone, or the service's
            kw["zone"] = self.settings.timezone
        if role == "assistant" and "answers" not in kw:  # its proposals record what the user just said in this chat
            asked = last_asked(self, identity)  # kept in the inbox: any worker, after a restart too
            kw["answers"] = kw["user_said"](asked) if asked else None
        append = appending_asked(self, identity, self.append) if role == "user" else self.append  # any worker reads it
        result = capture_turn(self.inbox, self.policy, identity, role, text, append=append, **kw)
        if kw.get("forgot"):  # a turn of a round that forgot something (it lands forgotten): what else it said
            gone = [it for i in kw["forgot"] if (it := view.get(str(i))) is not None]
            stored = redact_secrets(result.visible_text)[0] if result.redactions else result.visible_text
            self.keep_rest(identity, role, result.turn_id, stored, kw.get("at"), gone, kw.get("speaker"))
        return result

    def keep_rest(self, identity: Identity, role: str, turn_id: str, text: str, at: str | None,
                  forgotten: Iterable[MemoryItem], speaker: str | None = None) -> str | None:
        """What else turn `turn_id` (`text`, as stored) of a round that forgot `forgotten` said
        (`forgetting.kept_part`: "..., and remind me my passport expires in March"), landed
        as a turn of `identity`'s own said at `at` (its `turn_ref` the turn): the new
        message entry's id, or None when it said nothing else."""
        rest = kept_part(text, forgotten)
        if not rest:
            return None
        landed = capture_turn(self.inbox, self.policy, identity, role, rest, append=self.append, parse=False,
                              turn_id=kept_turn_id(turn_id), turn_ref=turn_id, at=at, speaker=speaker)
        return message_item_id(landed.turn_id)

    def user_said(self, identity: Identity) -> Callable[[str], str | None]:
        """A turn id -> what `identity`'s user said in that turn of this project (its text as
        stored), or None: the evidence a proposal may name (`capture_turn`)."""
        def said(turn_id: str) -> str | None:
            event = self.inbox.get(stable_id("evt", "turn", turn_id))
            if (event is None or event.kind != "turn" or event.payload.get("role") != "user"
                    or event.identity.user_id != identity.user_id
                    or event.identity.project_id != identity.project_id):
                return None
            return str(event.payload.get("text") or "")
        return said

    def record_usage(self, identity: Identity, item_ids: list[str], query: str = "") -> None:
        """Queue one `usage` event (the pipeline later increments usage_count / last_used_at).
        Written by `self.usage` within ~200 ms, not before the answer: `self.usage.flush()`
        writes it now."""
        self.usage.record(Event(
            event_id=stable_id("evt", "usage", f"{self._usage_ids[0]}-{os.getpid()}-{next(self._usage_ids[1])}"),
            kind="usage",
            identity=identity,
            payload={"item_ids": item_ids, "query_sha256": sha256_text(query)},
        ))

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

    def degraded(self, view: View | None = None) -> str | None:
        """What a reader should know while the inbox is down (None when it answers)."""
        outage = self.inbox_outage
        return None if outage is None else outage.label((view or self.current).delta.max_seq)

    def problems(self, view: View | None = None) -> list[str]:
        view = view or self.current
        out = list(view.snap.problems)
        if (degraded := self.degraded(view)) is not None:
            out.append(degraded)
        out += [p for p in (view.delta.embed_problem, view.delta.inbox_problem) if p]
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
            "snapshot_warmed": view.snap.warmed,
            "problems": self.problems(view),
            "stale_since": self.inbox_outage.since_iso if self.inbox_outage else None,
            "usage_log": self.usage.stats(),
        }
        if counts:
            out["counts"] = {
                "snapshot": _counts(view.snap.loaded.items if view.snap.loaded else ()),
                "delta": _counts(view.delta.items.values()),
                "delta_events": view.delta.events,
            }
        return out

    def visible_report(self, who: Identity, view: View | None = None) -> dict[str, Any]:
        """`report()` with item numbers and counts limited to what `who` may see: other
        tenants' memory is not counted, not even as a number (/v1/stats, memory.stats)."""
        view = view or self.current
        visible = view.visible_items(who)
        from_delta = [it for it in visible if it.id in view.delta.items]
        from_snapshot = [it for it in visible if it.id not in view.delta.items]
        out = self.report(view)
        out.update(snapshot_items=len(from_snapshot), delta_items=len(from_delta),
                   counts={"snapshot": _counts(from_snapshot), "delta": _counts(from_delta)})
        return out


def _counts(items: Iterable[MemoryItem]) -> dict[str, dict[str, int]]:
    """Active items per tier, per type and per recall state: a retracted or quarantined item
    is still stored (and counted per tier and type) but recall never returns it, so `state`
    says how many of them recall can actually use."""
    tiers: Counter[str] = Counter()
    types: Counter[str] = Counter()
    states: Counter[str] = Counter()
    for it in items:
        tiers[it.tier] += 1
        types[it.type] += 1
        states[recall_state(it)] += 1
    return {"tier": dict(sorted(tiers.items())), "type": dict(sorted(types.items())),
            "state": dict(sorted(states.items()))}

