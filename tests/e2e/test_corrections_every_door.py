"""A correction is a correction whichever door it comes through, over HTTP.

- A partial correction (`conflicts.corrects_in_part`: "Mara Quinn is 34 years old, not
  29" corrects the age in "The protagonist is Mara Quinn, a 29-year-old marine
  biologist") kept the note standing when it was written, but approved by a reviewer
  (a teammate's claim held for contradicting Iris's note) it superseded the whole note,
  and "What does Mara do?" found only the age. Now the approval corrects it in part.
- An edit that made a note say something else corrected nothing: Iris edited a
  placeholder note to "Mara Quinn is 34 years old, not 29" (no link, the protagonist note
  lost to the newer claim without a mark) and another to "The harbour town is Greyhaven,
  not Ashford" (the Ashford note stayed active, never superseded). An edit now corrects as
  a write does (`conflicts.corrected`, the one rule for every door), before and after
  consolidation.
- A teammate's edit that would make his note contradict Iris's claim was held for review,
  but Iris's claim was shown as if nothing waited; now it says a change contradicting it
  waits, as it does for a held claim.
"""

from __future__ import annotations

from tests.e2e.chat import consolidate, recall, tool
from tests.e2e.test_partial_corrections import entries, propose

IRIS = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s1"}
TOM = {"user_id": "tom", "project_id": "saltmarsh", "session_id": "t1"}
NOTE = "The protagonist is Mara Quinn, a 29-year-old marine biologist."
AGE = "Mara Quinn is 34 years old, not 29."


def stored(client, item_id: str) -> dict:
    return client.get(f"/v1/items/{item_id}", params=IRIS).json()["item"]


def corrected_in_part(client, note: str, correction: str, moment: str) -> None:
    """The note and its correction are both shown, the correction first, the note marked."""
    block = recall(client, IRIS, "What does Mara do?")["injection"]
    shown = entries(block)
    assert note in shown and correction in shown, (moment, block)
    assert f"CORRECTED_BY={correction}" in shown[note], (moment, block)
    assert block.index(shown[correction]) < block.index(shown[note]), (moment, block)


def test_an_approved_partial_correction_corrects_in_part(service) -> None:
    client, _ = service
    note = propose(client, IRIS, "fact", "Protagonist", NOTE)["item_id"]
    (held,) = tool(client, TOM, "memory.propose", {"items": [
        {"type": "fact", "title": "Mara's age", "content": AGE}]})["proposals"]
    assert held["action"] == "quarantine", held  # it contradicts Iris's note
    decided = tool(client, IRIS, "memory.review", {"id": held["item_id"], "decision": "approve"})
    assert decided["corrects_in_part"] == [note] and "supersedes" not in decided, decided
    assert stored(client, note)["superseded_by"] is None
    corrected_in_part(client, note, held["item_id"], "approved")


def test_an_edit_corrects_as_a_write_does(service) -> None:
    client, settings = service
    note = propose(client, IRIS, "fact", "Protagonist", NOTE)["item_id"]
    placeholder = propose(client, IRIS, "fact", "Mara's age", "Mara Quinn's age is still open.")["item_id"]
    ashford = propose(client, IRIS, "fact", "Harbour", "The harbour town is Ashford.")["item_id"]
    lighthouse = propose(client, IRIS, "fact", "Lighthouse", "The lighthouse is red.")["item_id"]
    edit = tool(client, IRIS, "memory.update", {"id": placeholder, "patch": {"content": AGE}})
    assert edit["verdict"]["action"] == "accept" and edit["corrects_in_part"] == [note], edit
    edit = tool(client, IRIS, "memory.update", {"id": lighthouse, "patch": {
        "title": "Harbour town", "content": "The harbour town is Greyhaven, not Ashford."}})
    assert edit["supersedes"] == [ashford] and "corrects_in_part" not in edit, edit
    for moment in ("at once", "after consolidation"):
        corrected_in_part(client, note, placeholder, moment)
        block = recall(client, IRIS, "Which is the harbour town?")["injection"]
        assert "Greyhaven" in block and "town is Ashford" not in block, (moment, block)
        if moment == "at once":
            consolidate(client, settings)
    assert stored(client, note)["superseded_by"] is None
    gone = client.get(f"/v1/items/{ashford}", params=IRIS)
    assert gone.status_code == 200 and gone.json()["replaced_by"] == {"id": lighthouse, "how": "superseded"}, gone.text


def test_a_held_edit_contradicting_a_claim_is_said_on_that_claim(service) -> None:
    client, _ = service
    ashford = propose(client, IRIS, "fact", "Harbour", "The harbour town is Ashford.")["item_id"]
    mine = propose(client, TOM, "fact", "Lighthouse", "The lighthouse is red.")["item_id"]
    edit = tool(client, TOM, "memory.update", {"id": mine, "patch": {
        "title": "Harbour town", "content": "The harbour town is Greyhaven."}})
    assert edit["verdict"]["action"] == "quarantine", edit  # Tom's edit contradicts Iris's claim
    shown = entries(recall(client, IRIS, "Which is the harbour town?")["injection"])
    assert "| PENDING_REVIEW]" in shown[ashford], shown
    assert "a change to another memory that would contradict this one by tom" in shown[ashford], shown
    assert "Greyhaven" not in shown[ashford], shown  # never what the held change says
    tool(client, TOM, "memory.review", {"id": mine, "decision": "reject"})  # its editor withdraws it
    shown = entries(recall(client, IRIS, "Which is the harbour town?")["injection"])
    assert "PENDING_REVIEW" not in shown[ashford], shown


def test_a_claim_held_before_it_named_what_it_contradicts_is_still_said(service, monkeypatch) -> None:
    """A store written before held claims kept the ids they contradict (`held_against`):
    Tom's held claim is found from Iris's claim by the policy's own check, though the
    query ("Ashford") finds only hers."""
    client, _ = service
    ashford = propose(client, IRIS, "fact", "Harbour", "The harbour town is Ashford.")["item_id"]
    monkeypatch.setattr("pipelines.capture.contradictions_of", lambda *_: ())  # what capture kept then
    (held,) = tool(client, TOM, "memory.propose", {"items": [
        {"type": "fact", "title": "Town", "content": "The harbour town is Greyhaven."}]})["proposals"]
    assert held["action"] == "quarantine", held
    found = recall(client, IRIS, "Ashford", mode="hybrid")
    assert [h["id"] for h in found["hits"]] == [ashford], found["hits"]
    shown = entries(found["injection"])
    assert "| PENDING_REVIEW]" in shown[ashford] and "a claim contradicting this memory by tom" in shown[ashford], shown


def test_an_approved_held_edit_says_what_its_time_words_meant(service) -> None:
    """Tom's edit of his plan ("next Tuesday" to "next Thursday", in the town Iris's claim
    names otherwise) waits for a reviewer; approved, the plan says the day its new words
    meant, and holds until then (broken: its "Said on" note still named Tuesday's day)."""
    client, settings = service
    propose(client, IRIS, "fact", "Offsite", "The team offsite is in Porto.")
    plan = propose(client, TOM, "fact", "Offsite trip", "The offsite trip is next Tuesday.")["item_id"]
    edit = tool(client, TOM, "memory.update", {"id": plan, "patch": {
        "title": "Offsite", "content": "The team offsite is in Braga next Thursday."}})
    assert edit["verdict"]["action"] == "quarantine", edit  # it contradicts Iris's claim
    assert list(stored(client, plan)["metadata"]["said_dates"]["meant"]) == ["next Tuesday"]
    tool(client, IRIS, "memory.review", {"id": plan, "decision": "approve"})
    for moment in ("approved", "after consolidation"):
        item = stored(client, plan)
        meant = item["metadata"]["said_dates"]["meant"]
        assert list(meant) == ["next Thursday"] and meant["next Thursday"][4:] == item["valid_to"][:10], (moment, item)
        if moment == "approved":
            consolidate(client, settings)
