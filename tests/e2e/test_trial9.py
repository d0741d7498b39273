"""A household's trial (the ninth new-user trial), over HTTP (Litestar's TestClient against
`loci serve`'s app): Maya, a parent, and Jon, her partner, share one memory for their home
(project "home" in org "fam") over several weeks: their son Leo's allergy, medication and
dose changes, appointments moved, the grocery budget, the school schedule, each parent's
own answer style, things they ask to forget, with consolidations in between. Promises
checked:

- A user's correction of their own claim replaces it, even when the partner's older note
  only repeated what it said (broken: Maya's "Leo's bedtime is 8:30pm now" was held for
  review because Jon had noted "Leo goes to bed at 8pm"; recall kept answering 8pm, and
  nothing told either of them).
"""

from __future__ import annotations

from tests.assets.support import block
from tests.e2e.chat import consolidate, recall, turn

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "m1", "org_id": "fam"}
JON = {"user_id": "jon", "project_id": "home", "session_id": "j1", "org_id": "fam"}


def propose(client, who: dict, said: str, type_: str, title: str, content: str, scope: str = "project") -> dict:
    """One exchange: the user says something, the assistant proposes one memory; its verdict."""
    turn(client, who, "user", said)
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": type_, "title": title, "content": content, "why_store": "family", "confidence": 0.9, "scope": scope}))
    (outcome,) = answer["proposals"]
    return outcome


def curated(found: dict) -> str:
    """The authoritative part of an injected block (before the conversation excerpts)."""
    return (found["injection"] or "").split("CONVERSATION EXCERPTS")[0]


def test_a_parents_correction_is_not_held_for_the_partners_echo_of_the_old_value(service) -> None:
    """Maya stores Leo's bedtime; Jon, reading it, keeps a note of his own saying the same.
    A week later Maya corrects her claim. It was held for review (it contradicts Jon's
    note, someone else's claim), so both parents kept being told 8pm. Jon's note only
    echoes the claim Maya corrects: her correction replaces her claim at once and after
    consolidation, recall answers 8:30pm, and Jon's note is kept (his, with its history),
    not shown as the answer. A note of Jon's with a value of its own still holds it."""
    client, settings = service
    old = propose(client, MAYA, "Leo's bedtime is 8pm on school nights.", "fact", "Leo bedtime",
                  "Leo's bedtime is 8pm on school nights.")
    echo = propose(client, JON, "Reminder for me: Leo goes to bed at 8pm on school nights.", "note", "Bedtime",
                   "Leo goes to bed at 8pm on school nights.")
    assert old["action"] == echo["action"] == "accept", (old, echo)
    consolidate(client, settings)
    fix = propose(client, MAYA, "We moved Leo's bedtime to 8:30pm on school nights.", "fact", "Leo bedtime",
                  "Leo's bedtime is 8:30pm on school nights.")
    assert fix["action"] == "accept" and fix["supersedes"] == [old["item_id"]], fix
    for moment in ("at once", "after consolidation"):
        for who in (JON, MAYA):
            found = curated(recall(client, who, "What time is Leo's bedtime?"))
            assert "8:30pm" in found and "8pm" not in found, (moment, who["user_id"], found)
        kept = client.get(f"/v1/items/{echo['item_id']}", params=JON)
        assert kept.status_code == 200 and kept.json()["item"]["validation"] != "retracted", kept.text
        consolidate(client, settings)
    propose(client, JON, "Leo stays up until 9pm on Fridays now.", "note", "Bedtime",
            "Leo goes to bed at 9pm on school nights.")
    again = propose(client, MAYA, "Leo's bedtime is 8:45pm on school nights from now on.", "fact", "Leo bedtime",
                    "Leo's bedtime is 8:45pm on school nights.")
    assert again["action"] == "quarantine" and "soft.contradiction" in again["rule_ids"], again
