"""A small team's trial (the eighth new-user trial), over HTTP (Litestar's TestClient against
`loci serve`'s app, `loci ingest` as the CLI runs it). The org "acme" has one project,
helios; Ines leads, Tom and Ravi are engineers, and Tom keeps personal notes (user scope).
Promises checked:

- An edit is governed like a write: a teammate's edit that changes what the lead's decision
  says (its value) is a contradiction of someone else's claim, held for review (broken: it
  was accepted, and recall answered with the teammate's value at once, no review asked).
- A teammate does not retire the lead's decision with a `supersedes` link from a note of
  his (broken: the link was taken, and the decision left recall with no review).
- A held edit waits beside the item, it does not replace it: while the edit is held the item
  keeps answering as it was, and rejecting the edit drops the edit, not the item (broken:
  the item showed the held edit, so it left recall while held, and a rejection retracted the
  whole item, its earlier accepted content included).
- A chat exported and imported with `loci ingest` is governed like the live chat: a
  teammate's proposal contradicting the lead's decision is held for review (broken: the
  import accepted it and recall answered with it in place of the decision).
- A wish for one chat stays in that chat for an OpenAI-compatible client that sends no
  `X-Loci-Session` (the README's own example sends only user and project): each
  conversation is its own session (broken: every such chat of a user was session
  "default", so "for this chat, answer in French" was followed in all of them).
- Kept, checked on the way: a member's private note (user scope) never reaches another
  member (recall, search, conflicts, counts); decisions outrank chatter; every change is in
  the audit with its actor.
"""

from __future__ import annotations

import json

import httpx
from typer.testing import CliRunner

from loci.cli import app as cli_app
from tests.assets.support import block, write_jsonl
from tests.e2e.chat import consolidate, recall, tool
from tests.online.test_proxy import fake, shared_fake, system_text  # noqa: F401 - fixtures

INES = {"user_id": "ines", "project_id": "helios", "session_id": "i1", "org_id": "acme"}
TOM = {"user_id": "tom", "project_id": "helios", "session_id": "t1", "org_id": "acme"}
RAVI = {"user_id": "ravi", "project_id": "helios", "session_id": "r1", "org_id": "acme"}
RELEASES = "When do helios releases go out?"


def write(client, who: dict, title: str, content: str, **extra) -> dict:
    return tool(client, who, "memory.write", {"item": {
        "type": "decision", "title": title, "content": content, "why_store": "team decision",
        "confidence": 0.9, "scope": "project", **extra}})


def curated(found: dict) -> str:
    """The authoritative part of an injected block (before the conversation excerpts)."""
    return found["injection"].split("CONVERSATION EXCERPTS")[0]


def item(client, who: dict, item_id: str) -> dict:
    resp = client.get(f"/v1/items/{item_id}", params=who)
    assert resp.status_code == 200, resp.text
    return resp.json()["item"]


# -- an edit of someone else's decision is a contradiction of it --------------------------------


def test_a_teammates_edit_of_the_leads_decision_to_another_value_is_held_for_review(service) -> None:
    """Tom edits Ines's decision itself ("memory.update", allowed to anyone in the project)
    from Wednesdays to Fridays. It was accepted: recall answered Fridays at once, the
    lead's decision rewritten with no review, where the same words written as a claim of
    his own are held. The edit contradicts what Ines's claim says: it is held for review,
    the decision keeps answering Wednesdays (before and after consolidation); Ines's
    rejection drops the edit and keeps her decision; a rewording that keeps the value is
    accepted as before, and Ravi's approval of another held edit makes it the answer."""
    client, settings = service
    rule = write(client, INES, "Release day", "Helios releases go out on Wednesdays.")["item_id"]
    consolidate(client, settings)
    held = tool(client, TOM, "memory.update", {"id": rule, "patch": {"content": "Helios releases go out on Fridays."}})
    assert held["verdict"]["action"] == "quarantine", held
    assert "soft.contradiction" in held["verdict"]["rule_ids"], held
    for moment in ("at once", "after consolidation"):
        found = recall(client, RAVI, RELEASES)
        assert "Wednesdays" in curated(found) and "Fridays" not in curated(found), (moment, found["injection"])
        assert rule in client.get("/ui/quarantine", params=INES).text, moment
        consolidate(client, settings)
    rejected = tool(client, INES, "memory.review", {"id": rule, "decision": "reject", "note": "still Wednesdays"})
    assert rejected["decision"] == "reject"
    for moment in ("at once", "after consolidation"):
        kept = item(client, RAVI, rule)
        assert kept["validation"] != "retracted" and kept["content"] == "Helios releases go out on Wednesdays."
        assert "Wednesdays" in curated(recall(client, RAVI, RELEASES)), moment
        consolidate(client, settings)

    reworded = tool(client, TOM, "memory.update", {"id": rule, "patch": {
        "content": "Helios releases go out on Wednesdays, after the demo."}})
    assert reworded["verdict"]["action"] == "accept", reworded
    again = tool(client, TOM, "memory.update", {"id": rule, "patch": {"content": "Helios releases go out on Fridays."}})
    assert again["verdict"]["action"] == "quarantine", again
    resp = client.post("/v1/tools", json={"action": "memory.review", "identity": TOM,
                                          "args": {"id": rule, "decision": "approve"}})
    assert resp.status_code == 409, resp.text  # his own edit: someone else approves it
    tool(client, RAVI, "memory.review", {"id": rule, "decision": "approve", "note": "ops moved it"})
    for moment in ("at once", "after consolidation"):
        found = curated(recall(client, RAVI, RELEASES))
        assert "Fridays" in found and "Wednesdays" not in found, (moment, found)
        consolidate(client, settings)
    history = [(r["reason"], r["actor"]) for r in client.get(f"/v1/items/{rule}", params=INES).json()["revisions"]]
    assert {("create", "ines"), ("inbox_update", "tom"), ("review_reject", "ines"),
            ("review_approve", "ravi")} <= set(history), history


def test_a_teammate_does_not_retire_the_leads_decision_with_a_link(service) -> None:
    """Tom writes a note that contradicts nothing (accepted) and links it `supersedes` to
    Ines's decision: the decision left recall at once, no review asked, where a claim of his
    contradicting it is held. Someone else's memory is retired through a review: the link is
    a 409 naming the way (a correction, held for review), audited as refused under Tom; the
    decision keeps answering. Ines's own link still retires her own decision."""
    client, settings = service
    rule = write(client, INES, "Release day", "Helios releases go out on Wednesdays.")["item_id"]
    note = write(client, TOM, "Release calendar", "The ops calendar lists every helios release.",
                 type="note")["item_id"]
    resp = client.post("/v1/tools", json={"action": "memory.link", "identity": TOM,
                                          "args": {"src_id": note, "dst_id": rule, "rel": "supersedes"}})
    assert resp.status_code == 409 and "through a review" in resp.json()["error"], resp.text
    for moment in ("at once", "after consolidation"):
        assert "Wednesdays" in curated(recall(client, RAVI, RELEASES)), moment
        consolidate(client, settings)
    events = client.get(f"/v1/items/{rule}", params=INES).json()["events"]
    assert ("refused", "tom") in [(e["action"], e["actor"]) for e in events], events
    cadence = write(client, INES, "Release cadence", "Helios releases go out every second Thursday.")["item_id"]
    assert tool(client, INES, "memory.link", {"src_id": cadence, "dst_id": rule, "rel": "supersedes"})["seq"]
    assert "Wednesdays" not in curated(recall(client, RAVI, RELEASES))


# -- a held edit waits beside the item ------------------------------------------------------------


def test_rejecting_a_held_edit_drops_the_edit_not_the_item(service) -> None:
    """Tom turns his accepted note on staging resets into a claim about the staging
    database that contradicts Ines's decision; the edit is held for review. The note
    showed the held edit at once: its own accepted content (staging is reset on Mondays)
    left recall while the edit waited, and Ines's rejection of the edit retracted the whole
    note. The held edit waits beside the note: the note keeps answering as it was, and the
    rejection drops the edit only (audited under Ines)."""
    client, settings = service
    write(client, INES, "Staging database", "Helios staging runs on PostgreSQL 16.")
    note = write(client, TOM, "Staging resets", "Helios staging is reset every Monday at 06:00.",
                 type="note")["item_id"]
    consolidate(client, settings)
    held = tool(client, TOM, "memory.update", {"id": note, "patch": {
        "title": "Staging database", "content": "Helios staging runs on MySQL 8."}})
    assert held["verdict"]["action"] == "quarantine", held
    for moment in ("at once", "after consolidation"):
        assert "Monday" in curated(recall(client, RAVI, "When is helios staging reset?")), moment
        assert "MySQL" not in curated(recall(client, RAVI, "Which database does helios staging run on?")), moment
        consolidate(client, settings)
    tool(client, INES, "memory.review", {"id": note, "decision": "reject", "note": "staging stays on PostgreSQL"})
    for moment in ("at once", "after consolidation"):
        kept = item(client, RAVI, note)
        assert kept["validation"] != "retracted" and kept["title"] == "Staging resets", (moment, kept)
        assert "Monday" in curated(recall(client, RAVI, "When is helios staging reset?")), moment
        consolidate(client, settings)
    history = [(r["reason"], r["actor"]) for r in client.get(f"/v1/items/{note}", params=INES).json()["revisions"]]
    assert ("review_reject", "ines") in history, history


# -- an imported chat is governed like the live one ----------------------------------------------


def test_an_imported_chat_contradicting_the_leads_decision_is_held_for_review(service, tmp_path, monkeypatch) -> None:
    """Tom exports a chat from his laptop and imports it with `loci ingest`: in it, his
    assistant proposed another release day under Ines's title. Proposed live, it is held
    for review; imported, it was accepted and recall answered Fridays in place of the
    lead's decision. The import checks it against the stored claims as the live chat
    does: held for review, the decision keeps answering; Tom's correction of his own claim
    in the same import still replaces it."""
    client, settings = service
    write(client, INES, "Release day", "Helios releases go out on Wednesdays.")
    consolidate(client, settings)
    said = {"user_id": "tom", "project_id": "helios", "session_id": "laptop", "org_id": "acme"}
    rows = [
        {**said, "role": "user", "text": "When do we release helios?", "at": "2026-11-20T09:00:00Z"},
        {**said, "role": "assistant", "at": "2026-11-20T09:00:05Z", "text": "Fridays. " + block({
            "type": "decision", "title": "Release day", "content": "Helios releases go out on Fridays.",
            "why_store": "team decision", "confidence": 0.9})},
        {**said, "role": "assistant", "at": "2026-11-20T09:01:00Z", "text": "Noted. " + block({
            "type": "note", "title": "Laptop", "content": "Tom's laptop runs Fedora 39.",
            "why_store": "setup", "confidence": 0.9})},
        {**said, "role": "assistant", "at": "2026-11-20T09:02:00Z", "text": "Corrected. " + block({
            "type": "note", "title": "Laptop", "content": "Tom's laptop runs Fedora 40.",
            "why_store": "setup", "confidence": 0.9})},
    ]
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the store's embedder (its snapshot is made with it)
    exported = write_jsonl(tmp_path / "tom-laptop.jsonl", rows)
    result = CliRunner().invoke(cli_app, ["ingest", str(exported), "--data-dir", str(settings.data_dir)])
    assert result.exit_code == 0, result.output
    assert "4 turns landed, 2 accepted, 1 quarantined" in " ".join(result.output.split()), result.output
    for moment in ("at once", "after consolidation"):
        found = curated(recall(client, RAVI, RELEASES))
        assert "Wednesdays" in found and "Fridays" not in found, (moment, found)
        laptop = curated(recall(client, TOM, "Which Fedora does Tom's laptop run?"))
        assert "Fedora 40" in laptop and "Fedora 39" not in laptop, (moment, laptop)
        consolidate(client, settings)


# -- kept ---------------------------------------------------------------------------------------


def test_a_members_private_note_never_reaches_another_member(service) -> None:
    """Kept: Tom's personal note (user scope) is his in every project and never Ravi's:
    not in Ravi's recall, search, conflicts or counts, even when Ravi writes a claim on the
    same subject with another value (accepted: not compared with what he cannot see)."""
    client, settings = service
    private = write(client, TOM, "Interview", "Tom interviews at Globex on Thursday; keep it quiet.",
                    type="note", scope="user")["item_id"]
    theirs = write(client, RAVI, "Interview", "Tom interviews at Initech on Friday.", type="note")
    assert theirs["verdict"]["action"] == "accept", theirs
    for moment in ("at once", "after consolidation"):
        for mode in ("inject", "catalog"):
            assert "Globex" not in json.dumps(recall(client, RAVI, "Where does Tom interview?", mode)), moment
        searched = tool(client, RAVI, "memory.search", {"query": "Tom interview Globex"})["hits"]
        assert "Globex" not in json.dumps(searched), moment
        assert "Globex" not in client.get("/v1/conflicts", params=RAVI).text
        assert client.get(f"/v1/items/{private}", params=RAVI).status_code == 404
        assert "Globex" in curated(recall(client, {**TOM, "project_id": "other"}, "Where do I interview?")), moment
        consolidate(client, settings)


# -- consolidation stores an edit and the usage of another item in one run ------------------------


def test_a_consolidation_storing_an_edit_and_another_items_usage_does_not_fail(service) -> None:
    """Between two consolidations Tom raises his note's importance and Ravi's questions
    recall it and Ines's decision (usage counts). The run then failed, about every other
    time, with "unknown item ids: [<Ines's decision>]": inside the run's transaction,
    DuckDB's fetch by row id missed the decision once the edit had changed the note, so the
    team's memory stopped consolidating. Each run stores the edit and both usage counts."""
    client, settings = service
    rule = write(client, INES, "Staging database", "Helios staging runs on PostgreSQL 16.")["item_id"]
    note = write(client, TOM, "Staging resets", "Helios staging is reset every Monday at 06:00.",
                 type="note")["item_id"]
    consolidate(client, settings)
    for importance in (6, 7, 8, 9):
        tool(client, TOM, "memory.update", {"id": note, "patch": {"importance": importance}})
        asked = recall(client, RAVI, "Which database does helios staging run on, and when is it reset?")
        hits = [h["id"] for h in asked["hits"]]
        assert {rule, note} <= set(hits), hits
        consolidate(client, settings)
        assert item(client, RAVI, note)["importance"] == importance
    assert item(client, RAVI, rule)["usage_count"] >= 4


# -- an OpenAI client without a session header: each conversation is its own chat -------------------


def test_a_wish_for_one_chat_stays_there_for_a_client_that_sends_no_session(proxy, fake, memory) -> None:  # noqa: F811
    """Ravi uses two chats of an OpenAI client configured as the README shows
    (`default_headers` with user and project only). In the first he asks for French, for
    this chat only, and the model proposes it as the session's preference; his other chat
    (another conversation) was handed "In this chat, answer in French." as a preference to
    follow: every header-less chat of his was the one session "default". A conversation is
    its own session (named by its first user message) when the client names none; in its
    own chat, later turns included, the wish still applies."""
    url = proxy()
    headers = {"X-Loci-User": "ravi", "X-Loci-Project": "helios", "X-Loci-Org": "acme"}

    def chat(messages: list[dict]) -> None:
        resp = httpx.post(f"{url}/v1/chat/completions", json={"model": "llama3.2", "messages": messages},
                          headers=headers, timeout=60)
        assert resp.status_code == 200, resp.text

    def handed() -> str:
        return system_text([body for path, body in fake.requests if path == "/v1/chat/completions"][-1])

    wish = {"type": "preference", "title": "Language for this chat", "content": "In this chat, answer in French.",
            "why_store": "asked", "confidence": 0.9, "scope": "session"}
    fake.chat_reply = lambda req: "D'accord. " + block(wish)
    trip = [{"role": "user", "content": "For this chat, answer in French please: planning the Lyon offsite."}]
    chat(trip)
    fake.chat_reply = lambda req: "Sure."
    chat([{"role": "user", "content": "Which language should you answer in?"}])
    assert "French" not in handed(), handed()
    chat([*trip, {"role": "assistant", "content": "D'accord."},
          {"role": "user", "content": "Which language should you answer in?"}])
    assert "In this chat, answer in French." in handed(), handed()


def test_a_held_correction_flags_every_claim_it_contests_alike(service) -> None:
    """Ines corrects the team's release day; Tom's older note says the old day too, so her
    correction is held for review. Recall flagged Tom's note as contested by the held
    correction but not Ines's own decision, which says the same thing: a held claim was
    counted as beaten by the best-ranked claim only. Each standing claim it contests is
    flagged alike (the held claim itself, losing on confidence, is not shown)."""
    client, settings = service
    rule = write(client, INES, "Release day", "Helios releases go out on Wednesdays.")["item_id"]
    note = write(client, TOM, "Release routine", "Helios releases go out on Wednesdays, after the demo.",
                 type="note", confidence=0.95)["item_id"]
    consolidate(client, settings)
    held = write(client, {**INES, "session_id": "i2"}, "Release day", "Helios releases go out on Fridays now.")
    assert held["verdict"]["action"] == "quarantine", held
    for moment in ("at once", "after consolidation"):
        hits = {h["id"]: h for h in recall(client, RAVI, "When do helios releases go out?")["hits"]}
        assert held["item_id"] not in hits, moment
        for claim_id in (rule, note):
            assert hits[claim_id]["conflict"] and hits[claim_id]["conflict_with"] == [held["item_id"]], (moment, hits)
        consolidate(client, settings)
