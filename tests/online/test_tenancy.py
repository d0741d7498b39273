"""Tenancy isolation with randomised users, projects, sessions and orgs: nothing the
caller's scope may not see is ever returned by recall (hits, injection block, catalog),
memory.search, memory.read, GET /v1/items, palace browse or /v1/conflicts, and another
tenant's id is refused exactly like an unknown id. The oracle is `Scope.visible_to`."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.state import embedding_text
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity, MemoryItem, Provenance, Scope
from pipelines.settings import Settings
from pipelines.snapshot import build_snapshot

TOPICS = ["latency budget", "deploy window", "cache policy", "tile format", "backup schedule"]
KINDS = ["session", "project", "user", "org"]
INJECTED_ID = re.compile(r"^\[MEMORY: ([^ |]+) \|", re.M)


def random_identity(rng: random.Random) -> Identity:
    return Identity(user_id=rng.choice(["ann", "bob", "cy"]), project_id=rng.choice(["atlas", "borealis"]),
                    session_id=rng.choice(["s1", "s2"]), org_id=rng.choice(["acme", "globex"]))


def as_params(who: Identity) -> dict[str, str]:
    return {"user_id": who.user_id, "project_id": who.project_id, "session_id": who.session_id,
            "org_id": who.org_id}


@pytest.mark.parametrize("seed", [7, 1234])
def test_randomised_tenants_never_see_each_other(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    settings = Settings(embedder="hash", data_dir=str(tmp_path), recall_k=20, catalog_k=40)
    emb = HashEmbedder(settings.embedder_dim)

    # Snapshot items owned by random tenants, with random scope kinds and palace paths.
    snap_items = []
    for n in range(30):
        owner, kind, topic = random_identity(rng), rng.choice(KINDS), rng.choice(TOPICS)
        snap_items.append(MemoryItem(
            id=f"snap-{n}", tier="ltm", type="decision", title=f"{topic} ({owner.user_id})",
            content=f"The {topic} for {owner.user_id}/{owner.project_id} is value {n}.",
            scope=Scope.for_identity(kind, owner), provenance=Provenance(source_id=f"t{n}"),
            confidence=0.9, metadata={"palace": f"{owner.project_id}/{topic.split()[0]}/decision/snap-{n}"},
        ))
    vecs = emb.embed([embedding_text(i) for i in snap_items])
    build_snapshot(settings.snapshots_path, snap_items, np.asarray(vecs), embedder_name=emb.name,
                   dim=emb.dim, watermark=0)

    app = create_app(settings, embedder=emb, check_interval_ms=0)
    with TestClient(app) as client:
        # Delta items written through the API by random tenants.
        all_items: dict[str, Scope] = {it.id: it.scope for it in snap_items}
        for n in range(12):
            owner, kind, topic = random_identity(rng), rng.choice(KINDS), rng.choice(TOPICS)
            resp = client.post("/v1/tools", json={
                "action": "memory.write", "identity": as_params(owner),
                "args": {"item": {"type": "decision", "title": f"{topic} note {n}", "scope": kind,
                                  "content": f"Delta: the {topic} for {owner.user_id} changed ({n})."}}})
            assert resp.status_code == 200, resp.text
            all_items[resp.json()["result"]["item_id"]] = Scope.for_identity(kind, owner)

        returned_any = 0
        callers = [random_identity(rng) for _ in range(6)] + [Identity(user_id="nobody", project_id="void")]
        for who in callers:
            visible = {i for i, scope in all_items.items() if scope.visible_to(who)}
            ident = as_params(who)

            for topic in rng.sample(TOPICS, 2):
                for mode in ("hybrid", "catalog", "inject"):
                    body = client.post("/v1/recall", json={"identity": ident, "query": f"what is the {topic}?",
                                                           "mode": mode}).json()
                    hit_ids = {h["id"] for h in body["hits"]}
                    injected = set(INJECTED_ID.findall(body["injection"]))
                    catalogued = {e["id"] for e in body["catalog"].get("memory_catalog", [])}
                    assert (hit_ids | injected | catalogued) <= visible, (who, hit_ids - visible)
                    assert not hit_ids or body["found"]
                    returned_any += len(hit_ids)

                search = client.post("/v1/tools", json={"action": "memory.search", "identity": ident,
                                                        "args": {"query": topic, "k": 50}}).json()
                assert {h["id"] for h in search["result"]["hits"]} <= visible

            read = client.post("/v1/tools", json={"action": "memory.read", "identity": ident,
                                                  "args": {"ids": sorted(all_items)}}).json()["result"]
            assert {i["id"] for i in read["items"]} == visible
            assert set(read["missing"]) == set(all_items) - visible

            # A sample of visible and invisible ids (every id is covered by memory.read above).
            sample = rng.sample(sorted(visible), min(4, len(visible))) + \
                rng.sample(sorted(set(all_items) - visible), min(4, len(all_items) - len(visible)))
            for item_id in sample:
                resp = client.get(f"/v1/items/{item_id}", params=ident)
                assert resp.status_code == (200 if item_id in visible else 404), (who, item_id)
                if resp.status_code == 404:
                    assert resp.json()["error"] == f"no item {item_id!r}"

            domains = client.post("/v1/tools", json={"action": "memory.palace.list", "identity": ident,
                                                     "args": {"path": ""}}).json()["result"]["children"]
            for domain in domains:
                for room in client.post("/v1/tools", json={
                        "action": "memory.palace.list", "identity": ident,
                        "args": {"path": domain}}).json()["result"]["children"]:
                    got = client.post("/v1/tools", json={"action": "memory.palace.get", "identity": ident,
                                                         "args": {"location": f"{domain}/{room}"}}).json()
                    assert {i["id"] for i in got["result"]["items"]} <= visible
            expected_domains = {it.metadata["palace"].split("/")[0]
                                for it in snap_items if it.id in visible}
            assert set(domains) == expected_domains

            conflicts = client.get("/v1/conflicts", params=ident).json()["conflicts"]
            for pair in conflicts:
                assert pair["a"]["id"] in visible and pair["b"]["id"] in visible

        assert returned_any > 0  # the isolation checks above were not vacuous
    assert app.state.internal_errors == 0
