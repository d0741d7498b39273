"""Held changes and the chat surfaces, over HTTP (Litestar's TestClient against `loci serve`'s
app, and the proxy on loopback in front of the fake Ollama): Maya and Jon share one memory
for their home (project "home", org "fam"), Kim is Leo's grandmother in the same project.
Promises checked:

- A change held for review is said wherever the memory is shown: Jon's edit of Maya's
  claim on Leo's amoxicillin dose (held: it changes what her claim says) and Jon's own
  claim of another dose (held: it contradicts hers) left Maya's claim injected as if
  nothing waited. Now the injected entry is marked `PENDING_REVIEW` with one sentence
  saying who asked for which change and when (never the unapproved dose), and the catalog
  entry and the memory's card say the same sentence; once decided, it is gone.
- The reviewer who approved a claim may correct it: Jon approved Maya's unsure note of
  Leo's shoe size, then fixed its value; his edit was held for review as any teammate's
  (and he could not approve it himself). Now it applies at once, audited as a reviewer's
  correction; Kim, who did not approve it, is still held for review.
- The proxy's model can do what the user asks of memory: "forget X" and "change X to Y"
  through the Ollama proxy and its OpenAI-compatible API were only a new proposed claim.
  `memory_update` and `memory_forget` are offered (from the dispatcher's one registry, as
  `/v1/tools` and MCP have them), run as the chat's user and governed like every write:
  Jon's own note is forgotten at once, his change or forgetting of Maya's claim is held
  for review, and every call is an inbox event with his identity.
"""

from __future__ import annotations

from typing import Any

import httpx
import openai

from online.tools import ToolDispatcher
from pipelines.materialize import held_edit
from pipelines.recall import RecallOptions
from pipelines.records import Identity
from tests.assets.support import block
from tests.e2e.chat import consolidate, curated_text, page_text, recall, tool, turn
from tests.online.test_proxy import fake, shared_fake, system_text  # noqa: F401 - fixtures

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "m1", "org_id": "fam"}
JON = {"user_id": "jon", "project_id": "home", "session_id": "j1", "org_id": "fam"}
KIM = {"user_id": "kim", "project_id": "home", "session_id": "k1", "org_id": "fam"}


def propose(client, who: dict, said: str, title: str, content: str, confidence: float = 0.9,
            tags: list[str] | None = None) -> dict:
    """One exchange: the user says something, the assistant proposes one memory; its verdict."""
    turn(client, who, "user", said)
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": "fact", "title": title, "content": content, "why_store": "family", "confidence": confidence,
        "scope": "project", **({"tags": tags} if tags else {})}))
    (outcome,) = answer["proposals"]
    return outcome


def test_a_change_held_for_review_is_said_in_the_injected_text_the_catalog_and_the_card(service) -> None:
    """Jon edits Maya's dose claim to 7.5 ml (held), then states 10 ml as his own claim
    (held: it contradicts hers). Maya's recall kept injecting "5 ml" with no sign of
    either. Now the entry says both wait for review, by whom, never the held doses; the
    catalog entry and the card say the same; once Maya rejects the edit and the claim,
    nothing waits and nothing is said."""
    client, settings = service
    dose = propose(client, MAYA, "Leo takes 5 ml of amoxicillin twice a day.", "Leo amoxicillin dose",
                   "Leo takes 5 ml of amoxicillin twice a day.")["item_id"]
    consolidate(client, settings)
    edit = tool(client, JON, "memory.update", {"id": dose, "patch": {
        "content": "Leo takes 7.5 ml of amoxicillin twice a day."}})
    assert edit["verdict"]["action"] == "quarantine", edit
    claim = propose(client, JON, "The pediatrician said 10 ml of amoxicillin twice a day.", "Amoxicillin",
                    "Leo takes 10 ml of amoxicillin twice a day.")
    assert claim["action"] == "quarantine", claim
    for moment in ("at once", "after consolidation"):
        shown = curated_text(recall(client, MAYA, "How much amoxicillin does Leo take?"))
        entry = shown[shown.index(f"[MEMORY: {dose}"):]
        entry = entry[:entry.index("[/MEMORY]")]
        assert "5 ml" in entry and "| PENDING_REVIEW]" in entry, (moment, shown)
        assert "a change to this memory by jon" in entry and "a claim contradicting this memory by jon" in entry
        assert "7.5" not in shown and "10 ml" not in shown, (moment, shown)  # not approved: never said
        assert "say that a change to them is awaiting review" in shown, shown
        (listed,) = [e for e in recall(client, MAYA, "How much amoxicillin does Leo take?", mode="catalog")
                     ["catalog"]["memory_catalog"] if e["id"] == dose]
        sentence = listed["pending_review"]
        assert sentence in entry and "10 ml" not in str(listed), listed
        hits = {h["id"]: h for h in recall(client, MAYA, "How much amoxicillin does Leo take?")["hits"]}
        assert hits[dose]["pending_review"] == sentence and hits[dose]["conflict_with"] == [claim["item_id"]]
        card = page_text(client.get(f"/ui/items/{dose}", params=MAYA).text)
        assert sentence in card and "A claim by jon" in card and "10 ml" in card, (moment, card)  # people review it
        consolidate(client, settings)
    tool(client, MAYA, "memory.review", {"id": dose, "decision": "reject", "note": "still 5 ml"})
    tool(client, MAYA, "memory.review", {"id": claim["item_id"], "decision": "reject", "note": "asked the doctor"})
    shown = curated_text(recall(client, MAYA, "How much amoxicillin does Leo take?"))
    assert "5 ml" in shown and "PENDING_REVIEW" not in shown and "Awaiting review" not in shown, shown
    assert "Awaiting review" not in page_text(client.get(f"/ui/items/{dose}", params=MAYA).text)


def test_the_reviewer_who_approved_a_claim_corrects_it_at_once_and_audited(service) -> None:
    """Maya is unsure of Leo's shoe size (held, confidence 0.3); Jon measures and approves
    it, then sees the size is 13 and corrects it. That edit was held like any teammate's,
    and he could not approve it himself. Now it applies at once, recall answers 13, and the
    inbox and history say it was Jon's correction as the reviewer; Kim, who approved
    nothing, is still held when she changes it."""
    client, settings = service
    turn(client, MAYA, "user", "I think Leo's shoe size is 12, not sure.")
    resp = client.post("/v1/tools", json={"action": "memory.propose", "identity": MAYA, "args": {"items": [{
        "type": "fact", "title": "Shoe size", "content": "Leo's shoe size is 12.", "confidence": 0.3,
        "why_store": "unsure", "scope": "project"}]}})
    (unsure,) = resp.json()["result"]["proposals"]
    assert unsure["action"] == "quarantine", unsure
    shoe = unsure["item_id"]
    tool(client, JON, "memory.review", {"id": shoe, "decision": "approve", "note": "measured"})
    fixed = tool(client, JON, "memory.update", {"id": shoe, "patch": {"content": "Leo's shoe size is 13."}})
    assert fixed["verdict"]["action"] == "accept" and fixed["as_reviewer"] is True, fixed
    card = page_text(client.get(f"/ui/items/{shoe}", params=MAYA).text)  # its inbox line, pending
    assert "changed content (a correction by the reviewer who approved it)" in card.split("Inbox events")[1], card
    for moment in ("at once", "after consolidation"):
        shown = curated_text(recall(client, MAYA, "What is Leo's shoe size?"))
        assert "13" in shown and "size is 12" not in shown and "PENDING_REVIEW" not in shown, (moment, shown)
        consolidate(client, settings)
    (change,) = client.app.state.service.inbox.read_after(0, kinds=["memory.update"])
    assert change.identity.user_id == "jon" and change.payload["as_reviewer"] is True, change
    held = tool(client, KIM, "memory.update", {"id": shoe, "patch": {"content": "Leo's shoe size is 14."}})
    assert held["verdict"]["action"] == "quarantine" and "as_reviewer" not in held, held
    assert "13" in curated_text(recall(client, MAYA, "What is Leo's shoe size?"))
    waiting = client.post("/v1/tools", json={"action": "memory.forget", "identity": KIM, "args": {"id": shoe}})
    assert waiting.status_code == 409 and "already held for review" in waiting.json()["error"], waiting.text
    tool(client, MAYA, "memory.review", {"id": shoe, "decision": "reject", "note": "13 it is"})
    gone = tool(client, KIM, "memory.forget", {"id": shoe})  # not hers, not approved by her: held
    assert gone["verdict"]["action"] == "quarantine" and "review.retracts_others" in gone["verdict"]["rule_ids"]
    for args, status in (({}, 400), ({"id": shoe, "why": "x"}, 400), ({"id": "no-such-id"}, 404)):
        resp = client.post("/v1/tools", json={"action": "memory.forget", "identity": KIM, "args": args})
        assert resp.status_code == status and resp.json()["error"], (args, resp.text)


def _changes_then_done(calls: list[dict[str, Any]]):
    """The model's script: ask for `calls` first, then (given their results) say it is done."""
    def reply(req: dict[str, Any]) -> dict[str, Any]:
        if any(m.get("role") == "tool" for m in req["messages"]):
            return {"role": "assistant", "content": "Done."}
        return {"role": "assistant", "content": "", "tool_calls": calls}
    return reply


def test_the_proxy_model_updates_and_forgets_governed_like_every_write(proxy, fake, memory) -> None:  # noqa: F811
    """Jon, chatting through the proxy, asks to forget his old bedtime note and to change
    Leo's dose in Maya's claim; then, through the OpenAI-compatible API, to forget Maya's
    school-start claim. His own note is retracted at once; the dose change and the
    forgetting of Maya's claim are held for review (her claims keep answering, the card
    queue has them); every call is an inbox event under Jon's identity, and the model is
    told the verdicts."""
    memory.settings.flags["memory_tools"] = True
    tools = ToolDispatcher(memory)
    maya, jon = Identity(**MAYA), Identity(**JON)

    def write(who: Identity, title: str, content: str) -> str:
        return tools.dispatch("memory.write", {"item": {"type": "fact", "title": title, "content": content,
                                                        "scope": "project"}}, who)["result"]["item_id"]

    dose = write(maya, "Leo amoxicillin dose", "Leo takes 5 ml of amoxicillin twice a day.")
    school = write(maya, "School start", "Leo's school starts at 8:15 am on weekdays.")
    note = write(jon, "Bedtime", "Leo goes to bed at 8pm on school nights.")
    url = proxy()
    headers = {"X-Loci-User": "jon", "X-Loci-Project": "home", "X-Loci-Session": "j1", "X-Loci-Org": "fam"}
    fake.chat_reply = _changes_then_done([
        {"function": {"name": "memory_forget", "arguments": {"id": note}}},
        {"function": {"name": "memory_update", "arguments": {"id": dose, "patch": {
            "content": "Leo takes 7.5 ml of amoxicillin twice a day."}}}}])
    raw = httpx.post(f"{url}/api/chat", headers=headers, json={"model": "llama3.2", "stream": False, "messages": [
        {"role": "user", "content": "Forget my bedtime note, and change Leo's dose to 7.5 ml."}]}).json()
    assert raw["message"]["content"] == "Done." and "ignored_tool_calls" not in raw["loci"], raw
    offered = {t["function"]["name"] for t in fake.requests[0][1]["tools"]}
    assert {"memory_update", "memory_forget"} <= offered and "memory_review" not in offered, offered
    told = [m["content"] for m in fake.requests[-1][1]["messages"] if m["role"] == "tool"]
    assert '"action": "accept"' in told[0] and '"action": "quarantine"' in told[1], told
    view = memory.view()
    assert view.get(note).validation == "retracted"
    assert view.get(dose).content.startswith("Leo takes 5 ml") and held_edit(view.get(dose))["by"] == "jon"
    fake.chat_reply = lambda req: {"role": "assistant", "content": "5 ml; a change awaits review."}
    httpx.post(f"{url}/api/chat", headers={**headers, "X-Loci-User": "maya", "X-Loci-Session": "m1"}, json={
        "model": "llama3.2", "stream": False,
        "messages": [{"role": "user", "content": "What do we know about Leo's amoxicillin dose?"}]})
    context = system_text(fake.requests[-1][1])  # the proxy's search block for her recall request
    assert "Leo takes 5 ml" in context and "a change to this memory by jon" in context and "7.5" not in context

    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=headers)
    fake.chat_reply = _changes_then_done([{"function": {"name": "memory_forget", "arguments": {"id": school}}}])
    reply = chat.chat.completions.create(model="llama3.2", messages=[
        {"role": "user", "content": "Forget when Leo's school starts."}])
    assert reply.choices[0].message.content == "Done."
    school_now = memory.view().get(school)
    assert school_now.validation != "retracted" and held_edit(school_now)["patch"] == {"validation": "retracted"}
    changes = [e for e in memory.inbox.read_after(0, kinds=["memory.update"])]
    # the held forget's round: its turns, once landed, wait with it (forgotten on approval)
    assert [(e.identity.user_id, e.payload["item_id"], e.payload["verdict"]["action"], len(e.payload.get(
        "forgot_turns", []))) for e in changes] == [("jon", note, "accept", 0), ("jon", dose, "quarantine", 0),
                                                    ("jon", school, "quarantine", 0), ("jon", school, "quarantine", 2)]
    found = memory.recall("When does Leo's school start?", Identity(**MAYA))
    assert "8:15" in found.injection and "a request to forget this memory by jon" in found.injection, found.injection


def test_a_held_contradiction_is_said_however_the_query_found_the_claim(service) -> None:
    """Jon's claim of another dose is held for contradicting Maya's. Asked in words only her
    claim has, among her other notes and with few candidates per channel (or with a tag
    only hers has), recall never met Jon's held claim, and her dose was injected as if
    nothing waited. Now the held claim names the claims it contradicts (`held_against`) and
    recall looks that up for each claim it delivers: the note is said from the live delta
    and from the published snapshot, and is gone once the claim is rejected."""
    client, settings = service
    client.app.state.service.engine.options = RecallOptions(candidate_k=2)
    dose = propose(client, MAYA, "The pharmacist wrote down Leo's dose: 5 ml of amoxicillin twice a day.",
                   "Dose the pharmacist wrote down", "Leo takes 5 ml of amoxicillin twice a day.",
                   tags=["medication"])["item_id"]
    for title, content in (("Pharmacy hours", "The pharmacy on Elm Street closes at 7 pm."),
                           ("Pharmacist name", "The pharmacist at Elm Street is called Ruth."),
                           ("Vitamin D", "Leo gets 400 IU of vitamin D every morning."),
                           ("Dentist", "Leo sees the dentist every six months.")):
        propose(client, MAYA, content, title, content)
    claim = propose(client, JON, "The pediatrician said 10 ml of amoxicillin twice a day.", "Amoxicillin",
                    "Leo takes 10 ml of amoxicillin twice a day.")
    assert claim["action"] == "quarantine" and "soft.contradiction" in claim["rule_ids"], claim
    question = "What dose did the pharmacist write down?"

    def asked(tags: list[str]) -> dict:
        resp = client.post("/v1/recall", json={"identity": MAYA, "query": question, "mode": "hybrid", "tags": tags})
        assert resp.status_code == 200, resp.text
        return resp.json()

    for moment in ("in the delta", "in the snapshot"):
        for tags in ([], ["medication"]):  # the tag filter leaves Jon's untagged claim out of the search
            found = asked(tags)
            hits = {h["id"]: h for h in found["hits"]}
            assert claim["item_id"] not in hits, (moment, tags, hits)
            assert "a claim contradicting this memory by jon" in hits[dose]["pending_review"], (moment, tags, hits)
            shown = curated_text(found)
            assert "| PENDING_REVIEW]" in shown and "10 ml" not in shown, (moment, tags, shown)
        if moment == "in the delta":
            consolidate(client, settings)
    tool(client, MAYA, "memory.review", {"id": claim["item_id"], "decision": "reject", "note": "asked the doctor"})
    for tags in ([], ["medication"]):  # the snapshot's held version, shadowed by the delta's rejected one
        found = asked(tags)
        assert "5 ml" in curated_text(found) and "PENDING_REVIEW" not in curated_text(found), (tags, found)
        assert not any(h["pending_review"] for h in found["hits"]), (tags, found["hits"])
