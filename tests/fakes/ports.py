"""Loopback ports for tests that start real servers or need a refused connection."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago: bound, read, released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port_url() -> str:
    """An http URL nothing listens on once the probe socket closed: connection refused."""
    return f"http://127.0.0.1:{free_port()}"
