"""A user with nothing curated yet (imported or live chats, before any consolidation) asks
"What do you know about me?" and got "No memory found": the question shares no word with
anything she said, and the "self" channel listed only curated memories. Now her curated
memories about her come first, then, as evidence of what was said, her own turns that
state something of herself ("I'm allergic to penicillin"), not her questions or small talk,
not the assistant's turns, not another user's, not a turn she asked to forget, and not one
whose secret was masked ("My wifi password is [REDACTED]": nothing of it may be shown).
Asked what she told the assistant of something, her own words come first, before the
assistant's longer echo of them."""

from __future__ import annotations

from pipelines.materialize import message_item_id
from tests.e2e.chat import recall, tool, turn

MIA = {"user_id": "mia", "project_id": "home", "session_id": "s1"}
TOM = {"user_id": "tom", "project_id": "home", "session_id": "t1"}


def test_what_you_know_about_me_lists_what_she_said_of_herself(service) -> None:
    client, _ = service
    turn(client, MIA, "user", "I'm allergic to penicillin, so never suggest it.")
    turn(client, MIA, "assistant", "Understood: you're allergic to penicillin, so I will never suggest penicillin "
                                   "or any antibiotic of the penicillin family such as amoxicillin, and whenever an "
                                   "antibiotic comes up I will remind you to ask your doctor about alternatives.")
    turn(client, MIA, "user", "My sister Lena moved to Porto last spring.")
    turn(client, MIA, "user", "Thanks!")
    turn(client, MIA, "user", "What's the weather like in Porto tomorrow?")
    smoked = turn(client, MIA, "user", "I used to smoke a pack a day.")
    turn(client, MIA, "user", "My wifi password is BlueFalcon!2024 by the way.")
    turn(client, TOM, "user", "I'm vegetarian and I live in Oslo.")
    assert tool(client, MIA, "memory.forget", {"id": message_item_id(smoked["turn_id"])})

    about = recall(client, MIA, "What do you know about me?")
    said = [h["content"] for h in about["hits"] if h["type"] == "message"]
    assert "I'm allergic to penicillin, so never suggest it." in said, about
    assert "My sister Lena moved to Porto last spring." in said, about
    assert "penicillin" in about["injection"] and "Lena" in about["injection"], about["injection"]
    for not_about_her in ("Understood", "Thanks", "weather", "smoke", "vegetarian", "Oslo", "BlueFalcon", "wifi"):
        assert not any(not_about_her in s for s in said), (not_about_her, said)
        assert not_about_her not in about["injection"], (not_about_her, about["injection"])
    assert "BlueFalcon" not in str(about), about  # a secret she typed stays masked
    # the latest first
    assert said.index("My sister Lena moved to Porto last spring.") < said.index(
        "I'm allergic to penicillin, so never suggest it."), said

    # a curated memory about her comes before what she said
    kept = tool(client, MIA, "memory.propose", {"items": [{
        "type": "preference", "scope": "user", "title": "Answer length",
        "content": "Mia prefers short answers."}]})["proposals"][0]
    assert kept["action"] == "accept", kept
    about = recall(client, MIA, "What do you know about me?")
    assert about["hits"][0]["content"] == "Mia prefers short answers.", about["hits"]
    assert any(h["type"] == "message" and "penicillin" in h["content"] for h in about["hits"]), about["hits"]

    # what she told of penicillin: her words, then the assistant's echo of them
    told = recall(client, MIA, "What did I tell you about penicillin?")
    turns = [h["content"] for h in told["hits"] if h["type"] == "message"]
    assert turns[0] == "I'm allergic to penicillin, so never suggest it." and turns[1].startswith("Understood"), turns
    assert told["injection"].index("I'm allergic") < told["injection"].index("Understood"), told["injection"]
