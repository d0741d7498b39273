"""The inbox, once per store (SQLite file, real PostgreSQL server; the `inbox_location`
fixture): ordering, idempotence, gap-free seqs, concurrency across threads and processes,
and durability of acknowledged appends across a SIGKILL. The same tests for each store."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipelines.inbox import Inbox, InboxError, open_inbox
from pipelines.records import Event, Identity

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_event(event_id: str, kind: str = "turn", **payload) -> Event:
    return Event(
        event_id=event_id,
        kind=kind,
        identity=Identity(user_id="u1", project_id="p1", session_id="s1", org_id="o1"),
        payload=payload or {"text": f"payload of {event_id}"},
    )


@pytest.fixture
def inbox(inbox_location):
    with open_inbox(inbox_location) as ib:
        yield ib


def test_append_assigns_increasing_seqs_and_reads_back(inbox):
    assert inbox.max_seq() == 0 and inbox.count() == 0
    first = inbox.append([make_event("a"), make_event("b")])
    second = inbox.append([make_event("c", kind="usage", ids=["x"])])
    assert [e.seq for e in first + second] == [1, 2, 3]
    assert inbox.max_seq() == 3 and inbox.count() == 3

    stored = inbox.read_after(0)
    assert [e.event_id for e in stored] == ["a", "b", "c"]
    assert stored[2].payload == {"ids": ["x"]}
    assert stored[0].identity == Identity(
        user_id="u1", project_id="p1", session_id="s1", org_id="o1"
    )
    assert stored == first + second  # what append returned is what is stored
    assert [e.event_id for e in inbox.read_after(1)] == ["b", "c"]
    assert inbox.read_after(3) == []


def test_append_is_idempotent_by_event_id_without_gaps(inbox):
    original = inbox.append([make_event("a"), make_event("b")])
    again = inbox.append(
        [make_event("b", text="changed"), make_event("c"), make_event("c", text="dup in batch")]
    )
    assert [e.seq for e in again] == [2, 3, 3]
    assert again[0] == original[1]  # the stored event, not the new payload
    assert again[2].payload == again[1].payload
    assert inbox.count() == 3
    nxt = inbox.append([make_event("d")])
    assert nxt[0].seq == 4  # a skipped duplicate burns no seq


def test_sha256_is_recomputed_over_the_stored_payload(inbox):
    event = make_event("a", text="one")
    event.payload["text"] = "two"  # mutated after construction: the built hash is stale
    stored = inbox.append([event])[0]
    assert (
        stored.sha256
        == make_event("fresh", text="two").sha256
        != make_event("x", text="one").sha256
    )
    assert inbox.get("a").sha256 == stored.sha256


def test_read_after_filters_by_kind_and_limit(inbox):
    inbox.append([make_event(f"e{i}", kind="turn" if i % 2 else "proposal") for i in range(10)])
    turns = inbox.read_after(0, kinds=["turn"])
    assert [e.event_id for e in turns] == ["e1", "e3", "e5", "e7", "e9"]
    assert [e.seq for e in inbox.read_after(4, limit=3)] == [5, 6, 7]
    assert [e.event_id for e in inbox.read_after(0, kinds=["proposal"], limit=2)] == ["e0", "e2"]
    assert inbox.read_after(0, kinds=[]) == []
    assert inbox.get("e4").seq == 5
    assert inbox.get("missing") is None


def test_bad_input_raises_documented_errors(inbox):
    with pytest.raises(TypeError):
        inbox.append([{"event_id": "x"}])
    with pytest.raises(TypeError):
        inbox.append(make_event("x"))  # not a sequence
    bogus = make_event("x")
    bogus.kind = "bogus"
    with pytest.raises(ValueError, match="bogus"):
        inbox.append([bogus])
    with pytest.raises(ValueError):
        inbox.append([make_event("y", when=object())])
    with pytest.raises(ValueError):
        inbox.append([make_event("")])
    with pytest.raises(ValueError, match="unknown event kinds"):
        inbox.read_after(0, kinds=["nope"])
    with pytest.raises(TypeError):
        inbox.read_after("0")
    with pytest.raises(ValueError):
        inbox.read_after(0, limit=-1)
    assert inbox.count() == 0  # nothing half-written
    inbox.close()
    with pytest.raises(InboxError):
        inbox.append([make_event("z")])


def test_a_failing_batch_stores_nothing(inbox):
    inbox.append([make_event("a")])
    with pytest.raises(ValueError):
        inbox.append([make_event("b"), make_event("c", bad=object())])
    assert inbox.count() == 1
    assert inbox.append([make_event("b")])[0].seq == 2


def test_a_check_sees_what_is_stored_and_may_refuse_the_whole_append(inbox):
    inbox.append([make_event("a", text="first")])
    seen = []
    inbox.append([make_event("a", text="again"), make_event("b")], check=seen.append)
    assert [e.payload["text"] if e else None for e in seen[0]] == ["first", None]

    def refuse(stored):
        raise LookupError("taken")

    with pytest.raises(LookupError, match="taken"):
        inbox.append([make_event("c")], check=refuse)
    assert inbox.count() == 2 and inbox.get("c") is None
    assert inbox.append([make_event("c")])[0].seq == 3  # no seq burnt by the refused append


def test_a_check_runs_under_the_write_lock(inbox):
    """Threads appending the same id with different words, each refusing an id another
    holds: exactly one lands (a check before the lock would let several pass and the
    later ones be acknowledged but dropped)."""
    landed, refused = [], []

    def write(n: int) -> None:
        def mine_or_free(stored):
            if stored[0] is not None and stored[0].payload["text"] != f"writer {n}":
                raise LookupError("taken")
        try:
            inbox.append([make_event("same", text=f"writer {n}")], check=mine_or_free)
            landed.append(n)
        except LookupError:
            refused.append(n)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(landed) == 1 and len(refused) == 5
    assert inbox.get("same").payload["text"] == f"writer {landed[0]}"


def test_sqlite_uses_wal_and_full_sync(tmp_path):
    with Inbox(tmp_path / "inbox.sqlite3") as ib:
        con = ib._con()
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_postgres_commits_synchronously(postgres_url):
    with open_inbox(postgres_url) as ib:
        assert ib.synchronous_commit() == "on"  # acknowledged = flushed by the server


def test_threads_share_one_inbox(inbox):
    def worker(t: int) -> None:
        for i in range(20):
            inbox.append([make_event(f"t{t}-{i}")])

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    events = inbox.read_after(0)
    assert [e.seq for e in events] == list(range(1, 81))
    assert {e.event_id for e in events} == {f"t{t}-{i}" for t in range(4) for i in range(20)}


def _append_batches(path: str, worker: int, batches: int, size: int) -> list[list[int]]:
    """Runs in a spawned process: append `batches` batches, return each batch's seqs."""
    out = []
    with open_inbox(path) as ib:
        for b in range(batches):
            events = [make_event(f"w{worker}-b{b}-{k}") for k in range(size)]
            events.append(make_event(f"w{worker}-b0-0"))  # a duplicate of its first event
            out.append([e.seq for e in ib.append(events)[:size]])
    return out


def test_processes_append_at_once(inbox_location):
    path = inbox_location
    open_inbox(path).close()
    workers, batches, size = 4, 15, 3
    ctx = multiprocessing.get_context("spawn")
    with open_inbox(path) as reader, ctx.Pool(workers) as pool:
        pending = pool.starmap_async(
            _append_batches, [(path, w, batches, size) for w in range(workers)]
        )
        while True:  # read while the other processes write
            done = pending.ready()
            seen = [e.seq for e in reader.read_after(0)]
            assert seen == list(range(1, len(seen) + 1))  # always a gapless prefix
            if done:
                break
            time.sleep(0.005)
        results = pending.get(timeout=60)
        # Let the workers exit on their own: the context exit's terminate() can hang when
        # the pool's handler starts a new worker while others are being killed (CPython's
        # Pool race, seen once under load 14).
        pool.close()
        pool.join()
        all_events = reader.read_after(0)

    total = workers * batches * size
    assert [e.seq for e in all_events] == list(range(1, total + 1))
    assert len({e.event_id for e in all_events}) == total
    for worker_batches in results:
        for seqs in worker_batches:
            # one append = one transaction = consecutive seqs
            assert seqs == list(range(seqs[0], seqs[0] + size))


_KILLED_WRITER = """
import sys
from pipelines.inbox import open_inbox
from pipelines.records import Event, Identity
ib = open_inbox(sys.argv[1])
for i in range(1_000_000):
    ib.append([Event(event_id=f"k{i}", kind="turn", identity=Identity(), payload={"i": i})])
    print(i + 1, flush=True)  # acknowledged: append returned
"""


def test_acknowledged_appends_survive_sigkill(inbox_location):
    path = inbox_location
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=env,
    )
    acked = 0
    try:
        deadline = time.monotonic() + 30
        while acked < 40:
            line = proc.stdout.readline()
            assert line, f"writer died early: {proc.stderr.read()}"
            acked = int(line)
            assert time.monotonic() < deadline
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    with open_inbox(path) as ib:
        events = ib.read_after(0)
        assert len(events) >= acked
        assert [e.event_id for e in events[:acked]] == [f"k{i}" for i in range(acked)]
        assert [e.payload["i"] for e in events] == list(range(len(events)))
        assert ib.max_seq() == len(events)


def test_nul_characters_are_refused_alike(inbox):
    bad = Event(event_id="n", kind="turn", identity=Identity(user_id="a\x00b"), payload={"t": 1})
    with pytest.raises(ValueError, match="NUL"):
        inbox.append([bad])
    stored = inbox.append([make_event("ok", text="a\x00b")])[0]  # inside JSON it is escaped
    assert inbox.get("ok").payload == {"text": "a\x00b"} == stored.payload


def test_an_inbox_reopened_keeps_its_events_and_seq(inbox_location):
    with open_inbox(inbox_location) as first:
        first.append([make_event("a"), make_event("b")])
    with open_inbox(inbox_location) as again:
        assert [e.event_id for e in again.read_after(0)] == ["a", "b"]
        assert again.append([make_event("c")])[0].seq == 3


def test_the_setting_chooses_the_store(tmp_path):
    from pipelines.settings import load_settings

    default = load_settings(environ={}, data_dir=str(tmp_path))
    assert default.inbox_location == str(tmp_path / "inbox.sqlite3")
    with open_inbox(default) as ib:
        assert type(ib) is Inbox
    url = "postgresql://nobody@127.0.0.1:1/none"
    chosen = load_settings(environ={"LOCI_INBOX_URL": url}, data_dir=str(tmp_path / "pg"))
    assert chosen.inbox_location == url
    with pytest.raises(InboxError, match="cannot open the inbox postgresql://nobody@127.0.0.1:1/none"):
        open_inbox(chosen)  # chosen, and unreachable: said so at once, not after a timeout
    assert not (tmp_path / "pg").exists()


def test_postgres_survives_dropped_connections_and_bounds_its_wait(postgres_url):
    import psycopg

    from pipelines.inbox_postgres import _APPEND_LOCK_KEY, PostgresInbox

    with PostgresInbox(postgres_url, busy_timeout_s=0.5) as ib, psycopg.connect(postgres_url, autocommit=True) as admin:
        ib.append([make_event("a")])
        # The server drops every other connection (a restart, a failover): the next append
        # gets a fresh one instead of an error.
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert ib.append([make_event("b")])[0].seq == 2
        # Another holder of the append lock: the append gives up after busy_timeout_s, not acknowledged.
        with admin.transaction():
            admin.execute("SELECT pg_advisory_xact_lock(%s)", [_APPEND_LOCK_KEY])
            started = time.monotonic()
            with pytest.raises(InboxError, match="append failed"):
                ib.append([make_event("c")])
            assert time.monotonic() - started < 5
        assert [e.event_id for e in ib.read_after(0)] == ["a", "b"]
        assert ib.append([make_event("c")])[0].seq == 3  # no gap left by the refused one


def test_postgres_down_is_said_within_seconds_not_after_the_busy_timeout(postgres_url):
    """Every connection dropped and new ones refused: a read or an append fails after about
    REACH_CHECK_AFTER_S with the server's reason (the service answers 503 with it), not after
    waiting busy_timeout_s (30 s) for a pooled connection; it works again once the server is back."""
    import psycopg

    from pipelines.inbox_postgres import PostgresInbox

    name = postgres_url.rsplit("/", 1)[1]
    admin_url = postgres_url.rsplit("/", 1)[0] + "/postgres"
    with PostgresInbox(postgres_url) as ib, psycopg.connect(admin_url, autocommit=True) as admin:
        ib.append([make_event("a")])
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
        try:
            for action in (ib.max_seq, lambda: ib.append([make_event("b")])):
                started = time.monotonic()
                with pytest.raises(InboxError, match="cannot be reached: .*not currently accepting connections"):
                    action()
                assert time.monotonic() - started < 15  # REACH_CHECK_AFTER_S and one refused connect
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        assert ib.append([make_event("b")])[0].seq == 2


def test_an_inbox_is_copied_with_its_seqs_and_a_copy_resumes(tmp_path, inbox_location):
    """`copy_inbox` (`loci inbox-copy`): a SQLite inbox into an empty one, same seqs; an
    interrupted copy resumes; a target holding other events is refused."""
    from pipelines.inbox import copy_inbox

    with open_inbox(tmp_path / "old.sqlite3") as old, open_inbox(inbox_location) as new:
        old.append([make_event(f"e{i}") for i in range(7)])
        new.append(old.read_after(0, limit=3))  # an earlier copy, cut short
        assert copy_inbox(old, new, batch=2) == 4
        assert [(e.seq, e.event_id) for e in new.read_after(0)] == [(e.seq, e.event_id) for e in old.read_after(0)]
        assert copy_inbox(old, new) == 0
        with open_inbox(tmp_path / "other.sqlite3") as other:
            other.append([make_event("x")])
            with pytest.raises(InboxError, match="not the source's first"):
                copy_inbox(other, new)


def test_shared_vectors_round_trip_and_keep_the_first(inbox):
    """A cache beside the log (the service's workers embed a write once): what one process
    shares another reads by key; sharing a key again keeps the first vector."""
    assert inbox.shared_vectors(["k1", "k2"]) == {}
    inbox.share_vectors({"k1": b"\x00\x00\x80?", "k2": b"\x00\x00\x00@"})
    inbox.share_vectors({"k1": b"\x00\x00\x00\x00"})
    assert inbox.shared_vectors(["k1", "k2", "k3"]) == {"k1": b"\x00\x00\x80?", "k2": b"\x00\x00\x00@"}
    assert inbox.count() == 0  # not events


def test_shared_vectors_past_their_time_are_dropped(inbox, monkeypatch):
    import pipelines.inbox as inbox_module

    inbox.share_vectors({"old": b"1234"})
    monkeypatch.setattr(time, "time", lambda real=time.time: real() + inbox_module.SHARED_VECTOR_TTL_S + 60)
    inbox.share_vectors({"new": b"5678"})
    assert inbox.shared_vectors(["old", "new"]) == {"new": b"5678"}


def test_append_sharing_lands_the_events_and_the_vectors(inbox):
    """A write's events and its items' vectors in one call (the service's writes): the events
    as `append` lands them, the vectors as `share_vectors` keeps them."""
    landed = inbox.append_sharing([make_event("a"), make_event("b")], {"k1": b"\x00\x00\x80?"})
    assert [e.seq for e in landed] == [1, 2] and inbox.count() == 2
    assert inbox.shared_vectors(["k1"]) == {"k1": b"\x00\x00\x80?"}
    assert inbox.append_sharing([make_event("a")], {})[0].seq == 1  # idempotent as `append`


def test_sqlite_append_sharing_is_one_transaction(tmp_path):
    """SQLite: the vectors go in the events' own commit (one fsync a write, not two), so an
    append its check refuses shares nothing either."""
    from pipelines.inbox import Inbox

    with Inbox(tmp_path / "inbox.sqlite3") as inbox:
        commits: list[str] = []
        inbox._con().set_trace_callback(lambda sql: commits.append(sql) if sql.strip() == "COMMIT" else None)
        inbox.append_sharing([make_event("a")], {"k1": b"1234", "k2": b"5678"})
        assert len(commits) == 1 and inbox.shared_vectors(["k1", "k2"]) == {"k1": b"1234", "k2": b"5678"}

        def refuse(stored):
            raise LookupError("taken")

        with pytest.raises(LookupError):
            inbox.append_sharing([make_event("c")], {"k3": b"0000"}, check=refuse)
        assert inbox.shared_vectors(["k3"]) == {} and inbox.get("c") is None
