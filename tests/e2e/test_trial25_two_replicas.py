"""Two replicas, one memory, as a small team runs them (docs/deploy.md, "Several machines"):
a throwaway PostgreSQL inbox and one snapshot folder shared by replica A (the app under
uvicorn in a thread of this process) and replica B (a `loci serve` process), each with a
data folder of its own, both on 127.0.0.1 over real HTTP; consolidation runs beside them
with a warehouse of its own and publishes into the shared folder. What a user expects:

- A decision written through A is recalled from B at once (before any consolidation),
  ahead of the chatter about it.
- A correction written through B supersedes the decision on A.
- A proposal held for review and approved on A is gone from B's review queue.
- A memory forgotten through A is not answered by B.
- After a consolidation both replicas swap to the new snapshot on their own, and writes
  acknowledged while the run was going (some touching what the run consolidates) stay
  recalled on both.
- A replica killed (SIGKILL) right after acknowledging writes loses none of them.
- An inbox outage answers writes 503 with a message (never a 500), recall from the
  replica's snapshot (labelled stale), and service resumes after it.
- A one-machine store moved to a PostgreSQL inbox keeps every write: an empty new inbox is
  named as the problem (consolidation refuses it, /readyz lists it) until `loci inbox-copy`
  fills it with the old seqs.

Found broken, fixed: an outage was a 500 after a 30 s wait for a pooled connection; a
store moved to an empty PostgreSQL inbox silently left its new writes unrecalled and never
consolidated (seqs below the watermark). Kept: everything else above.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import httpx
import msgspec
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from typer.testing import CliRunner

from bench.harness import ServiceProcess, WriteLoad, audit_inbox, make_settings, read_back, unanswered_landed
from bench.replicas import replica_settings, wait_until
from loci.cli import app as cli_app
from online.app import create_app
from pipelines.consolidate import InboxBehind, consolidate_once
from pipelines.embedders import HashEmbedder
from tests.online.test_proxy import serve

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
OMAR = {"user_id": "omar", "project_id": "atlas", "session_id": "o1", "org_id": "acme"}
TIMEOUT_S = 60  # generous: polls end as soon as the condition holds, even on a loaded machine


class Replica:
    """One replica's HTTP client, asserting what a well-formed call gets (never a 5xx)."""

    def __init__(self, name: str, url: str) -> None:
        self.name, self.url = name, url
        self.http = httpx.Client(base_url=url, timeout=TIMEOUT_S)

    def post(self, path: str, body: dict, expect: int) -> dict:
        resp = self.http.post(path, json=body)
        assert resp.status_code == expect, (self.name, path, resp.status_code, resp.text)
        return resp.json()

    def tool(self, who: dict, action: str, args: dict) -> dict:
        return self.post("/v1/tools", {"action": action, "identity": who, "args": args}, 200)["result"]

    def turn(self, who: dict, role: str, text: str) -> dict:
        return self.post("/v1/turns", {"identity": who, "role": role, "text": text}, 201)

    def recall(self, who: dict, query: str, mode: str = "inject") -> dict:
        return self.post("/v1/recall", {"identity": who, "query": query, "mode": mode}, 200)

    def review_queue(self, who: dict) -> list[str]:
        resp = self.http.get("/v1/review", params=who)
        assert resp.status_code == 200, (self.name, resp.text)
        return [entry["id"] for entry in resp.json()["pending"]]

    def snapshot_version(self) -> str | None:
        return self.http.get("/readyz").json()["snapshot_version"]


def hit_ids(answer: dict) -> list[str]:
    return [h["id"] for h in answer["hits"]]


@pytest.fixture(scope="module")
def team(postgres_server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("trial25")
    url = postgres_server.fresh_database("t_trial25_two_replicas")
    base = make_settings(root, inbox_url=url, snapshots_dir=str(root / "shared" / "snapshots"))
    # B first: a `loci serve` process takes seconds to import; A starts meanwhile.
    b_proc = ServiceProcess(replica_settings(base, root, 1), via_cli=True, ready_timeout_s=120).launch()
    try:
        a_settings = replica_settings(base, root, 0)
        a_app = create_app(a_settings, embedder=HashEmbedder(a_settings.embedder_dim))
        with serve(a_app) as a_url:
            b_proc.wait_ready()
            yield {"a": Replica("A", a_url), "b": Replica("B", b_proc.url), "a_app": a_app, "b_proc": b_proc,
                   "url": url, "server": postgres_server, "pipeline": replica_settings(base, root, 9)}
        assert a_app.state.internal_errors == 0  # nothing A answered was a 500
    finally:
        b_proc.kill()


def test_what_one_replica_hears_the_other_answers_before_and_after_consolidation(team) -> None:
    a, b = team["a"], team["b"]
    # Chatter first, then the decision: recalled from B at once, the decision first.
    a.turn(OMAR, "user", "the atlas gateway timeout debate again, maybe 60 seconds, whatever")
    decision = a.tool(LENA, "memory.write", {"item": {
        "type": "decision", "title": "Atlas API gateway timeout",
        "content": "The atlas API gateway timeout is 30 seconds."}})
    found = b.recall(OMAR, "What is the atlas API gateway timeout?")
    assert hit_ids(found)[0] == decision["item_id"], found["hits"]
    assert "timeout is 30 seconds" in found["injection"].split("CONVERSATION EXCERPTS")[0]

    # A correction through B supersedes the decision on A.
    correction = b.tool(LENA, "memory.write", {"item": {
        "type": "decision", "title": "Atlas API gateway timeout",
        "content": "The atlas API gateway timeout is 45 seconds, not 30."}})
    assert correction["supersedes"] == [decision["item_id"]], correction
    found = a.recall(OMAR, "What is the atlas API gateway timeout?")
    assert hit_ids(found)[0] == correction["item_id"] and decision["item_id"] not in hit_ids(found), found["hits"]

    # A held proposal approved on A leaves B's review queue.
    a.tool(LENA, "memory.write", {"item": {"type": "fact", "title": "Atlas staging database",
                                           "content": "The atlas staging database is Postgres 15."}})
    (held,) = b.tool(OMAR, "memory.propose", {"items": [{
        "type": "fact", "title": "Atlas staging database",
        "content": "The atlas staging database is MySQL 8."}]})["proposals"]
    assert held["action"] == "quarantine", held  # it contradicts Lena's fact, written through A
    assert held["item_id"] in a.review_queue(LENA)
    a.tool(LENA, "memory.review", {"id": held["item_id"], "decision": "approve"})
    assert held["item_id"] not in b.review_queue(LENA)

    # Forgotten through A: B does not answer it.
    secret = b.tool(OMAR, "memory.write", {"item": {
        "type": "fact", "title": "Omar's parking spot", "content": "Omar parks in bay 17 of the atlas garage."}})
    assert secret["item_id"] in hit_ids(a.recall(OMAR, "Where does Omar park?"))
    a.tool(OMAR, "memory.forget", {"id": secret["item_id"]})
    gone = b.recall(OMAR, "Where does Omar park?")
    assert secret["item_id"] not in hit_ids(gone) and "bay 17" not in (gone["injection"] or ""), gone

    # Consolidation publishes to the shared folder; writes acknowledged during the run (one
    # of them corrects what the run consolidates) must stay recalled on both after the swap.
    during: dict[str, str] = {}

    def write_during_the_run(point: str) -> None:
        if point == "land:before_commit":  # the run has read the inbox up to here
            during["a"] = a.tool(LENA, "memory.write", {"item": {
                "type": "decision", "title": "Atlas deploy window",
                "content": "Atlas deploys happen on Tuesdays after 14:00."}})["item_id"]
            during["b"] = b.tool(LENA, "memory.write", {"item": {
                "type": "decision", "title": "Atlas API gateway timeout",
                "content": "The atlas API gateway timeout is 50 seconds, not 45."}})["item_id"]
    before = (a.snapshot_version(), b.snapshot_version())
    report = consolidate_once(team["pipeline"], hook=write_during_the_run)
    version = report["snapshot"].version
    assert version not in before and len(during) == 2
    wait_until(lambda: a.snapshot_version() == version and b.snapshot_version() == version, TIMEOUT_S,
               "both replicas hot-swap the new snapshot")
    for replica in (a, b):
        timeout = replica.recall(OMAR, "What is the atlas API gateway timeout?")
        assert hit_ids(timeout)[0] == during["b"], (replica.name, timeout["hits"])
        replaced = {decision["item_id"], correction["item_id"]}
        assert replaced.isdisjoint(hit_ids(timeout)), (replica.name, timeout["hits"])
        assert during["a"] in hit_ids(replica.recall(LENA, "When does atlas deploy?")), replica.name
        assert held["item_id"] not in replica.review_queue(LENA), replica.name
        gone = replica.recall(OMAR, "Where does Omar park?")
        assert secret["item_id"] not in hit_ids(gone) and "bay 17" not in (gone["injection"] or ""), replica.name


def test_a_replica_killed_mid_write_loses_nothing_it_acknowledged(team) -> None:
    a, b_proc = team["a"], team["b_proc"]
    load = WriteLoad(b_proc.url, writers=2, seed=25).start()  # turns and memory.write on B
    try:
        load.wait_for_acks(6, timeout_s=TIMEOUT_S)
        load.mark_kill()
        assert b_proc.kill() == -signal.SIGKILL  # mid-load: its writers are still sending
    finally:
        load.stop()
    assert load.refused == [] and load.dropped_before_kill == [], (load.refused[:3], load.dropped_before_kill[:3])
    assert read_back(a.url, load.acks) == {"not_read": [], "not_recalled": []}  # every ack, from A
    audit, events = audit_inbox(team["url"])
    assert audit.duplicated(load.acks) == [] and audit.seqs_contiguous
    landed, lost = unanswered_landed(events, load.unanswered)  # cut mid-request: either is allowed
    assert landed + lost == len(load.unanswered)


def _cut(server, url: str, allow: bool) -> None:
    server.allow_connections(url, allow)


def test_an_inbox_outage_refuses_writes_with_a_message_and_passes(team) -> None:
    a = team["a"]
    _cut(team["server"], team["url"], allow=False)
    try:
        for path, body in (("/v1/turns", {"identity": LENA, "role": "user", "text": "is the inbox down?"}),
                           ("/v1/tools", {"action": "memory.write", "identity": LENA, "args": {"item": {
                               "type": "fact", "title": "Outage", "content": "Written while the inbox was down."}}})):
            resp = a.http.post(path, json=body)
            assert resp.status_code == 503, (path, resp.status_code, resp.text)
            error = resp.json()["error"]
            assert "inbox is unavailable" in error and "cannot be reached" in error, error
        # Recall is answered from what the replica holds, labelled (test_replica_inbox_outage.py).
        resp = a.http.post("/v1/recall", json={"identity": LENA, "query": "atlas deploy window"})
        assert resp.status_code == 200 and resp.json()["stale_since"], resp.text
        ready = a.http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["stale_since"], ready.text
    finally:
        _cut(team["server"], team["url"], allow=True)
    landed = wait_until(lambda: a.http.post("/v1/turns", json={
        "identity": LENA, "role": "user", "text": "the inbox is back"}).status_code == 201, TIMEOUT_S,
        "writes accepted again after the outage")
    assert landed >= 0
    assert "Tuesdays" in a.recall(LENA, "When does atlas deploy?")["injection"]


def test_a_store_moved_from_its_sqlite_inbox_to_postgresql_keeps_every_write(postgres_server, tmp_path) -> None:
    """One machine grows into replicas: `inbox_url` set on a store consolidated from its
    SQLite inbox. Without the old events the new inbox's seqs start below the warehouse's and
    snapshot's watermark: writes would be neither recalled nor ever consolidated. Said, then
    fixed by `loci inbox-copy`."""
    settings = make_settings(tmp_path)
    moved = msgspec.structs.replace(settings, inbox_url=postgres_server.fresh_database("t_trial25_move"))

    def write(client: TestClient, content: str) -> str:
        resp = client.post("/v1/tools", json={"action": "memory.write", "identity": LENA, "args": {"item": {
            "type": "decision", "title": content.split(" is ")[0], "content": content}}})
        assert resp.status_code == 200, resp.text
        return resp.json()["result"]["item_id"]

    def app(s) -> Litestar:
        return create_app(s, embedder=HashEmbedder(s.embedder_dim), check_interval_ms=0)

    with TestClient(app(settings)) as client:
        before = [write(client, f"The atlas {what} is {value}.") for what, value in
                  (("log retention", "90 days"), ("release train", "biweekly"), ("on-call rota", "weekly"))]
    consolidate_once(settings)

    with TestClient(app(moved)) as client:  # the new inbox is empty
        (problem,) = [p for p in client.get("/readyz").json()["problems"] if "inbox ends at seq 0" in p]
        assert "loci inbox-copy" in problem
    with pytest.raises(InboxBehind, match="loci inbox-copy"):
        consolidate_once(moved)

    copied = CliRunner().invoke(cli_app, ["inbox-copy", str(settings.inbox_path), "--to", moved.inbox_url])
    assert copied.exit_code == 0 and "copied" in copied.output, copied.output
    with TestClient(app(moved)) as client:
        assert client.get("/readyz").json()["problems"] == []
        after = write(client, "The atlas staging region is eu-west-1.")
        for item_id, question in zip([*before, after], ("How long are atlas logs kept?", "How often is the "
                                     "atlas release train?", "How often does the atlas on-call rota change?",
                                     "Which region is atlas staging in?")):
            resp = client.post("/v1/recall", json={"identity": LENA, "query": question})
            assert resp.status_code == 200 and item_id in hit_ids(resp.json()), (question, resp.json()["hits"])
    assert consolidate_once(moved)["land"].landed >= 1
