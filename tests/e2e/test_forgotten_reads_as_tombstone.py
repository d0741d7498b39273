"""A forgotten memory reads as its tombstone on every surface, to its author too: who forgot
it and when, none of its text (`item_report.as_read`). Ben forgets a project to-do he had
just edited, before any consolidation placed it in the palace; then after one. Before: the
browser's palace listed it among the items "not placed yet" by title, its card showed the
edit it had (old and new text) and a forgotten to-do's text (the card hid only claims and
turns), and the items API and memory.read gave it whole. The operator's audit view
(`loci show`) keeps the text by design (tests/e2e/test_audit_history.py)."""

from __future__ import annotations

import json

from tests.e2e.chat import consolidate, page_text, recall, tool

ADA = {"user_id": "ada", "project_id": "lab", "session_id": "a1", "org_id": "uni"}
BEN = {"user_id": "ben", "project_id": "lab", "session_id": "b1", "org_id": "uni"}
FIRST = "Order the anti-GFP antibody from Abcam before the Thursday run."
EDITED = "Order the anti-GFP antibody from Abcam before the Friday run."
WORDS = ("anti-GFP", "Abcam", "Reagent order", "Thursday run", "Friday run")  # none in the queries


def surfaces(client, who: dict, item_id: str) -> dict[str, str]:
    """What `who` is shown of the item, surface by surface, as text."""
    api = client.get(f"/v1/items/{item_id}", params=who)
    assert api.status_code == 200, api.text
    card = client.get(f"/ui/items/{item_id}", params=who)
    assert card.status_code == 200, card.text
    read = tool(client, who, "memory.read", {"ids": [item_id]})
    assert [i["id"] for i in read["items"]] == [item_id], read  # a tombstone at most: its id is still known
    return {"api": api.text, "card": page_text(card.text), "read": json.dumps(read),
            "palace": page_text(client.get("/ui/palace", params=who).text),
            "search": json.dumps(tool(client, who, "memory.search", {"query": "which antibody to order"})),
            "recall": json.dumps(recall(client, who, "Which antibody do we order for the run?", mode="catalog"))}


def test_a_forgotten_todo_reads_as_its_tombstone_everywhere_to_everyone(service) -> None:
    client, settings = service
    written = tool(client, BEN, "memory.write", {"item": {
        "type": "todo", "title": "Reagent order", "content": FIRST, "scope": "project", "tags": ["lab"]}})
    item_id = written["item_id"]
    assert "Reagent order" in page_text(client.get("/ui/palace", params=ADA).text)  # unplaced, shown
    tool(client, BEN, "memory.update", {"id": item_id, "patch": {"content": EDITED}})
    tool(client, BEN, "memory.forget", {"id": item_id})
    for moment in ("before a consolidation", "after one"):
        for who in (ADA, BEN):
            seen = surfaces(client, who, item_id)
            for surface, text in seen.items():
                assert not any(w in text for w in WORDS), (moment, who["user_id"], surface, text[:600])
            api = client.get(f"/v1/items/{item_id}", params=who).json()
            assert api["state"] == "retracted" and api["item"]["validation"] == "retracted"
            # Who forgot it, and when: the inbox (and, once consolidated, the audit) says so.
            forgot = [e for e in api["history"] + api["events"]
                      if (e.get("identity") or {}).get("user_id") == "ben" or e.get("actor") == "ben"]
            assert forgot and all(e["at"] for e in forgot), api
            assert "Forgotten" in seen["card"] and "ben" in seen["card"]
        shelves = json.dumps(tool(client, ADA, "memory.palace.list", {"path": ""}))
        assert item_id not in shelves
        if moment == "before a consolidation":
            consolidate(client, settings)
