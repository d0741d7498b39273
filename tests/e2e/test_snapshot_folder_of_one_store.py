"""One snapshots folder serves one store.

A team runs replicas on a shared snapshots folder (docs/deploy.md); by mistake a second
consolidation with a warehouse of its own (another data folder, another store) is pointed
at the same folder. What the team expects:

- The second store's consolidation refuses to publish there, with a message naming the
  folder and the other store, and the replicas keep serving the first store.
- A folder that holds both anyway (versions copied in, or published by a build before
  this guard) is named as a problem in /readyz, and a replica serving one store does not
  swap to the other's snapshot; a replica started on it says so too.
- A folder published before stores had ids still loads, and the store publishes over it.

Found broken (main): the second consolidation published into the folder and every
replica swapped to the other store's memory.
"""

from __future__ import annotations

import shutil

import pytest
from litestar.testing import TestClient

from bench.harness import make_settings
from online.app import create_app
from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder
from pipelines.snapshot import CURRENT_FILE, StoreMismatch, build_snapshot, current_version, folder_stores

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}


def _client(settings) -> TestClient:
    return TestClient(create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0))


def _write(client: TestClient, title: str, content: str) -> None:
    resp = client.post("/v1/tools", json={"action": "memory.write", "identity": LENA,
                                          "args": {"item": {"type": "decision", "title": title, "content": content}}})
    assert resp.status_code == 200, resp.text


def _injection(client: TestClient, query: str) -> str:
    resp = client.post("/v1/recall", json={"identity": LENA, "query": query})
    assert resp.status_code == 200, resp.text
    return resp.json()["injection"]


def _consolidate(settings) -> None:
    consolidate_once(settings, embedder=HashEmbedder(settings.embedder_dim))


def test_two_stores_never_share_a_snapshots_folder(tmp_path) -> None:
    shared = tmp_path / "shared" / "snapshots"
    first = make_settings(tmp_path / "first", snapshots_dir=str(shared))
    second = make_settings(tmp_path / "second", snapshots_dir=str(shared))
    elsewhere = make_settings(tmp_path / "second", snapshots_dir=str(tmp_path / "second-snapshots"))

    # A folder from before stores had ids: it loads, and the first store publishes over it.
    build_snapshot(shared, [], [], embedder_name=HashEmbedder(first.embedder_dim).name,
                   dim=first.embedder_dim, watermark=0)
    with _client(first) as replica:
        assert replica.get("/readyz").json()["problems"] == []
        _write(replica, "Atlas deploy day", "Atlas deploys go out on Tuesdays.")
        _consolidate(first)
        replica.post("/v1/admin/reload")
        served = replica.get("/readyz").json()
        assert served["snapshot_items"] >= 1 and served["problems"] == [], served
        assert len(folder_stores(shared)) == 1

        with _client(second) as other:  # the second store's own service and memory
            _write(other, "Atlas deploy day", "Atlas deploys go out on Fridays.")
        with pytest.raises(StoreMismatch) as refused:
            _consolidate(second)
        message = str(refused.value)
        assert str(shared) in message and "another store" in message and "snapshots_dir" in message, message
        assert len(folder_stores(shared)) == 1
        replica.post("/v1/admin/reload")
        assert "Tuesdays" in _injection(replica, "When does atlas deploy?")

        # The second store's snapshot lands in the folder anyway (copied in by hand).
        _consolidate(elsewhere)
        version = current_version(elsewhere.snapshots_path)
        shutil.copytree(elsewhere.snapshots_path / version, shared / version)
        (shared / CURRENT_FILE).write_text(version + "\n")
        reloaded = replica.post("/v1/admin/reload").json()
        assert reloaded["snapshot_version"] == served["snapshot_version"], reloaded  # not swapped
        problems = " ".join(reloaded["problems"])
        assert "2 different stores" in problems and "another store" in problems, problems
        answer = _injection(replica, "When does atlas deploy?")
        assert "Tuesdays" in answer and "Fridays" not in answer
        assert replica.app.state.internal_errors == 0

    with _client(first) as started:  # a replica started on the mixed folder names it too
        ready = started.get("/readyz")
        assert ready.status_code == 200 and any("2 different stores" in p for p in ready.json()["problems"])
