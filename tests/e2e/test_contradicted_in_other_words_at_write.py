"""A team keeps its working rules through the tool API, and a rule changes in other words,
under another title: "Incident channel: Incidents are posted in #ops-alerts.", then "On-call
alerts: We switched incident reports over to #incident-room." No title, value or most words
are shared: only the meaning ties the two, and the newer says something changed. Recall
marks such a pair by the embedding cosine (`conflicts.CHANGED_CLOSE`); the check at write
read no cosine, so a teammate's proposal landed beside the rule it contradicts and the
author's own correction left the old rule standing (broken). Now the write reads the
proposal's cosine with the claims it is checked against (`MemoryService.cosine_to`), as
recall reads two stored claims': a teammate's change is held for review against the rule,
for the reason `/v1/conflicts` gives the pair (its approval then replaces the rule), and the
author's own correction replaces it.
With the product's embedder (MiniLM): a hash embedder's cosine means nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.recall.conflicts import CHANGED_CLOSE
from tests.assets.support import make_settings
from tests.e2e.chat import tool

LEAD = {"user_id": "maya", "project_id": "platform", "session_id": "m1"}
TEAMMATE = {"user_id": "theo", "project_id": "platform", "session_id": "t1"}
RULE = ("Incident channel", "Incidents are posted in #ops-alerts.")
CHANGE = ("On-call alerts", "We switched incident reports over to #incident-room.")


@pytest.fixture
def client(tmp_path, minilm_embedder) -> Iterator[TestClient]:
    app = create_app(make_settings(tmp_path), embedder=minilm_embedder, check_interval_ms=0)
    with TestClient(app) as client:
        yield client
    assert app.state.internal_errors == 0


def propose(client: TestClient, who: dict, title: str, content: str) -> dict:
    (outcome,) = tool(client, who, "memory.propose",
                      {"items": [{"type": "decision", "title": title, "content": content}]})["proposals"]
    return outcome


def test_a_teammates_change_in_other_words_is_held_against_the_rule_as_recall_marks_it(client) -> None:
    rule = propose(client, LEAD, *RULE)
    assert rule["action"] == "accept", rule
    change = propose(client, TEAMMATE, *CHANGE)
    assert change["action"] == "quarantine" and "soft.contradiction" in change["rule_ids"], change
    assert any(rule["item_id"] in r and CHANGED_CLOSE in r for r in change["reasons"]), change
    pairs = client.get("/v1/conflicts", params=LEAD).json()["conflicts"]
    marked = [c for c in pairs if {c["a"]["id"], c["b"]["id"]} == {rule["item_id"], change["item_id"]}]
    assert marked and marked[0]["reason"] == CHANGED_CLOSE, pairs  # recall's rule, the same reason
    # the lead approves it: the approval is the correction, as her own would be
    decided = tool(client, LEAD, "memory.review", {"id": change["item_id"], "decision": "approve"})
    assert decided["supersedes"] == [rule["item_id"]], decided


def test_the_authors_own_change_in_other_words_replaces_the_rule(client) -> None:
    rule = propose(client, LEAD, *RULE)
    title, content = CHANGE  # through the other door of a write
    change = tool(client, {**LEAD, "session_id": "m2"}, "memory.write",
                  {"item": {"type": "decision", "title": title, "content": content}})
    assert change["supersedes"] == [rule["item_id"]], change
    item = client.get(f"/v1/items/{rule['item_id']}", params=LEAD).json()["item"]
    assert item["superseded_by"] == change["item_id"], item
