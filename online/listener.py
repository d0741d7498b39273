"""`PerWorkerListener`: one port, one accept queue per `loci serve --workers N` process.

Imports nothing heavy on purpose: each spawned worker unpickles its listener before it starts
answering the uvicorn supervisor's health pings, and a worker that does not answer within
5 s is killed as hung (importing the app here did that on a loaded machine).
"""

from __future__ import annotations

import socket


def bind_reuse_port(host: str, port: int, cls: type[socket.socket] = socket.socket) -> socket.socket:
    """A socket bound to (host, port) with SO_REUSEPORT, not yet listening."""
    sock = cls(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


class PerWorkerListener(socket.socket):
    """The service's address, bound again by every worker process uvicorn spawns.

    With one shared listening socket there is one accept queue, and the worker that wakes
    first accepts every waiting connection: the keep-alive connections of concurrent chat
    loops (or of `loci bench latency --workers 2`) mostly landed on one worker while the
    other idled. uvicorn's supervisor hands its sockets to each worker it spawns or restarts
    by pickling them; this one unpickles as a fresh SO_REUSEPORT socket on the same address,
    so each worker listens on its own queue and Linux spreads new connections over the
    queues by a hash of the client's address and port. The parent's copy is bound but never
    listens: it holds the port (and fixes port 0 to one number) and is given no connection.
    """

    def __reduce__(self):
        host, port = self.getsockname()[:2]
        return bind_reuse_port, (host, port)


def listener_for_workers(host: str, port: int) -> PerWorkerListener:
    """The parent's `PerWorkerListener` on (host, port); OSError if anything listens there.

    SO_REUSEPORT alone would let a second service started on a busy port join it and take a
    share of its connections; a probe bound without it fails as uvicorn's shared socket did."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # as any server: the TIME_WAIT of past connections is no conflict, a listener is
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host, port))
        port = probe.getsockname()[1]  # port 0: the one the kernel picked
    return bind_reuse_port(host, port, PerWorkerListener)
