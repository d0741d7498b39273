"""Replicas after the first start from the warm state it computed, and answer alike.

Warming a snapshot (BM25, the claim table, partner and raw-turn flags, ...) was paid by every
worker of every replica at each start and hot-swap (~430 s per worker at 100k items on a
busy machine; `loci bench startup` measures it). What an operator expects:

- The first replica to load a snapshot computes its warm state and leaves it beside the
  snapshot (`/readyz` `snapshot_warmed: "computed"`); a replica started after it reads it
  (`"read"`) and answers every recall byte for byte as the first does.
- A damaged warm file is never trusted: the next replica computes it again, same answers.
- A hot-swap keeps serving the old snapshot until the new one is warm, then swaps.

Found broken (main): every replica computed everything again (`snapshot_warmed` absent).
"""

from __future__ import annotations

import threading

import pytest
from litestar.testing import TestClient

from bench.harness import make_settings
from online.app import create_app
from online.warm_cache import WarmCache
from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
OMAR = {"user_id": "omar", "project_id": "atlas", "session_id": "o1", "org_id": "acme"}
# What moves with the clock between two answers (a hit's recency, and the scores it multiplies).
CLOCK_FIELDS = frozenset({"recency", "multiplier", "final", "score"})
QUESTIONS = ("When does atlas deploy?", "What is the gateway timeout?", "Who owns the release?",
             "what did we say about the freeze", "lunch plans")


def _client(settings) -> TestClient:
    return TestClient(create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0))


def _timeless(value):
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in CLOCK_FIELDS}
    return [_timeless(v) for v in value] if isinstance(value, list) else value


def _answers(client: TestClient) -> list[dict]:
    out = []
    for who in (LENA, OMAR):
        for query in QUESTIONS:
            resp = client.post("/v1/recall", json={"identity": who, "query": query, "k": 8})
            assert resp.status_code == 200, resp.text
            body = resp.json()
            body.pop("timings_ms")
            out.append(_timeless(body))
    return out


def _warmed(client: TestClient) -> str:
    return client.get("/readyz").json()["snapshot_warmed"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("warm")
    settings = make_settings(root)
    with _client(settings) as writer:
        for who, role, text in (
            (LENA, "user", "Atlas deploys go out on Tuesdays."),
            (OMAR, "user", "Actually atlas deploys moved to Thursdays."),
            (LENA, "user", "The gateway timeout is 30 seconds."),
            (OMAR, "user", "lunch at noon? the freeze starts on the 14th"),
        ):
            assert writer.post("/v1/turns", json={"identity": who, "role": role, "text": text}).status_code == 201
        for title, content in (("Atlas deploy day", "Atlas deploys go out on Tuesdays."),
                               ("Atlas deploy day", "Atlas deploys go out on Thursdays."),
                               ("Release owner", "Lena owns the atlas release.")):
            resp = writer.post("/v1/tools", json={"action": "memory.write", "identity": LENA, "args": {
                "item": {"type": "decision", "title": title, "content": content}}})
            assert resp.status_code == 200, resp.text
    consolidate_once(settings, embedder=HashEmbedder(settings.embedder_dim))
    return {"settings": settings}


def test_later_replicas_read_the_warm_state_and_answer_alike(store) -> None:
    settings = store["settings"]
    cache = WarmCache(settings.snapshots_path)
    with _client(settings) as first:
        assert _warmed(first) == "computed"
        expected = _answers(first)
    assert any(a["hits"] for a in expected)
    files = list(cache.folder.glob("*.warm"))
    assert len(files) == 1
    with _client(settings) as second:
        assert _warmed(second) == "read"
        assert _answers(second) == expected

    files[0].write_bytes(files[0].read_bytes()[:-100])  # damaged (a truncated copy)
    with _client(settings) as third:
        assert _warmed(third) == "computed"
        assert _answers(third) == expected
    with _client(settings) as fourth:  # the third wrote it again
        assert _warmed(fourth) == "read"


def test_a_hot_swap_serves_the_old_snapshot_until_the_new_one_is_warm(store, monkeypatch) -> None:
    settings = store["settings"]
    release, waiting = threading.Event(), threading.Event()
    real = WarmCache.warmed

    def slow(self, corpus, version):
        if threading.current_thread().name == "loci-snapshot-swap":  # the new snapshot, off to the side
            waiting.set()
            assert release.wait(60)
        return real(self, corpus, version)

    monkeypatch.setattr(WarmCache, "warmed", slow)
    with _client(settings) as replica:
        old = replica.get("/readyz").json()["snapshot_version"]
        resp = replica.post("/v1/tools", json={"action": "memory.write", "identity": LENA, "args": {
            "item": {"type": "decision", "title": "Freeze start", "content": "The atlas freeze starts on the 14th."}}})
        assert resp.status_code == 200
        consolidate_once(settings, embedder=HashEmbedder(settings.embedder_dim))
        replica.post("/v1/recall", json={"identity": LENA, "query": "freeze"})  # notices CURRENT moved
        assert waiting.wait(60)
        during = replica.post("/v1/recall", json={"identity": LENA, "query": "When does the atlas freeze start?"})
        assert during.status_code == 200 and during.json()["snapshot_version"] == old
        assert "14th" in during.json()["injection"]  # the write, from the delta over the old snapshot
        assert replica.get("/readyz").json()["snapshot_version"] == old
        release.set()
        replica.app.state.service.wait_for_swap(60)
        after = replica.post("/v1/recall", json={"identity": LENA, "query": "When does the atlas freeze start?"})
        assert after.json()["snapshot_version"] != old and "14th" in after.json()["injection"]
