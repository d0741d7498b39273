"""Contradictions under different titles, as a chat loop meets them.

A claim about the same subject rarely repeats the title ("Orion metrics store: TimescaleDB",
later "Orion metrics database: ClickHouse"). Promised:

- at write time, a user's newer claim on the same subject supersedes their own older one
  under any title, and someone else's contradiction is quarantined;
- consolidation merges claims that agree, never claims that contradict each other (the
  largest set of a cluster's claims that agree merges, the others stay apart): similar
  wording clusters them, and one merged item holding both would hide the contradiction
  recall resolves and `GET /v1/conflicts` reports. A chat history landed without the
  write-time check (`ingest_chat_jsonl` without a lookup, as the benches land theirs; `loci
  ingest` checks like a live chat) is held to this line by the merge stage itself.
"""

from __future__ import annotations

from litestar.testing import TestClient

from pipelines.consolidate import consolidate_once
from pipelines.warehouse import Warehouse
from tests.assets.support import block, ingest

MAYA = {"user_id": "maya", "project_id": "orion", "session_id": "s1"}
LEE = {"user_id": "lee", "project_id": "orion", "session_id": "l1"}
LATER = {**MAYA, "session_id": "s2"}
TIMESCALE = [("Orion metrics store", "Orion metrics are stored in TimescaleDB."),
             ("Where orion metrics live", "Orion metrics are stored in TimescaleDB, per the team.")]
CLICKHOUSE = ("Orion metrics database", "Orion metrics are stored in ClickHouse.")
QUESTION = "where are orion metrics stored?"


def write(client: TestClient, who: dict, title: str, content: str) -> dict:
    body = client.post("/v1/tools", json={"action": "memory.write", "identity": who, "args": {"item": {
        "type": "decision", "title": title, "content": content, "scope": "project", "confidence": 0.9}}}).json()
    assert body["ok"], body
    return body["result"]


def decisions(client: TestClient, who: dict) -> tuple[list[dict], str]:
    body = client.post("/v1/recall", json={"identity": who, "query": QUESTION, "mode": "inject"}).json()
    return [h for h in body["hits"] if h["type"] == "decision"], body["injection"]


def conflict_pairs(client: TestClient, who: dict) -> set[frozenset[str]]:
    pairs = client.get("/v1/conflicts", params=who).json()["conflicts"]
    return {frozenset((p["a"]["id"], p["b"]["id"])) for p in pairs}


def authoritative(block_text: str) -> str:
    return block_text.split("CONVERSATION EXCERPTS")[0]


def test_a_users_change_of_decision_under_another_title_replaces_their_own(service) -> None:
    client, settings = service
    old = write(client, MAYA, *TIMESCALE[0])
    new = write(client, LATER, *CLICKHOUSE)
    assert new["verdict"]["action"] == "accept"
    hits, injected = decisions(client, LATER)
    assert [h["id"] for h in hits] == [new["item_id"]]
    assert "ClickHouse" in injected and "TimescaleDB" not in injected
    assert conflict_pairs(client, LATER) == set()  # answered, not open
    consolidate_once(settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.get_item(old["item_id"]).superseded_by == new["item_id"]


def test_agreeing_claims_merge_and_someone_elses_contradiction_stays_apart(service) -> None:
    client, settings = service
    # the longer said first: the newer, shorter one leads the merge
    agreeing = [write(client, MAYA, *pair)["item_id"] for pair in TIMESCALE[::-1]]
    theirs = write(client, LEE, *CLICKHOUSE)
    assert theirs["verdict"]["action"] == "quarantine" and "soft.contradiction" in theirs["verdict"]["rule_ids"]
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        (merged,) = [it for it in wh.active_items() if it.metadata.get("merged_from")]
        assert sorted(merged.metadata["merged_from"]) == sorted(agreeing) and "ClickHouse" not in merged.content
        assert wh.get_item(theirs["item_id"]).superseded_by is None
    # the merge says the agreed point once, in the words of the member that says most
    got = client.get(f"/v1/items/{merged.id}", params=MAYA).json()["item"]
    assert got["content"] == TIMESCALE[1][1] and got["metadata"]["merger"] == "extractive"
    hits, injected = decisions(client, LATER)
    assert hits[0]["id"] == merged.id and hits[0]["conflict"]
    assert "ClickHouse" not in authoritative(injected)
    assert conflict_pairs(client, LATER) == {frozenset((merged.id, theirs["item_id"]))}


def test_an_imported_chat_never_merges_a_contradiction(service) -> None:
    client, settings = service
    rows = [{"role": "assistant", "user_id": "maya", "project_id": "orion", "session_id": "s1",
             "at": f"2026-11-{day:02d}T10:00:00Z",
             "text": "Noted. " + block({"type": "decision", "title": title, "content": content,
                                        "why_store": "team decision", "confidence": 0.9, "evidence": ["said"]})}
            for day, (title, content) in enumerate([*TIMESCALE, CLICKHOUSE], start=1)]
    ingest(settings, rows)
    report = consolidate_once(settings)
    assert report["cluster"].clusters, "the three decisions must reach one cluster for this test to mean anything"
    # the two that agree merge; the one that disagrees stays its own item, it alone kept apart
    assert report["merge"].skipped.get("contradicting items kept apart") == 1
    assert client.post("/v1/admin/reload").status_code == 200
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        claims = [it for it in wh.active_items() if it.type == "decision"]
        (merged,) = [it for it in claims if it.metadata.get("merged_from")]
        assert len(claims) == 2 and "ClickHouse" not in merged.content
        (apart,) = [it for it in claims if it.id != merged.id]
        assert "ClickHouse" in apart.content
    hits, injected = decisions(client, LATER)
    assert "ClickHouse" in authoritative(injected)  # the newest of one scope wins, flagged
    assert hits[0]["conflict"] and conflict_pairs(client, LATER) == {frozenset((merged.id, apart.id))}


def test_a_turn_found_only_through_its_neighbours_is_not_injected(service) -> None:
    """After a consolidation each turn carries its neighbours as retrieval context, so
    "Understood." right after the metrics turn is found by a metrics question; injected
    alone it shows nothing, so only the turn that says it is injected. The catalog keeps both."""
    client, settings = service
    for role, text in [("user", "Orion metrics are stored in ClickHouse now, the ingest rate was too high."),
                       ("assistant", "Understood."),
                       ("user", "Thanks, talk tomorrow about the release notes.")]:
        assert client.post("/v1/turns", json={"identity": MAYA, "role": role, "text": text}).status_code == 201
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    ask = {"identity": LATER, "query": QUESTION, "k": 10}
    catalog = client.post("/v1/recall", json={**ask, "mode": "catalog"}).json()
    assert "Understood." in [h["content"] for h in catalog["hits"]]  # found, through its context
    injected = client.post("/v1/recall", json={**ask, "mode": "inject"}).json()
    contents = [h["content"] for h in injected["hits"]]
    assert any("ClickHouse" in c for c in contents) and "Understood." not in contents
    assert "Understood." not in injected["injection"]
