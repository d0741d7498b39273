"""`online.listener`: the socket `loci serve --workers N` hands to each worker."""

from __future__ import annotations

import pickle
import socket

import pytest

from online.listener import bind_reuse_port, listener_for_workers


def test_each_unpickling_binds_a_socket_of_its_own_on_the_same_port() -> None:
    """What a spawned worker gets is a new SO_REUSEPORT socket, not the parent's: each worker
    then has its own accept queue, and the parent's socket, never listening, gets nothing."""
    with listener_for_workers("127.0.0.1", 0) as parent:
        port = parent.getsockname()[1]
        with pickle.loads(pickle.dumps(parent)) as a, pickle.loads(pickle.dumps(parent)) as b:
            assert {a.fileno(), b.fileno()}.isdisjoint({parent.fileno()}) and a.fileno() != b.fileno()
            for worker in (a, b):
                assert worker.getsockname() == ("127.0.0.1", port)
                assert worker.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 1
                worker.listen()
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                a.settimeout(0), b.settimeout(0)
                accepted = []
                for worker in (a, b):
                    try:
                        accepted.append(worker.accept()[0])
                    except BlockingIOError:
                        pass
                assert len(accepted) == 1  # exactly one worker's queue got the connection
                accepted[0].close()


def test_a_port_another_service_listens_on_is_refused() -> None:
    """Without the probe, SO_REUSEPORT would let a second service join the first's port (here
    one of its workers' sockets) and take a share of its connections."""
    with bind_reuse_port("127.0.0.1", 0) as other:
        other.listen()
        with pytest.raises(OSError):
            listener_for_workers("127.0.0.1", other.getsockname()[1])
