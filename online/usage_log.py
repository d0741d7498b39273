"""Usage events written off the request path.

A recall records which items it returned (a `usage` event; the pipeline later increments
`usage_count` / `last_used_at`). That is bookkeeping, not a write the caller asked for, so
it need not be durable before the answer: appending it inline cost a full-sync inbox
transaction per recall and held the inbox write lock. `UsageLog` queues the events in
memory and a background thread appends them in one inbox call per batch (every
`interval_s`, or sooner once `batch_size` are waiting). On a crash at most the last
interval's events are lost; `close()` (service shutdown) writes what is queued.

Never blocks a request for long: `record()` only takes a short lock. A full queue drops the
oldest events (counted). A failing append is logged and counted, never raised into a
request; the batch stays queued and is retried on the next flush, and dropped (counted)
after `max_attempts` failures in a row so a broken inbox cannot grow memory without bound.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from pipelines.records import Event

log = logging.getLogger("loci.online")

DEFAULT_INTERVAL_S = 0.2
DEFAULT_BATCH_SIZE = 256
DEFAULT_MAX_QUEUE = 10_000
DEFAULT_MAX_ATTEMPTS = 5


class UsageLog:
    """A per-process batcher of `usage` events in front of an inbox `append`."""

    def __init__(
        self,
        append: Callable[[Sequence[Event]], Any],
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_queue: int = DEFAULT_MAX_QUEUE,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        background: bool = True,
    ) -> None:
        if batch_size < 1 or max_queue < 1 or max_attempts < 1:
            raise ValueError("batch_size, max_queue and max_attempts must be >= 1")
        self._append = append
        self.interval_s = float(interval_s)
        self.batch_size = int(batch_size)
        self.max_attempts = int(max_attempts)
        self._queue: deque[Event] = deque(maxlen=int(max_queue))
        self._lock = threading.Lock()  # guards the queue and the counters (held briefly)
        self._wake = threading.Condition(self._lock)
        self._write_lock = threading.Lock()  # one writer at a time: batches land in queue order
        self._closed = False
        self._failures = 0  # failed appends in a row of the batch at the head of the queue
        self._in_flight = 0  # events taken off the queue by the append running now
        self.queued_total = 0
        self.written = 0
        self.dropped = 0
        self.errors = 0
        self.last_error: str | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="loci-usage-log", daemon=True)
            self._thread.start()

    def record(self, event: Event) -> None:
        """Queue one event (never touches the inbox). A full queue drops its oldest event."""
        with self._lock:
            if self._closed:
                self.dropped += 1
                return
            if len(self._queue) == self._queue.maxlen:
                self.dropped += 1  # the deque's maxlen pushes out the oldest (never one being written)
            self._queue.append(event)
            self.queued_total += 1
            if len(self._queue) >= self.batch_size:
                self._wake.notify()

    def flush(self) -> bool:
        """Append everything queued now, in batches, on the calling thread. Returns False if
        an append failed (the events go back to the queue for the next flush, see the module doc)."""
        with self._write_lock:
            while True:
                with self._lock:
                    batch = [self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))]
                    self._in_flight = len(batch)
                if not batch:
                    return True
                try:
                    self._append(batch)
                except Exception as exc:  # noqa: BLE001 - a broken inbox must not reach a request
                    self._failed(batch, exc)
                    return False
                with self._lock:
                    self._in_flight = 0
                    self.written += len(batch)
                    self._failures = 0

    def _failed(self, batch: list[Event], exc: Exception) -> None:
        with self._lock:
            self._in_flight = 0
            self.errors += 1
            self._failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            give_up = self._failures >= self.max_attempts
            if give_up:
                self.dropped += len(batch)
                self._failures = 0
            else:  # back to the front, oldest first; what no longer fits is the oldest: dropped
                kept = (batch + list(self._queue))[-self._queue.maxlen:]
                self.dropped += len(batch) + len(self._queue) - len(kept)
                self._queue.clear()
                self._queue.extend(kept)
        log.warning("usage log: appending %d usage events failed (%s)%s", len(batch), self.last_error,
                    "; dropped them after repeated failures" if give_up else "; retried on the next flush")

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._closed and len(self._queue) < self.batch_size:
                    self._wake.wait(self.interval_s)
                closed = self._closed
            if closed:
                return  # close() writes the rest
            self.flush()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the thread and write what is queued (one try per batch). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self.flush()
        with self._lock:
            if self._queue:  # the final flush failed: nothing will retry these any more
                self.dropped += len(self._queue)
                self._queue.clear()

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"queued": len(self._queue) + self._in_flight, "recorded": self.queued_total,
                    "written": self.written, "dropped": self.dropped, "errors": self.errors,
                    "last_error": self.last_error}
