"""Forgetting as a chat relies on it, over HTTP: a forget says why (`reason`, kept in the item's
history and its audit), forgetting a correction brings back what it had replaced (online at
once, and after consolidation alike), a teammate's rewrite of someone else's claim waits for a
reviewer as a teammate's forget of it does, and a written correction keeps the importance of
what it replaces."""

from __future__ import annotations

import json

import openai
from typer.testing import CliRunner

from loci.cli import app as loci_cli
from pipelines.consolidate import consolidate_once
from tests.e2e.chat import consolidate, recall, tool
from tests.online.test_proxy import (  # noqa: F401 - fake and shared_fake are fixtures
    answer_from_memory,
    block,
    fake,
    shared_fake,
)

LEA = {"user_id": "lea", "project_id": "home", "session_id": "s1"}
ORG = "acme"
OLGA = {"user_id": "olga", "project_id": "it-admin", "session_id": "o1", "org_id": ORG}
RAJ = {"user_id": "raj", "project_id": "analytics", "session_id": "r1", "org_id": ORG}
ALLERGY = {"type": "fact", "title": "Leo's allergy", "content": "Leo is allergic to peanuts.",
           "importance": 10, "confidence": 0.9, "scope": "user", "why_store": "health"}
CORRECTED = {"type": "fact", "title": "Leo's allergy", "content": "Leo is allergic to peanuts only now, not tree nuts.",
             "confidence": 0.9, "scope": "user", "why_store": "health"}


def write(client, who: dict, item: dict) -> dict:
    return tool(client, who, "memory.write", {"item": item})


def item(client, who: dict, item_id: str) -> dict:
    resp = client.get(f"/v1/items/{item_id}", params=who)
    assert resp.status_code == 200, resp.text
    return resp.json()


def shown(client, who: dict, query: str) -> str:
    return recall(client, who, query)["injection"]


def test_a_forget_says_why_in_its_verdict_and_the_items_history(service, monkeypatch) -> None:
    client, settings = service
    kept = write(client, LEA, {"type": "fact", "title": "Dentist", "content": "Lea's dentist is Dr. Weiss.",
                               "confidence": 0.9, "scope": "user"})
    too_long = client.post("/v1/tools", json={"action": "memory.forget", "identity": LEA,
                                              "args": {"id": kept["item_id"], "reason": "x" * 501}})
    assert too_long.status_code == 400 and "reason" in too_long.text, too_long.text
    out = tool(client, LEA, "memory.forget", {"id": kept["item_id"], "reason": "switched to another dentist"})
    assert "switched to another dentist" in " ".join(out["verdict"]["reasons"]), out
    pending = json.dumps(item(client, LEA, kept["item_id"]))
    assert "switched to another dentist" in pending  # before consolidation: the inbox's record
    consolidate(client, settings)
    stored = json.dumps(item(client, LEA, kept["item_id"]))
    assert "switched to another dentist" in stored  # after: the revision's
    monkeypatch.setenv("LOCI_DATA_DIR", str(settings.data_dir))
    for command in ("show", "audit"):
        result = CliRunner().invoke(loci_cli, [command, kept["item_id"]])
        assert result.exit_code == 0 and "switched to another dentist" in result.output, (command, result.output)


def test_forgetting_a_correction_brings_back_what_it_replaced_at_once_and_after_consolidation(service) -> None:
    client, settings = service
    old = write(client, LEA, ALLERGY)
    consolidate(client, settings)
    new = write(client, LEA, CORRECTED)
    assert new["supersedes"] == [old["item_id"]], new
    # a correction at the default importance keeps the 10 of what it replaces
    assert item(client, LEA, new["item_id"])["item"]["importance"] == 10
    consolidate(client, settings)  # the allergy is stored as superseded
    assert "not tree nuts" in shown(client, LEA, "What is Leo allergic to?")
    tool(client, LEA, "memory.forget", {"id": new["item_id"], "reason": "said by mistake"})
    for moment in ("at once", "after consolidation"):
        if moment == "after consolidation":
            consolidate(client, settings)
        said = shown(client, LEA, "What is Leo allergic to?")
        assert "Leo is allergic to peanuts." in said and "tree nuts" not in said, (moment, said)
        got = item(client, LEA, old["item_id"])
        assert got["item"]["superseded_by"] is None and got["item"]["validation"] != "retracted", (moment, got)
        assert "what replaced it was forgotten" in json.dumps(got), (moment, got)


def test_forgetting_a_correction_before_any_consolidation_leaves_the_first_claim_standing(service) -> None:
    client, settings = service
    old = write(client, LEA, ALLERGY)
    new = write(client, LEA, CORRECTED)
    assert new["supersedes"] == [old["item_id"]], new
    tool(client, LEA, "memory.forget", {"id": new["item_id"]})
    for moment in ("at once", "after consolidation"):
        if moment == "after consolidation":
            consolidate(client, settings)
        said = shown(client, LEA, "What is Leo allergic to?")
        assert "Leo is allergic to peanuts." in said and "tree nuts" not in said, (moment, said)
        assert item(client, LEA, old["item_id"])["item"]["superseded_by"] is None, moment


def test_a_teammates_rewrite_of_someone_elses_org_policy_waits_for_review(service) -> None:
    client, settings = service
    policy = write(client, OLGA, {"type": "constraint", "title": "Customer data residency",
                                  "content": "All customer data stays in the EU.", "confidence": 0.9,
                                  "scope": "org"})
    out = tool(client, RAJ, "memory.update", {"id": policy["item_id"],
                                              "patch": {"content": "Customer data may also go to the US."}})
    assert out["verdict"]["action"] == "quarantine", out
    assert "All customer data stays in the EU." in shown(client, OLGA, "Where does customer data stay?")
    waiting = client.get("/v1/review", params=OLGA).json()
    assert [(e["id"], e["kind"], e["proposed_by"]) for e in waiting["pending"]] == [(policy["item_id"], "edit", "raj")]
    tool(client, OLGA, "memory.review", {"id": policy["item_id"], "decision": "approve"})
    assert "may also go to the US" in shown(client, OLGA, "Where does customer data stay?")
    # her own rewrite of her own policy applies at once, as before
    own = tool(client, OLGA, "memory.update", {"id": policy["item_id"],
                                               "patch": {"content": "All customer data stays in the EU or the US."}})
    assert own["verdict"]["action"] == "accept", own


def test_an_approved_correction_of_a_teammates_claim_keeps_its_importance(service) -> None:
    client, _ = service
    tom, raj, ana = ({"user_id": u, "project_id": "analytics", "session_id": f"{u}1"} for u in ("tom", "raj", "ana"))
    region = write(client, tom, {"type": "decision", "title": "Analytics replica region", "importance": 9,
                                 "content": "Run the analytics replica in eu-central-1.", "confidence": 0.9})
    moved = write(client, raj, {"type": "decision", "title": "Analytics replica region",
                                "content": "Run the analytics replica in us-west-2.", "confidence": 0.9})
    assert moved["verdict"]["action"] == "quarantine", moved  # contradicts Tom's: held
    out = tool(client, ana, "memory.review", {"id": moved["item_id"], "decision": "approve"})
    assert out["supersedes"] == [region["item_id"]], out
    assert item(client, ana, moved["item_id"])["item"]["importance"] == 9


def test_an_edited_chat_message_brings_back_the_claim_its_correction_had_replaced(proxy, fake, memory) -> None:
    """Through `loci proxy`: Lea's correction of Leo's allergy, proposed from her second message
    and consolidated (the first claim stored as superseded), is retracted when she edits that
    message into something else; the allergy she first gave stands again, in a new chat."""
    chat = openai.OpenAI(base_url=f"{proxy()}/v1", api_key="unused", max_retries=0,
                         default_headers={"X-Loci-User": "lea", "X-Loci-Project": "home"}).chat.completions
    first, second = "Leo is allergic to peanuts.", "Leo is allergic to peanuts only now, not tree nuts."
    fake.chat_reply = lambda req: "Noted. " + block(ALLERGY)
    said = chat.create(model="llama3.2", messages=[{"role": "user", "content": first}])
    (old,) = said.model_extra["loci"]["proposals"]
    fake.chat_reply = lambda req: "Noted. " + block(CORRECTED)
    chat.create(model="llama3.2", messages=[{"role": "user", "content": first},
                                             {"role": "assistant", "content": "Noted."},
                                             {"role": "user", "content": second}])
    consolidate_once(memory.settings)
    memory.reload()
    assert memory.view().get(old["item_id"]) is None  # superseded: out of what is served
    fake.chat_reply = lambda req: "Noted."
    edited = chat.create(model="llama3.2", messages=[
        {"role": "user", "content": first}, {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Also, his school starts at eight."}])
    assert len(edited.model_extra["loci"]["edited_away"]) == 3  # her words, the answer and its correction
    for moment in ("at once", "after consolidation"):
        if moment == "after consolidation":
            consolidate_once(memory.settings)
            memory.reload()
        back = memory.view().get(old["item_id"])
        assert back is not None and back.active and back.superseded_by is None, moment
        fake.chat_reply = answer_from_memory
        reply = chat.create(model="llama3.2", messages=[{"role": "user", "content": "What is Leo allergic to?"}])
        assert "Leo is allergic to peanuts." in reply.choices[0].message.content, (moment, reply)
        assert "tree nuts" not in reply.choices[0].message.content, moment
