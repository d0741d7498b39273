"""Usage events off the request path (`online.usage_log.UsageLog`): recalls over real HTTP
queue them, a flush or the app's shutdown writes them to the real inbox, the pipeline still
counts them, a failing inbox neither fails the recall nor loses the events, a full queue
drops (and counts) the oldest."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.usage_log import UsageLog
from pipelines import consolidate as stages
from pipelines.embedders import HashEmbedder
from pipelines.inbox import Inbox, InboxError, open_inbox
from pipelines.policy import Policy
from pipelines.records import Event, Identity
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse

DANA = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "acme"}
DEPLOY_TURN = ("Noted. <MEMORY_PROPOSALS_JSON>[{\"type\": \"decision\", \"title\": \"Deploy day\", "
               "\"content\": \"Deploys happen on Tuesdays only.\", \"tags\": [\"deploy\"]}]"
               "</MEMORY_PROPOSALS_JSON>")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(embedder="hash", data_dir=str(tmp_path))


def usage_events(settings: Settings) -> list[Event]:
    inbox = open_inbox(settings)
    try:
        return inbox.read_after(0, kinds=["usage"])
    finally:
        inbox.close()


def deploy_day_recalled(client: TestClient) -> str:
    """Land the 'Deploy day' decision, recall it; returns its item id."""
    turn = client.post("/v1/turns", json={"identity": DANA, "role": "assistant", "text": DEPLOY_TURN})
    assert turn.status_code == 201, turn.text
    resp = client.post("/v1/recall", json={"identity": DANA, "query": "when do deploys happen?"})
    assert resp.status_code == 200, resp.text
    (hit,) = [h for h in resp.json()["hits"] if h["title"] == "Deploy day"]
    return hit["id"]


def manual_usage_log(client: TestClient, append=None, **kw) -> UsageLog:
    """Swap the service's batcher for one without its timer thread: only an explicit flush
    (or the app's shutdown) writes, so the test sees each step."""
    service = client.app.state.service
    service.usage.close()
    service.usage = UsageLog(append or service.inbox.append, background=False, **kw)
    return service.usage


def test_recall_usage_lands_after_a_flush_and_after_shutdown(settings: Settings) -> None:
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        usage = manual_usage_log(client)
        item_id = deploy_day_recalled(client)
        assert usage_events(settings) == []  # queued, not written before the answer
        assert client.get("/readyz").json()["usage_log"] | {"last_error": None} == {
            "queued": 1, "recorded": 1, "written": 0, "dropped": 0, "errors": 0, "last_error": None}
        assert usage.flush()
        (first,) = usage_events(settings)
        assert item_id in first.payload["item_ids"] and first.identity.user_id == "dana"
        # A second recall is still queued when the app shuts down: shutdown writes it.
        assert client.post("/v1/recall", json={"identity": DANA, "query": "deploy day"}).status_code == 200
        assert len(usage_events(settings)) == 1
    assert app.state.internal_errors == 0
    events = usage_events(settings)
    assert len(events) == 2 and item_id in events[1].payload["item_ids"]
    assert usage.stats()["written"] == 2 and usage.stats()["queued"] == 0


def test_background_thread_writes_within_its_interval(settings: Settings) -> None:
    with Inbox(settings.inbox_path) as inbox:
        usage = UsageLog(inbox.append, interval_s=0.05)
        try:
            usage.record(usage_event(["mem_a"]))
            deadline = time.monotonic() + 10
            while not inbox.read_after(0, kinds=["usage"]) and time.monotonic() < deadline:
                time.sleep(0.02)
            (event,) = inbox.read_after(0, kinds=["usage"])
            assert event.payload["item_ids"] == ["mem_a"] and usage.stats()["written"] == 1
        finally:
            usage.close()


def test_pipeline_counts_usage_recorded_by_recalls(settings: Settings) -> None:
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        item_id = deploy_day_recalled(client)
        assert client.post("/v1/recall", json={"identity": DANA, "query": "deploy day"}).status_code == 200
    # Shutdown wrote both usage events; consolidation turns them into usage_count.
    with Inbox(settings.inbox_path) as inbox, Warehouse(settings.warehouse_path) as wh:
        stages.land_events(inbox, wh)
        report = stages.govern_items(inbox, wh, Policy(settings), settings=settings)
        assert report.usage >= 2
        item = wh.get_item(item_id)
        assert item is not None and item.usage_count == 2 and item.last_used_at


def test_a_failing_inbox_append_does_not_fail_the_recall_and_is_retried(settings: Settings) -> None:
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        inbox = client.app.state.service.inbox
        failures = [InboxError("disk I/O error")]

        def flaky_append(events):
            if failures:
                raise failures.pop()
            return inbox.append(events)

        usage = manual_usage_log(client, flaky_append)
        item_id = deploy_day_recalled(client)  # answered 200 although the write will fail
        assert usage.flush() is False
        stats = client.get("/readyz").json()["usage_log"]
        assert (stats["queued"], stats["written"], stats["errors"]) == (1, 0, 1)
        assert "disk I/O error" in stats["last_error"]
        assert usage_events(settings) == []
        assert usage.flush() is True  # the retry writes the same event
        (event,) = usage_events(settings)
        assert item_id in event.payload["item_ids"]
        assert usage.stats() | {"last_error": None} == {
            "queued": 0, "recorded": 1, "written": 1, "dropped": 0, "errors": 1, "last_error": None}
    assert app.state.internal_errors == 0


def test_a_batch_that_keeps_failing_is_dropped_after_max_attempts() -> None:
    def broken(events):
        raise InboxError("inbox is closed")

    usage = UsageLog(broken, background=False, max_attempts=3)
    usage.record(usage_event(["mem_a"]))
    assert [usage.flush() for _ in range(3)] == [False, False, False]
    assert usage.stats() | {"last_error": None} == {
        "queued": 0, "recorded": 1, "written": 0, "dropped": 1, "errors": 3, "last_error": None}


def test_a_full_queue_drops_the_oldest_and_counts_it(settings: Settings) -> None:
    with Inbox(settings.inbox_path) as inbox:
        usage = UsageLog(inbox.append, background=False, max_queue=3, batch_size=2)
        events = [usage_event([f"mem_{i}"]) for i in range(5)]
        for event in events:
            usage.record(event)
        assert usage.stats() | {"last_error": None} == {
            "queued": 3, "recorded": 5, "written": 0, "dropped": 2, "errors": 0, "last_error": None}
        assert usage.flush()
        stored = inbox.read_after(0, kinds=["usage"])
        assert [e.event_id for e in stored] == [e.event_id for e in events[2:]]  # the newest three
        usage.close()
        usage.record(usage_event(["late"]))  # after close: counted, never written
        assert usage.stats()["dropped"] == 3 and len(inbox.read_after(0, kinds=["usage"])) == 3


def test_a_failed_batch_goes_back_to_the_front_and_a_full_queue_drops_the_oldest(settings: Settings) -> None:
    with Inbox(settings.inbox_path) as inbox:
        first = [usage_event(["mem_1"]), usage_event(["mem_2"])]
        during = [usage_event(["mem_3"]), usage_event(["mem_4"])]  # recalls while the append runs
        arrived = [e.event_id for e in during]

        def failing_while_recalls_arrive(events):
            if not during:
                return inbox.append(events)
            while during:
                usage.record(during.pop(0))
            raise InboxError("database is locked")

        usage = UsageLog(failing_while_recalls_arrive, background=False, max_queue=3)
        for event in first:
            usage.record(event)
        assert usage.flush() is False
        # Back in order, oldest first; four events for three places: the oldest is dropped.
        assert usage.stats() | {"last_error": None} == {
            "queued": 3, "recorded": 4, "written": 0, "dropped": 1, "errors": 1, "last_error": None}
        queued = [e.event_id for e in first[1:]] + arrived
        assert usage.flush()  # the retry
        assert [e.event_id for e in inbox.read_after(0, kinds=["usage"])] == queued


def usage_event(item_ids: list[str]) -> Event:
    return Event(event_id=f"evt_usage_{uuid.uuid4().hex}", kind="usage",
                 identity=Identity(user_id="dana", project_id="atlas"), payload={"item_ids": item_ids})


def test_usage_events_of_two_workers_never_share_an_id(settings: Settings) -> None:
    """Each usage event has an id of its own, whichever worker (process or service) records
    it: the inbox keeps only the first event of an id, so a repeat would lose a recall's usage."""
    from online.state import MemoryService

    workers = [MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim)) for _ in range(2)]
    try:
        for _ in range(3):
            for service in workers:
                service.record_usage(Identity(**DANA), ["mem_a"], "deploy day")
        for service in workers:
            assert service.usage.flush()
    finally:
        for service in workers:
            service.close()
    events = usage_events(settings)
    assert len(events) == 6 and len({e.event_id for e in events}) == 6
