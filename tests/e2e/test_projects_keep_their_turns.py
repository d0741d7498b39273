"""A novelist writes two books with one assistant, each book a project. Asked in the second
book "How old is Mara?", recall answered with the first book's chat ("My protagonist is Mara
Quinn, she's 29"), because a captured turn is its speaker's in every project. A turn is
still its speaker's (readable by id from anywhere), but it is evidence only in the project
it was said in; the user-scope preference ("British English in all my books") still holds in
both; before and after consolidation."""

from __future__ import annotations

from pipelines.materialize import message_item_id
from tests.e2e.chat import consolidate, recall, tool, turn

SALTMARSH = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s1"}
ORBIT = {"user_id": "iris", "project_id": "orbit", "session_id": "o1"}


def test_a_turn_is_evidence_in_the_project_it_was_said_in_only(service) -> None:
    client, settings = service
    said = turn(client, SALTMARSH, "user", "My protagonist is Mara Quinn, she's 29, a marine biologist.")
    turn(client, SALTMARSH, "user", "Mara keeps a notebook of tide tables.")
    turn(client, ORBIT, "user", "Captain Idris Vale commands the starship Meridian.")
    spelling = tool(client, SALTMARSH, "memory.propose", {"items": [{
        "type": "preference", "scope": "user", "title": "Spelling",
        "content": "Iris wants British English spelling in all her books."}]})["proposals"][0]
    assert spelling["action"] == "accept", spelling

    def check() -> None:
        here = recall(client, SALTMARSH, "How old is Mara?")
        assert "29" in here["injection"], here["injection"]
        there = recall(client, ORBIT, "How old is Mara?")
        assert "Mara" not in there["injection"], there["injection"]
        assert not [h for h in there["hits"] if h["type"] == "message" and "Mara" in h["content"]], there["hits"]
        assert "Idris Vale" in recall(client, ORBIT, "Who commands the Meridian?")["injection"]
        assert "British English" in recall(client, ORBIT, "Which spelling should I use?")["injection"]
        # still the speaker's record, readable by id from the other project
        item = client.get(f"/v1/items/{message_item_id(said['turn_id'])}", params=ORBIT)
        assert item.status_code == 200, item.text

    check()
    consolidate(client, settings)
    check()
