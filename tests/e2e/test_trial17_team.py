"""A small team's trial (the seventeenth new-user trial), over HTTP (Litestar's TestClient
against `loci serve`'s app, hash embedder, consolidations between the days): org acme, two
projects (atlas, borealis), three people. Lena leads atlas: an org-wide rule ("all customer
data stays in the EU region"), an atlas decision that narrows it (eu-central-1), atlas's
4-space convention, the atlas API timeout. Omar works on atlas, wants 2-space indentation
in his own snippets and edits Lena's timeout; Priya works on borealis and, in atlas, states
another timeout under another title. Lena reviews what was held; the org rule is edited by
all three. Promises checked, as a new team meets them:

- What the team decided is injected before the chatter about it (kept).
- A narrower scope's decision comes before the broader rule, and the broader one is still
  shown, both marked with their scope (broken: only a question naming the org rule's title
  word for word marked them; "where does atlas customer data live?" showed them unmarked).
- A conflict across titles is marked: Omar's "My indentation" beside atlas's convention
  (SCOPE and CONFLICT), Priya's "Gateway timeout" held for contradicting Lena's "Atlas API
  timeout" and named in `/v1/conflicts` (kept).
- "Who decided X and when?" is answered from the block (broken: a curated memory's header
  named no author and no day; the hits had them, the model never saw them).
- A reviewer decides what was held; the editor may not approve their own held edit (kept).
- The audit history shows every change with actor and time (kept), and `loci show` shows
  what each edit changed (broken: both sides of a text edit were cut at 40 characters, so
  Omar's "..., backups included" read "'All customer data stays in the EU regio…' -> 'All
  customer data stays in the EU regio…'").
- No one reads another's private memory (kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import block, make_settings
from tests.e2e.chat import consolidate, page_text, recall, tool, turn

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
OMAR = {"user_id": "omar", "project_id": "atlas", "session_id": "o1", "org_id": "acme"}
PRIYA = {"user_id": "priya", "project_id": "borealis", "session_id": "p1", "org_id": "acme"}
PRIYA_IN_ATLAS = {**PRIYA, "project_id": "atlas", "session_id": "p2"}
CHATTER = [(OMAR, "lol the gateway timeout thing again, customer data region talk all day"),
           (LENA, "maybe the API timeout should be like 60 seconds? idk, whatever"),
           (OMAR, "someone in the channel said customer data could go to us-east-1 for speed"),
           (PRIYA_IN_ATLAS, "the atlas API gateway timeout debate never ends honestly")]
QUESTIONS = {
    "timeout": (LENA, "What is the atlas API gateway timeout?"),
    "region": (OMAR, "Where does atlas customer data live, which region?"),
    "borealis region": (PRIYA, "Which region does customer data stay in?"),
    "indentation": (OMAR, "What indentation should I use in atlas?"),
    "why": (PRIYA, "Why do we keep customer data in the EU?"),
    "who": (OMAR, "Who decided the atlas customer data region and when?"),
    "omar's wish": (PRIYA_IN_ATLAS, "What indentation does Omar prefer for his snippets?"),
}


def propose(client: TestClient, who: dict, said: str, type_: str, title: str, content: str,
            scope: str = "project") -> dict:
    """One exchange: the user says something, the assistant proposes one memory; its verdict."""
    turn(client, who, "user", said)
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": type_, "title": title, "content": content, "why_store": "team", "confidence": 0.9, "scope": scope}))
    (outcome,) = answer["proposals"]
    return outcome


def headers(found: dict) -> dict[str, str]:
    """Each injected curated memory's header line, by id, in block order."""
    text = (found["injection"] or "").split("CONVERSATION EXCERPTS")[0]
    return {line.split(" | ")[0].removeprefix("[MEMORY: "): line
            for line in text.splitlines() if line.startswith("[MEMORY: ")}


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Day 1: what the team stores and chats; a consolidation; the questions. Day 2: Lena's
    review, the org rule edited by three, a consolidation; the questions again, the history."""
    settings = make_settings(tmp_path_factory.mktemp("team"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, str] = {}
    seen: dict[str, Any] = {"today": datetime.now(timezone.utc).date().isoformat()}
    with TestClient(app) as client:
        for name, who, said, type_, title, content, scope in [
            ("rule", LENA, "Company policy: all customer data stays in the EU region, for GDPR.", "constraint",
             "Customer data region", "All customer data stays in the EU region (GDPR data residency).", "org"),
            ("atlas region", LENA, "For atlas we keep customer data in Frankfurt, eu-central-1.", "decision",
             "Atlas customer data region",
             "Atlas customer data stays in eu-central-1 (Frankfurt), where our database replicas run.", "project"),
            ("convention", LENA, "Atlas code uses 4-space indentation.", "pattern", "Atlas indentation",
             "The atlas codebase uses 4-space indentation.", "project"),
            ("wish", OMAR, "Personally I always want 2-space indentation in my snippets.", "preference",
             "My indentation", "Omar prefers 2-space indentation in code snippets.", "user"),
            ("timeout", LENA, "We decided: the atlas API gateway timeout is 30 seconds.", "decision",
             "Atlas API timeout", "The atlas API gateway timeout is 30 seconds.", "project"),
        ]:
            outcome = propose(client, who, said, type_, title, content, scope)
            assert outcome["action"] == "accept", (name, outcome)
            ids[name] = outcome["item_id"]
        for who, text in CHATTER:
            ids.setdefault("chatter", turn(client, who, "user", text)["turn_id"])
        seen["omar's edit"] = tool(client, OMAR, "memory.update", {"id": ids["timeout"], "patch": {
            "content": "The atlas API gateway timeout is 45 seconds."}})
        seen["priya's claim"] = propose(client, PRIYA_IN_ATLAS, "The gateway timeout is 60 seconds now.", "decision",
                                        "Gateway timeout", "The atlas gateway timeout is 60 seconds.")
        consolidate(client, settings)
        seen["day 1"] = {name: recall(client, who, q) for name, (who, q) in QUESTIONS.items()}
        seen["conflicts"] = client.get("/v1/conflicts", params=LENA).json()
        seen["priya's conflicts"] = client.get("/v1/conflicts", params=PRIYA_IN_ATLAS).json()
        seen["queue"] = page_text(client.get("/ui/quarantine", params=LENA).text)
        seen["self approval"] = client.post("/v1/tools", json={"action": "memory.review", "identity": OMAR, "args": {
            "id": ids["timeout"], "decision": "approve", "note": "mine"}})
        tool(client, LENA, "memory.review", {"id": ids["timeout"], "decision": "approve", "note": "45 s it is"})
        tool(client, LENA, "memory.review", {"id": seen["priya's claim"]["item_id"], "decision": "reject",
                                             "note": "we agreed 45"})
        for who, patch in [(OMAR, {"content": "All customer data stays in the EU region (GDPR data residency), "
                                              "backups included."}),
                           (PRIYA, {"importance": 9}), (LENA, {"tags": ["gdpr"]})]:
            assert tool(client, who, "memory.update", {"id": ids["rule"], "patch": patch})["verdict"]["action"] \
                == "accept", (who, patch)
        seen["rule pending"] = client.get(f"/v1/items/{ids['rule']}", params=OMAR).json()
        consolidate(client, settings)
        seen["day 2"] = {name: recall(client, who, q) for name, (who, q) in QUESTIONS.items()}
        seen["rule record"] = client.get(f"/v1/items/{ids['rule']}", params=PRIYA).json()
        seen["wish as priya"] = client.get(f"/v1/items/{ids['wish']}", params=PRIYA_IN_ATLAS)
        seen["show"] = CliRunner().invoke(cli_app, ["show", ids["rule"], "--data-dir", str(settings.data_dir)])
        yield {"ids": ids, "seen": seen}


def test_the_teams_decision_is_injected_before_the_chatter_about_it(team) -> None:
    ids, seen = team["ids"], team["seen"]
    for day in ("day 1", "day 2"):
        found = seen[day]["timeout"]
        order = [h["id"] for h in found["hits"] if h["delivery"] == "inject"]
        curated = [i for i in order if not i.startswith("msg_")]
        # first of what the query found (day 2: after the org rule, always shown at importance 9)
        assert curated[0 if day == "day 1" else 2] == ids["timeout"], (day, order)
        chatter = [n for n, i in enumerate(order) if i.startswith("msg_")]
        assert chatter and min(chatter) > order.index(ids["timeout"]), (day, order)


def test_the_narrower_decision_comes_first_and_the_org_rule_is_shown_as_the_broader(team) -> None:
    ids, seen = team["ids"], team["seen"]
    for day in ("day 1", "day 2"):
        for question in ("region", "who"):
            shown = headers(seen[day][question])
            order = list(shown)
            assert order.index(ids["atlas region"]) < order.index(ids["rule"]), (day, question, order)
            assert "SCOPE=project" in shown[ids["atlas region"]], (day, question, shown)
            assert "SCOPE=org" in shown[ids["rule"]], (day, question, shown)
        # In borealis the atlas decision does not exist; the org rule answers, unmarked.
        shown = headers(seen[day]["borealis region"])
        assert ids["rule"] in shown and ids["atlas region"] not in shown, (day, shown)


def test_conflicts_across_titles_are_marked(team) -> None:
    ids, seen = team["ids"], team["seen"]
    shown = headers(seen["day 1"]["indentation"])
    assert list(shown)[:2] == [ids["convention"], ids["wish"]], shown
    assert f"SCOPE=project | CONFLICT={ids['wish']}" in shown[ids["convention"]], shown
    assert f"SCOPE=user | CONFLICT={ids['convention']}" in shown[ids["wish"]], shown
    held = seen["priya's claim"]
    assert held["action"] == "quarantine" and "soft.contradiction" in held["rule_ids"], held
    pairs = [{c["a"]["id"], c["b"]["id"]} for c in seen["conflicts"]["conflicts"]]
    assert {held["item_id"], ids["timeout"]} in pairs, seen["conflicts"]
    timeout = next(h for h in seen["day 1"]["timeout"]["hits"] if h["id"] == ids["timeout"])
    assert held["item_id"] in timeout["conflict_with"] and "by priya" in timeout["pending_review"], timeout
    assert "60 seconds" not in seen["day 1"]["timeout"]["injection"].split("CONVERSATION EXCERPTS")[0]


def test_why_and_who_decided_are_answered_from_the_block(team) -> None:
    ids, seen = team["ids"], team["seen"]
    why = seen["day 1"]["why"]
    assert list(headers(why))[0] == ids["rule"] and "GDPR" in why["injection"], why["injection"]
    today = seen["today"]
    for day in ("day 1", "day 2"):
        shown = headers(seen[day]["who"])
        assert f"by=lena on {today}" in shown[ids["atlas region"]], (day, shown)
    # The timeout Omar changed and Lena approved says both, and now says 45 seconds.
    after = seen["day 2"]["timeout"]
    line = headers(after)[ids["timeout"]]
    assert f"by=lena on {today} | approved by lena on {today}, edit by omar" in line, line
    assert "45 seconds" in after["injection"] and "PENDING_REVIEW" not in line, after["injection"]


def test_a_reviewer_decides_what_was_held_and_not_its_editor(team) -> None:
    seen = team["seen"]
    assert seen["omar's edit"]["verdict"]["action"] == "quarantine", seen["omar's edit"]
    assert "45 seconds" in seen["queue"] and "60 seconds" in seen["queue"], seen["queue"]
    refused = seen["self approval"]
    assert refused.status_code == 409 and "its editor cannot approve it" in refused.json()["error"], refused.text
    assert seen["priya's claim"]["item_id"] not in str(seen["day 2"]["timeout"]["hits"])


def test_the_history_shows_every_change_with_its_actor_and_time(team) -> None:
    record = team["seen"]["rule record"]
    asked = [(r["reason"], r["actor"]) for r in record["revisions"] if r["actor"]]
    assert asked == [("create", "lena"), ("inbox_update", "omar"), ("inbox_update", "priya"),
                     ("inbox_update", "lena")], record["revisions"]
    assert all(r["requested_at"] for r in record["revisions"] if r["actor"])
    events = [(e["action"], e["actor"]) for e in record["events"] if e["actor"]]
    assert events == [("create", "lena"), ("update", "omar"), ("update", "priya"), ("update", "lena")], events
    # before the consolidation, the inbox events say the same (pending)
    pending = [(e["kind"], e["identity"]["user_id"]) for e in team["seen"]["rule pending"]["history"]
               if e["kind"] == "memory.update" and e["at"]]
    assert pending[-3:] == [("memory.update", "omar"), ("memory.update", "priya"), ("memory.update", "lena")], pending
    shown = team["seen"]["show"]
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    omar = next(line for line in lines if " omar " in line and " update " in line)
    assert "-> '…" in omar and "backups included" in omar, omar
    assert any(" priya " in line and "importance: 5 -> 9" in line for line in lines), shown.output
    assert any(" lena " in line and 'tags: [] -> ["gdpr"]' in line for line in lines), shown.output


def test_no_one_reads_anothers_private_memory(team) -> None:
    ids, seen = team["ids"], team["seen"]
    assert seen["wish as priya"].status_code == 404
    for day in ("day 1", "day 2"):
        assert ids["wish"] not in str(seen[day]["omar's wish"]), day
    assert ids["wish"] not in str(seen["priya's conflicts"])
    assert ids["wish"] in headers(seen["day 1"]["indentation"])  # Omar's own, to him
