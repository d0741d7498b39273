"""What a new user is told a recall found, over HTTP, on every surface (`/v1/recall` in
each mode, the default mode, `memory.search`): curated memories first, raw turns as
labelled evidence, and the count said the same way.

- the message counts curated memories and excerpts of what was said apart, as the hits
  are. Broken: `/v1/recall` said "Found 3 memories" for one decision and two chat turns
  (`memory.search` already said "1 memory and 2 excerpts");
- a catalog of k holds k hits when k can be shown: the user's own questions ("What was
  the cabin wifi called again?"), which are no evidence, give their places to the turns
  that say something. Broken: they took places in the top k and were then dropped, so
  `k=3` gave one hit though three turns said what the cabin wifi is;
- a question that asks two things ("Where does Maya live and what's her dog called?")
  finds the evidence of both: the turn that names the dog is among the k hits though many
  turns on where she lives (the dog in each) match the question as a whole better. Broken:
  searched as one, the top 3 were all about where she lives;
- a turn's relative time words say which day they meant when said, as a curated claim's
  do ("(Said on Mon 2026-11-23: next Tuesday = Tue 2026-12-01.)"): the chat model is not
  told today's date. Broken: "The plumber comes next Tuesday." said last week was
  injected with only the day it was said;
- a turn said before a correction that repeats the value it replaced ("regarding the
  flat at Rua Augusta 12", the address since corrected to Rua das Flores 3) is marked as
  said earlier, naming the correction, and comes after it, as the turn the old claim was
  proposed in is. Broken: asked "Rua Augusta?", the catalog gave that turn first,
  unmarked, above the correction.
- `mode: auto` says which branch it took (`mode`: `inject` or `catalog`). Broken: only an
  empty `injection` told a catalog from a block that found nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any

import pytest

from tests.assets.support import block
from tests.e2e.chat import tool, turn
from tests.e2e.test_governed_recall import make_app

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "s1"}
ASKER = {**MAYA, "session_id": "s9"}
BACKEND = "What database did we pick for the blog backend?"
WIFI = "What is the cabin wifi called?"
WIFI_SAID = ["The cabin wifi is called LakeHouse5G.", "The cabin wifi router sits in the attic.",
             "The cabin wifi drops out when it rains."]
WIFI_ASKED = ["What's the cabin wifi called?", "hey, do you remember what the cabin wifi is called?",
              "What was the cabin wifi called again?"]
TWO_PARTS = "Where does Maya live and what's her dog called?"
NAMED = "We called him Biscuit, after the cookie."
LIVES = ["I live in Porto now; the dog loves the river walks.", "Maya here: living in Porto with a dog is lovely.",
         "Where I live the dog park is close.", "I live near the market, the dog comes along.",
         "Maya lives on the third floor, the dog hates the stairs.", "I live with two flatmates and the dog."]
PLUMBER = "The plumber comes next Tuesday."
PLUMBER_SAID = datetime.now(timezone.utc) - timedelta(days=9)
RUI = {"user_id": "rui", "project_id": "home", "session_id": "s1"}
STALE = "Sure: 'Dear landlord, regarding the flat at Rua Augusta 12 ...'"
SURFACES = ("inject", "catalog", "hybrid", "default", "memory.search")


def ask(client, query: str, surface: str, who: dict = ASKER, **kw) -> dict[str, Any]:
    if surface == "memory.search":
        return tool(client, who, "memory.search", {"query": query, **kw})
    mode = {} if surface == "default" else {"mode": surface}
    resp = client.post("/v1/recall", json={"identity": who, "query": query, **mode, **kw})
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], dict]]:
    app = make_app(tmp_path_factory.mktemp("said-found"))
    from litestar.testing import TestClient

    with TestClient(app) as client:
        turn(client, MAYA, "user", "We decided to use Postgres for the blog backend.")
        turn(client, MAYA, "assistant", "Noted. " + block({
            "type": "decision", "title": "Blog backend database", "content": "The blog backend uses Postgres.",
            "why_store": "decided", "confidence": 0.9}))
        turn(client, MAYA, "user", "lol the blog backend database is Postgres, so fun to say")
        for asked, said in zip(WIFI_ASKED, WIFI_SAID, strict=True):
            for text in (asked, said):
                turn(client, MAYA, "user", text)
                turn(client, MAYA, "assistant", "Sure.")
        for text in [*LIVES[:3], NAMED, *LIVES[3:]]:
            turn(client, MAYA, "user", text)
            turn(client, MAYA, "assistant", "Nice!")
        resp = client.post("/v1/turns", json={"identity": MAYA, "role": "user", "text": PLUMBER,
                                              "at": PLUMBER_SAID.isoformat()})
        assert resp.status_code == 201, resp.text
        turn(client, RUI, "user", "My address is Rua Augusta 12, Lisbon.")
        turn(client, RUI, "assistant", "Saved. " + address("Rua Augusta 12, Lisbon"))
        turn(client, RUI, "user", "Can you draft a letter to my landlord?")
        turn(client, RUI, "assistant", STALE)
        turn(client, {**RUI, "session_id": "s2"}, "user", "I moved from Rua Augusta 12! Now it's Rua das Flores 3.")
        (fix,) = turn(client, {**RUI, "session_id": "s2"}, "assistant",
                      "Congrats! " + address("Rua das Flores 3, Porto"))["proposals"]
        assert fix["supersedes"], fix
        seen = {(BACKEND, s): ask(client, BACKEND, s) for s in SURFACES}
        seen["rui's correction"] = fix["item_id"]
        seen.update({("Rua Augusta", s): ask(client, "Rua Augusta", s, {**RUI, "session_id": "s9"})
                     for s in SURFACES})
        seen["plumber"] = ask(client, "When does the plumber come?", "inject")
        seen.update({(TWO_PARTS, s): ask(client, TWO_PARTS, s, k=3) for s in SURFACES})
        seen.update({(WIFI, s): ask(client, WIFI, s, k=3) for s in ("catalog", "memory.search")})
        yield seen
    assert app.state.internal_errors == 0


def address(value: str) -> str:
    return block({"type": "fact", "title": "Rui's address", "content": f"Rui's address is {value}.",
                  "why_store": "stated by the user", "confidence": 0.9})


def said_count(hits: list[dict]) -> str:
    memories = sum(h["type"] != "message" for h in hits)
    turns = len(hits) - memories
    parts = [f"{memories} memor{'y' if memories == 1 else 'ies'}" if memories else "",
             f"{turns} excerpt{'' if turns == 1 else 's'} of what was said (not verified)" if turns else ""]
    return " and ".join(p for p in parts if p)


@pytest.mark.parametrize("surface", SURFACES)
def test_memories_and_excerpts_are_counted_apart(answers, surface) -> None:
    answer = answers[BACKEND, surface]
    hits = answer["hits"]
    assert hits[0]["type"] == "decision" and any(h["type"] == "message" for h in hits), hits
    assert answer["message"] == f"Found {said_count(hits)} for {BACKEND!r}.", answer["message"]


def test_every_surface_says_it_in_the_same_words(answers) -> None:
    # one wording: only the numbers differ (an inject block may hold fewer than a catalog)
    shapes = {re.sub(r"\d+", "N", answers[BACKEND, s]["message"]) for s in SURFACES}
    assert len(shapes) == 1, shapes


@pytest.mark.parametrize("surface", ["catalog", "memory.search"])
def test_a_catalog_of_k_is_not_shortened_by_the_users_questions(answers, surface) -> None:
    said = [h["content"] for h in answers[WIFI, surface]["hits"]]
    assert not set(said) & set(WIFI_ASKED), said  # the questions are no evidence
    assert sorted(said) == sorted(WIFI_SAID), said  # k=3: the three turns that say something


@pytest.mark.parametrize("surface", SURFACES)
def test_a_question_that_asks_two_things_finds_both(answers, surface) -> None:
    said = [h["content"] for h in answers[TWO_PARTS, surface]["hits"]]
    assert NAMED in said, said  # what the dog is called
    assert set(said) & set(LIVES), said  # where she lives


def test_a_turns_time_words_say_the_day_they_meant(answers) -> None:
    excerpts = answers["plumber"]["injection"].partition("CONVERSATION EXCERPTS")[2]
    entry = excerpts.partition(PLUMBER)[2].partition("[/TURN]")[0]
    said_on = PLUMBER_SAID.date()
    note = re.search(r"\(Said on (\w{3}) (\d{4}-\d\d-\d\d): next Tuesday = Tue (\d{4}-\d\d-\d\d)\.\)", entry)
    assert note, excerpts
    assert (note[1], note[2]) == (f"{said_on:%a}", said_on.isoformat()), note[0]
    meant = date.fromisoformat(note[3])
    assert meant.weekday() == 1 and said_on < meant <= said_on + timedelta(days=14), note[0]


@pytest.mark.parametrize("surface", SURFACES)
def test_a_turn_repeating_a_replaced_value_is_marked_and_follows_the_correction(answers, surface) -> None:
    answer, fix = answers["Rua Augusta", surface], answers["rui's correction"]
    ids = [h["id"] for h in answer["hits"]]
    (stale,) = [h for h in answer["hits"] if h["content"] == STALE]
    assert stale["replaced_by"] == [fix], stale
    assert fix in ids and ids.index(fix) < ids.index(stale["id"]), ids
    # the turn that told of the move names the new value: evidence of the correction, unmarked
    told = [h for h in answer["hits"] if h["content"].startswith("I moved from")]
    assert told and not told[0].get("replaced_by"), answer["hits"]
    # ... and the correction kept from it comes first, curated, though only the turn names
    # "Rua Augusta": a correction ranks at least with its own exchange's turn
    assert ids.index(fix) < ids.index(told[0]["id"]), ids
    if surface in ("inject", "hybrid", "default"):
        entry = answer["injection"].partition(STALE)[2].partition("[/TURN]")[0]
        assert f"a later memory, {fix}, says otherwise" in entry, answer["injection"]


STANDUP = {"type": "decision", "title": "Standup time", "content": "The daily standup is at 10:00."}
SUPPLIER = {"type": "fact", "title": "Kiln supplier", "content": "The kiln supplier might be Ceramix.",
            "confidence": 0.5}  # below the confidence a claim needs to be injected


def test_auto_mode_injects_when_confident_and_gives_the_catalog_otherwise(service) -> None:
    """`mode: auto` is Q*'s "inject memory or return a catalog": the READ-ONLY block alone
    when the query found a claim confident enough to inject (inject mode's rule), the
    catalog alone when it found none; `hybrid` gives the block and catalogues the rest."""
    client, _ = service
    for item in (STANDUP, SUPPLIER):
        tool(client, MAYA, "memory.write", {"item": item})
    both = "When is the daily standup and who is the kiln supplier?"
    confident, hybrid = (ask(client, both, mode, MAYA) for mode in ("auto", "hybrid"))
    assert "The daily standup is at 10:00." in confident["injection"], confident
    assert (confident["mode"], hybrid["mode"]) == ("inject", "hybrid")  # the branch auto took
    assert confident["catalog"]["memory_catalog"] == [] and {h["delivery"] for h in confident["hits"]} == {"inject"}
    assert hybrid["injection"] == confident["injection"]
    assert [e["title"] for e in hybrid["catalog"]["memory_catalog"]] == ["Kiln supplier"], hybrid
    unsure = ask(client, "Who is the kiln supplier?", "auto", MAYA)
    assert unsure["injection"] == "" and unsure["found"] and unsure["mode"] == "catalog", unsure
    (entry,) = unsure["catalog"]["memory_catalog"]
    assert entry["title"] == "Kiln supplier" and entry["low_confidence"], entry
    assert [h["delivery"] for h in unsure["hits"]] == ["catalog"]
    schemas = client.get("/schema/openapi.json").json()["components"]["schemas"]
    modes = schemas["RecallRequest"]["properties"]["mode"]
    assert "auto" in str(modes), modes
    delivered = schemas["RecallResponse"]["properties"]["mode"]
    assert delivered["enum"] == ["inject", "catalog", "hybrid"] and "auto" in delivered["description"], delivered
    assert "mode" in schemas["RecallResponse"]["required"]


def test_a_turn_says_the_day_it_was_said_not_a_validity_window(service) -> None:
    """A raw turn's time is when it was said: the catalog, the hits (`/v1/recall` and
    `memory.search`) and its browser card say so (`said_on`, the day of its title, on the
    asker's calendar), never the open window "2026-11-01.." a claim's `valid` would read as."""
    client, _ = service
    at = PLUMBER_SAID.replace(hour=23, minute=30)  # the next day in Tokyo
    resp = client.post("/v1/turns", json={"identity": MAYA, "role": "user", "text": PLUMBER, "at": at.isoformat()})
    assert resp.status_code == 201, resp.text
    tool(client, MAYA, "memory.write", {"item": {**STANDUP, "valid_from": "2026-01-05"}})
    tokyo = (at + timedelta(hours=9)).date().isoformat()
    got = ask(client, "When does the plumber come? And the standup?", "catalog", MAYA, tz="Asia/Tokyo")
    entries = {e["type"]: e for e in got["catalog"]["memory_catalog"]}
    turn_entry, claim = entries["message"], entries["decision"]
    assert turn_entry["said_on"] == tokyo and "valid" not in turn_entry and tokyo in turn_entry["title"], turn_entry
    assert claim["valid"] == "2026-01-05.." and "said_on" not in claim, claim  # a claim keeps its window
    hits = {h["type"]: h for h in got["hits"]}
    assert hits["message"]["said_on"] == tokyo and hits["message"]["valid_from"] is None, hits["message"]
    assert hits["decision"]["valid_from"] == "2026-01-05" and hits["decision"]["said_on"] is None
    searched = ask(client, "When does the plumber come?", "memory.search", MAYA, tz="Asia/Tokyo")
    (said,) = [h for h in searched["hits"] if h["type"] == "message"]
    assert said["said_on"] == tokyo and "valid_from" not in said, said
    card = client.get(f"/ui/items/{said['id']}", params={**MAYA, "tz": "Asia/Tokyo"}).text
    assert 'id="said-at"' in card and tokyo in card and "<dt>valid</dt>" not in card
