"""A curated memory its own author said otherwise of later, in a turn no memory was kept of,
over HTTP (a household trial): Maya's "Swim schedule: Thursdays at 5pm" was stored; a week
later she said "Actually swim is back to Tuesdays at 5pm." and the chat model proposed
nothing. Broken: the Thursday claim was injected as authoritative, unmarked, and the later
turn only appeared among the excerpts. Now, on every surface (`/v1/recall` in each mode,
the default mode, `memory.search`):

- the claim still leads (curated first), marked `SAID_LATER=<turn id>` in the block with a
  last line quoting the later turn and its day, "not yet confirmed"; the catalog entry
  carries the same note, and the hit names the turn (`said_later`);
- only its author's LATER statement counts: her earlier turn, her question ("is swim still
  on Thursdays?"), the assistant's guess ("I think the bins moved to Thursday now") and
  another member's turn (Tom's) mark nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from litestar.testing import TestClient

from pipelines.materialize import message_item_id
from tests.assets.support import block
from tests.e2e.chat import tool
from tests.e2e.test_governed_recall import make_app

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "s1"}
TOM = {"user_id": "tom", "project_id": "home", "session_id": "t1"}
ASKER = {**MAYA, "session_id": "s9"}
NOW = datetime.now(timezone.utc)
SWIM = "What day is Leo's swimming?"
BINS = "What night do the bins go out?"
LATER = "Actually swim is back to Tuesdays at 5pm."
LATER_AT = NOW - timedelta(days=2)
SURFACES = ("inject", "catalog", "hybrid", "default", "memory.search")


def said(client: TestClient, who: dict, role: str, text: str, at: datetime) -> dict:
    resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": text, "at": at.isoformat()})
    assert resp.status_code == 201, resp.text
    return resp.json()


def kept(client: TestClient, who: dict, text: str, at: datetime, title: str, content: str) -> str:
    """`who` says `text` at `at` and the chat model proposes it as a fact; its item id."""
    said(client, who, "user", text, at)
    (outcome,) = said(client, who, "assistant", "Noted. " + block({
        "type": "fact", "title": title, "content": content, "why_store": "household", "confidence": 0.9}),
        at + timedelta(seconds=20))["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


def ask(client: TestClient, query: str, surface: str, who: dict = ASKER) -> dict[str, Any]:
    if surface == "memory.search":
        return tool(client, who, "memory.search", {"query": query})
    mode = {} if surface == "default" else {"mode": surface}
    resp = client.post("/v1/recall", json={"identity": who, "query": query, **mode})
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def household(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[Any, Any]]:
    app = make_app(tmp_path_factory.mktemp("said-later"))
    with TestClient(app) as client:
        seen: dict[Any, Any] = {}
        seen["swim"] = kept(client, MAYA, "Swim moved to Thursdays at 5pm from this week.", NOW - timedelta(days=9),
                            "Swim schedule", "Leo's swimming lessons are on Thursdays at 5pm.")
        said(client, MAYA, "user", "Is swim still on Thursdays?", NOW - timedelta(days=5))
        said(client, MAYA, "assistant", "I think swim is on Thursdays, yes.", NOW - timedelta(days=5, seconds=-20))
        seen["later"] = message_item_id(said(client, {**MAYA, "session_id": "s2"}, "user", LATER, LATER_AT)["turn_id"])
        said(client, {**MAYA, "session_id": "s2"}, "assistant", "Got it!", LATER_AT + timedelta(seconds=20))
        # Bins: said otherwise only before the claim, asked about, and guessed by the assistant
        said(client, MAYA, "user", "The bins go out on Monday nights.", NOW - timedelta(days=12))
        seen["bins"] = kept(client, MAYA, "Bin night moved to Wednesday nights.", NOW - timedelta(days=9),
                            "Bin night", "The bins go out every Wednesday night.")
        said(client, MAYA, "user", "Are the bins still on Wednesday nights?", NOW - timedelta(days=3))
        said(client, MAYA, "assistant", "I think the bins moved to Thursday nights now.",
             NOW - timedelta(days=3, seconds=-20))
        # Tom (same household project) says otherwise of Maya's claim: not its author
        said(client, TOM, "user", "Actually swim is on Fridays now.", NOW - timedelta(days=1))
        seen.update({(SWIM, s): ask(client, SWIM, s) for s in SURFACES})
        seen.update({(BINS, s): ask(client, BINS, s) for s in SURFACES})
        seen.update({("tom", s): ask(client, SWIM, s, {**TOM, "session_id": "t9"}) for s in SURFACES})
        yield seen
    assert app.state.internal_errors == 0


def memory_entry(injection: str, item_id: str) -> str:
    return injection.partition(f"[MEMORY: {item_id}")[2].partition("[/MEMORY]")[0]


@pytest.mark.parametrize("surface", SURFACES)
def test_a_later_turn_of_its_author_marks_the_memory(household, surface) -> None:
    answer, claim, later = household[SWIM, surface], household["swim"], household["later"]
    hits = answer["hits"]
    assert hits[0]["id"] == claim, hits  # curated first still
    assert hits[0]["said_later"] == [later], hits[0]
    if surface in ("inject", "hybrid", "default"):
        entry = memory_entry(answer["injection"], claim)
        assert f"SAID_LATER={later}" in entry.split("\n", 1)[0], entry
        assert f'on {LATER_AT.date().isoformat()}, by the user: "{LATER}"' in entry, entry
        assert "not yet confirmed" in entry, entry
        assert "Entries marked SAID_LATER" in answer["injection"]
    if surface == "catalog":
        (entry,) = [e for e in answer["catalog"]["memory_catalog"] if e["id"] == claim]
        assert entry["said_later"]["turns"] == [later], entry
        assert f'"{LATER}"' in entry["said_later"]["note"] and "not yet confirmed" in entry["said_later"]["note"]


@pytest.mark.parametrize("surface", SURFACES)
def test_an_earlier_turn_a_question_or_a_guess_marks_nothing(household, surface) -> None:
    answer, claim = household[BINS, surface], household["bins"]
    (hit,) = [h for h in answer["hits"] if h["id"] == claim]
    assert not hit.get("said_later"), hit
    assert "SAID_LATER" not in (answer.get("injection") or "")
    assert all("said_later" not in e for e in (answer.get("catalog") or {}).get("memory_catalog", []))


@pytest.mark.parametrize("surface", SURFACES)
def test_another_members_turn_marks_nothing(household, surface) -> None:
    answer, claim = household["tom", surface], household["swim"]
    (hit,) = [h for h in answer["hits"] if h["id"] == claim]
    assert any(h["content"] == "Actually swim is on Fridays now." for h in answer["hits"]), answer["hits"]
    assert not hit.get("said_later"), hit
    assert "SAID_LATER" not in (answer.get("injection") or "")
