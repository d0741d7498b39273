"""The published snapshot the service serves: which one `<snapshots>/CURRENT` names, loading
it off to the side, hot-swapping it in, and keeping it out of the cyclic GC's full passes
while it is served.

The check for a new snapshot is cheap (a tiny file read, at most every `check_interval_s`)
and runs before a request; the new snapshot is loaded on a side thread (or synchronously
when asked), then handed to `publish`, which replaces one reference: in-flight requests
finish on the corpus they started with and no request waits for a load. A missing, corrupt
or wrong-embedder snapshot never takes the service down: the holder keeps what it serves (or
serves nothing) and reports the problem.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from online.warm_cache import WarmCache
from pipelines.recall.corpus import MemoryCorpus
from pipelines.records import MemoryItem
from pipelines.snapshot import CURRENT_FILE, LoadedSnapshot, folder_stores, load_latest_good, mixed_stores_problem

log = logging.getLogger("loci.online")

DEFAULT_CHECK_INTERVAL_MS = 250


@dataclass(frozen=True)
class SnapshotState:
    """The published snapshot being served (or none), and what loading it reported."""

    loaded: LoadedSnapshot | None
    corpus: MemoryCorpus
    problems: tuple[str, ...] = ()
    marker: str | None = None  # CURRENT's contents when this state was decided
    warmed: str = ""  # how the corpus was warmed: "read" (`online.warm_cache`) or "computed"

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


# A recall allocates a few thousand short-lived containers (candidates, their component
# dicts, claim tables, ...), nearly all freed by reference counting when it returns. At the
# interpreter's default (700 net allocations) the young generation was collected about once
# a recall, each pass walking the objects of the recall in flight and finding no garbage
# (100k items, 600 recalls: 525 collections, 8 objects collected, 0.16 ms CPU per recall).
YOUNG_GC_THRESHOLD = 20_000


def raise_young_gc_threshold() -> None:
    """Collect the young generation every YOUNG_GC_THRESHOLD net allocations instead of
    the default 700 (the older generations' thresholds are kept; a lower setting the host
    chose is raised, a higher one kept). Cyclic garbage still goes, a little later."""
    young, *older = gc.get_threshold()
    if young < YOUNG_GC_THRESHOLD:
        gc.set_threshold(YOUNG_GC_THRESHOLD, *older)


def freeze_long_lived() -> None:
    """Move what is alive now (the snapshot just loaded: its items, corpus, BM25 index) out
    of the cyclic GC's reach until the next swap. Full collections otherwise walk every one
    of those objects under the GIL: measured 150-250 ms pauses every ~100 writes at 10k
    items, the whole p99 tail of a mixed load. Refcounting still frees them after a swap;
    objects in reference cycles are collected at the next swap (which unfreezes first), so a
    snapshot an in-flight request still held at a swap lingers one snapshot at most.
    `SnapshotHolder.close` undoes it, so the interpreter's final collection sees everything
    (extension modules otherwise report "leaked" objects at exit)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class SnapshotHolder:
    """Loads and hot-swaps the published snapshot. The holder does not keep the served state
    itself: `served()` returns it and `publish(fresh, changed)` replaces it (the service pairs
    it with the delta in one view), so the swap stays one reference assignment."""

    def __init__(
        self,
        root: Path,
        embedder_name: str | tuple[str, ...],
        *,
        served: Callable[[], SnapshotState],
        publish: Callable[[SnapshotState, bool], None],
        check_interval_s: float,
        swap_in_background: bool = True,
    ) -> None:
        self.root = Path(root)
        self.warm_cache = WarmCache(self.root)
        self.embedder_name = embedder_name
        self.check_interval_s = max(0.0, float(check_interval_s))
        self.swap_in_background = swap_in_background
        self._served = served
        self._publish = publish
        self._swap_lock = threading.Lock()  # one snapshot load at a time
        self._swap_thread: threading.Thread | None = None
        self._last_check = 0.0

    def read_marker(self) -> str | None:
        """CURRENT's contents (a few bytes): the cheap "has a new snapshot landed?" check."""
        try:
            return (self.root / CURRENT_FILE).read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            return f"unreadable:{exc}"

    def load_first(self) -> SnapshotState:
        """What CURRENT names at start-up (synchronously)."""
        return self.load(previous=None, marker=self.read_marker())

    def checked_now(self) -> None:
        """Start the throttle interval now (after the first view is built)."""
        self._last_check = time.monotonic()

    def load(self, previous: SnapshotState | None, marker: str | None) -> SnapshotState:
        started = time.perf_counter()
        # Once a store is served, a snapshot of another store publishing here is refused.
        served_store = previous.loaded.manifest.store_id if previous is not None and previous.loaded else ""
        loaded, problems = load_latest_good(self.root, expected_embedder=self.embedder_name, store_id=served_store)
        mixed = mixed_stores_problem(self.root, folder_stores(self.root))
        if mixed:
            log.error(mixed)
            problems = [mixed, *problems]
        if previous is not None and previous.loaded is not None:
            if loaded is None or loaded.version < previous.loaded.version:
                # CURRENT names something unusable: keep serving what we have (never go back).
                kept = tuple(dict.fromkeys([*problems, f"kept serving snapshot {previous.version}"]))
                return SnapshotState(previous.loaded, previous.corpus, kept, marker, previous.warmed)
            if loaded.version == previous.loaded.version:
                return SnapshotState(previous.loaded, previous.corpus, tuple(problems), marker, previous.warmed)
        if loaded is None:
            if problems:
                log.warning("no usable snapshot; serving the inbox delta only: %s", "; ".join(problems))
            return SnapshotState(None, MemoryCorpus.empty("snapshot"), tuple(problems), marker)
        # Build the lexical index now (on the loading thread), not on the first request: read
        # from the warm cache when another process computed it for this version already.
        corpus, warmed = self.warm_cache.warmed(
            MemoryCorpus(loaded.items, loaded.vectors, loaded.index, source="snapshot", exact_rows=loaded.exact_rows),
            loaded.version)
        log.info("loaded snapshot %s (%d items, watermark %d, warm state %s) in %.0f ms", loaded.version,
                 len(loaded.items), loaded.manifest.watermark, warmed, 1000 * (time.perf_counter() - started))
        return SnapshotState(loaded, corpus, tuple(problems), marker, warmed)

    def maybe_swap(self, force: bool = False) -> None:
        """Look at CURRENT (throttled unless `force`) and load what it names if it changed:
        on a side thread with `swap_in_background`, else now. `force` also retries a
        snapshot that failed before."""
        now = time.monotonic()
        if not force and now - self._last_check < self.check_interval_s:
            return
        self._last_check = now
        marker = self.read_marker()
        if not force and marker == self._served().marker:
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
        """Load what CURRENT names (caller holds the swap lock) and publish it."""
        current = self._served()
        if not force and marker == current.marker:
            return
        fresh = self.load(current, marker)
        changed = fresh.loaded is not current.loaded
        self._publish(fresh, changed)
        if changed:
            del current, fresh  # not kept alive (and frozen) by this frame
            freeze_long_lived()

    def wait_for_swap(self, timeout_s: float = 10.0) -> None:
        """Wait until a background snapshot load (if any) has finished."""
        thread = self._swap_thread
        if thread is not None:
            thread.join(timeout_s)

    def close(self) -> None:
        """Let the interpreter's final collection see everything again."""
        gc.unfreeze()
