"""Keeping `loci serve --workers N`'s keep-alive clients spread over the workers.

Each worker accepts from its own SO_REUSEPORT queue (`online.listener`), and Linux picks the
queue by a hash of the client's address and port. A chat loop keeps its connection open, so
with a few clients the hash alone can leave one worker with all of them while another idles
(four clients on two workers: one time in eight; `loci bench latency --workers 2` measured
73 recalls/s then, 128 with two each). So the workers tell each other how many clients each
served lately, in one small shared file (a slot per worker: pid, clients, heartbeat), and a
worker holding more than one client above the least loaded live worker answers one of them
with `Connection: close`: that client reconnects (HTTP clients do so by themselves), from
another port, and the hash places it afresh. Only a reply is changed, never a request.
"""

from __future__ import annotations

import fcntl
import mmap
import os
import struct
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

SLOTS = 64  # workers one file can hold (`loci serve --workers` beyond this: the rest do not balance)
_SLOT = struct.Struct("<qqd")  # pid, clients served within WINDOW_S, heartbeat (POSIX seconds)
WINDOW_S = 2.0  # a client served within this is one the worker holds
_STALE_S = 3 * WINDOW_S  # a slot not refreshed for this long is a worker gone
FILE_BYTES = SLOTS * _SLOT.size

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]


def create_balance_file(folder: str | os.PathLike[str]) -> Path:
    """A zeroed balance file in `folder` (the parent creates it; workers open it)."""
    fd, name = tempfile.mkstemp(prefix="loci-workers-", dir=folder)
    with os.fdopen(fd, "wb") as f:
        f.write(b"\0" * FILE_BYTES)
    return Path(name)


class WorkerBalance:
    """This worker's slot in the shared file, and its recent clients."""

    def __init__(self, path: str | os.PathLike[str], *, heartbeat: bool = True,
                 clock: Callable[[], float] = time.time, pid: int | None = None) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._clients: dict[Any, float] = {}
        self._file = open(path, "r+b")  # noqa: SIM115 - held for the worker's life
        self._map = mmap.mmap(self._file.fileno(), FILE_BYTES)
        self.pid = pid or os.getpid()
        self.slot = self._claim()
        self._stop = threading.Event()
        if heartbeat:  # an idle worker stays visible (and counted as the least loaded)
            threading.Thread(target=self._beat, name="loci-balance", daemon=True).start()

    def _claim(self) -> int:
        fcntl.flock(self._file.fileno(), fcntl.LOCK_EX)
        try:
            now = self._clock()
            for n in range(SLOTS):
                pid, _, beat = _SLOT.unpack_from(self._map, n * _SLOT.size)
                if pid in (0, self.pid) or now - beat > _STALE_S:
                    _SLOT.pack_into(self._map, n * _SLOT.size, self.pid, 0, now)
                    return n
            return -1
        finally:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)

    def _publish(self, now: float) -> int:
        for client in [c for c, seen in self._clients.items() if now - seen > WINDOW_S]:
            del self._clients[client]
        if self.slot >= 0:
            _SLOT.pack_into(self._map, self.slot * _SLOT.size, self.pid, len(self._clients), now)
        return len(self._clients)

    def _beat(self) -> None:
        while not self._stop.wait(WINDOW_S / 2):
            with self._lock:
                self._publish(self._clock())

    def others(self, now: float) -> list[int]:
        """Clients held by each other live worker."""
        out = []
        for n in range(SLOTS):
            pid, clients, beat = _SLOT.unpack_from(self._map, n * _SLOT.size)
            if pid and n != self.slot and now - beat <= _STALE_S:
                out.append(clients)
        return out

    def served(self, client: Any) -> bool:
        """Note a request from `client` (its address and port); True when its connection
        should close: this worker holds more than one client above the least loaded one."""
        with self._lock:
            now = self._clock()
            self._clients[client] = now
            mine = self._publish(now)
            others = self.others(now)
            if others and mine > min(others) + 1:
                del self._clients[client]
                self._publish(now)
                return True
            return False

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            if self.slot >= 0 and _SLOT.unpack_from(self._map, self.slot * _SLOT.size)[0] == self.pid:
                _SLOT.pack_into(self._map, self.slot * _SLOT.size, 0, 0, 0.0)  # unless taken over
            self._map.close()
            self._file.close()


def balancing(app: ASGIApp, balance: WorkerBalance) -> ASGIApp:
    """`app` whose replies carry `Connection: close` when `balance` asks a client to move."""

    async def wrapped(scope: Scope, receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        client = scope.get("client")
        if scope["type"] != "http" or not client or not balance.served(tuple(client)):
            await app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, closing)

    return wrapped
