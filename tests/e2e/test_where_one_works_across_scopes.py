"""Where one works, said in two scopes with no word in common, over HTTP. Maya's project
note "I commute to the office every day." and her own (user scope) "I work remotely now."
disagree: the write names it (`disagrees_with`), and now recall marks both and
`/v1/conflicts` lists the pair, whichever was written first (was: both shown unmarked,
none listed: recall's claim table proposed no pair that shares no word)."""

from __future__ import annotations

import pytest

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "s1"}
COMMUTE = ("project", "Commute", "I commute to the office every day.")
REMOTE = ("user", "Working from home", "I work remotely now.")


def propose(client, scope: str, title: str, content: str) -> str:
    item = {"type": "fact", "title": title, "content": content, "why_store": "she said so", "confidence": 0.9,
            "scope": scope}
    resp = client.post("/v1/tools", json={"action": "memory.propose", "args": {"items": [item]}, "identity": MAYA})
    assert resp.status_code == 200, resp.text
    (outcome,) = resp.json()["result"]["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


@pytest.mark.parametrize("order", [(COMMUTE, REMOTE), (REMOTE, COMMUTE)])
def test_working_remotely_now_and_commuting_are_marked_as_disagreeing(service, order) -> None:
    client, _ = service
    first, second = (propose(client, *said) for said in order)
    body = client.post("/v1/recall", json={"query": "Do I work from the office?", "identity": MAYA}).json()
    hits = {h["id"]: h for h in body["hits"]}
    assert hits[first]["conflict_with"] == [second] and hits[second]["conflict_with"] == [first], hits
    listed = client.get("/v1/conflicts", params=MAYA).json()
    assert listed["count"] == 1 and {listed["conflicts"][0]["a"]["id"], listed["conflicts"][0]["b"]["id"]} == {
        first, second}, listed
    assert listed["conflicts"][0]["applies"] == "project", listed  # the most specific scope, as recall resolves it
