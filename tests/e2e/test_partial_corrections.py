"""Three corrections a novelist and a parent met, over HTTP, before and after consolidation.

- A correction of one detail hid the rest of the note it corrected: "Protagonist: The
  protagonist is Mara Quinn, a 29-year-old marine biologist", then "Mara's age: Mara Quinn
  is 34 years old, not 29": the first note was superseded, and "What does Mara do?" found
  nothing. Now the correction corrects it in part (`refines`): the note stays (its history
  untouched), marked CORRECTED_BY, and comes with the correction before it, so "29" is
  never shown as current.
- The model's proposal dropped the user's "not X": the user said "The town is Greyhaven
  now, not Ashford", the model proposed "The town is called Greyhaven", which replaced
  nothing, so "set in the coastal town of Ashford" stayed current. The user's turn is read
  for what it retires.
- A revised wish under the same title stayed beside the old one (SAME_TITLE): "Answer Maya
  in short bullet points", then "Answer Maya in numbered steps". The newer replaces it; two
  items of one list under one title are still both kept (at once: a supersede decided at
  capture is kept by consolidation, as the first two scenarios show).
"""

from __future__ import annotations

import json
import re

import httpx

from tests.e2e.chat import consolidate, recall, tool, turn
from tests.online.test_proxy import block, fake, shared_fake  # noqa: F401 - fixtures

IRIS = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s1"}


def propose(client, who: dict, type_: str, title: str, content: str, **extra) -> dict:
    (outcome,) = tool(client, who, "memory.propose",
                      {"items": [{"type": type_, "title": title, "content": content, **extra}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome


def entries(block: str) -> dict[str, str]:
    """Each curated entry of an injection block by id: its header and text."""
    return {m.group(1): m.group(0) for m in re.finditer(r"\[MEMORY: (\S+) \|.*?\[/MEMORY\]", block, re.S)}


def block_of(item: dict) -> str:
    return f"Noted.\n<MEMORY_PROPOSALS_JSON>[{json.dumps(item)}]</MEMORY_PROPOSALS_JSON>"


def test_a_novelist_s_corrections_replace_what_they_correct_and_nothing_more(service) -> None:
    """The first two promises, in one book (one consolidation for both)."""
    client, settings = service
    # a correction of one detail
    old = propose(client, IRIS, "fact", "Protagonist", "The protagonist is Mara Quinn, a 29-year-old marine biologist.")
    new = propose(client, {**IRIS, "session_id": "s2"}, "fact", "Mara's age", "Mara Quinn is 34 years old, not 29.")
    assert new["supersedes"] == [] and new["corrects_in_part"] == [old["item_id"]], new
    stored = client.get(f"/v1/items/{old['item_id']}", params=IRIS).json()["item"]
    assert stored["superseded_by"] is None and stored["content"].endswith("marine biologist."), stored
    # a proposal that drops the user's "not Ashford", in a chat over /v1/turns
    chat = {**IRIS, "session_id": "s4"}
    turn(client, chat, "user", "My novel is set in the coastal town of Ashford.")
    said = {"type": "fact", "title": "Setting", "content": "The story is set in the coastal town of Ashford."}
    (setting,) = turn(client, chat, "assistant", block_of(said))["proposals"]
    turn(client, chat, "user", "Change of plan: the town is Greyhaven now, not Ashford.")
    (renamed,) = turn(client, chat, "assistant", block_of({
        "type": "fact", "title": "Town name", "content": "The town is called Greyhaven."}))["proposals"]
    assert renamed["action"] == "accept" and renamed["supersedes"] == [setting["item_id"]], renamed
    stored = client.get(f"/v1/items/{renamed['item_id']}", params=IRIS).json()["item"]
    assert stored["content"] == "The town is called Greyhaven.", stored  # stored as proposed

    for moment in ("at once", "after consolidation"):
        for question in ("Who is the protagonist?", "What does Mara do?", "How old is Mara?"):
            block = recall(client, IRIS, question)["injection"]
            shown = entries(block)
            assert old["item_id"] in shown and new["item_id"] in shown, (moment, question, block)
            # the note's header says it is corrected, and the correction is read first
            assert f"CORRECTED_BY={new['item_id']}" in shown[old["item_id"]], (moment, question, block)
            assert block.index(shown[new["item_id"]]) < block.index(shown[old["item_id"]]), (moment, block)
            assert "marine biologist" in block and "34 years old" in block, (moment, block)
        block = recall(client, IRIS, "Which town is the story set in?")["injection"]
        assert "Greyhaven" in block and "coastal town of Ashford" not in block, (moment, block)  # nor its turn
        if moment == "at once":
            consolidate(client, settings)
    # the note is kept as it was said, never rewritten: every revision holds its words
    got = client.get(f"/v1/items/{old['item_id']}", params=IRIS).json()
    assert got["item"]["superseded_by"] is None and "29-year-old marine biologist" in got["item"]["content"], got
    assert got["revisions"] and all("29-year-old" in r["snapshot"]["content"] for r in got["revisions"]), got
    assert {"rel": "refines", "to": old["item_id"]} in [
        {"rel": link["rel"], "to": link["to"]}
        for link in client.get(f"/v1/items/{new['item_id']}", params=IRIS).json()["item"]["links"]]


def test_a_full_correction_still_replaces_the_note(service) -> None:
    """The other way round: what the note is about is what was corrected, so it goes."""
    client, _ = service
    old = propose(client, IRIS, "fact", "Protagonist's age", "Mara Quinn is 29 years old.")
    new = propose(client, IRIS, "fact", "Mara's age", "Mara Quinn is 34 years old, not 29.")
    assert new["supersedes"] == [old["item_id"]] and new["corrects_in_part"] == [], new
    assert old["item_id"] not in entries(recall(client, IRIS, "How old is Mara?")["injection"])


def test_a_proposal_naming_its_evidence_turn_reads_what_it_retires(service) -> None:
    """Through the tool API: the proposal names the user's turn (`turn_ref`)."""
    client, _ = service
    old = propose(client, IRIS, "fact", "Setting", "The story is set in the coastal town of Ashford.")
    said = turn(client, {**IRIS, "session_id": "s3"}, "user", "The town is Greyhaven now, not Ashford.")
    (outcome,) = tool(client, IRIS, "memory.propose", {"turn_ref": said["turn_id"], "items": [{
        "type": "fact", "title": "Town name", "content": "The town is called Greyhaven."}]})["proposals"]
    assert outcome["supersedes"] == [old["item_id"]], outcome
    # someone else's turn is no evidence of this user's proposal
    other = turn(client, {**IRIS, "user_id": "tom"}, "user", "The harbour is Saltby now, not Ashford.")
    (outcome,) = tool(client, IRIS, "memory.propose", {"turn_ref": other["turn_id"], "items": [{
        "type": "fact", "title": "Harbour", "content": "The harbour is called Saltby."}]})["proposals"]
    assert outcome["supersedes"] == [], outcome


def test_a_revised_wish_under_its_title_replaces_the_old_one(service) -> None:
    """Decided at capture, a supersede (consolidation keeps supersedes: the tests above)."""
    client, _ = service
    parent = {"user_id": "dana", "project_id": "home", "session_id": "a"}
    old = propose(client, parent, "preference", "Answers for Maya", "Answer Maya in short bullet points.")
    new = propose(client, {**parent, "session_id": "b"}, "preference", "Answers for Maya",
                  "Answer Maya in numbered steps.")
    assert new["supersedes"] == [old["item_id"]], new
    # two items of one list under one title stay side by side
    hints = propose(client, parent, "preference", "Coding style", "Use type hints everywhere.")
    fstrings = propose(client, parent, "preference", "Coding style", "Prefer f-strings over format().")
    assert fstrings["supersedes"] == [], fstrings
    block = recall(client, parent, "How should I answer Maya?")["injection"]
    assert "numbered steps" in block and "bullet points" not in block and "SAME_TITLE" not in block, block
    shown = entries(recall(client, parent, "What is my coding style?")["injection"])
    assert hints["item_id"] in shown and fstrings["item_id"] in shown, shown


def test_through_the_proxy_the_model_s_proposal_reads_the_user_s_not_x(proxy, fake, memory) -> None:  # noqa: F811
    """Where a chat loop meets it: the model answers the user's turn with a proposal that
    drops "not Ashford"; the proxy judges it with the turn it answers."""
    url = proxy()
    headers = {"X-Loci-User": "iris", "X-Loci-Project": "saltmarsh", "X-Loci-Session": "p1"}

    def chat(user: str, proposal: dict) -> dict:
        fake.chat_reply = lambda req: "Noted. " + block(proposal)
        resp = httpx.post(f"{url}/api/chat", headers=headers, timeout=60, json={
            "model": "llama3.2", "stream": False, "messages": [{"role": "user", "content": user}]})
        assert resp.status_code == 200, resp.text
        (outcome,) = resp.json()["loci"]["proposals"]
        return outcome

    setting = chat("My novel is set in the coastal town of Ashford.", {
        "type": "fact", "title": "Setting", "content": "The story is set in the coastal town of Ashford."})
    renamed = chat("The town is Greyhaven now, not Ashford.", {
        "type": "fact", "title": "Town name", "content": "The town is called Greyhaven."})
    assert renamed["supersedes"] == [setting["item_id"]], renamed
