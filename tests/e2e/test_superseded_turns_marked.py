"""A user corrects themselves, over HTTP: "We decided: the team offsite will be in Porto,
at the Ribeira hotel" (the chat model proposes it), days later "Change of plan: the
offsite moves to Lisbon ... Porto is off" (its proposal supersedes the first). Asked "Where
is the team offsite?", the curated Lisbon decision answers first, and the Porto turn, still
shown as what was said, is marked as said earlier, the Lisbon decision saying otherwise
(`render.REPLACED_SINCE`, naming it). Broken: the Porto turn came unmarked among the
excerpts, before the Lisbon turn: the correction's `supersedes` link names a claim, not the
turn it was said in, and once consolidation retired that claim the snapshot did not hold
it at all. Checked with both exchanges in the service's delta, with the Porto exchange
consolidated and the correction in the delta, after a real Dagster consolidation
(`run_consolidation`) of both, and with the correction said twice, merged by consolidation
(the merged decision is the one named); the same when the agent proposes through
`memory.propose` (`/v1/tools`) after the user's turns, and when a teammate's correction,
held for contradicting her decision, is approved by her.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.recall.render import REPLACED_SINCE
from tests.assets.support import make_settings
from tests.e2e.chat import recall, said_with_proposal, tool
from tests.e2e.test_trial12_weeks import consolidate

LENA = {"user_id": "lena", "project_id": "team", "session_id": "s1"}
OMAR = {"user_id": "omar", "project_id": "studio", "session_id": "o1"}
PIA = {"user_id": "pia", "project_id": "lab", "session_id": "p1"}
RAVI = {"user_id": "ravi", "project_id": "ops", "session_id": "r1"}
UMA, TOM = ({"user_id": user, "project_id": "guild", "session_id": f"{user}-1"} for user in ("uma", "tom"))
QUESTION = "Where is the team offsite?"
DECIDED = "We decided: the team offsite will be in Porto, at the Ribeira hotel."
MOVED = "Change of plan: the offsite moves to Lisbon, the Ribeira hotel is fully booked. Porto is off."
MARK = REPLACED_SINCE.split(";")[0]


def decision(content: str) -> dict:
    return {"type": "decision", "title": "Team offsite", "content": content, "why_store": "decided"}


def exchanges(client: TestClient, who: dict, step: str) -> str | None:
    """`who` decides (step "decided", six days ago) or corrects (step "moved", two days ago,
    in another chat; "moved again": the same said the next day, in a third); the
    correction's item id."""
    now = datetime.now(timezone.utc)
    if step == "decided":
        said_with_proposal(client, who, now - timedelta(days=6), DECIDED,
                           decision("The team offsite will be held in Porto, at the Ribeira hotel."), "UTC")
        return None
    fix = decision("The team offsite will be held in Lisbon, at the Alfama studio; Porto is off.")
    again = step == "moved again"
    outcome = said_with_proposal(client, {**who, "session_id": who["session_id"] + ("-again" if again else "-later")},
                                 now - timedelta(days=1 if again else 2), MOVED, fix, "UTC")
    assert len(outcome["supersedes"]) == (not again), outcome
    return outcome["item_id"]


def through_tools(client: TestClient, who: dict, text: str, content: str, days_ago: int) -> dict:
    """`who` says `text` (`days_ago`) and their agent proposes `content` through `memory.propose`."""
    at = datetime.now(timezone.utc) - timedelta(days=days_ago)
    resp = client.post("/v1/turns", json={"identity": who, "role": "user", "text": text, "at": at.isoformat()})
    assert resp.status_code == 201, resp.text
    (outcome,) = tool(client, who, "memory.propose", {"items": [decision(content)]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome


@pytest.fixture(scope="module")
def asked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Omar decides and corrects before any consolidation; Lena decides, a consolidation
    runs, then she corrects; a second consolidation runs. Pia decides and says her
    correction twice, which the first consolidation merges. What each was answered when."""
    settings = make_settings(tmp_path_factory.mktemp("superseded-turns"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    seen: dict[str, Any] = {}
    with TestClient(app) as client:
        exchanges(client, OMAR, "decided")
        seen["omar fix"] = exchanges(client, OMAR, "moved")
        exchanges(client, LENA, "decided")
        exchanges(client, PIA, "decided")
        pia = [exchanges(client, PIA, "moved"), exchanges(client, PIA, "moved again")]
        through_tools(client, RAVI, DECIDED, "The team offsite will be held in Porto, at the Ribeira hotel.", 6)
        fix = through_tools(client, {**RAVI, "session_id": "r2"}, MOVED,
                            "The team offsite will be held in Lisbon, at the Alfama studio; Porto is off.", 2)
        assert len(fix["supersedes"]) == 1, fix
        seen["ravi fix"] = fix["item_id"]
        # a teammate's correction, held for contradicting Uma's decision, approved by her
        exchanges(client, UMA, "decided")
        (held,) = tool(client, TOM, "memory.propose", {"items": [
            decision("The team offsite will be held in Lisbon, at the Alfama studio; Porto is off.")]})["proposals"]
        assert held["action"] == "quarantine", held
        approved = tool(client, UMA, "memory.review", {"id": held["item_id"], "decision": "approve"})
        assert len(approved["supersedes"]) == 1, approved
        seen["tom fix"] = held["item_id"]
        seen["both in the delta"] = recall(client, OMAR, QUESTION)
        seen["through tools"] = recall(client, RAVI, QUESTION)
        seen["approved"] = recall(client, UMA, QUESTION)
        consolidate(client, settings)
        seen["through tools, consolidated"] = recall(client, RAVI, QUESTION)
        seen["approved, consolidated"] = recall(client, UMA, QUESTION)
        merged = {client.get(f"/v1/items/{i}", params=PIA).json()["item"]["superseded_by"] for i in pia}
        assert len(merged) == 1 and None not in merged, merged  # one Lisbon decision
        seen["pia merged"], = merged
        seen["merged"] = recall(client, PIA, QUESTION)
        seen["lena fix"] = exchanges(client, LENA, "moved")
        seen["correction in the delta"] = recall(client, LENA, QUESTION)
        seen["omar consolidated"] = recall(client, OMAR, QUESTION)
        consolidate(client, settings)
        seen["consolidated"] = recall(client, LENA, QUESTION)
    yield seen


def turns_shown(answer: dict) -> dict[str, str]:
    """The injected turns by their text's first words: each turn's entry in the block."""
    part = (answer["injection"] or "").partition("CONVERSATION EXCERPTS")[2]
    entries = ("[TURN:" + entry.split("[/TURN]")[0] for entry in part.split("[TURN:")[1:])
    return {entry.split("\n")[1][:20]: entry for entry in entries}


@pytest.mark.parametrize("moment, fix", [("both in the delta", "omar fix"), ("correction in the delta", "lena fix"),
                                         ("omar consolidated", "omar fix"), ("consolidated", "lena fix"),
                                         ("merged", "pia merged"), ("through tools", "ravi fix"),
                                         ("through tools, consolidated", "ravi fix"), ("approved", "tom fix"),
                                         ("approved, consolidated", "tom fix")])
def test_the_turn_a_correction_replaced_is_marked_and_comes_after_it(asked, moment, fix) -> None:
    answer, correction = asked[moment], asked[fix]
    ids = [h["id"] for h in answer["hits"]]
    assert ids[:1] == [correction], (moment, answer["injection"])  # the curated correction answers first
    shown = turns_shown(answer)
    decided, moved = shown.get(DECIDED[:20]), shown.get(MOVED[:20], "")
    assert decided is not None and (moved or fix == "tom fix"), (moment, answer["injection"])  # Uma said no move
    # still shown as what was said (when Porto was decided), marked as replaced by the correction
    assert REPLACED_SINCE.format(correction) in decided, (moment, decided)
    assert MARK not in moved, (moment, moved)  # what was said later is not
    turn_id = decided.split("[TURN: ", 1)[1].split(" |", 1)[0]
    assert ids.index(turn_id) > ids.index(correction), (moment, ids)
    # and a client rendering its own view is told as much, by the hit (`replaced_by`)
    replaced = {h["id"]: h["replaced_by"] for h in answer["hits"] if h["replaced_by"]}
    assert replaced == {turn_id: [correction]}, (moment, replaced)
