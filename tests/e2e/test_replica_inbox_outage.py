"""A replica whose PostgreSQL inbox goes down keeps answering recall from what it holds.

Two replicas share a throwaway PostgreSQL inbox and a snapshot folder (docs/deploy.md,
"Several machines"); a consolidation has published a snapshot, and a write landed after it
(the delta). Then the database goes away:

- Replica A (up before the outage) answers recall from its snapshot and the delta it had
  folded, labelled (`X-Loci-Stale-Since`, `stale_since`, `degraded` says the inbox is
  unavailable); writes still get 503 with Retry-After; /readyz is 200 and says it is stale.
- Replica B, started during the outage, starts, serves the snapshot (labelled) and refuses
  writes.
- The database comes back: both recover without a restart, writes are accepted again, the
  label goes, and B now recalls the write made before the outage that only the inbox held.

Found broken (main): during the outage every recall was a 503 although the snapshot was
loaded, and a replica could not start at all.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from bench.harness import make_settings
from bench.replicas import replica_settings, wait_until
from online.app import STALE_HEADER, create_app
from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
TIMEOUT_S = 60


def _cut(server, url: str, allow: bool) -> None:
    server.allow_connections(url, allow)


def _client(settings) -> TestClient:
    return TestClient(create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0),
                      timeout=TIMEOUT_S)


def _recall(client: TestClient, query: str) -> tuple[dict, dict]:
    resp = client.post("/v1/recall", json={"identity": LENA, "query": query})
    assert resp.status_code == 200, resp.text
    return resp.json(), dict(resp.headers)


def _write(client: TestClient, title: str, content: str):
    return client.post("/v1/tools", json={"action": "memory.write", "identity": LENA,
                                          "args": {"item": {"type": "decision", "title": title, "content": content}}})


@pytest.fixture()
def store(postgres_server, tmp_path) -> Iterator[dict]:
    url = postgres_server.fresh_database("t_replica_inbox_outage")
    base = make_settings(tmp_path, inbox_url=url, snapshots_dir=str(tmp_path / "shared" / "snapshots"))
    try:
        yield {"base": base, "root": tmp_path, "url": url, "server": postgres_server}
    finally:
        _cut(postgres_server, url, allow=True)


def test_a_replica_answers_recall_from_its_snapshot_while_the_inbox_is_down(store) -> None:
    base, root, server, url = store["base"], store["root"], store["server"], store["url"]
    with _client(replica_settings(base, root, 0)) as a:
        assert _write(a, "Atlas deploy day", "Atlas deploys go out on Tuesdays.").status_code == 200
        consolidate_once(replica_settings(base, root, 9), embedder=HashEmbedder(base.embedder_dim))
        a.post("/v1/admin/reload")
        assert a.get("/readyz").json()["snapshot_items"] >= 1
        assert _write(a, "Atlas freeze", "The atlas code freeze starts on the 14th.").status_code == 200
        answer, headers = _recall(a, "When is the atlas code freeze?")  # the delta is folded
        assert "14th" in answer["injection"] and STALE_HEADER not in headers and answer["stale_since"] is None

        _cut(server, url, allow=False)
        try:
            for query, said in (("When does atlas deploy?", "Tuesdays"), ("When is the atlas code freeze?", "14th")):
                answer, headers = _recall(a, query)
                assert said in answer["injection"], answer
                assert answer["stale_since"] and headers[STALE_HEADER.lower()] == answer["stale_since"]
                assert any("inbox unavailable" in d for d in answer["degraded"]), answer["degraded"]
            refused = _write(a, "Atlas owner", "Lena owns the atlas release.")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "5", refused.text
            assert "inbox is unavailable" in refused.json()["error"]
            turn = a.post("/v1/turns", json={"identity": LENA, "role": "user", "text": "is the inbox down?"})
            assert turn.status_code == 503, turn.text
            ready = a.get("/readyz")
            assert ready.status_code == 200 and ready.json()["stale_since"], ready.text
            assert any("inbox unavailable" in p for p in ready.json()["problems"])

            # A replica started during the outage serves the published snapshot.
            with _client(replica_settings(base, root, 1)) as b:
                ready = b.get("/readyz")
                assert ready.status_code == 200 and ready.json()["snapshot_items"] >= 1, ready.text
                answer, headers = _recall(b, "When does atlas deploy?")
                assert "Tuesdays" in answer["injection"] and answer["stale_since"], answer
                assert _write(b, "Atlas owner", "Lena owns the atlas release.").status_code == 503
                _cut(server, url, allow=True)
                # Back without a restart: B reads the write only the inbox held, unlabelled.
                wait_until(lambda: _write(b, "Atlas owner", "Lena owns the atlas release.").status_code == 200,
                           TIMEOUT_S, "B accepts writes again")
                answer, headers = _recall(b, "When is the atlas code freeze?")
                assert "14th" in answer["injection"] and answer["stale_since"] is None, answer
                assert STALE_HEADER.lower() not in headers and b.get("/readyz").json()["stale_since"] is None
        finally:
            _cut(server, url, allow=True)
        answer, headers = _recall(a, "Who owns the atlas release?")  # A recovers too: B's write
        assert "Lena owns" in answer["injection"] and answer["stale_since"] is None, answer
        assert a.app.state.internal_errors == 0
