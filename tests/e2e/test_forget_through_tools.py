"""Forgetting through `POST /v1/tools` (a chat loop of its own, not the proxy), as a demanding
user checks it: "please forget my dentist appointment" and the assistant's "Done" must not
bring the appointment back, and nothing else the user said in that breath is lost.

- The round's turns: `memory.forget` takes `turn_ids`, the turns of the round that asked for
  or acknowledged the forgetting; they are forgotten with the memory (broken: they stayed
  recallable and showed the appointment existed). The acknowledgement, captured after the
  call, is linked by a second call naming it (the memory is forgotten already).
- A forget held for review (Jon forgetting Maya's note) forgets Jon's turns only when Maya
  approves it; until then they stay, and a rejected forget leaves them.
- A mixed turn ("forget my dentist appointment, and remind me my passport expires in March"):
  the turn is forgotten whole (it named the appointment), what else it said is kept as a
  turn of its own, said when it was, recallable.
- Through the Ollama proxy (the official `ollama` client), a forget held for review links
  the round's turns too: Maya's approval forgets Jon's "forget the offsite" and the model's
  "awaits review" (broken: only an accepted forget linked them, so after the approval they
  still brought the offsite back); her rejection leaves them.
- Bad turn ids are a 4xx naming them (unknown, someone else's, a memory that is no turn),
  and nothing is forgotten.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.mcp_server import call as mcp_call
from online.mcp_server import tools as mcp_tools
from online.proxy.memory_tools import MEMORY_TOOL_SPECS
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.materialize import message_item_id
from pipelines.records import Identity
from tests.assets.support import make_settings
from tests.e2e.chat import consolidate, recall, tool, turn
from tests.e2e.test_trial11_held import _changes_then_done
from tests.online.test_proxy import fake, shared_fake  # noqa: F401 - fixtures

SAM = {"user_id": "sam", "project_id": "home", "session_id": "s1"}
SAM_EARLIER = {**SAM, "session_id": "s0"}
MAYA = {"user_id": "maya", "project_id": "team", "session_id": "m1"}
JON = {"user_id": "jon", "project_id": "team", "session_id": "j1"}
ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
MOMENTS = ("at once", "after consolidation")

ASK_TO_FORGET = "Please forget my dentist appointment, and remind me my passport expires in March."
DONE = "Done, your dentist appointment is forgotten."
OFFSITE_ASK = "Forget the lake house offsite, and remind me the quarterly budget report is due Friday."
OFFSITE_ACK = "Your request to forget the lake house offsite awaits review."
DINNER_ASK = "Please forget the team dinner at Luigi's trattoria."


def propose(client: TestClient, who: dict, title: str, content: str) -> str:
    (outcome,) = tool(client, who, "memory.propose", {"items": [
        {"type": "fact", "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


def said(client: TestClient, who: dict, role: str, text: str) -> str:
    """The turn id of a turn landed through POST /v1/turns."""
    return turn(client, who, role, text)["turn_id"]


def forget(client: TestClient, who: dict, args: dict) -> tuple[int, dict]:
    resp = client.post("/v1/tools", json={"action": "memory.forget", "identity": who, "args": args})
    return resp.status_code, resp.json()


def found(client: TestClient, who: dict, query: str) -> list[dict]:
    return recall(client, who, query, mode="catalog")["hits"]


def texts(hits: list[dict]) -> str:
    return "\n".join(h["content"] for h in hits)


def validation(client: TestClient, who: dict, item_id: str) -> str:
    resp = client.get(f"/v1/items/{item_id}", params=who)
    assert resp.status_code == 200, resp.text
    return resp.json()["item"]["validation"]


@pytest.fixture(scope="module")
def chats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Sam forgets his own appointment in one round; Jon forgets two of Maya's team notes (held
    for review: Maya approves one, rejects the other). What recall finds at once and after
    the next consolidation."""
    settings = make_settings(tmp_path_factory.mktemp("forget-through-tools"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    out: dict[str, Any] = {"answers": {}, "seen": {m: {} for m in MOMENTS}, "validation": {m: {} for m in MOMENTS}}
    with TestClient(app) as client:
        said(client, SAM_EARLIER, "user", "My dentist appointment is on Tuesday at 3pm with Dr. Alvarez.")
        dentist = propose(client, SAM_EARLIER, "Dentist appointment",
                          "Sam's dentist appointment is on Tuesday at 3pm with Dr. Alvarez.")
        offsite = propose(client, MAYA, "Team offsite", "The team offsite is at the lake house on June 3.")
        dinner = propose(client, MAYA, "Team dinner", "The team dinner is at Luigi's trattoria on Friday.")
        consolidate(client, settings)
        out["before"] = {"sam": found(client, SAM, "dentist appointment Dr. Alvarez")}

        # Sam's round: he asks, the loop forgets (naming his turn), the assistant answers, the
        # loop names the answer too.
        ask = said(client, SAM, "user", ASK_TO_FORGET)
        out["answers"]["sam"] = tool(client, SAM, "memory.forget", {"id": dentist, "turn_ids": [ask]})
        done = said(client, SAM, "assistant", DONE)
        out["answers"]["sam done"] = tool(client, SAM, "memory.forget", {"id": dentist, "turn_ids": [done]})

        # Jon's rounds: both forgets are held for review (Maya's notes).
        jon_ask = said(client, JON, "user", OFFSITE_ASK)
        out["answers"]["jon"] = tool(client, JON, "memory.forget", {"id": offsite, "turn_ids": [jon_ask]})
        jon_ack = said(client, JON, "assistant", OFFSITE_ACK)
        out["answers"]["jon ack"] = tool(client, JON, "memory.forget",
                                         {"id": offsite, "turn_ids": [message_item_id(jon_ack)]})
        dinner_ask = said(client, JON, "user", DINNER_ASK)
        out["answers"]["dinner"] = tool(client, JON, "memory.forget", {"id": dinner, "turn_ids": [dinner_ask]})
        out["held"] = {"jon": found(client, JON, "lake house offsite"),
                       "turns": [validation(client, JON, message_item_id(t)) for t in (jon_ask, jon_ack)]}
        out["answers"]["approve"] = tool(client, MAYA, "memory.review", {"id": offsite, "decision": "approve"})
        out["answers"]["reject"] = tool(client, MAYA, "memory.review", {"id": dinner, "decision": "reject"})

        ids = {"ask": message_item_id(ask), "done": message_item_id(done), "jon ask": message_item_id(jon_ask),
               "jon ack": message_item_id(jon_ack), "dinner ask": message_item_id(dinner_ask),
               "dentist": dentist, "offsite": offsite, "dinner": dinner}
        out["ids"] = ids
        for moment in MOMENTS:
            if moment == "after consolidation":
                consolidate(client, settings)
            out["seen"][moment] = {
                "dentist": found(client, SAM, "anything about my dentist appointment?"),
                "passport": found(client, SAM, "When does my passport expire?"),
                "offsite": found(client, JON, "lake house offsite"),
                "report": found(client, JON, "When is the quarterly budget report due?"),
                "dinner": found(client, JON, "team dinner at Luigi's"),
            }
            out["validation"][moment] = {name: validation(client, MAYA if name in ("offsite", "dinner") else
                                                          JON if name.startswith(("jon", "dinner")) else SAM, i)
                                         for name, i in ids.items()}
    yield out


def test_the_round_that_asked_to_forget_is_forgotten_with_the_memory(chats) -> None:
    ids = chats["ids"]
    assert ids["dentist"] in [h["id"] for h in chats["before"]["sam"]]  # found before the forgetting
    first, second = chats["answers"]["sam"], chats["answers"]["sam done"]
    assert first["verdict"]["action"] == "accept" and first["forgot_turns"] == [ids["ask"]], first
    assert second["forgot_turns"] == [ids["done"]], second  # the answer, captured after the call
    for moment in MOMENTS:
        hits = chats["seen"][moment]["dentist"]
        assert "dentist" not in texts(hits).lower() and "Alvarez" not in texts(hits), (moment, hits)
        assert not {ids["ask"], ids["done"], ids["dentist"]} & {h["id"] for h in hits}, (moment, hits)
        assert {chats["validation"][moment][n] for n in ("ask", "done", "dentist")} == {"retracted"}, moment


def test_what_else_the_turn_said_is_kept_and_recalled(chats) -> None:
    (kept,) = chats["answers"]["sam"]["kept_turns"]
    for moment in MOMENTS:
        hits = {h["id"]: h for h in chats["seen"][moment]["passport"]}
        assert kept in hits, (moment, list(hits))
        assert "passport expires in March" in hits[kept]["content"], hits[kept]
        assert "dentist" not in hits[kept]["content"].lower() and "forget" not in hits[kept]["content"].lower()


def test_a_held_forget_forgets_the_round_only_when_approved(chats) -> None:
    ids, answers = chats["ids"], chats["answers"]
    assert answers["jon"]["verdict"]["action"] == "quarantine", answers["jon"]
    assert answers["jon"]["turns_on_approval"] == [ids["jon ask"]]
    assert answers["jon ack"]["turns_on_approval"] == [ids["jon ask"], ids["jon ack"]], answers["jon ack"]
    # not before the approval: Jon's turns still say what he said
    assert chats["held"]["turns"] == ["verified", "verified"]
    assert ids["jon ask"] in [h["id"] for h in chats["held"]["jon"]]
    # Maya is told how many of Jon's turns went with it, not which (they are his)
    assert (answers["approve"]["turns_forgotten"], answers["approve"]["turns_kept"]) == (2, 1), answers["approve"]
    for moment in MOMENTS:
        seen, valid = chats["seen"][moment], chats["validation"][moment]
        assert valid["offsite"] == valid["jon ask"] == valid["jon ack"] == "retracted", (moment, valid)
        assert "lake house" not in texts(seen["offsite"]), (moment, seen["offsite"])
        kept = [h["content"] for h in seen["report"] if h["type"] == "message" and h["id"] not in ids.values()]
        assert any("quarterly budget report is due Friday" in k and "lake" not in k for k in kept), (moment, kept)


def test_a_rejected_forget_leaves_the_round_as_it_was(chats) -> None:
    ids = chats["ids"]
    assert "turns_forgotten" not in chats["answers"]["reject"], chats["answers"]["reject"]
    for moment in MOMENTS:
        valid, hits = chats["validation"][moment], [h["id"] for h in chats["seen"][moment]["dinner"]]
        assert valid["dinner"] != "retracted" and valid["dinner ask"] == "verified", (moment, valid)
        assert ids["dinner"] in hits and ids["dinner ask"] in hits, (moment, hits)


def test_bad_turn_ids_are_refused_with_a_message_and_nothing_is_forgotten(service) -> None:
    client, _ = service
    gym = propose(client, SAM, "Gym", "Sam's gym is the Riverside Climbing Hall.")
    other = said(client, ANN, "user", "Please forget my gym.")  # Ann's turn, not Sam's
    # In Sam's shared chat, his climbing partner Lea's words: hers alone to forget.
    leas = client.post("/v1/turns", json={"identity": SAM, "role": "user", "speaker": "Lea",
                                          "text": "Sam, please forget the gym, I moved to Boulder Barn."})
    assert leas.status_code == 201, leas.text
    lea = leas.json()["turn_id"]
    earlier = said(client, SAM_EARLIER, "user", "Forget my gym.")  # Sam's, but last week's conversation
    for turn_ids, status, says in ((["turn_nope"], 404, "'turn_nope' is not a turn of yours"),
                                   ([other], 404, "is not a turn of yours"),
                                   ([gym], 400, "is a memory (fact), not a turn"),
                                   ([lea], 403, "was said by 'Lea', not by you"),
                                   ([earlier], 409, "was said in another conversation (project 'home', session 's0')"),
                                   ([""], 400, "invalid args")):
        code, body = forget(client, SAM, {"id": gym, "turn_ids": turn_ids})
        assert code == status and says in body["error"], (turn_ids, code, body)
    assert validation(client, SAM, gym) != "retracted"
    assert validation(client, ANN, message_item_id(other)) == "verified"
    for turn_id in (lea, earlier):
        assert validation(client, SAM, message_item_id(turn_id)) == "verified"


def test_an_approved_forget_forgets_the_memory(service) -> None:
    """Jon's forget of Maya's note is held for review; Maya approves it. Broken: the approval
    applied the retraction and then verified the note, so it answered again, now as a
    reviewed memory."""
    client, _ = service
    note = propose(client, MAYA, "Printer", "The office printer is on the third floor by the kitchen.")
    held = tool(client, JON, "memory.forget", {"id": note})
    assert held["verdict"]["action"] == "quarantine", held
    tool(client, MAYA, "memory.review", {"id": note, "decision": "approve"})
    assert validation(client, MAYA, note) == "retracted"
    assert note not in [h["id"] for h in found(client, MAYA, "office printer third floor")]


def test_an_mcp_client_links_the_round_too_and_the_proxy_model_is_not_asked_for_it(service) -> None:
    """MCP's memory_forget takes `turn_ids` (the dispatcher's one registry) and runs them as
    /v1/tools does; the proxy lands its round's turns itself, so its model is not offered them."""
    client, _ = service
    (forget_tool,) = [t for t in mcp_tools() if t.name == "memory_forget"]
    assert "turn_ids" in forget_tool.input_schema["properties"]
    (proxy_forget,) = [s for s in MEMORY_TOOL_SPECS if s["function"]["name"] == "memory_forget"]
    assert "turn_ids" not in proxy_forget["function"]["parameters"]["properties"]
    gym = propose(client, SAM, "Gym", "Sam's gym is the Riverside Climbing Hall.")
    ask = said(client, SAM, "user", "Forget where my gym is.")
    dispatcher, sam = ToolDispatcher(client.app.state.service), Identity(**SAM)
    refused = mcp_call(dispatcher, "memory_forget", {"id": gym, "turn_ids": ["turn_nope"]}, sam)
    assert refused.is_error and '"status": 404' in refused.content[0].text, refused
    done = mcp_call(dispatcher, "memory_forget", {"id": gym, "turn_ids": [ask]}, sam)
    assert not done.is_error and done.structured_content["forgot_turns"] == [message_item_id(ask)], done
    assert validation(client, SAM, message_item_id(ask)) == "retracted"
    assert message_item_id(ask) not in [h["id"] for h in found(client, SAM, "where is my gym")]


def test_a_turn_asking_to_forget_two_memories_keeps_only_what_is_neither(service) -> None:
    """One turn, two forgets naming it: the second reads what the first kept of it."""
    client, _ = service
    dentist = propose(client, SAM, "Dentist appointment", "Sam's dentist appointment is on Tuesday at 3pm.")
    gym = propose(client, SAM, "Gym", "Sam's gym is the Riverside Climbing Hall on Dock Street.")
    ask = said(client, SAM, "user", "Forget my dentist appointment and my gym on Dock Street, "
                                    "and remind me my passport expires in March.")
    (first,) = tool(client, SAM, "memory.forget", {"id": dentist, "turn_ids": [ask]})["kept_turns"]
    second = tool(client, SAM, "memory.forget", {"id": gym, "turn_ids": [ask]})
    assert second["forgot_turns"] == [first], second  # the first kept turn, read again
    (kept,) = second["kept_turns"]
    hits = {h["id"]: h["content"] for h in found(client, SAM, "passport gym Dock Street dentist")}
    assert hits.get(kept) == "remind me my passport expires in March.", hits
    assert "gym" not in texts(found(client, SAM, "gym on Dock Street")).lower()


def test_through_the_proxy_what_else_the_request_said_is_kept(proxy, fake, memory) -> None:  # noqa: F811
    """The proxy lands its round's turns forgotten (`FORGOT`); what else the user said in
    that breath lands as a turn of its own (`MemoryService.keep_rest`, the dispatcher's too)."""
    memory.settings.flags["memory_tools"] = True
    sam = Identity(**SAM)
    dentist = ToolDispatcher(memory).dispatch("memory.write", {"item": {
        "type": "fact", "title": "Dentist appointment", "content": "Sam's dentist appointment is on Tuesday at 3pm."}},
        sam)["result"]["item_id"]
    fake.chat_reply = _changes_then_done([{"function": {"name": "memory_forget", "arguments": {"id": dentist}}}])
    headers = {"X-Loci-User": "sam", "X-Loci-Project": "home", "X-Loci-Session": "s1"}
    raw = httpx.post(f"{proxy()}/api/chat", headers=headers, json={"model": "llama3.2", "stream": False, "messages": [
        {"role": "user", "content": ASK_TO_FORGET}]}).json()
    asked = message_item_id(raw["loci"]["turn_ids"]["user"])
    view = memory.view()
    assert view.get(dentist).validation == view.get(asked).validation == "retracted"
    hits = memory.recall("When does my passport expire?", sam, mode="catalog").hits
    kept = [h.item for h in hits if h.item.type == "message" and "passport" in h.item.content]
    assert [k.content for k in kept] == ["remind me my passport expires in March."], [h.item.content for h in hits]
    assert kept[0].provenance.turn_refs == [raw["loci"]["turn_ids"]["user"]]


def test_through_the_proxy_a_held_forget_forgets_its_round_when_approved(proxy, fake, memory) -> None:  # noqa: F811
    """Jon asks the proxy's model to forget two of Maya's team notes, one chat each; both
    forgets are held for review. Maya approves the offsite's, rejects the dinner's: the
    offsite round's turns are forgotten with it, the dinner round's stay recallable."""
    memory.settings.flags["memory_tools"] = True
    tools, maya, jon = ToolDispatcher(memory), Identity(**MAYA), Identity(**JON)

    def note(title: str, content: str) -> str:
        return tools.dispatch("memory.write", {"item": {"type": "fact", "title": title, "content": content,
                                                        "scope": "project"}}, maya)["result"]["item_id"]

    notes = {"offsite": note("Team offsite", "The team offsite is at the lake house on June 3."),
             "dinner": note("Team dinner", "The team dinner is at Luigi's trattoria on Friday.")}
    answered: list[dict[str, Any]] = []  # each answer's JSON as it came, `loci` field included

    def keep(response: httpx.Response) -> None:
        response.read()
        answered.append(response.json())

    client = ollama.Client(host=proxy(), headers={"X-Loci-User": "jon", "X-Loci-Project": "team",
                                                  "X-Loci-Session": "j1"}, event_hooks={"response": [keep]})
    rounds: dict[str, list[str]] = {}
    for name, ask, ack in (("offsite", OFFSITE_ASK, OFFSITE_ACK),
                           ("dinner", DINNER_ASK, "Your request to forget the team dinner at Luigi's awaits review.")):
        forget_call = [{"function": {"name": "memory_forget", "arguments": {"id": notes[name]}}}]
        fake.chat_reply = lambda req, calls=forget_call, ack=ack: (  # noqa: E731 - the model's script
            {"role": "assistant", "content": ack} if any(m.get("role") == "tool" for m in req["messages"])
            else {"role": "assistant", "content": "", "tool_calls": calls})
        assert client.chat(model="llama3.2", messages=[{"role": "user", "content": ask}]).message.content == ack
        turn_ids = answered[-1]["loci"]["turn_ids"]
        rounds[name] = [message_item_id(turn_ids["user"]), message_item_id(turn_ids["assistant"])]
        assert memory.view().get(notes[name]).validation != "retracted"  # held: Maya's note stands
        assert {memory.view().get(t).validation for t in rounds[name]} == {"verified"}  # and so do Jon's turns
    tools.dispatch("memory.review", {"id": notes["offsite"], "decision": "approve"}, maya)
    tools.dispatch("memory.review", {"id": notes["dinner"], "decision": "reject"}, maya)

    view = memory.view()
    offsite = memory.recall("lake house offsite", jon, mode="catalog").hits
    assert {view.get(i).validation for i in [notes["offsite"], *rounds["offsite"]]} == {"retracted"}
    assert "lake house" not in texts([{"content": h.item.content} for h in offsite]), [h.item.content for h in offsite]
    kept = [h.item.content for h in memory.recall("When is the quarterly budget report due?", jon,
                                                  mode="catalog").hits if h.item.type == "message"]
    assert any("quarterly budget report is due Friday" in k and "lake" not in k for k in kept), kept
    dinner = [h.item.id for h in memory.recall("team dinner at Luigi's", jon, mode="catalog").hits]
    assert {view.get(i).validation for i in rounds["dinner"]} == {"verified"}
    assert notes["dinner"] in dinner and set(rounds["dinner"]) <= set(dinner), dinner
