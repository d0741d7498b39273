"""A throwaway PostgreSQL server for tests and benchmarks: the Debian binaries (`initdb`,
`pg_ctl`) run into a temporary folder, listening on 127.0.0.1 only, removed on `stop()`.

    with LocalPostgres() as pg:
        url = pg.url()                       # postgresql://loci@127.0.0.1:PORT/postgres
        url = pg.fresh_database("t1")        # an empty database of its own

PostgreSQL refuses to run as root; as root the server runs as the `postgres` user (created
by Debian's package) or else `nobody`, in a folder handed to that user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SUPERUSER = "loci"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries on this machine, or the server would not start."""


def find_bindir() -> Path | None:
    """Where initdb, pg_ctl and postgres are: $LOCI_PG_BINDIR, PATH, or the newest
    /usr/lib/postgresql/<major>/bin (Debian keeps them off PATH)."""
    candidates: list[str] = []
    if os.environ.get("LOCI_PG_BINDIR"):
        candidates.append(os.environ["LOCI_PG_BINDIR"])
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(str(Path(on_path).resolve().parent))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for folder in candidates:
        if all((Path(folder) / tool).exists() for tool in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run_as() -> str | None:
    """The user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PostgresUnavailable("running as root and neither a postgres nor a nobody user exists")


class LocalPostgres:
    def __init__(self, *, port: int | None = None, settings: dict[str, str] | None = None) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise PostgresUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) found: install postgresql")
        self.bindir = bindir
        self.port = port or free_port()
        self.settings = {"max_connections": "200", **(settings or {})}
        self.root: Path | None = None
        self.user = _run_as()

    @property
    def datadir(self) -> Path:
        assert self.root is not None, "not started"
        return self.root / "data"

    def _tool(self, name: str, *args: str, timeout: float = 60.0) -> None:
        done = subprocess.run(
            [str(self.bindir / name), *args], user=self.user, capture_output=True, text=True, timeout=timeout,
            cwd=self.root,
        )
        if done.returncode != 0:
            said = done.stderr.strip() or done.stdout.strip()
            raise PostgresUnavailable(f"{name} failed ({done.returncode}): {said}")

    def start(self) -> LocalPostgres:
        self.root = Path(tempfile.mkdtemp(prefix="loci-pg-"))
        if self.user is not None:
            os.chown(self.root, pwd.getpwnam(self.user).pw_uid, -1)
        # --no-sync: a throwaway cluster's initial files need no fsync; the server itself
        # runs with PostgreSQL's defaults (fsync and synchronous_commit on).
        self._tool("initdb", "-D", str(self.datadir), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8", "--no-sync")
        options = " ".join(
            [f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root}"]
            + [f"-c {k}={v}" for k, v in self.settings.items()]
        )
        self._tool("pg_ctl", "-D", str(self.datadir), "-o", options, "-l", str(self.root / "server.log"),
                   "-w", "-t", "60", "start", timeout=90)
        return self

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{dbname}"

    def fresh_database(self, name: str) -> str:
        """Create an empty database `name` (dropped first if it exists); its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            con.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def allow_connections(self, url: str, allow: bool) -> None:
        """The database of `url` goes away (its connections dropped, new ones refused) or
        comes back: an inbox outage, for the replica tests."""
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url(), autocommit=True) as con:
            con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {"true" if allow else "false"}')
            if not allow:
                con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])

    def stop(self) -> None:
        if self.root is None:
            return
        try:
            if (self.datadir / "postmaster.pid").exists():
                self._tool("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop", timeout=60)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> LocalPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

