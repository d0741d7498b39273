"""Several `loci serve` replicas serving one memory: each on its own 127.0.0.1 port with a data
folder of its own, all sharing one PostgreSQL inbox and one snapshot folder (what
docs/deploy.md describes for several machines). Used by the replica kill test
(tests/reliability/test_replicas.py) and `loci bench scaleout`.

`CrossReplicaReads` checks read-your-writes across replicas while a load runs: every write
acknowledged by one replica is recalled, on the very next request, from another one.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import msgspec

from bench.harness import ServiceProcess, WriteLoad, ident
from pipelines.settings import Settings


def replica_settings(base: Settings, root: Path, index: int) -> Settings:
    """`base` for replica `index`: its own data folder under `root`; the inbox URL and the
    (absolute) snapshot folder stay shared."""
    if not base.inbox_url:
        raise ValueError("replicas share a PostgreSQL inbox: set inbox_url")
    if not Path(base.snapshots_dir).is_absolute():
        raise ValueError("replicas share one snapshot folder: give snapshots_dir as an absolute path")
    return msgspec.structs.replace(base, data_dir=str(root / f"replica-{index}"))


class ReplicaSet:
    """`n` `loci serve` processes (started at once, each waited for); `kill(i)` is SIGKILL."""

    def __init__(self, base: Settings, n: int, root: Path, *, ready_timeout_s: float = 90.0) -> None:
        self.base, self.root, self.ready_timeout_s = base, Path(root), ready_timeout_s
        self.replicas: list[ServiceProcess] = []
        for i in range(n):
            self.replicas.append(self._make(i))
        self.alive = [False] * n

    def _make(self, i: int) -> ServiceProcess:
        taken = {r.port for r in self.replicas}
        while True:  # a port handed out twice would let one replica answer for another
            replica = ServiceProcess(replica_settings(self.base, self.root, i), via_cli=True,
                                     ready_timeout_s=self.ready_timeout_s)
            if replica.port not in taken:
                return replica

    @property
    def urls(self) -> list[str]:
        return [r.url for r in self.replicas]

    def start(self) -> ReplicaSet:
        try:
            for r in self.replicas:
                r.launch()
            for i, r in enumerate(self.replicas):
                r.wait_ready()
                self.alive[i] = True
        except BaseException:
            self.stop()
            raise
        return self

    def kill(self, i: int) -> int | None:
        self.alive[i] = False
        return self.replicas[i].kill()

    def restart(self, i: int) -> ServiceProcess:
        """A fresh process (new port) in place of replica `i`."""
        self.replicas[i].kill()
        self.replicas[i] = self._make(i).start()
        self.alive[i] = True
        return self.replicas[i]

    def snapshot_versions(self) -> list[str | None]:
        """Each live replica's served snapshot version (/readyz); None for a dead one."""
        out: list[str | None] = []
        for i, r in enumerate(self.replicas):
            out.append(httpx.get(f"{r.url}/readyz", timeout=10).json()["snapshot_version"] if self.alive[i] else None)
        return out

    def stop(self) -> None:
        for i, r in enumerate(self.replicas):
            self.alive[i] = False
            r.kill()

    def __enter__(self) -> ReplicaSet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class CrossReplicaReads:
    """Follows the acknowledged writes of per-replica loads (`loads[i]` sends to replica i)
    and recalls each one, as soon as it is acknowledged, by its unique phrase from another
    live replica. `missed`: acknowledged writes another replica did not recall; `errors`:
    failed requests to a replica that was alive before and after the request."""

    replicas: ReplicaSet
    loads: list[WriteLoad]
    seed: int = 0
    checked: int = 0
    missed: list[tuple[int, int, str]] = field(default_factory=list)  # (written at, read at, item id)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _drain: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> CrossReplicaReads:
        self._thread = threading.Thread(target=self._run, name="cross-replica-reads", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 30.0, *, drain: bool = True) -> None:
        """Stop; with `drain` (stop the loads first) only after every ack so far is checked."""
        (self._drain if drain else self._stop).set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        self._stop.set()

    def _run(self) -> None:
        rng = random.Random(self.seed)
        seen = [0] * len(self.loads)
        clients = [httpx.Client(base_url=url, timeout=30.0) for url in self.replicas.urls]
        try:
            while not self._stop.is_set():
                progressed = False
                for i, load in enumerate(self.loads):
                    while seen[i] < len(load.acks) and not self._stop.is_set():
                        ack = load.acks[seen[i]]
                        seen[i] += 1
                        progressed = True
                        self._check(i, ack, clients, rng)
                if not progressed:
                    if self._drain.is_set():
                        return
                    self._stop.wait(0.005)
        finally:
            for c in clients:
                c.close()

    def _check(self, written_at: int, ack: Any, clients: list[httpx.Client], rng: random.Random) -> None:
        others = [j for j, up in enumerate(self.replicas.alive) if up and j != written_at]
        while others:
            j = rng.choice(others)
            try:
                resp = clients[j].post("/v1/recall", json={"identity": ident(ack.who), "query": ack.phrase,
                                                           "mode": "catalog", "k": 10})
            except httpx.TransportError as exc:
                if self.replicas.alive[j]:
                    self.errors.append(f"replica {j}: {type(exc).__name__}: {exc}")
                    return
                others.remove(j)  # killed while we asked: ask another one
                continue
            if resp.status_code != 200:
                self.errors.append(f"replica {j}: {resp.status_code} {resp.text[:200]}")
                return
            self.checked += 1
            if ack.item_id not in {h["id"] for h in resp.json()["hits"]}:
                self.missed.append((written_at, j, ack.item_id))
            return


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.05) -> float:
    """Poll `predicate` until true; the seconds it took. TimeoutError naming `what`."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{what}: not within {timeout_s}s")
        time.sleep(interval_s)
    return time.monotonic() - start
