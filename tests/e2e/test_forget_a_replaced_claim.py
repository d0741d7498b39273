"""Forgetting the old version of a corrected claim, over HTTP: Lea says her address is on
Quince Lane, later corrects it to Birch Road; once consolidated, the old claim has left what
is served. Before: `memory.forget` of it answered 404 naming its correction, so its words
could not be forgotten. Now the one forget path retracts it (`materialize.update`, through
`retired`): its words are on no surface of hers (item API, card, recall, search, export), its
history says it was forgotten and why, and Birch Road stays current, at once and after a
Dagster consolidation run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as cli_app
from tests.assets.support import shared_instance
from tests.e2e.chat import consolidate, page_text, recall, tool

LEA = {"user_id": "lea", "project_id": "home", "session_id": "s1"}
OLD, NEW = "My address is 12 Quince Lane.", "My address is 40 Birch Road now, not Quince Lane."


def write(client, content: str) -> dict:
    return tool(client, LEA, "memory.write", {"item": {
        "type": "fact", "title": "Lea's address", "content": content, "confidence": 0.9, "scope": "user"}})


def test_forgetting_a_replaced_claim_removes_its_words_and_keeps_its_correction_current(service, tmp_path) -> None:
    client, settings = service
    old = write(client, OLD)["item_id"]
    consolidate(client, settings)
    new = write(client, NEW)
    assert new["supersedes"] == [old], new
    consolidate(client, settings)  # the old claim leaves what is served
    out = tool(client, LEA, "memory.forget", {"id": old, "reason": "old address, private"})
    assert out["item_id"] == old and out["verdict"]["action"] == "accept", out  # before: 404
    for moment in ("at once", "after a Dagster run"):
        if moment != "at once":
            assert client.app.state.service.usage.flush()
            summary = run_consolidation(settings, instance=shared_instance())
            assert summary["status"] == "success" and "FAILED" not in summary["checks"].values(), summary
            assert client.post("/v1/admin/reload").status_code == 200
        api = client.get(f"/v1/items/{old}", params=LEA)
        assert api.status_code == 200, (moment, api.text)
        assert api.json()["item"]["validation"] == "retracted", (moment, api.json())
        card = page_text(client.get(f"/ui/items/{old}", params=LEA).text)
        seen = {"api": api.text, "card": card,
                "recall": json.dumps(recall(client, LEA, "Where does Lea live? Quince Lane", mode="catalog")),
                "search": json.dumps(tool(client, LEA, "memory.search", {"query": "Quince Lane address"})),
                "new card": page_text(client.get(f"/ui/items/{new['item_id']}", params=LEA).text)}
        for surface, text in seen.items():
            assert "12 Quince" not in text, (moment, surface, text[:800])
        assert "old address, private" in api.text, (moment, api.text[:800])  # why, not what
        current = client.get(f"/v1/items/{new['item_id']}", params=LEA).json()["item"]
        assert current["validation"] != "retracted" and not current["superseded_by"], (moment, current)
        assert "40 Birch Road" in recall(client, LEA, "What is Lea's address?")["injection"], moment
    out = tmp_path / "export.jsonl"
    result = CliRunner().invoke(cli_app, ["export", "--out", str(out), "--data-dir", settings.data_dir])
    assert result.exit_code == 0, result.output
    assert "12 Quince" not in out.read_text() and "40 Birch Road" in out.read_text()


TOM = {**LEA, "user_id": "tom", "session_id": "s2"}
ANA = {**LEA, "user_id": "ana", "session_id": "s3"}


@pytest.mark.parametrize("consolidated_first", [True, False])
def test_a_held_forget_of_a_teammates_replaced_claim_is_reviewed(service, consolidated_first: bool) -> None:
    """Lea forgets Tom's replaced project claim: not hers, so it is held for review. Broken
    before: once consolidated, the claim had left what is served and `memory.review` of it
    answered 404, so the held forget could never be decided. Review finds it as forget does,
    before and after the next consolidation."""
    client, settings = service
    said = {"type": "fact", "title": "Office address", "confidence": 0.9, "scope": "project"}
    old = tool(client, TOM, "memory.write", {"item": {**said, "content": "The office is at 12 Quince Lane."}})
    consolidate(client, settings)
    new = tool(client, TOM, "memory.write", {"item": {**said, "content": "The office is at 40 Birch Road now."}})
    assert new["supersedes"] == [old["item_id"]], new
    consolidate(client, settings)
    held = tool(client, LEA, "memory.forget", {"id": old["item_id"], "reason": "a private address"})
    assert held["verdict"]["action"] == "quarantine", held
    if consolidated_first:
        consolidate(client, settings)
    out = client.post("/v1/tools", json={"action": "memory.review", "identity": ANA,
                                         "args": {"id": old["item_id"], "decision": "approve"}})
    assert out.status_code == 200, out.text  # before: 404
    consolidate(client, settings)
    api = client.get(f"/v1/items/{old['item_id']}", params=TOM)
    assert api.status_code == 200 and api.json()["item"]["validation"] == "retracted", api.text
    assert "12 Quince" not in json.dumps(recall(client, TOM, "office address Quince Lane", mode="catalog"))
