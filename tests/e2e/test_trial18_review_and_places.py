"""What waits for review, where things live, and a bare weekday (the eighteenth new-user
trial), over HTTP (Litestar's TestClient against `loci serve`'s app, hash embedder, one
consolidation) and `loci show`: org acme, project atlas, Lena and Omar; Priya in borealis.
Lena files an org-wide rule and the atlas API timeout; Omar edits the timeout (held: it is
Lena's) and proposes an unsure note for atlas and an unsure private note (both held: low
confidence). Promises checked, as a new team meets them:

- A chat loop or a script can list what waits for review as JSON: `GET /v1/review` gives
  each held proposal and held edit with its id, kind, who proposed it and when, an edit's
  old and new text, and its scope; the caller sees only what they may read; an MCP client
  gets the same list (`memory_review_list`) (broken: only the browser's /ui/quarantine page
  listed them).
- `loci show` of an item with a held edit shows the edit's new text beside the old, and
  who proposed it (broken: it showed the item as if nothing waited but an inbox line).
- An org-wide rule lives under the org's place in the palace (broken: under the project of
  whoever filed it, so Priya, in borealis, found the org's rule under "atlas").
- "Lena is off on Friday", said on a Tuesday, holds until that Friday (broken: a bare
  weekday bounded nothing); "standups are on Thursdays" (a habit) and "passed away on
  Sunday" (the past) keep no window (kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from online.mcp_server import call as mcp_call
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import block, make_settings
from tests.e2e.chat import consolidate, said_with_proposal, tool, turn

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
OMAR = {"user_id": "omar", "project_id": "atlas", "session_id": "o1", "org_id": "acme"}
PRIYA = {"user_id": "priya", "project_id": "borealis", "session_id": "p1", "org_id": "acme"}
TZ = "America/New_York"
ZONE = ZoneInfo(TZ)


def propose(client: TestClient, who: dict, said: str, type_: str, title: str, content: str,
            scope: str = "project", confidence: float = 0.9) -> dict:
    """One exchange: the user says something, the assistant proposes one memory; its outcome."""
    turn(client, who, "user", said)
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": type_, "title": title, "content": content, "why_store": "team", "confidence": confidence,
        "scope": scope}))
    (outcome,) = answer["proposals"]
    return outcome


def last_tuesday_morning() -> datetime:
    """10:00 on the latest Tuesday in ZONE that is at least an hour past."""
    now = datetime.now(ZONE) - timedelta(hours=1)
    day = now.date() - timedelta(days=(now.weekday() - 1) % 7)
    when = datetime(day.year, day.month, day.day, 10, tzinfo=ZONE)
    return when if when <= now else when - timedelta(days=7)


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("trial18"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, str] = {}
    seen: dict[str, Any] = {}
    with TestClient(app) as client:
        for name, who, said, type_, title, content, scope, confidence in [
            ("rule", LENA, "Company policy: all customer data stays in the EU region.", "constraint",
             "Customer data region", "All customer data stays in the EU region (GDPR).", "org", 0.9),
            ("timeout", LENA, "We decided: the atlas API gateway timeout is 30 seconds.", "decision",
             "Atlas API timeout", "The atlas API gateway timeout is 30 seconds.", "project", 0.9),
            ("unsure", OMAR, "I think the atlas staging bucket is called atlas-stage-2?", "fact",
             "Atlas staging bucket", "The atlas staging bucket may be called atlas-stage-2.", "project", 0.3),
            ("private", OMAR, "My badge number might be 4471, not sure.", "fact",
             "Omar's badge number", "Omar's badge number may be 4471.", "user", 0.3),
        ]:
            outcome = propose(client, who, said, type_, title, content, scope, confidence)
            ids[name] = outcome["item_id"]
            seen[f"{name} verdict"] = outcome["action"]
        seen["omar's edit"] = tool(client, OMAR, "memory.update", {"id": ids["timeout"], "patch": {
            "content": "The atlas API gateway timeout is 45 seconds."}})
        tuesday = last_tuesday_morning()
        seen["tuesday"] = tuesday
        for name, said, content in [
            ("off", "I'm off on Friday.", "Lena is off on Friday."),
            ("habit", "Our standups are on Thursdays.", "The atlas team's standups are on Thursdays."),
            ("past", "My grandmother passed away on Sunday.", "Lena's grandmother passed away on Sunday."),
        ]:
            ids[name] = said_with_proposal(client, LENA, tuesday, said, {
                "type": "fact", "title": name, "content": content, "why_store": "team", "confidence": 0.9,
                "scope": "user"}, TZ)["item_id"]
        seen["review"] = {name: client.get("/v1/review", params=who)
                          for name, who in (("lena", LENA), ("omar", OMAR), ("priya", PRIYA))}
        seen["review by header"] = client.get("/v1/review", headers={"X-Loci-User": "omar", "X-Loci-Org": "acme",
                                                                     "X-Loci-Project": "atlas"})
        seen["review bad caller"] = client.get("/v1/review", params={**LENA, "user_id": ""})
        seen["schema"] = client.get("/schema/openapi.json").json()
        seen["mcp"] = mcp_call(ToolDispatcher(app.state.service), "memory_review_list", {}, Identity(**OMAR))
        consolidate(client, settings)
        seen["rule as priya"] = client.get(f"/v1/items/{ids['rule']}", params=PRIYA).json()
        seen["palace as priya"] = tool(client, PRIYA, "memory.palace.list", {"path": ""})["children"]
        seen["items"] = {name: client.get(f"/v1/items/{ids[name]}", params=LENA).json()["item"]
                         for name in ("off", "habit", "past")}
        seen["review after"] = client.get("/v1/review", params=LENA).json()
        seen["show"] = CliRunner().invoke(cli_app, ["show", ids["timeout"], "--data-dir", str(settings.data_dir)])
        yield {"ids": ids, "seen": seen}


def test_what_waits_for_review_is_listed_as_json_for_whoever_may_see_it(trial) -> None:
    ids, seen = trial["ids"], trial["seen"]
    assert seen["unsure verdict"] == seen["private verdict"] == "quarantine", seen
    assert seen["omar's edit"]["verdict"]["action"] == "quarantine", seen["omar's edit"]
    lena = seen["review"]["lena"]
    assert lena.status_code == 200, lena.text
    body = lena.json()
    pending = {p["id"]: p for p in body["pending"]}
    assert body["count"] == len(pending) == 2, body  # the edit and Omar's atlas note, not his private one
    edit, note = pending[ids["timeout"]], pending[ids["unsure"]]
    assert edit["kind"] == "edit" and edit["proposed_by"] == "omar" and edit["proposed_at"], edit
    assert edit["old_content"] == "The atlas API gateway timeout is 30 seconds.", edit
    assert edit["new_content"] == "The atlas API gateway timeout is 45 seconds.", edit
    assert edit["scope"] == "project" and edit["fields"] == ["content"], edit
    assert note["kind"] == "proposal" and note["proposed_by"] == "omar" and note["old_content"] is None, note
    assert note["new_content"] == "The atlas staging bucket may be called atlas-stage-2." and note["rule_ids"], note
    omar = {p["id"]: p for p in seen["review"]["omar"].json()["pending"]}
    assert set(omar) == {ids["timeout"], ids["unsure"], ids["private"]}, omar
    assert omar[ids["private"]]["scope"] == "user", omar
    assert {p["id"] for p in seen["review by header"].json()["pending"]} == set(omar)
    assert seen["review"]["priya"].json() == {"count": 0, "pending": []}  # atlas's queue is not borealis's
    assert seen["review bad caller"].status_code == 400, seen["review bad caller"].text
    assert "/v1/review" in seen["schema"]["paths"], sorted(seen["schema"]["paths"])
    # an MCP client lists the same queue (the `memory.review.list` action)
    assert not seen["mcp"].is_error and seen["mcp"].structured_content == seen["review"]["omar"].json()
    assert seen["review after"]["count"] == 2  # consolidation keeps them waiting


def test_loci_show_shows_a_held_edit_beside_what_the_item_says(trial) -> None:
    shown = trial["seen"]["show"]
    assert shown.exit_code == 0, shown.output
    lines = [line for line in shown.output.splitlines() if "held" in line and "omar" in line]
    assert lines, shown.output
    assert "30 seconds" in shown.output and "45 seconds" in shown.output, shown.output
    # the new text is said as a pending edit, not as what the item says
    first = shown.output.splitlines()[1]
    assert "30 seconds" in first and "45 seconds" not in first, shown.output


def test_an_org_rule_lives_under_the_org_not_a_project(trial) -> None:
    rule = trial["seen"]["rule as priya"]["item"]
    assert rule["metadata"]["palace"].split("/")[0] == "acme", rule["metadata"]
    assert "atlas" not in trial["seen"]["palace as priya"], trial["seen"]["palace as priya"]
    assert "acme" in trial["seen"]["palace as priya"]


def test_a_bare_weekday_in_a_plan_holds_until_that_day_a_habit_or_the_past_does_not(trial) -> None:
    seen = trial["seen"]
    friday = seen["tuesday"].date() + timedelta(days=3)
    off = seen["items"]["off"]
    end = datetime.fromisoformat(off["valid_to"])
    assert end.astimezone(ZONE).date() == friday and end.astimezone(ZONE).hour == 23, off
    assert off["valid_from"] is None, off
    for name in ("habit", "past"):
        assert seen["items"][name]["valid_to"] is None and seen["items"][name]["valid_from"] is None, \
            seen["items"][name]
    assert end > seen["tuesday"].astimezone(timezone.utc)
