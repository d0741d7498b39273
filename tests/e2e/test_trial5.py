"""A demanding new user's fifth trial, over HTTP (Litestar's TestClient against `loci serve`'s
app), checking promises a real chat relies on:

- A memory the user retracted does not come back as evidence: the raw turn that said it
  is not injected or listed as a conversation excerpt either (said after the retraction, it
  is said again, on purpose, and comes back).
- An archived memory (expired, aged out) answers with its state and history, in the JSON API
  and the memory browser, instead of a 404 as if it had never existed.
- A curated memory whose title the question names comes before the others ("Deploy window"
  before "Hotfix deploy window"); a case beside a rule neither retires it nor hides it.
- Preferences (how to answer) shown most specific scope first: one chat's wish before the
  project's convention before the user's own.
- A memory a correction replaced keeps its card (naming its successor) after that correction
  is archived in turn.
- A correction that retires a claim is the actor of that retirement in the audit (its
  author, inbox seq), not "pipeline".
"""

from __future__ import annotations

import json

from tests.e2e.chat import consolidate, page_text, recall, tool, turn

ACME_DANA = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "acme"}
LATER = {**ACME_DANA, "session_id": "s2"}






def propose(client, who: dict, item: dict) -> dict:
    text = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"
    (verdict,) = turn(client, who, "assistant", text)["proposals"]
    assert verdict["action"] == "accept", verdict
    return verdict


# -- a retracted memory is not evidence either -----------------------------------------------


def test_a_retracted_memory_does_not_come_back_through_the_turn_that_said_it(service) -> None:
    """Dana tells the assistant the deploy window (in her words; the model's proposal words
    it its own way), having mentioned it in an earlier chat too; Loci stores the proposal.
    Then she retracts it ("that was wrong, forget it"): the memory is never recalled, but
    the raw turns in which she said it kept being injected as conversation excerpts, so
    the model was handed the retracted claim all the same: the exchange it was proposed
    in, and a turn elsewhere that states it. Before and after consolidation
    it is not injected, listed or returned; what she said beside it on another subject
    still is, and so is the same statement said again after the retraction."""
    client, settings = service
    turn(client, {**ACME_DANA, "session_id": "s0"}, "user", "FYI our deploy window is Tuesdays at 14:00 UTC.")
    turn(client, ACME_DANA, "user", "Let's deploy on Tuesdays at 2pm UTC from now on.")  # the model rewords it
    window = propose(client, ACME_DANA, {"type": "decision", "title": "Deploy window",
                                         "content": "The deploy window is Tuesdays at 14:00 UTC.",
                                         "why_store": "team decision", "confidence": 0.9})
    turn(client, ACME_DANA, "user", "The staging cluster runs in eu-west-1.")
    before = recall(client, LATER, "When can we deploy? What is our deploy window?")["injection"]
    assert "Tuesdays at 14:00" in before and "2pm" in before, before
    tool(client, ACME_DANA, "memory.update", {"id": window["item_id"], "patch": {"validation": "retracted"}})
    for moment in ("at once", "after consolidation"):
        for mode in ("inject", "catalog"):
            found = recall(client, LATER, "When can we deploy? What is our deploy window?", mode)
            said = json.dumps(found)
            assert "Tuesdays at 14:00" not in said and "2pm" not in said, (moment, mode, found)
        assert "eu-west-1" in recall(client, LATER, "Where does the staging cluster run?")["injection"], moment
        consolidate(client, settings)
    turn(client, LATER, "user", "Update: the deploy window is Tuesdays at 14:00 UTC again, Ops confirmed.")
    assert "Ops confirmed" in recall(client, {**ACME_DANA, "session_id": "s3"},
                                     "What is our deploy window?")["injection"]


# -- the audit names who retired a claim -----------------------------------------------------


def test_the_audit_names_the_correction_that_retired_a_claim_not_the_pipeline(service) -> None:
    """Dana corrects her release day after a consolidation: the old claim's history ended
    with "pipeline update superseded_by", as if consolidation had decided it. The
    retirement is Dana's correction: her name, its inbox seq, the `supersede` action, in
    the memory browser (`GET /v1/items` and `loci show` read the same rows)."""
    client, settings = service

    def write(content: str) -> tuple[str, int]:
        result = tool(client, ACME_DANA, "memory.write", {"item": {
            "type": "decision", "title": "Release day", "content": content, "why_store": "said",
            "confidence": 0.9, "scope": "project"}})
        return result["item_id"], result["seq"]

    old, _ = write("Releases ship on Tuesday.")
    consolidate(client, settings)
    new, seq = write("Releases ship on Wednesday.")
    consolidate(client, settings)
    page = client.get(f"/ui/items/{old}", params=ACME_DANA)
    assert page.status_code == 200, page.text
    history = page_text(page.text.split('id="history"')[1].split("</table>")[0])
    retired = history[history.rindex("superseded_by") - 80:]
    assert "pipeline" not in retired and f"dana supersede (superseded) {seq}" in retired, history
    assert new in retired


# -- an archived memory keeps its history ----------------------------------------------------


def test_an_archived_memory_still_answers_with_its_state_and_history(service) -> None:
    """Dana lets a decision go (it expires) and consolidation archives it. Its id answered
    404 "no item" in the JSON API and the memory browser, as if it had never existed: the
    audit history collapsed. It answers as last stored, archived, with every revision and
    audit event (who wrote it, who set its expiry, the run that archived it); it is still
    not recalled, and someone who may not see it is told nothing."""
    client, settings = service
    kiln = tool(client, ACME_DANA, "memory.write", {"item": {
        "type": "decision", "title": "Kiln day", "content": "The kiln fires on Fridays.",
        "why_store": "the team decided it", "confidence": 0.9}})["item_id"]
    consolidate(client, settings)
    tool(client, ACME_DANA, "memory.update", {"id": kiln, "patch": {"expires_at": "2026-01-01T00:00:00Z"}})
    consolidate(client, settings)
    assert "Fridays" not in recall(client, LATER, "When does the kiln fire?")["injection"]

    resp = client.get(f"/v1/items/{kiln}", params=ACME_DANA)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["item"]["archived"] is True and body["item"]["content"] == "The kiln fires on Fridays."
    assert body["source"] == "history"
    revisions = [(r["reason"], r["actor"]) for r in body["revisions"]]
    assert revisions[0] == ("create", "dana") and ("expired", None) == revisions[-1], revisions
    assert "archive" in [e["action"] for e in body["events"]]

    page = client.get(f"/ui/items/{kiln}", params=ACME_DANA)
    assert page.status_code == 200, page.text
    text = page_text(page.text)
    assert "archived" in text and "The kiln fires on Fridays." in text, text[:800]
    history = page_text(page.text.split('id="history"')[1].split("</table>")[0])
    assert "dana create" in history and "archive" in history, history

    eve = {"user_id": "eve", "project_id": "borealis", "org_id": "other"}
    assert client.get(f"/v1/items/{kiln}", params=eve).status_code == 404
    page = client.get(f"/ui/items/{kiln}", params=eve)
    assert page.status_code == 404 and "Fridays" not in page.text


# -- the subject the question names comes first ----------------------------------------------


def write(client, who: dict, title: str, content: str, **extra) -> dict:
    return tool(client, who, "memory.write", {"item": {
        "type": "decision", "title": title, "content": content, "why_store": "team decision",
        "confidence": 0.9, "scope": "project", **extra}})


def test_the_memory_whose_title_the_question_names_comes_first(service) -> None:
    """"What is our deploy window?" names the subject "Deploy window": that memory answers
    it, "Hotfix deploy window" (which says "deploy window" in its content too, so it
    scored higher in words) comes after it, before and after consolidation. A question
    that names neither title keeps the order by relevance."""
    client, settings = service
    rule = write(client, ACME_DANA, "Deploy window", "Deploys go out on Tuesday afternoons.")["item_id"]
    case = write(client, ACME_DANA, "Hotfix deploy window",
                 "The hotfix deploy window is any weekday, with on-call approval.")["item_id"]
    for moment in ("at once", "after consolidation"):
        for query in ("What is our deploy window?", "deploy window"):
            hits = [h["id"] for h in recall(client, LATER, query)["hits"]]
            assert hits[:2] == [rule, case], (moment, query, hits)
        hits = [h["id"] for h in recall(client, LATER, "What is the hotfix deploy window?")["hits"]]
        assert hits[0] == case, (moment, hits)
        consolidate(client, settings)


def test_a_case_beside_a_rule_neither_retires_it_nor_hides_it(service) -> None:
    """Dana states the deploy window, then the hotfix window (other hours). The write
    took the hotfix window for a correction of the deploy window and retired it (the rule
    gone from recall, for good): the words cannot tell a case beside a rule from a rule
    reworded. Both stay, neither held for review, and recall shows both, flagged as
    disagreeing, so the model says so instead of choosing; a real correction under the
    same title still replaces."""
    client, settings = service
    rule = write(client, ACME_DANA, "Deploy window",
                 "Deploys go out Tuesdays and Thursdays between 14:00 and 16:00 UTC.")["item_id"]
    case = write(client, ACME_DANA, "Hotfix deploy window",
                 "Hotfixes may deploy any day between 09:00 and 17:00 UTC, with on-call approval.")
    assert case["verdict"]["action"] == "accept", case
    for moment in ("at once", "after consolidation"):
        found = recall(client, LATER, "What is our deploy window?")
        assert [h["id"] for h in found["hits"]][:2] == [rule, case["item_id"]], (moment, found["hits"])
        assert f"CONFLICT={case['item_id']}" in found["injection"], found["injection"]
        assert client.get(f"/v1/items/{rule}", params=ACME_DANA).status_code == 200
        consolidate(client, settings)
    fixed = write(client, ACME_DANA, "Deploy window", "Deploys go out Wednesdays between 14:00 and 16:00 UTC.")
    found = recall(client, LATER, "What is our deploy window?")
    assert "Wednesdays" in found["injection"] and "Tuesdays and Thursdays" not in found["injection"], found
    assert fixed["item_id"] in [h["id"] for h in found["hits"]]


# -- a user's wish, a project's convention, one chat's exception -------------------------------


def test_the_most_specific_preference_is_the_first_the_model_reads(service) -> None:
    """Dana prefers short bullet points (her user scope); atlas answers with numbered steps
    (its project); in one chat she asks for a single paragraph (that session). Asked how to
    format answers, recall showed all three in the order of their words' relevance: the
    chat's own wish last, the user's before the project's, none marked as overriding
    another (the conflict rule cannot compare "bullet points" with "numbered steps"). The
    wishes shown come most specific scope first, and the block says the first applies."""
    client, settings = service
    s1, s4 = ACME_DANA, {**ACME_DANA, "session_id": "s4"}

    def wish(who: dict, said: str, title: str, content: str, scope: str) -> None:
        turn(client, who, "user", said)
        propose(client, who, {"type": "preference", "title": title, "content": content, "why_store": "asked",
                              "scope": scope, "confidence": 0.9})

    turn(client, s1, "user", "Hi! How are you today?")
    turn(client, s1, "assistant", "Doing well, thanks! How can I help?")
    wish(s1, "I prefer answers as short bullet points.", "Answer format",
         "Dana prefers answers as short bullet points.", "user")
    wish(s1, "In atlas we answer with numbered steps.", "Atlas answer format",
         "In atlas, answers use numbered steps.", "project")
    consolidate(client, settings)
    wish(s4, "For this chat only, answer in a single paragraph.", "Format for this chat",
         "In this chat, answers are a single paragraph.", "session")

    def shown(who: dict) -> list[str]:
        block = recall(client, who, "How should you format your answers?")["injection"]
        assert "the first (the more specific scope) applies" in block, block
        return [line for line in block.splitlines()
                if line in ("Format for this chat", "Atlas answer format", "Answer format")]

    assert shown(s4) == ["Format for this chat", "Atlas answer format", "Answer format"]
    assert shown({**ACME_DANA, "session_id": "s5"}) == ["Atlas answer format", "Answer format"]
    borealis = {**ACME_DANA, "project_id": "borealis", "session_id": "b1"}
    assert shown(borealis) == ["Answer format"]


def test_a_replaced_memory_keeps_its_card_after_what_replaced_it_is_archived(service) -> None:
    """Dana corrects the kiln day, later lets the correction expire. The old claim's card
    showed its history while the correction was served; once consolidation archived the
    correction, the old card answered 404 (nothing served named it any more). Both keep
    their cards: the old one still names, and links, what superseded it."""
    client, settings = service

    def write(content: str) -> str:
        return tool(client, ACME_DANA, "memory.write", {"item": {
            "type": "fact", "title": "Kiln day", "content": content, "why_store": "said", "confidence": 0.9,
            "scope": "project"}})["item_id"]

    old = write("The kiln fires on Fridays.")
    consolidate(client, settings)
    new = write("The kiln fires on Saturdays.")
    consolidate(client, settings)
    tool(client, ACME_DANA, "memory.update", {"id": new, "patch": {"expires_at": "2026-01-01T00:00:00Z"}})
    consolidate(client, settings)
    assert client.get(f"/v1/items/{new}", params=ACME_DANA).json()["item"]["archived"] is True
    page = client.get(f"/ui/items/{old}", params=ACME_DANA)
    assert page.status_code == 200, page.text
    assert f"superseded by {new}" in page_text(page.text) and "The kiln fires on Fridays." in page_text(page.text)
    # Followed from an earlier catalog or an audit log, the old id answers as the archived one
    # does: as last stored, with its history, its state and what replaced it.
    resp = client.get(f"/v1/items/{old}", params=ACME_DANA)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["state"] == "superseded" and body["replaced_by"] == {"id": new, "how": "superseded"}, body
    assert body["item"]["content"] == "The kiln fires on Fridays." and body["source"] == "history", body
    assert any(e["kind"] == "memory.write" for e in body["history"]), body["history"]
    assert client.get(f"/v1/items/{new}", params=ACME_DANA).json()["state"] == "archived"
    elsewhere = {"user_id": "ben", "project_id": "borealis", "session_id": "b1", "org_id": "acme"}
    assert client.get(f"/v1/items/{old}", params=elsewhere).status_code == 404  # another project's memory
    never = client.get("/v1/items/fact_never_written", params=ACME_DANA)
    assert never.status_code == 404 and never.json()["error"] == "no item 'fact_never_written'", never.text
