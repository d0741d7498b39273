"""A new user's first chat, over HTTP, as they would meet it: a few turns in their zone (the
chat model proposes what is worth keeping), a question, a correction ("Actually the team
meeting moved to Thursday"), then recalls, before and after a consolidation. Curated
memories come first and raw turns are labelled evidence:

- the user's own questions ("What was my dentist's name again?", "Thanks! And when is
  Leo's birthday?") are never evidence hits, in `/v1/recall`'s catalog as in the injected
  block (as `memory.search` already had it). Broken: catalog mode listed the question
  second, above the turn that says the name; one after small talk was evidence everywhere;
- the turn in which the user made a correction states the new value: it is never hidden as
  said before the correction (`candidates.corrected`). Broken: a correction naming the old
  value ("..., not Tuesdays") hid the turn "Actually the team meeting moved to Thursday",
  in the chat where it was proposed as when the agent proposed it through `memory.propose`;
- a yearly claim (a birthday) says when it next comes, on the asker's calendar. Broken:
  "Anna's birthday is March 3" came with no date to count from, and "Leo's birthday is
  tomorrow" ended the day after it was said (marked ENDED, ranked after what holds).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.chat import consolidate, said_with_proposal, tool, zoned_chat

TZ = "Pacific/Kiritimati"  # UTC+14: the asker's calendar is a day ahead of UTC's half the time
NOOR = {"user_id": "noor", "project_id": "home", "session_id": "s1"}
SAM = {"user_id": "sam", "project_id": "shop", "session_id": "s1"}
ASKER = {**NOOR, "session_id": "s9"}
ASKED = "What was my dentist's name again?"
ASKED_POLITELY = "Thanks! And when is Leo's birthday again?"
DENTIST = "My dentist is Dr. Alvarez on Elm Street."
TUESDAY = "The weekly team meeting is on Tuesday at 10am."
MOVED = "Actually the team meeting moved to Thursday."


def fact(title: str, content: str) -> dict:
    return {"type": "fact", "title": title, "content": content, "why_store": "stated by the user",
            "confidence": 0.9}


def ask(client, query: str, mode: str, who: dict = ASKER) -> dict:
    resp = client.post("/v1/recall", json={"identity": who, "query": query, "mode": mode, "tz": TZ})
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """What Noor was answered with her chat in the service's delta ("delta") and after a
    consolidation ("consolidated"), by (moment, query, mode); and the correction's id."""
    seen: dict[str, Any] = {}
    queries = [("Who is my dentist?", "catalog"), ("Who is my dentist?", "hybrid"),
               ("When is the team meeting?", "hybrid"), ("When is Anna's birthday?", "hybrid"),
               ("When is Leo's birthday?", "catalog"), ("When is Leo's birthday?", "hybrid")]
    with zoned_chat(tmp_path_factory, "first-chat", NOOR, TZ) as chat:
        client, zone = chat.client, ZoneInfo(TZ)
        days_ago = lambda n: datetime.now(zone) - timedelta(days=n)  # noqa: E731
        said_with_proposal(client, NOOR, days_ago(3), DENTIST, fact("Dentist", "Noor's dentist is Dr. Alvarez on "
                                                                              "Elm Street."), TZ)
        said_with_proposal(client, NOOR, days_ago(3) + timedelta(minutes=2), "Anna's birthday is March 3.",
                           fact("Anna's birthday", "Anna's birthday is March 3."), TZ)
        said_with_proposal(client, NOOR, days_ago(3) + timedelta(minutes=4), TUESDAY,
                           fact("Team meeting", TUESDAY), TZ)
        said_with_proposal(client, NOOR, days_ago(3) + timedelta(minutes=6), "My brother Leo's birthday is tomorrow!",
                           fact("Leo's birthday", "Leo's birthday is tomorrow."), TZ)
        for role, text in (("user", ASKED), ("assistant", "Your dentist is Dr. Alvarez."),
                           ("user", ASKED_POLITELY), ("assistant", "It was two days ago.")):
            resp = client.post("/v1/turns", json={"identity": {**NOOR, "session_id": "s2"}, "role": role,
                                                  "text": text, "at": days_ago(2).isoformat(), "tz": TZ})
            assert resp.status_code == 201, resp.text
        fix = said_with_proposal(client, {**NOOR, "session_id": "s3"}, days_ago(1), MOVED,
                                 fact("Team meeting", "The team meeting is on Thursdays now, not Tuesdays."), TZ)
        assert len(fix["supersedes"]) == 1, fix
        seen["correction"] = fix["item_id"]
        # Sam's agent proposes through memory.propose: no chat exchange names the turn
        said_with_proposal(client, SAM, days_ago(3), TUESDAY, fact("Team meeting", TUESDAY), TZ)
        resp = client.post("/v1/turns", json={"identity": {**SAM, "session_id": "s3"}, "role": "user", "text": MOVED,
                                              "at": days_ago(1).isoformat(), "tz": TZ})
        assert resp.status_code == 201, resp.text
        (fix,) = tool(client, SAM, "memory.propose", {"items": [
            fact("Team meeting", "The team meeting is on Thursdays now, not Tuesdays.")]})["proposals"]
        assert len(fix["supersedes"]) == 1, fix
        seen["sam's correction"] = fix["item_id"]
        for moment in ("delta", "consolidated"):
            if moment == "consolidated":
                consolidate(client, chat.settings)
            for query, mode in queries:
                seen[moment, query, mode] = ask(client, query, mode)
            seen[moment, "sam"] = ask(client, "When is the team meeting?", "hybrid", {**SAM, "session_id": "s9"})
    yield seen


MOMENTS = ("delta", "consolidated")


def turns_of(answer: dict) -> list[dict]:
    return [h for h in answer["hits"] if h["type"] == "message"]


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("mode", ["catalog", "hybrid"])
def test_the_users_own_question_is_no_evidence(answers, moment, mode) -> None:
    answer = answers[moment, "Who is my dentist?", mode]
    assert answer["hits"][0]["type"] == "fact" and "Alvarez" in answer["hits"][0]["content"], answer["hits"]
    said = [h["content"] for h in turns_of(answer)]
    assert ASKED not in said, said  # not a hit, injected or catalogued
    titles = [e["title"] for e in answer["catalog"].get("memory_catalog", [])]
    assert not any(ASKED in t for t in titles), titles
    assert ASKED not in answer["injection"]
    assert DENTIST in said, said  # what was said stays evidence


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_question_after_small_talk_is_no_evidence_either(answers, moment) -> None:
    for mode in ("catalog", "hybrid"):
        answer = answers[moment, "When is Leo's birthday?", mode]
        said = [h["content"] for h in turns_of(answer)]
        assert ASKED_POLITELY not in said, (mode, said)
        assert "My brother Leo's birthday is tomorrow!" in said, (mode, said)


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("who", ["noor", "sam"])
def test_the_turn_that_made_a_correction_is_shown_after_it(answers, moment, who) -> None:
    answer = answers[moment, "When is the team meeting?", "hybrid"] if who == "noor" else answers[moment, "sam"]
    ids = [h["id"] for h in answer["hits"]]
    fix = answers["correction" if who == "noor" else "sam's correction"]
    assert ids[:1] == [fix], answer["injection"]  # the curated correction answers
    excerpts = answer["injection"].partition("CONVERSATION EXCERPTS")[2]
    assert MOVED in excerpts, answer["injection"]  # the user's words for the new value
    said = [h["content"] for h in turns_of(answer)]
    if TUESDAY in said:  # the old value's turn, if shown, comes after the turn that moved it
        assert said.index(MOVED) < said.index(TUESDAY), said


def next_march_3(today: date) -> date:
    this_year = date(today.year, 3, 3)
    return this_year if this_year >= today else date(today.year + 1, 3, 3)


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_birthday_says_when_it_next_comes_on_the_askers_calendar(answers, moment) -> None:
    answer = answers[moment, "When is Anna's birthday?", "hybrid"]
    today = datetime.now(ZoneInfo(TZ)).date()
    coming = next_march_3(today)
    days = (coming - today).days
    expected = f"Next: {coming.isoformat()}, " + ("today" if days == 0 else f"in {days} day{'s' * (days != 1)}")
    curated = answer["injection"].split("CONVERSATION EXCERPTS")[0]
    entry = curated.split("Anna's birthday is March 3.", 1)
    assert len(entry) == 2, answer["injection"]
    assert expected in entry[1].split("[/MEMORY]")[0], (expected, answer["injection"])


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_birthday_said_as_tomorrow_comes_round_again(answers, moment) -> None:
    answer = answers[moment, "When is Leo's birthday?", "hybrid"]
    (hit,) = [h for h in answer["hits"] if h["type"] == "fact" and "Leo" in h["content"]]
    assert hit["window"] == "" and hit["valid_to"] is None, hit  # not ENDED the day after
    today = datetime.now(ZoneInfo(TZ)).date()
    said_for = (datetime.now(ZoneInfo(TZ)) - timedelta(days=3)).date() + timedelta(days=1)
    coming = said_for.replace(year=today.year + (said_for.replace(year=today.year) < today))
    entry = answer["injection"].split("Leo's birthday is tomorrow.", 1)[1].split("[/MEMORY]")[0]
    assert f"Next: {coming.isoformat()}, in {(coming - today).days} days" in entry, answer["injection"]
    catalog = answers[moment, "When is Leo's birthday?", "catalog"]["catalog"]["memory_catalog"]
    assert [e.get("next") for e in catalog if e["id"] == hit["id"]] == [coming.isoformat()], catalog
