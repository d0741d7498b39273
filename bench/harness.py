"""Shared tools for the reliability benchmarks and tests: a real service process on a free
127.0.0.1 port, a load of acknowledged writes recorded per writer, the inbox/recall checks
that prove nothing acknowledged was lost or duplicated, snapshot corruption, synthetic
multi-tenant items, and consolidation runs in a child process (to be killed).

Everything here runs against real parts (uvicorn subprocess, SQLite inbox, FAISS snapshot
folders) and is bounded in time: every wait has a deadline and every process started here
is killed by the code that started it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import numpy as np

from bench.pg_local import free_port
from pipelines.inbox import open_inbox
from pipelines.ingest import ingest_chat_jsonl
from pipelines.materialize import message_item_id
from pipelines.records import SCOPE_KINDS, Identity, MemoryItem, Provenance, Scope
from pipelines.settings import Settings, load_settings
from pipelines.snapshot import (
    INDEX_FILE,
    ITEMS_FILE,
    MANIFEST_FILE,
    build_snapshot,
    current_version,
    list_versions,
)
from pipelines.warehouse import Warehouse

if TYPE_CHECKING:
    from assets.resources import FaultInjectionResource

# The folder holding bench/, online/ and pipelines/ (a checkout, or site-packages when
# installed): child processes get it on their path, so they run the same code.
CODE_ROOT = Path(__file__).resolve().parents[1]
WORDS = ("river", "stone", "maple", "signal", "harbor", "copper", "lantern", "meadow", "orbit",
         "cobalt", "tundra", "saffron", "quartz", "willow", "ember", "glacier", "falcon", "prism")


# -- identities ------------------------------------------------------------------------------


def ident(who: Identity) -> dict[str, str]:
    """An Identity as the JSON body field / query parameters the API takes."""
    return msgspec.to_builtins(who)


def random_identity(rng: random.Random, *, users: int = 4, projects: int = 3, sessions: int = 2,
                    orgs: int = 2) -> Identity:
    return Identity(user_id=f"u{rng.randrange(users)}", project_id=f"p{rng.randrange(projects)}",
                    session_id=f"s{rng.randrange(sessions)}", org_id=f"o{rng.randrange(orgs)}")


def unique_phrase(rng: random.Random, n: int = 4) -> str:
    """Distinct words plus a random token: recall of this exact phrase must find its item."""
    return " ".join(rng.sample(WORDS, n)) + f" zq{uuid.UUID(int=rng.getrandbits(128)).hex[:10]}"


# -- a real service process ------------------------------------------------------------------


SERVE_CODE = (
    "import sys, msgspec\n"
    "from online.server import serve\n"
    "from pipelines.settings import Settings\n"
    "serve(msgspec.json.decode(sys.argv[1], type=Settings), log_level='warning', workers=int(sys.argv[2]))\n"
)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def worker_pids(pid: int) -> list[int]:
    """The uvicorn worker processes under a `serve(..., workers > 1)` process (its spawned
    children, not multiprocessing's resource tracker)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    out = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            out.append(int(child))
    return out


class ServiceProcess:
    """`online.server.serve(settings)` (what `loci serve` runs) in a child process on a free
    127.0.0.1 port. `start()` waits for /readyz; `kill()` is SIGKILL (no shutdown code runs).
    `via_cli`: run the `loci serve` command itself, its settings in a config file of its own
    (`launch()` then `wait_ready()` start several at once)."""

    def __init__(self, settings: Settings, *, ready_timeout_s: float = 60.0, log_path: Path | None = None,
                 via_cli: bool = False, workers: int = 1):
        self.workers = workers
        self.port = free_port()
        self.settings = msgspec.structs.replace(settings, host="127.0.0.1", port=self.port)
        self.url = f"http://127.0.0.1:{self.port}"
        self.ready_timeout_s = ready_timeout_s
        self.log_path = log_path or Path(self.settings.data_dir) / f"service-{self.port}.log"
        self.via_cli = via_cli
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ServiceProcess":
        return self.launch().wait_ready()

    def launch(self) -> "ServiceProcess":
        """Start the process without waiting for it to be ready."""
        import tomlkit

        data_dir = Path(self.settings.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOCI_")}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CODE_ROOT), env.get("PYTHONPATH", "")) if p)
        env["LOCI_CONFIG"] = str(data_dir / "absent.toml")
        env["PYTHONFAULTHANDLER"] = "1"  # a native crash leaves its Python stacks in the log
        if self.via_cli:
            config = data_dir / f"loci-{self.port}.toml"
            config.write_text(tomlkit.dumps(msgspec.to_builtins(self.settings)), encoding="utf-8")
            env["LOCI_CONFIG"] = str(config)
            cmd = [sys.executable, "-m", "loci.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port),
                   "--workers", str(self.workers)]
        else:
            cmd = [sys.executable, "-c", SERVE_CODE, msgspec.json.encode(self.settings).decode(), str(self.workers)]
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in _reap
        # Its own process group: with --workers the serving processes are its children, and
        # ending the service must end them too (a killed parent alone leaves them running).
        self.proc = subprocess.Popen(cmd, cwd=str(CODE_ROOT), env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    def wait_ready(self) -> "ServiceProcess":
        assert self.proc is not None, "launch() first"
        deadline = time.monotonic() + self.ready_timeout_s
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"service exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200 and self._every_worker_answers():
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"service not ready after {self.ready_timeout_s}s: {self.log_tail()}")
            time.sleep(0.05)

    def _every_worker_answers(self) -> bool:
        """/readyz is answered by the first worker up; a run started then would open its
        keep-alive connections while another worker is still loading and never use it. Fresh
        connections reach each worker that listens (one queue each), so ask /healthz for pids."""
        if self.workers == 1:
            return True
        answered = {httpx.get(f"{self.url}/healthz", timeout=2).json()["pid"] for _ in range(8 * self.workers)}
        return answered >= set(self.serving_pids()) and len(answered) == self.workers

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_kb(self) -> int | None:
        """Resident set size of the service process (Linux /proc), None once it is gone."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None

    def worker_memory_kb(self) -> list[dict[str, int]]:
        """Per serving process (the process itself with one worker, else its worker
        children): pid, RSS and PSS (proportional set size: shared pages, such as a
        memory-mapped snapshot, divided among the processes mapping them), from Linux /proc."""
        out = []
        for pid in self.serving_pids():
            try:
                fields = {line.split(":")[0]: int(line.split()[1])
                          for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
                          if line.split(":")[0] in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean")}
            except (OSError, ValueError, IndexError):
                continue
            out.append({"pid": pid, **{k.lower() + "_kb": v for k, v in fields.items()}})
        return out

    def serving_pids(self) -> list[int]:
        """The processes that answer requests: the service itself, or its worker children."""
        return worker_pids(self.pid) if self.workers > 1 else [self.pid]

    def cpu_seconds(self) -> float:
        """User + system CPU seconds used so far by the serving processes (their threads
        included): a difference over a run is the server's CPU cost of it, which a busy
        machine slows down but does not inflate the way it inflates wall times."""
        return sum(self.cpu_seconds_by_process().values())

    def cpu_seconds_by_process(self) -> dict[int, float]:
        """`cpu_seconds` per serving process (pid -> seconds): how the work was shared
        between the workers."""
        return {pid: cpu_seconds(pid) or 0.0 for pid in self.serving_pids()}

    def kill(self) -> int | None:
        """SIGKILL: the service (its worker processes too) dies wherever it is, as on a power cut."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self._kill_group()
        return self._reap()

    def _kill_group(self) -> None:
        """SIGKILL whatever is left of the service's process group (orphaned workers)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self._kill_group()
        return self._reap()

    def _reap(self) -> int | None:
        if self.proc is None:
            return None
        try:
            self.proc.wait(timeout=15)
        finally:
            if not self._log.closed:
                self._log.close()
        return self.proc.returncode

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def __enter__(self) -> "ServiceProcess":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


# -- a load of writes with acknowledgements --------------------------------------------------


@dataclass
class Ack:
    """One acknowledged write: what the service answered 2xx with."""

    kind: str  # "turn" or "write"
    who: Identity
    phrase: str
    turn_id: str | None = None
    item_id: str | None = None  # memory.write item id, or the turn's message item id


@dataclass
class WriteLoad:
    """Concurrent writers against one service: each thread alternates POST /v1/turns and
    /v1/tools memory.write with unique phrases, recording every 2xx answer (an
    acknowledged write) and every request that got no answer (in flight at a kill)."""

    url: str
    writers: int = 4
    seed: int = 0
    acks: list[Ack] = field(default_factory=list)
    unanswered: list[Ack] = field(default_factory=list)  # in flight at the kill: outcome unknown
    refused: list[tuple[int, str]] = field(default_factory=list)  # non-2xx answers
    dropped_before_kill: list[str] = field(default_factory=list)  # transport errors while the service ran
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _killed: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def mark_kill(self) -> None:
        """Call right before killing the service: transport errors from now on are writes
        in flight at the kill; each writer then stops after its one in-flight write."""
        self._killed.set()

    def start(self) -> "WriteLoad":
        for n in range(self.writers):
            t = threading.Thread(target=self._writer, args=(n,), name=f"writer-{n}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def wait_for_acks(self, count: int, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.acks) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.acks)} acks after {timeout_s}s; refused: {self.refused[:3]}")
            time.sleep(0.005)

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)

    def _writer(self, n: int) -> None:
        rng = random.Random(self.seed * 1000 + n)
        who = random_identity(rng)
        with httpx.Client(base_url=self.url, timeout=30.0) as client:
            i = 0
            while not self._stop.is_set():
                i += 1
                phrase = unique_phrase(rng)
                if i % 2:
                    turn_id = f"turn-{self.seed}-{n}-{i}-{uuid.uuid4().hex[:8]}"
                    ack = Ack("turn", who, phrase, turn_id=turn_id, item_id=message_item_id(turn_id))
                    body = {"identity": ident(who), "role": "user", "turn_id": turn_id,
                            "text": f"Please remember: {phrase}."}
                    path = "/v1/turns"
                else:
                    ack = Ack("write", who, phrase)
                    body = {"action": "memory.write", "identity": ident(who),
                            "args": {"item": {"type": "fact", "title": f"fact {phrase}",
                                              "content": f"The {phrase} is recorded.", "scope": "user",
                                              "confidence": 0.9}}}
                    path = "/v1/tools"
                try:
                    resp = client.post(path, json=body)
                except httpx.TransportError as exc:
                    with self._lock:
                        if self._killed.is_set():
                            self.unanswered.append(ack)
                            return  # its write was cut by the kill; nothing more to send
                        self.dropped_before_kill.append(f"{type(exc).__name__}: {exc}")
                    if self._stop.wait(0.05):
                        return
                    continue
                if resp.status_code // 100 == 2:
                    if ack.kind == "write":
                        ack.item_id = resp.json()["result"]["item_id"]
                    with self._lock:
                        self.acks.append(ack)
                else:
                    with self._lock:
                        self.refused.append((resp.status_code, resp.text[:300]))


# -- durability checks ------------------------------------------------------------------------


@dataclass
class InboxAudit:
    """What the inbox holds for a set of writes (after a crash and restart)."""

    events: int
    seqs_contiguous: bool
    duplicate_event_ids: list[str]
    turn_count: Counter  # turn_id -> number of turn events
    write_count: Counter  # item id -> number of memory.write events

    def missing(self, acks: Iterable[Ack]) -> list[Ack]:
        return [a for a in acks if self.count_of(a) == 0]

    def duplicated(self, acks: Iterable[Ack]) -> list[Ack]:
        return [a for a in acks if self.count_of(a) > 1]

    def count_of(self, ack: Ack) -> int:
        if ack.kind == "turn":
            return self.turn_count[ack.turn_id]
        return self.write_count[ack.item_id] if ack.item_id else 0


def audit_inbox(inbox_location: str | Path) -> tuple[InboxAudit, list[Any]]:
    with open_inbox(inbox_location) as inbox:
        events = inbox.read_after(0)
    ids = Counter(e.event_id for e in events)
    turns: Counter = Counter()
    writes: Counter = Counter()
    for e in events:
        if e.kind == "turn":
            turns[e.payload.get("turn_id")] += 1
        elif e.kind == "memory.write":
            writes[(e.payload.get("item") or {}).get("id")] += 1
    seqs = [e.seq for e in events]
    audit = InboxAudit(
        events=len(events),
        seqs_contiguous=seqs == list(range(1, len(seqs) + 1)),
        duplicate_event_ids=[i for i, c in ids.items() if c > 1],
        turn_count=turns,
        write_count=writes,
    )
    return audit, events


def unanswered_landed(events: Sequence[Any], unanswered: Iterable[Ack]) -> tuple[int, int]:
    """(landed, not landed) among writes whose answer never came (in flight at the kill).
    Either outcome is allowed; a landed one must be there once (checked by the audit)."""
    texts = set()
    for e in events:
        if e.kind == "turn":
            texts.add(e.payload.get("text", ""))
        elif e.kind == "memory.write":
            texts.add((e.payload.get("item") or {}).get("content", ""))
    landed = sum(1 for a in unanswered if any(a.phrase in t for t in texts))
    return landed, sum(1 for _ in unanswered) - landed


def read_back(url: str, acks: Sequence[Ack], *, recall_sample: int | None = None,
              rng: random.Random | None = None) -> dict[str, list[str]]:
    """Read every acknowledged item back through the API with its writer's identity
    (memory.read), and recall a sample of them by their unique phrase (POST /v1/recall).
    Returns the ids that were not found by each route."""
    not_read: list[str] = []
    not_recalled: list[str] = []
    by_who: dict[Identity, list[Ack]] = {}
    for a in acks:
        by_who.setdefault(a.who, []).append(a)
    with httpx.Client(base_url=url, timeout=30.0) as client:
        for who, group in by_who.items():
            for start in range(0, len(group), 100):
                ids = [a.item_id for a in group[start:start + 100]]
                resp = client.post("/v1/tools", json={"action": "memory.read", "identity": ident(who),
                                                      "args": {"ids": ids}})
                resp.raise_for_status()
                got = {i["id"] for i in resp.json()["result"]["items"]}
                not_read += [i for i in ids if i not in got]
        sample = list(acks)
        if recall_sample is not None and len(sample) > recall_sample:
            sample = (rng or random.Random(0)).sample(sample, recall_sample)
        for a in sample:
            resp = client.post("/v1/recall", json={"identity": ident(a.who), "query": a.phrase,
                                                   "mode": "catalog", "k": 10})
            resp.raise_for_status()
            if a.item_id not in {h["id"] for h in resp.json()["hits"]}:
                not_recalled.append(a.item_id)
    return {"not_read": not_read, "not_recalled": not_recalled}


# -- snapshots ----------------------------------------------------------------------------------

CORRUPTIONS = ("flip_index", "truncate_items", "delete_manifest")


def corrupt_snapshot(folder: Path, how: str, rng: random.Random | None = None) -> str:
    """Damage one published snapshot folder in place; returns what was done."""
    rng = rng or random.Random(0)
    if how == "flip_index":
        path = folder / INDEX_FILE
        data = bytearray(path.read_bytes())
        for _ in range(8):
            data[rng.randrange(len(data))] ^= 0xFF
        path.write_bytes(bytes(data))
        return f"flipped 8 bytes of {path.name}"
    if how == "truncate_items":
        path = folder / ITEMS_FILE
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        return f"truncated {path.name} to {len(data) // 2} bytes"
    if how == "delete_manifest":
        (folder / MANIFEST_FILE).unlink()
        return f"deleted {MANIFEST_FILE}"
    raise ValueError(f"unknown corruption {how!r}; known: {CORRUPTIONS}")


def tenant_items(n: int, rng: random.Random, owners: Sequence[Identity], *,
                    prefix: str = "syn") -> list[MemoryItem]:
    """`n` distinct items owned by random owners with random scope kinds, tiers and types."""
    types = ("fact", "decision", "definition", "constraint", "preference", "note")
    out = []
    for i in range(n):
        owner = rng.choice(owners)
        phrase = " ".join(rng.sample(WORDS, 3))
        out.append(MemoryItem(
            id=f"{prefix}-{i}", tier=rng.choice(("stm", "mtm", "ltm")), type=rng.choice(types),
            title=f"{phrase} {i}",
            content=f"Item {i}: the {phrase} setting for {owner.project_id} is {rng.randrange(10_000)}.",
            scope=Scope.for_identity(rng.choice(SCOPE_KINDS), owner),
            tags=rng.sample(WORDS, 2), provenance=Provenance(source_id=f"{prefix}-src-{i}"),
            confidence=round(rng.uniform(0.5, 1.0), 3), importance=rng.randint(1, 8),
        ))
    return out


def publish(settings: Settings, items: Sequence[MemoryItem], embedder: Any, *, watermark: int = 0,
            batch: int = 512) -> str:
    """Embed (what the service embeds for an item) and publish a snapshot; returns its version."""
    from online.state import embedding_text

    texts = [embedding_text(i) for i in items]
    chunks = [embedder.embed(texts[s:s + batch]) for s in range(0, len(texts), batch)]
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, embedder.dim), np.float32)
    return build_snapshot(settings.snapshots_path, list(items), vectors, embedder_name=embedder.name,
                          dim=embedder.dim, watermark=watermark, keep=settings.snapshots_keep).version


# -- consolidation runs (in a child process, to be killed) --------------------------------------


def make_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Fast, deterministic settings: hash embedder, extractive merger, no config file."""
    values: dict[str, Any] = {
        "data_dir": str(tmp_path / "data"),
        "embedder": "hash",
        "merger": "extractive",
    }
    values.update(overrides)
    return load_settings(config_file=tmp_path / "absent.toml", environ={}, **values)


def block(*proposals: dict[str, Any]) -> str:
    return f"<MEMORY_PROPOSALS_JSON>{json.dumps(list(proposals))}</MEMORY_PROPOSALS_JSON>"


def dana(text: str, role: str = "assistant", session: str = "s1", **extra: Any) -> dict[str, Any]:
    return {"role": role, "text": text, "user_id": "dana", "project_id": "atlas", "session_id": session, **extra}


def erin(text: str, role: str = "assistant", session: str = "e1", **extra: Any) -> dict[str, Any]:
    return {"role": role, "text": text, "user_id": "erin", "project_id": "borealis", "session_id": session, **extra}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def ingest(settings: Settings, rows: list[dict[str, Any]], name: str = "chats.jsonl") -> dict[str, Any]:
    """Land rows in the inbox through `ingest_chat_jsonl` (parse, govern, append)."""
    from pipelines.policy import Policy

    folder = Path(settings.data_dir).parent
    folder.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(folder / name, rows)
    with open_inbox(settings) as inbox:
        return ingest_chat_jsonl(path, inbox, Policy(settings)).as_dict()


def snapshot_state(settings: Settings) -> dict[str, Any]:
    root = settings.snapshots_path
    files = {}
    if root.exists():
        for p in sorted(root.rglob("*")):
            if p.is_file():
                files[str(p.relative_to(root))] = p.read_bytes()
    return {"current": current_version(root) if root.exists() else None,
            "versions": list_versions(root), "files": files}


def active_items(settings: Settings):
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return wh.active_items()


def settings_env(settings: Settings, **extra: str) -> dict[str, str]:
    """Environment that makes `load_settings()` in a child process reproduce `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCI_")}
    env["LOCI_CONFIG"] = str(Path(settings.data_dir).parent / "absent.toml")
    env["LOCI_DATA_DIR"] = settings.data_dir
    env["LOCI_EMBEDDER"] = settings.embedder
    env["LOCI_MERGER"] = settings.merger
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CODE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra)
    return env


def faults(point: str, action: str, marker_file: str | Path = "") -> "FaultInjectionResource":
    """The `faults` resource that makes a run `action` ("fail", "sleep:<s>") at `point`."""
    from assets.resources import FaultInjectionResource

    return FaultInjectionResource(point=point, action=action, marker_file=str(marker_file))


# The child reads its fault from the environment: LOCI_TEST_HOOK="<point>=<action>" and
# LOCI_TEST_HOOK_MARKER (the file written when the point is reached).
RUN_IN_CHILD = (
    "import json, os\n"
    "from assets.run import run_consolidation\n"
    "from bench.harness import faults\n"
    "from pipelines.settings import load_settings\n"
    "point, _, action = os.environ.get('LOCI_TEST_HOOK', '').partition('=')\n"
    "resources = {'faults': faults(point, action, os.environ.get('LOCI_TEST_HOOK_MARKER', ''))}\n"
    "summary = run_consolidation(load_settings(), instance='ephemeral', resources=resources)\n"
    "print('SUMMARY ' + json.dumps(summary, default=str), flush=True)\n"
)


def start_child_run(settings: Settings, **env: str) -> subprocess.Popen:
    """`run_consolidation` in a separate process (as a second `loci consolidate` would);
    `LOCI_TEST_HOOK` / `LOCI_TEST_HOOK_MARKER` in `env` inject a fault (see RUN_IN_CHILD)."""
    return subprocess.Popen(
        [sys.executable, "-c", RUN_IN_CHILD],
        cwd=str(Path(settings.data_dir).parent),
        env=settings_env(settings, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def child_summary(stdout: str) -> dict[str, Any]:
    for line in stdout.splitlines():
        if line.startswith("SUMMARY "):
            return json.loads(line[len("SUMMARY "):])
    raise AssertionError(f"no summary in child output: {stdout[-2000:]}")
