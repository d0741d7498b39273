"""Consolidation merges restatements, never a user's two contradicting claims, over HTTP
and a real Dagster run (`run_consolidation`).

Theo notes his project's tooling through `memory.propose`, in two sessions. Two claims say
how the frontend's packages are installed, with npm and then with pnpm: the conflict rule
reads no value in either (lower-case tool names), so the write check lets both stand, and
their shared words put them in one cluster. Merged, one item said "installed with pnpm.
... installed with npm." and recall could no longer tell which holds (broken: 77 of the
274 labelled conflicting pairs of `loci bench merge` merged when clustered; members now
merge only on evidence that they agree, `merging.members.may_disagree`). The two stay two
items. Two claims restating the search index's shard count merge into one, which keeps
both sources and leads with the later wording. Not covered: the same two claims with a
value in common that is not what they disagree on ("... with npm in CI" / "... with pnpm in
CI": "CI" is read as a value, the tool names are not) still merge.
"""

from __future__ import annotations

from assets.run import run_consolidation
from pipelines.warehouse import Warehouse
from tests.assets.support import shared_instance
from tests.e2e.chat import tool

THEO = {"user_id": "theo", "project_id": "atlas", "session_id": "s1"}
LATER = {**THEO, "session_id": "s2"}
NPM = ("Frontend packages", "The frontend packages are installed with npm.")
PNPM = ("Frontend packages installed", "The frontend packages are installed with pnpm.")
SHARDS = ("Search index shards", "The search index has 4 shards in production.")
SHARDS_AGAIN = ("Search index layout", "In production the search index is split into 4 shards.")


def propose(client, who: dict, title: str, content: str) -> str:
    (outcome,) = tool(client, who, "memory.propose", {"default_scope": "project", "items": [
        {"type": "fact", "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


def test_two_contradicting_claims_survive_a_consolidation_as_two_items(service) -> None:
    client, settings = service
    npm, shards = propose(client, THEO, *NPM), propose(client, THEO, *SHARDS)
    pnpm, shards_again = propose(client, LATER, *PNPM), propose(client, LATER, *SHARDS_AGAIN)
    assert client.app.state.service.usage.flush()
    assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
    assert client.post("/v1/admin/reload").status_code == 200

    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        merged = [it for it in wh.active_items() if it.metadata.get("merged_from")]
        clustered = [set(ids) for ids in _clusters(wh, settings)]
    # never one blend: each claim is its own item still, or one replaced the other
    assert not [m.content for m in merged if {npm, pnpm} & set(m.metadata["merged_from"])]
    assert any({npm, pnpm} <= c for c in clustered), "npm and pnpm must share a cluster for this to mean anything"
    got = {i: client.get(f"/v1/items/{i}", params=THEO).json()["item"] for i in (npm, pnpm)}
    assert "with npm" in got[npm]["content"] and "pnpm" not in got[npm]["content"]
    assert "with pnpm" in got[pnpm]["content"] and got[pnpm]["superseded_by"] is None
    assert got[npm]["superseded_by"] in (None, pnpm)
    # the restatement merged: both sources kept, the later wording first
    (restated,) = [m for m in merged if set(m.metadata["merged_from"]) == {shards, shards_again}]
    item = client.get(f"/v1/items/{restated.id}", params=THEO).json()["item"]
    assert item["content"].startswith(SHARDS_AGAIN[1])
    assert len(item["metadata"]["source_ids"]) == 2


def _clusters(wh: Warehouse, settings) -> list[list[str]]:
    """The clusters of the short-term items the run left (read only): the two claims kept
    apart are clustered again as the run's clustering stage found them."""
    from pipelines.consolidate.clusters import cluster_stm

    ((model, _),) = wh.stored_embedding_models()
    return [ref.item_ids for ref in cluster_stm(wh, model, settings).clusters]
