"""`serve(settings)`: run the recall service on uvicorn (`loci serve` calls it).

`workers=1` serves the app in this process. `workers=N` starts N uvicorn worker processes
on one port, each accepting connections from its own queue (`PerWorkerListener`) and
keeping its share of keep-alive clients (`online.balance`): each
loads the published snapshot itself, but the index (and with it every vector) is
memory-mapped read-only, so the workers share one copy in the page cache; the inbox is
SQLite in WAL mode and every worker reads the same delta, so a write through one worker is
recalled by another on the next request. Beyond one machine: run several such services on
the same data directory behind any load balancer.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path

import msgspec
import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from online.app import create_app
from online.balance import WorkerBalance, balancing, create_balance_file
from online.listener import listener_for_workers
from pipelines.settings import Settings

SETTINGS_ENV = "LOCI_SERVE_SETTINGS"  # how the worker processes get the parent's settings
BALANCE_ENV = "LOCI_SERVE_BALANCE"  # the workers' shared balance file (`online.balance`)


def app_from_env():
    """The app of one worker process (uvicorn's factory for `workers > 1`)."""
    app = create_app(msgspec.json.decode(os.environ[SETTINGS_ENV], type=Settings))
    path = os.environ.get(BALANCE_ENV)
    return balancing(app, WorkerBalance(path)) if path else app


def replica_warnings(settings: Settings) -> list[str]:
    """What an operator starting a replica should hear: a shared (PostgreSQL) inbox with a
    snapshot folder inside this replica's own data folder, where no consolidation run on
    another machine publishes (the replica would serve every write from the inbox, never a
    snapshot)."""
    if settings.inbox_url and not Path(settings.snapshots_dir).is_absolute():
        return ["the inbox is shared (inbox_url) but snapshots_dir "
                f"{settings.snapshots_dir!r} is relative: snapshots are read from {settings.snapshots_path}, "
                "inside this data folder, where a consolidation run with another data folder (another "
                "machine) never publishes; give every replica and the consolidation the shared folder's "
                "absolute path (--snapshots-dir, docs/deploy.md)"]
    return []


def serve(settings: Settings, *, log_level: str = "info", workers: int = 1) -> None:
    """Block serving HTTP on settings.host:settings.port until interrupted."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers!r}")
    logging.basicConfig(level=getattr(logging, log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for warning in replica_warnings(settings):
        logging.getLogger("loci.online").warning(warning)
    if workers == 1:
        uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level=log_level,
                    timeout_graceful_shutdown=10)
        return
    # Worker processes are spawned and import the app factory: settings travel in the environment.
    os.environ[SETTINGS_ENV] = msgspec.json.encode(settings).decode()
    config = uvicorn.Config("online.server:app_from_env", factory=True, workers=workers,
                            host=settings.host, port=settings.port, log_level=log_level,
                            timeout_graceful_shutdown=10)
    if sys.platform != "linux":  # SO_REUSEPORT balances only on Linux: uvicorn's one shared socket
        Multiprocess(config, sockets=[config.bind_socket()]).run()
        return
    uvicorn_log = logging.getLogger("uvicorn.error")
    try:
        listener = listener_for_workers(settings.host, settings.port)
    except OSError as exc:  # as uvicorn does for one worker: the message, no traceback
        uvicorn_log.error(exc)
        sys.exit(STARTUP_FAILURE)
    uvicorn_log.info("Uvicorn running on http://%s:%d with %d workers, one accept queue each "
                     "(Press CTRL+C to quit)", settings.host, listener.getsockname()[1], workers)
    balance = create_balance_file("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
    os.environ[BALANCE_ENV] = str(balance)
    try:
        Multiprocess(config, sockets=[listener]).run()
    finally:
        balance.unlink(missing_ok=True)
