"""SIGKILL in the middle of concurrent writes loses nothing acknowledged.

A real service process (`online.server.serve`, uvicorn on 127.0.0.1) takes POST /v1/turns
and memory.write from several writer threads; it is killed with SIGKILL while writes are in
flight, then restarted on the same data directory. Every write it acknowledged (2xx) is in
the inbox exactly once and is read back and recalled with its writer's identity; writes
that never got an answer may or may not have landed, but never twice. A client that
retries its unanswered turns with the same turn id gets them stored exactly once.

The randomised version (many kill points, counts) is `bench/durability.py`.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import pytest

from bench.harness import ServiceProcess, WriteLoad, audit_inbox, ident, read_back, unanswered_landed
from pipelines.settings import Settings

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)


def test_sigkill_mid_writes_loses_and_duplicates_nothing_acknowledged(tmp_path: Path) -> None:
    settings = Settings(embedder="hash", data_dir=str(tmp_path / "data"))
    service = ServiceProcess(settings).start()
    load = WriteLoad(service.url, writers=4, seed=1).start()
    try:
        load.wait_for_acks(60)
        load.mark_kill()
        assert service.kill() == -signal.SIGKILL  # while the writers are still sending
    finally:
        load.stop()
        service.kill()
    acks, unanswered = list(load.acks), list(load.unanswered)
    assert not load.refused and not load.dropped_before_kill, (load.refused[:3], load.dropped_before_kill[:3])
    assert len(acks) >= 60 and {a.kind for a in acks} == {"turn", "write"}
    assert unanswered, "the kill should have cut at least one write in flight"

    audit, events = audit_inbox(settings.inbox_path)
    assert audit.missing(acks) == []
    assert audit.duplicated(acks) == []
    assert audit.duplicate_event_ids == [] and audit.seqs_contiguous
    landed, lost = unanswered_landed(events, unanswered)
    assert landed + lost == len(unanswered)

    with ServiceProcess(settings) as restarted:
        found = read_back(restarted.url, acks)
        assert found == {"not_read": [], "not_recalled": []}

        # At-least-once from the client + idempotent turn ids = exactly once.
        retried = [a for a in unanswered if a.kind == "turn"]
        with httpx.Client(base_url=restarted.url, timeout=30) as client:
            for a in retried:
                resp = client.post("/v1/turns", json={"identity": ident(a.who), "role": "user",
                                                      "turn_id": a.turn_id, "text": f"Please remember: {a.phrase}."})
                assert resp.status_code == 201, resp.text
        audit_after, _ = audit_inbox(settings.inbox_path)
        assert all(audit_after.turn_count[a.turn_id] == 1 for a in retried)
        assert audit_after.duplicated(acks) == [] and audit_after.seqs_contiguous
        assert read_back(restarted.url, retried) == {"not_read": [], "not_recalled": []}


def test_ending_a_multi_worker_service_ends_its_workers(tmp_path: Path) -> None:
    """A benchmark's service with `--workers 2` leaves no worker behind, killed or stopped:
    the workers are the parent's children and would otherwise keep ~1 GB each at 100k."""
    from bench.harness import worker_pids

    for end in ("kill", "stop"):
        service = ServiceProcess(Settings(embedder="hash", data_dir=str(tmp_path / end)), workers=2).start()
        try:
            workers = worker_pids(service.pid)
            assert len(workers) == 2 and httpx.get(f"{service.url}/readyz").status_code == 200
        finally:
            getattr(service, end)()
        deadline = time.monotonic() + 10
        while [pid for pid in workers if _running(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in workers if _running(pid)], end


def _running(pid: int) -> bool:
    """Alive and not a zombie (a dead orphan waiting for init to reap it holds no memory)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
