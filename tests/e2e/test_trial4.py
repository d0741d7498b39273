"""A demanding new user's fourth trial, over HTTP (the proxy on loopback in front of the fake
Ollama server, and Litestar's TestClient against `loci serve`'s app).

- The pre-return catalog (`loci.catalog`) is what memory holds *besides* this exchange: the
  memory the same answer just proposed and Loci accepted is not listed back as something
  recalled (the user said it a moment ago), like the exchange's own turns.
- A proposal block is recognised by its tag however a model spells it (case, `-` or a space
  for `_`, `PROPOSAL` or `PROPOSALS`, with or without `_JSON`): it never reaches the user,
  streamed or not, and it is governed and landed like the documented tag.
- The turns of the conversation a question is asked in (the client resends them) are not
  injected or listed again; a chat loop names them to `POST /v1/recall` as `conversation`.
- The memory browser keeps the history of what a correction or a merge replaced.
- A memory whose expiry passed is not recalled, before consolidation archives it.
- A reviewer's approval of a claim held for contradicting a teammate's claim is the
  correction: the approved claim replaces the old one in recall.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from pipelines.records import Identity
from tests.e2e.chat import consolidate, page_text
from tests.online.test_proxy import fake, shared_fake  # noqa: F401 - fixtures

HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas", "X-Loci-Session": "s1"}
DANA = Identity(user_id="dana", project_id="atlas", session_id="s1")
KILN = {"type": "decision", "title": "Kiln day", "content": "The kiln fires on Fridays.",
        "why_store": "the team decided it", "confidence": 0.9}


def ollama_chat(url: str, text: str, stream: bool = False) -> tuple[str, dict[str, Any]]:
    """(the text the client sees, the `loci` field) of one /api/chat call."""
    resp = httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": stream, "messages": [
        {"role": "user", "content": text}]}, headers=HEADERS, timeout=60)
    assert resp.status_code == 200, resp.text
    lines = [json.loads(line) for line in resp.text.splitlines() if line.strip()]
    return "".join(obj["message"]["content"] for obj in lines), lines[-1].get("loci", {})


def test_the_catalog_does_not_list_back_what_this_exchange_just_stored(proxy, fake, memory) -> None:  # noqa: F811
    fake.chat_reply = lambda req: ("Noted: the kiln fires on Fridays. <MEMORY_PROPOSALS_JSON>"
                                   + json.dumps([KILN]) + "</MEMORY_PROPOSALS_JSON>")
    url = proxy()
    shown, loci = ollama_chat(url, "We decided the kiln fires on Fridays.")
    assert shown == "Noted: the kiln fires on Fridays."
    (verdict,) = loci["proposals"]
    assert verdict["action"] == "accept", verdict
    listed = [e["id"] for e in loci["catalog"]["memory_catalog"]]
    assert verdict["item_id"] not in listed, loci["catalog"]
    # The next exchange about it does list it: it is memory now.
    fake.chat_reply = lambda req: "On Fridays."
    _, loci = ollama_chat(url, "When does the kiln fire?")
    assert verdict["item_id"] in [e["id"] for e in loci["catalog"]["memory_catalog"]]



def test_turns_the_conversation_already_holds_are_neither_injected_nor_listed(proxy, fake, memory) -> None:  # noqa: F811
    """A chat client resends the conversation with each question: the turns it holds are in
    the model's context already, so injecting them again as "excerpts" (or listing them in
    the catalog) doubles the context with no new information. What memory holds beyond
    the conversation still comes: the memory its answer proposed, and what was said in
    another chat."""
    seen: list[list[dict[str, Any]]] = []

    def answer(text: str):
        return lambda req: (seen.append(req["messages"]), text)[1]

    url = proxy()
    other = [{"role": "user", "content": "Mike loads the kiln on Friday mornings."}]
    fake.chat_reply = answer("Thanks, noted.")
    httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": False, "messages": other},
               headers={**HEADERS, "X-Loci-Session": "s0"}, timeout=60)
    fake.chat_reply = answer("Noted: the kiln fires on Fridays. <MEMORY_PROPOSALS_JSON>" + json.dumps([KILN])
                             + "</MEMORY_PROPOSALS_JSON>")
    chat = [{"role": "user", "content": "We decided the kiln fires on Fridays at the studio."}]
    first = httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": False, "messages": chat},
                       headers=HEADERS, timeout=60).json()
    chat += [first["message"], {"role": "user", "content": "Who loads the kiln on Fridays?"}]
    fake.chat_reply = answer("Mike does.")
    second = httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": False, "messages": chat},
                        headers=HEADERS, timeout=60).json()
    block = seen[-1][0]["content"]
    assert "PERSISTENT MEMORY" in block and "The kiln fires on Fridays." in block, block  # the curated memory
    assert "Mike loads the kiln on Friday mornings." in block  # said in another chat
    assert "at the studio" not in block and "Noted: the kiln" not in block, block  # this chat's own turns
    listed = [e["title"] for e in second["loci"]["catalog"]["memory_catalog"]]
    assert not [t for t in listed if "at the studio" in t or "Noted: the kiln" in t], listed



def test_a_chat_loop_names_its_conversation_and_recall_leaves_its_turns_out(service) -> None:
    """The same through `POST /v1/recall`: `conversation` lists the messages the chat loop
    sends the model with the question."""
    client, _ = service
    said = ["We decided the kiln fires on Fridays at the studio.", "Noted, Fridays it is."]
    for role, text in zip(["user", "assistant"], said, strict=True):
        assert client.post("/v1/turns", json={"identity": ACME_DANA, "role": role, "text": text}).status_code == 201
    body = {"identity": ACME_DANA, "query": "When does the kiln fire?", "mode": "inject"}
    alone = client.post("/v1/recall", json=body).json()
    assert "at the studio" in alone["injection"]
    within = client.post("/v1/recall", json={**body, "conversation": said}).json()
    assert "at the studio" not in within["injection"] and not within["found"], within


TAG_VARIANTS = ["MEMORY_PROPOSALS", "memory_proposals_json", "MEMORY-PROPOSALS-JSON", "Memory Proposals JSON",
                "MEMORY_PROPOSAL_JSON", "memory_proposal"]


def test_a_proposal_block_under_a_variant_tag_is_not_shown_and_is_landed(proxy, fake, memory) -> None:  # noqa: F811
    url = proxy()
    fake.stream_chunk_chars = 3  # the tag arrives in pieces
    for n, tag in enumerate(TAG_VARIANTS):
        for stream in (False, True):
            item = {**KILN, "title": f"Kiln day {n}"}
            fake.chat_reply = lambda req, tag=tag, item=item: (
                f"Noted.\n<{tag}>\n" + json.dumps([item]) + f"\n</{tag}>\nAnything else?")
            shown, loci = ollama_chat(url, f"We decided the kiln fires on Fridays ({tag}, {stream}).", stream=stream)
            assert shown == "Noted.\nAnything else?", (tag, stream, shown)
            assert [p["title"] for p in loci["proposals"]] == [item["title"]], (tag, stream, loci)


# -- the memory browser keeps the history of what was replaced ---------------------------------

ACME_DANA = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "acme"}
ACME_MIKE = {**ACME_DANA, "user_id": "mike", "session_id": "s7"}
EVE = {"user_id": "eve", "project_id": "borealis", "org_id": "other"}


def tool(client, who: dict, action: str, args: dict) -> dict:
    resp = client.post("/v1/tools", json={"action": action, "identity": who, "args": args})
    assert resp.status_code < 300, resp.text
    return resp.json()["result"]


def write_fact(client, who: dict, title: str, content: str, **extra) -> str:
    item = {"type": "fact", "title": title, "content": content, "scope": "project", "why_store": "said",
            "confidence": 0.9, **extra}
    return tool(client, who, "memory.write", {"item": item})["item_id"]






def test_the_browser_shows_the_history_of_a_replaced_memory_and_what_replaced_it(service) -> None:
    """Nothing is deleted: a memory a correction superseded or consolidation merged away
    left recall, not its history. Its card (reached from the `supersedes` / `derived_from`
    link of what replaced it) shows what it said, its revisions and audit events, and links
    the memory that took its place; the API answers the id as last stored, with its history,
    its state and what replaced it. Someone who may not see it is told nothing more than about an unknown id."""
    client, settings = service
    old = write_fact(client, ACME_DANA, "Release day", "Releases ship on Tuesday.")
    tool(client, ACME_MIKE, "memory.update", {"id": old, "patch": {"content": "Releases ship on Tuesday, after QA."}})
    members = [write_fact(client, ACME_DANA, title, content) for title, content in [
        ("Edge cache TTL", "The edge cache TTL for map tiles is 300 seconds."),
        ("Tile cache TTL", "The edge cache TTL for map tiles is 300 seconds, per ops."),
        ("Edge cache expiry", "Map tiles leave the edge cache after a TTL of 300 seconds.")]]
    consolidate(client, settings)
    # Superseded in a later run: its history spans two published snapshots.
    new = write_fact(client, ACME_DANA, "Release cadence", "Releases ship every second Thursday.")
    tool(client, ACME_DANA, "memory.link", {"src_id": new, "dst_id": old, "rel": "supersedes"})
    consolidate(client, settings)
    query = "user_id=dana&amp;project_id=atlas&amp;session_id=s1&amp;org_id=acme"

    got = client.get(f"/v1/items/{old}", params=ACME_DANA).json()
    assert got["replaced_by"] == {"id": new, "how": "superseded"}, got
    assert got["item"]["content"] == "Releases ship on Tuesday, after QA." and len(got["revisions"]) >= 2, got
    page = client.get(f"/ui/items/{old}", params=ACME_DANA)
    assert page.status_code == 200, page.text
    text = page_text(page.text)
    assert "Releases ship on Tuesday, after QA." in text and f"superseded by {new}" in text, text
    assert f'href="/ui/items/{new}?{query}"' in page.text
    history = page_text(page.text.split('id="history"')[1].split("</table>")[0])
    assert "mike" in history and "content" in history, history  # mike's edit, one revision
    assert "supersede" in history, history  # and the run that retired it

    merged = {}
    for member in members:
        body = client.get(f"/v1/items/{member}", params=ACME_DANA).json()
        if body["state"] == "merged":
            merged[member] = body["replaced_by"]["id"]
    assert merged, "the three agreeing claims must merge for this test"
    for member, into in merged.items():
        page = client.get(f"/ui/items/{member}", params=ACME_DANA)
        assert page.status_code == 200, page.text
        assert f"merged into {into}" in page_text(page.text)
        assert f'href="/ui/items/{into}?{query}"' in page.text
        card = client.get(f"/ui/items/{into}", params=ACME_DANA)
        assert f'href="/ui/items/{member}?{query}"' in card.text  # and back: what it replaced

    for gone in (old, *merged):
        page = client.get(f"/ui/items/{gone}", params=EVE)
        assert page.status_code == 404 and new not in page.text and "Releases" not in page.text


# -- retention: what has expired is not recalled -------------------------------------------------


def test_a_memory_whose_expiry_passed_is_not_recalled_before_consolidation_archives_it(service) -> None:
    """`expires_at` is when a memory stops holding (a quarantine's expiry, or one a user
    sets to let it go): consolidation archives it, but the schedule runs hourly, and until
    then recall kept injecting it as current, listed it among the decisions, and let it
    win a conflict. From the moment it expires it is not recalled; it is still readable
    with its history until consolidation archives it."""
    client, settings = service

    def recall(query: str) -> dict:
        resp = client.post("/v1/recall", json={"identity": ACME_DANA, "query": query, "mode": "inject"})
        assert resp.status_code == 200, resp.text
        return resp.json()

    kiln = tool(client, ACME_DANA, "memory.write", {"item": {**KILN, "importance": 9}})["item_id"]
    glaze = tool(client, ACME_DANA, "memory.write", {"item": {
        "type": "decision", "title": "Glaze supplier", "content": "Glazes come from Amaco.",
        "why_store": "the team decided it", "confidence": 0.95}})["item_id"]
    consolidate(client, settings)
    # Dana's own claim on the subject (her user scope) is shown next to the project's.
    tool(client, ACME_DANA, "memory.write", {"item": {
        "type": "decision", "title": "Glaze supplier", "content": "Glazes come from Coyote.",
        "why_store": "my own order", "confidence": 0.8, "scope": "user"}})
    assert "Amaco" in recall("Where do glazes come from?")["injection"]
    for item_id in (kiln, glaze):  # one served from the snapshot, expired since: a delta change
        tool(client, ACME_DANA, "memory.update", {"id": item_id, "patch": {"expires_at": "2026-01-01T00:00:00Z"}})

    found = recall("When does the kiln fire?")
    assert kiln not in [h["id"] for h in found["hits"]] and "Fridays" not in found["injection"], found
    assert "Fridays" not in recall("Anything about glazes?")["injection"]  # not always-on any more
    decided = [h["id"] for h in recall("What did we decide?")["hits"]]
    assert kiln not in decided and glaze not in decided, decided
    glazes = recall("Where do glazes come from?")["injection"]
    assert "Coyote" in glazes and "Amaco" not in glazes, glazes
    assert client.get(f"/v1/items/{kiln}", params=ACME_DANA).status_code == 200


# -- a team: a contradiction held for review, then approved ------------------------------------


def test_approving_a_held_contradiction_makes_it_the_claim_recall_injects(service) -> None:
    """Mike contradicts Dana's project decision: held for review (someone else's claim in the
    same scope). A reviewer approves it in the memory browser: it is verified "so recall
    injects it", which means it replaces the claim it contradicted (kept with its history,
    as a correction does), at once and after consolidation; it did not, because the old
    claim's higher confidence won the conflict and hid the approved one."""
    client, settings = service

    def propose(who: dict, content: str, **extra) -> dict:
        item = {"type": "decision", "title": "Standup time", "content": content, "why_store": "team decision",
                **extra}
        text = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"
        resp = client.post("/v1/turns", json={"identity": who, "role": "assistant", "text": text})
        assert resp.status_code == 201, resp.text
        (verdict,) = resp.json()["proposals"]
        return verdict

    def injected() -> str:
        resp = client.post("/v1/recall", json={"identity": ACME_MIKE, "query": "When is the standup?",
                                               "mode": "inject"})
        return resp.json()["injection"].split("CONVERSATION EXCERPTS")[0]

    old = propose(ACME_DANA, "The daily standup is at 09:00.", confidence=0.9)
    assert old["action"] == "accept"
    held = propose(ACME_MIKE, "The daily standup is at 10:00.")
    assert held["action"] == "quarantine" and "soft.contradiction" in held["rule_ids"], held
    assert "09:00" in injected() and "10:00" not in injected()
    page = client.post(f"/ui/quarantine/{held['item_id']}", params=ACME_DANA,
                       data={"decision": "approve", "note": "we moved it"}, follow_redirects=False)
    assert page.status_code == 303, page.text
    for moment in ("now", "after consolidation"):
        shown = injected()
        assert "10:00" in shown and "09:00" not in shown, (moment, shown)
        consolidate(client, settings)
    card = client.get(f"/ui/items/{old['item_id']}", params=ACME_DANA)
    assert card.status_code == 200 and f"superseded by {held['item_id']}" in page_text(card.text)


def test_the_card_of_a_claim_a_correction_replaced_says_so_before_consolidation(service) -> None:
    """Dana corrects her claim: recall shows the correction at once, but the old claim's card
    kept presenting it as a current memory until the next consolidation. It says at once
    what replaced it (and links it)."""
    client, settings = service
    old = write_fact(client, ACME_DANA, "Release day", "Releases ship on Tuesday.")
    consolidate(client, settings)
    new = write_fact(client, ACME_DANA, "Release day", "Releases ship on Wednesday.")
    page = client.get(f"/ui/items/{old}", params=ACME_DANA)
    assert page.status_code == 200 and f"superseded by {new}" in page_text(page.text), page_text(page.text)[:600]
    assert "Releases ship on Tuesday." in page_text(page.text)  # still with what it said, and its history
