"""Hot swap under load, over real HTTP (uvicorn on 127.0.0.1): threads hammer /v1/recall
and write through /v1/tools while new snapshots are published (build_snapshot replaces
CURRENT). No request fails, no thread ever goes back to an older snapshot, new items are
recalled once their snapshot is served, and no acknowledged write is lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn

from online.app import create_app
from online.state import embedding_text
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity, MemoryItem, Provenance, Scope
from pipelines.settings import Settings
from pipelines.snapshot import build_snapshot

WHO = Identity(user_id="dana", project_id="atlas", session_id="s1")
IDENT = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "default"}


def item(item_id: str, title: str, content: str) -> MemoryItem:
    return MemoryItem(id=item_id, tier="ltm", type="decision", title=title, content=content,
                      scope=Scope.for_identity("project", WHO), provenance=Provenance(source_id=item_id),
                      confidence=0.9)


def publish(settings: Settings, items: list[MemoryItem]) -> str:
    emb = HashEmbedder(settings.embedder_dim)
    vecs = np.asarray(emb.embed([embedding_text(i) for i in items]))
    return build_snapshot(settings.snapshots_path, items, vecs, embedder_name=emb.name, dim=emb.dim,
                          watermark=0, keep=2).version


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Settings]]:
    settings = Settings(embedder="hash", data_dir=str(tmp_path))
    publish(settings, [item("m-latency", "Tile latency budget", "The tile latency budget is 40 ms.")])
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=20)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", settings
    srv.should_exit = True
    thread.join(timeout=10)


def test_hot_swap_under_concurrent_requests_loses_nothing(server: tuple[str, Settings]) -> None:
    base, settings = server
    stop = threading.Event()
    results: list[list[tuple[int, str | None, list[str]]]] = [[] for _ in range(4)]
    written: list[str] = []
    errors: list[BaseException] = []

    def hammer(slot: int) -> None:
        try:
            with httpx.Client(base_url=base, timeout=10) as http:
                while not stop.is_set():
                    resp = http.post("/v1/recall", json={"identity": IDENT, "query": "cache policy for tiles",
                                                         "mode": "catalog"})
                    body = resp.json()
                    results[slot].append((resp.status_code, body.get("snapshot_version"),
                                          [h["id"] for h in body.get("hits", [])]))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    def writer() -> None:
        try:
            with httpx.Client(base_url=base, timeout=10) as http:
                n = 0
                while not stop.is_set():
                    resp = http.post("/v1/tools", json={"action": "memory.write", "identity": IDENT, "args": {
                        "item": {"title": f"Runbook step {n}", "content": f"Runbook step {n}: restart worker {n}."}}})
                    assert resp.status_code == 200, resp.text
                    written.append(resp.json()["result"]["item_id"])
                    n += 1
                    time.sleep(0.01)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(4)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    def served(version: str | None = None, at_least: int = 1, timeout_s: float = 30.0) -> None:
        """Wait until the hammers got `at_least` answers (from `version`, if given): the
        service notices a publish within its check interval, however loaded the machine."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and not errors:
            got = [r for slot in results for r in list(slot) if version is None or r[1] == version]
            if len(got) >= at_least:
                return
            time.sleep(0.02)

    try:
        served(at_least=10)
        v2 = publish(settings, [item("m-latency", "Tile latency budget", "The tile latency budget is 40 ms."),
                                item("m-cache", "Tile cache policy", "Cache policy: tiles are cached for one hour.")])
        served(v2, at_least=10)
        v3 = publish(settings, [item("m-latency", "Tile latency budget", "The tile latency budget is 40 ms."),
                                item("m-cache", "Tile cache policy", "Cache policy: tiles are cached for one hour."),
                                item("m-cache-2", "CDN cache policy", "Cache policy for tiles at the CDN: one day.")])
        served(v3, at_least=25)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=20)

    assert not errors, errors
    flat = [r for slot in results for r in slot]
    assert len(flat) > 40  # really under load
    assert all(status == 200 for status, _, _ in flat)
    seen = {version for _, version, _ in flat}
    assert {v2, v3} <= seen
    for slot in results:  # a worker never goes back to an older snapshot
        versions = [v for _, v, _ in slot]
        assert versions == sorted(versions)
    for _, version, hit_ids in flat:
        if version == v2:
            assert "m-cache" in hit_ids and "m-cache-2" not in hit_ids
        if version == v3:
            assert {"m-cache", "m-cache-2"} <= set(hit_ids)

    # Every acknowledged write is readable after the swaps (none lost, none duplicated).
    with httpx.Client(base_url=base, timeout=10) as http:
        read = http.post("/v1/tools", json={"action": "memory.read", "identity": IDENT,
                                             "args": {"ids": written[:100]}}).json()["result"]
    assert written and read["missing"] == [] and len(read["items"]) == min(len(written), 100)
