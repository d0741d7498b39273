"""The warehouse lock: one writing run at a time, across processes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import filelock

from pipelines.consolidate.common import ConsolidationError


def lock_path(warehouse_path: str | Path) -> Path:
    return Path(f"{warehouse_path}.lock")


class WarehouseLock:
    """Cross-process lock held by a run for its whole duration (one writer at a time).

    `acquire()` returns how long it waited; it raises ConsolidationError after `timeout_s`.
    """

    def __init__(self, warehouse_path: str | Path, timeout_s: float = 6 * 3600.0) -> None:
        self.path = lock_path(warehouse_path)
        self.timeout_s = float(timeout_s)
        self._lock = filelock.FileLock(self.path, thread_local=False)
        self.waited_s = 0.0

    def acquire(self, on_wait: Callable[[str], None] | None = None) -> float:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire(timeout=0)
            self.waited_s = 0.0
            return 0.0
        except filelock.Timeout:
            pass
        if on_wait is not None:
            on_wait(f"another run holds the warehouse ({self.path}); waiting for it to finish")
        started = time.monotonic()
        try:
            self._lock.acquire(timeout=self.timeout_s)
        except filelock.Timeout as exc:
            raise ConsolidationError(
                f"the warehouse stayed locked by another run for {self.timeout_s:.0f}s ({self.path})"
            ) from exc
        self.waited_s = time.monotonic() - started
        return self.waited_s

    def release(self) -> None:
        if self._lock.is_locked:
            self._lock.release()

    @property
    def is_locked(self) -> bool:
        return self._lock.is_locked

    def __enter__(self) -> "WarehouseLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
