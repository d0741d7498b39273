"""A note the user rewrites drops the "not X" read from the turn it was first written from
(a trial found `metadata.retired_by_user` surviving the edit: the rewritten note went on
retiring a value its new text may well state)."""

from __future__ import annotations

from tests.e2e.chat import consolidate, tool, turn

IRIS = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s1"}
HARBOUR = "The harbour of Greyhaven floods at spring tides."


def stored_metadata(client, item_id: str) -> dict:
    resp = client.get(f"/v1/items/{item_id}", params=IRIS)
    assert resp.status_code == 200, resp.text
    return resp.json()["item"]["metadata"]


def test_a_rewritten_note_no_longer_retires_what_its_first_turn_said(service) -> None:
    client, settings = service
    said = turn(client, IRIS, "user", "The town is Greyhaven now, not Ashford.")
    (town,) = tool(client, IRIS, "memory.propose", {"turn_ref": said["turn_id"], "items": [{
        "type": "fact", "title": "Town name", "content": "The town is called Greyhaven."}]})["proposals"]
    (tide,) = tool(client, IRIS, "memory.propose", {"turn_ref": said["turn_id"], "items": [{
        "type": "fact", "title": "Harbour", "content": HARBOUR}]})["proposals"]
    assert stored_metadata(client, town["item_id"]).get("retired_by_user") == ["not Ashford"], town
    assert stored_metadata(client, tide["item_id"]).get("retired_by_user"), tide
    rewrite = {"content": "The town is called Ashford again."}
    tool(client, IRIS, "memory.update", {"id": town["item_id"], "patch": rewrite})
    tool(client, IRIS, "memory.update", {"id": tide["item_id"], "patch": {"importance": 7}})
    for moment in ("at once", "after consolidation"):
        assert "retired_by_user" not in stored_metadata(client, town["item_id"]), moment  # before the fix: kept
        assert stored_metadata(client, tide["item_id"]).get("retired_by_user"), moment  # its content unchanged
        consolidate(client, settings)
