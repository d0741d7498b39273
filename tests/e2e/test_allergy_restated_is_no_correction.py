"""A restated allergy is no correction (trial29's household): Maya's safety note "Leo is
severely allergic to peanuts and tree nuts: nothing with nuts for him, and his EpiPen goes
wherever he goes." (importance 10) and her later note for the school "Leo is allergic to
peanuts and tree nuts; his EpiPen is in his school bag." say one thing: the negation in
"nothing with nuts for him" is what the allergy asks, not a denial of it. Was: read as "same
subject, one denies it", so the school note superseded the safety note (its words gone from
recall) and Tom's near-verbatim restatement was held."""

from __future__ import annotations

from pipelines.recall.conflicts import proposed_claim
from pipelines.recall.conflicts.correcting import contradicted
from pipelines.records import MemoryItem, Scope
from tests.e2e.chat import proposal_verdict

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "maya-phone"}
TOM = {"user_id": "tom", "project_id": "home", "session_id": "tom-laptop"}
SEVERE = ("Leo is severely allergic to peanuts and tree nuts: nothing with nuts for him, and his EpiPen goes "
          "wherever he goes.")
SCHOOL = "Leo is allergic to peanuts and tree nuts; his EpiPen is in his school bag."


def propose(client, who: dict, said: str, item: dict) -> dict:
    assert client.post("/v1/turns", json={"identity": who, "role": "user", "text": said}).status_code == 201
    return proposal_verdict(client, who, item)


def test_a_restated_allergy_does_not_replace_the_safety_note(service) -> None:
    client, _ = service
    severe = propose(client, MAYA, "Leo is allergic to peanuts and tree nuts, any nut is an emergency.", {
        "type": "constraint", "title": "Leo's nut allergy", "content": SEVERE, "importance": 10})
    school = propose(client, MAYA, "I told the school: Leo is allergic to peanuts and tree nuts, EpiPen in his bag.", {
        "type": "fact", "title": "Leo's allergy at school", "content": SCHOOL})
    assert school["action"] == "accept" and school["supersedes"] == [], school  # broken: [severe's id]
    tom = propose(client, TOM, "Leo is allergic to peanuts and tree nuts, his EpiPen goes wherever he goes.", {
        "type": "constraint", "title": "Leo's nut allergy", "importance": 10,
        "content": "Leo is allergic to peanuts and tree nuts: nothing with nuts for him, and his EpiPen goes "
                   "wherever he goes."})
    assert tom["action"] == "accept", tom  # broken: quarantined, "same subject, one denies it"
    body = client.post("/v1/recall", json={"identity": TOM, "query": "what snacks can I pack for Leo?"}).json()
    assert severe["item_id"] in [h["id"] for h in body["hits"]], body["hits"]
    assert "severely allergic" in body["injection"]


def test_nothing_with_nuts_for_him_denies_no_allergy() -> None:
    old = MemoryItem(id="m", tier="ltm", type="constraint", title="Leo's nut allergy", content=SEVERE,
                     scope=Scope(kind="project", user_id="maya", project_id="home"), importance=10)
    new = proposed_claim("Leo's allergy at school", SCHOOL, "fact", "project")
    assert [reason for _, reason in contradicted(new, [old])] == []  # broken: ['same subject, one denies it']
