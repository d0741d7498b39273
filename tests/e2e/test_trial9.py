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
- A held edit waits beside the item, visibly and whole: a second edit that would be held
  while one waits is refused (409, audited), not put in the first one's place (broken: Jon's
  second edit of Leo's school start replaced his first unseen, the queue showing only the
  last); the memory's own page shows the edit waiting, what it would make the memory say,
  and the review form (broken: the card showed nothing of it, only "changed content" in
  its inbox events, as if the memory had changed).
- A claim held in quarantine is never recalled (what `/v1/stats` counts as `quarantined`
  apart from `recallable`): broken, Jon's unsure "Leo's shoe size is 12" (confidence 0.3,
  held) was listed in Maya's catalog and hits, and in `memory.search`, as a memory.
"""

from __future__ import annotations

import json
import re

from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import block, make_settings
from tests.e2e.chat import consolidate, curated_text, page_text, recall, tool, turn

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "m1", "org_id": "fam"}
JON = {"user_id": "jon", "project_id": "home", "session_id": "j1", "org_id": "fam"}


def propose(client, who: dict, said: str, type_: str, title: str, content: str, scope: str = "project") -> dict:
    """One exchange: the user says something, the assistant proposes one memory; its verdict."""
    turn(client, who, "user", said)
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": type_, "title": title, "content": content, "why_store": "family", "confidence": 0.9, "scope": scope}))
    (outcome,) = answer["proposals"]
    return outcome


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
            found = curated_text(recall(client, who, "What time is Leo's bedtime?"))
            assert "8:30pm" in found and "8pm" not in found, (moment, who["user_id"], found)
        kept = client.get(f"/v1/items/{echo['item_id']}", params=JON)
        assert kept.status_code == 200 and kept.json()["item"]["validation"] != "retracted", kept.text
        consolidate(client, settings)
    propose(client, JON, "Leo stays up until 9pm on Fridays now.", "note", "Bedtime",
            "Leo goes to bed at 9pm on school nights.")
    again = propose(client, MAYA, "Leo's bedtime is 8:45pm on school nights from now on.", "fact", "Leo bedtime",
                    "Leo's bedtime is 8:45pm on school nights.")
    assert again["action"] == "quarantine" and "soft.contradiction" in again["rule_ids"], again


def test_a_held_edit_is_shown_on_the_card_and_a_second_one_does_not_replace_it(service) -> None:
    """Jon edits Maya's claim on Leo's school start to 8:30 (held: it changes what her
    claim says), then, unsure, to 8:45. The second edit replaced the first silently and
    the card said nothing of either. Now the second is refused while the first waits; the
    card shows the waiting edit and the review form, its inbox line says it is held; Maya's
    rejection clears it and the card stops showing it; Jon may then edit again."""
    client, settings = service
    school = propose(client, MAYA, "Leo's school starts at 8:15 am on weekdays.", "fact", "School start",
                     "Leo's school starts at 8:15 am on weekdays.")["item_id"]
    consolidate(client, settings)
    first = tool(client, JON, "memory.update", {"id": school, "patch": {
        "content": "Leo's school starts at 8:30 am on weekdays."}})
    assert first["verdict"]["action"] == "quarantine", first
    resp = client.post("/v1/tools", json={"action": "memory.update", "identity": JON, "args": {
        "id": school, "patch": {"content": "Leo's school starts at 8:45 am on weekdays."}}})
    assert resp.status_code == 409 and "already held for review" in resp.json()["error"], resp.text
    for moment in ("at once", "after consolidation"):
        queue = page_text(client.get("/ui/quarantine", params=MAYA).text)
        assert "8:30" in queue and "8:45" not in queue, (moment, queue)
        card = client.get(f"/ui/items/{school}", params=MAYA).text
        text = page_text(card)
        assert "An edit by jon" in text and "8:30" in text and "8:45" not in text, (moment, text)
        assert f'action="/ui/quarantine/{school}' in card, moment
        if moment == "at once":  # its inbox event, pending; consolidated, it is a revision of the item's metadata
            assert "changed content: held for review" in text.split("Inbox events")[1], text
        assert "8:15" in curated_text(recall(client, JON, "When does Leo's school start?")), moment
        consolidate(client, settings)
    events = client.get(f"/v1/items/{school}", params=MAYA).json()["events"]
    assert ("refused", "jon") in [(e["action"], e["actor"]) for e in events], events
    tool(client, MAYA, "memory.review", {"id": school, "decision": "reject", "note": "still 8:15"})
    card = page_text(client.get(f"/ui/items/{school}", params=MAYA).text)
    assert "An edit by jon" not in card, card
    again = tool(client, JON, "memory.update", {"id": school, "patch": {
        "content": "Leo's school starts at 8:45 am on weekdays."}})
    assert again["verdict"]["action"] == "quarantine", again


def test_a_claim_held_in_quarantine_is_not_recalled_in_any_mode(service) -> None:
    """Jon is unsure of Leo's shoe size; the assistant proposes it with confidence 0.3 and
    the policy holds it. It was listed in the catalog and hits of Maya's recall (catalog
    and hybrid modes) and in memory.search, only marked low_confidence. Held for review,
    it is recalled in no mode until a reviewer approves it; then it is."""
    client, settings = service
    turn(client, JON, "user", "I think Leo's shoe size is 12, not sure.")
    resp = client.post("/v1/tools", json={"action": "memory.propose", "identity": JON, "args": {"items": [{
        "type": "fact", "title": "Shoe size", "content": "Leo's shoe size is 12.", "confidence": 0.3,
        "why_store": "unsure", "scope": "project"}]}})
    (unsure,) = resp.json()["result"]["proposals"]
    assert unsure["action"] == "quarantine", unsure
    for moment in ("at once", "after consolidation"):
        for mode in ("inject", "catalog", "hybrid"):
            found = recall(client, MAYA, "What is Leo's shoe size?", mode=mode)
            assert unsure["item_id"] not in str(found), (moment, mode, found)
        searched = tool(client, MAYA, "memory.search", {"query": "Leo shoe size"})
        assert unsure["item_id"] not in str(searched), (moment, searched)
        consolidate(client, settings)
    tool(client, MAYA, "memory.review", {"id": unsure["item_id"], "decision": "approve", "note": "measured: 12"})
    assert unsure["item_id"] in str(recall(client, MAYA, "What is Leo's shoe size?", mode="hybrid"))


def test_an_import_contradicting_the_partners_claim_is_held_for_review(service, tmp_path, monkeypatch) -> None:
    """Jon used Loci on his laptop before the household shared one: there he stored Leo's
    bedtime as 9pm and the pediatrician's phone number. He exports it (`loci export`) and
    imports it into the shared memory (`loci import`), where Maya's claim says 8:30pm. The
    bedtime contradicts Maya's claim: held for review, recall keeps answering 8:30pm; the
    phone number contradicts nothing and is accepted."""
    client, settings = service
    propose(client, MAYA, "Leo's bedtime is 8:30pm on school nights.", "fact", "Leo bedtime",
            "Leo's bedtime is 8:30pm on school nights.")
    consolidate(client, settings)
    laptop = make_settings(tmp_path / "laptop")
    with TestClient(create_app(laptop, embedder=HashEmbedder(laptop.embedder_dim), check_interval_ms=0)) as other:
        propose(other, JON, "Leo goes to bed at 9pm on school nights.", "fact", "Bedtime",
                "Leo goes to bed at 9pm on school nights.")
        propose(other, JON, "The pediatrician's number is 555-0142.", "fact", "Pediatrician phone",
                "The pediatrician's phone number is 555-0142.")
        consolidate(other, laptop)
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the stores' embedder
    exported = tmp_path / "jon-laptop.jsonl"
    runner = CliRunner()
    result = runner.invoke(cli_app, ["export", "--out", str(exported), "--data-dir", laptop.data_dir])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in exported.read_text().splitlines()]
    assert {r["title"] for r in rows if r["type"] != "message"} == {"Bedtime", "Pediatrician phone"}, rows
    result = runner.invoke(cli_app, ["import", str(exported), "--data-dir", settings.data_dir])
    assert result.exit_code == 0, result.output
    counts = dict(zip(["turns", "accepted", "quarantined"], re.findall(r"│\s*(\d+)", result.output)))
    assert counts["quarantined"] == "1", result.output  # the bedtime; his chat turns and the number pass
    for moment in ("at once", "after consolidation"):
        found = curated_text(recall(client, MAYA, "What time is Leo's bedtime?"))
        assert "8:30pm" in found and "9pm" not in found, (moment, found)
        assert "555-0142" in curated_text(recall(client, MAYA, "What is the pediatrician's phone number?")), moment
        queue = page_text(client.get("/ui/quarantine", params=MAYA).text)
        assert "9pm" in queue, (moment, queue)
        consolidate(client, settings)
