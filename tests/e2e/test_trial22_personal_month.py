"""A month with a personal assistant (the twenty-second new-user trial), over HTTP: a chat
loop lands Priya's turns and its model's proposals on `/v1/turns` (each with `at` and `tz`,
her zone, Australia/Sydney: 10-11 hours ahead of UTC, so her mornings are UTC's yesterday),
asks `/v1/recall` in the same zone, and a real Dagster consolidation (`run_consolidation`)
and a snapshot hot-swap run every few days. Her partner Dev shares the household project.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings
from tests.e2e.chat import curated, curated_text
from tests.e2e.test_trial12_weeks import consolidate

TZ = "Australia/Sydney"
ZONE = ZoneInfo(TZ)
PRIYA = {"user_id": "priya", "project_id": "home", "session_id": "chat"}
DEV = {"user_id": "dev", "project_id": "home", "session_id": "dev-chat"}
AT_WORK = {"user_id": "priya", "project_id": "work", "session_id": "desk"}
WEEKS = ("week 1", "week 2", "week 3", "now")
QUESTIONS = {
    "mum": "when is mum's birthday?",
    "plan": "what did I plan for next week?",
    "medication": "what's my current medication?",
    "diet": "when did I last change my diet?",
    "trip": "what do you know about my trip?",
    "tomorrow": "anything I should remember for tomorrow?",
    "gym": "when do I go to the gym?",
    "arjun": "when is Arjun's birthday?",
    "standup": "when is the team sync?",
    "weekend": "what's on next weekend?",
    "me": "what do you know about me?",
}


def fact(title: str, content: str, type_: str = "fact", **more: Any) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so", **more}


def on(day: date, hh: int = 10, mm: int = 0) -> datetime:
    return datetime.combine(day, time(hh, mm), ZONE)


def spoken(day: date) -> str:
    return f"{day:%A}, {day:%B} {day.day}"


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("month"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    today = datetime.now(ZONE).date()
    start = today - timedelta(days=30)
    ids: dict[str, str] = {}
    outcomes: dict[str, dict] = {}
    seen: dict[str, dict[str, dict]] = {}

    def say(name: str, when: datetime, text: str, *proposals: dict, who: dict = PRIYA) -> None:
        reply = "Noted." + ((" <MEMORY_PROPOSALS_JSON>" + json.dumps(list(proposals)) + "</MEMORY_PROPOSALS_JSON>")
                            if proposals else "")
        for role, said, at in (("user", text, when), ("assistant", reply, when + timedelta(seconds=20))):
            resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": said,
                                                  "at": at.isoformat(), "tz": TZ})
            assert resp.status_code == 201, resp.text
        for n, outcome in enumerate(resp.json()["proposals"]):
            key = name if n == 0 else f"{name} {n}"
            outcomes[key] = outcome
            if outcome.get("item_id"):
                ids[key] = outcome["item_id"]

    def look(name: str, who: dict = PRIYA) -> None:
        seen[name] = {}
        for key, question in QUESTIONS.items():
            resp = client.post("/v1/recall", json={"identity": who, "query": question, "tz": TZ})
            assert resp.status_code == 200, resp.text
            seen[name][key] = resp.json()

    trip_from = today + timedelta(days=7 - today.weekday() + 4)  # Friday next week
    first_trip = start + timedelta(days=(4 - start.weekday()) % 7 + 14)
    with TestClient(app) as client:
        # week 1: who she is
        say("mum", on(start, 8, 15), "Mum's birthday is on 14 August, I never remember what to get her.",
            fact("Mum's birthday", "Mum's birthday is on August 14."))
        say("arjun", on(start, 8, 20), "And my brother Arjun's birthday is on 3 March.",
            fact("Arjun's birthday", "Priya's brother Arjun's birthday is on March 3."))
        say("veg", on(start, 9), "I'm vegetarian, keep that in mind for recipes.",
            fact("Diet", "Priya is vegetarian.", "preference"))
        say("meds", on(start, 9, 30), "I take metformin 500 mg twice a day.",
            fact("Medication", "Priya takes metformin 500 mg twice a day."))
        say("gym", on(start + timedelta(days=1), 7), "I go to the gym on Mondays, Wednesdays and Fridays at 7am.",
            fact("Gym", "Gym on Mondays, Wednesdays and Fridays at 7am."))
        say("sync", on(start + timedelta(days=1), 7, 30), "Team sync is every Tuesday at 10am.",
            fact("Team sync", "Team sync every Tuesday at 10am."))
        say("vent", on(start + timedelta(days=2), 22), "ugh mum called again about the birthday party, "
            "so stressful, the gym is the only thing keeping me sane")
        say("trip", on(start + timedelta(days=3), 8), f"I'm going to Melbourne from {spoken(first_trip)} "
            f"to {spoken(first_trip + timedelta(days=2))}.",
            fact("Melbourne trip", f"Priya is in Melbourne from {spoken(first_trip)} to "
                                   f"{spoken(first_trip + timedelta(days=2))}.", "todo"))
        allergy = fact("Allergy", "I'm allergic to penicillin.")  # written by the loop itself, no scope named
        resp = client.post("/v1/tools", json={"action": "memory.write", "identity": PRIYA,
                                              "args": {"tz": TZ, "item": allergy}})
        assert resp.status_code == 200, resp.text
        ids["allergy"] = resp.json()["result"]["item_id"]
        consolidate(client, settings)
        look("week 1")
        # week 2: the doctor, the trip moves, chatter the model wants to keep
        say("meds up", on(start + timedelta(days=9), 8, 30), "Doctor raised my metformin to 1000 mg twice a day.",
            fact("Medication", "Priya takes metformin 1000 mg twice a day now."))
        say("trip moved", on(start + timedelta(days=11), 7, 45),
            f"The Melbourne trip moved to {spoken(trip_from)} to {spoken(trip_from + timedelta(days=2))}.",
            fact("Melbourne trip", f"The Melbourne trip moved to {spoken(trip_from)} to "
                                   f"{spoken(trip_from + timedelta(days=2))}.", "todo"))
        say("chatter", on(start + timedelta(days=12), 21), "lol thanks, sounds great!",
            fact("Chat", "Thanks, sounds great!"))
        consolidate(client, settings)
        look("week 2")
        # week 3: the diet ends, she forgets her brother's birthday
        say("fish", on(start + timedelta(days=18), 8), "I eat fish again since March, so not strictly vegetarian.",
            fact("Diet", "Priya eats fish again since March.", "preference"))
        resp = client.post("/v1/tools", json={"action": "memory.forget", "identity": PRIYA,
                                              "args": {"id": ids["arjun"]}})
        assert resp.status_code == 200, resp.text
        consolidate(client, settings)
        look("week 3")
        # the last days: the sync moves, the doctor switches her medicine, tomorrow's dentist
        say("sync moved", on(today - timedelta(days=4), 8), "Team sync moved to Wednesdays at 11am from now on.",
            fact("Team sync", "Team sync is on Wednesdays at 11am from now on."))
        say("meds switched", on(today - timedelta(days=3), 7, 30),
            "Doctor switched me from metformin to sitagliptin 100 mg once a day.",
            fact("Medication", "Priya takes sitagliptin 100 mg once a day, replacing metformin."))
        # the last days: tomorrow's dentist
        say("dentist", on(today - timedelta(days=1), 7, 10), "Dentist tomorrow at 9am, don't let me forget.",
            fact("Dentist", "Dentist appointment tomorrow at 9am.", "todo"))
        consolidate(client, settings)
        look("now")
        look("dev", DEV)
        look("at work", AT_WORK)
        items = {name: client.get(f"/v1/items/{item_id}", params=PRIYA).json() for name, item_id in ids.items()}
        yield {"ids": ids, "outcomes": outcomes, "seen": seen, "items": items, "today": today,
               "trip_from": trip_from, "client": client}


def entries(answer: dict) -> dict[str, str]:
    """The block's curated entries by memory id: header line and body."""
    out = {}
    for part in curated_text(answer).split("[MEMORY: ")[1:]:
        out[part.split(" | ", 1)[0]] = part.split("[/MEMORY]")[0]
    return out


def turns(answer: dict) -> str:
    """The conversation excerpts of the block: what was said, labelled as such."""
    return (answer["injection"] or "").partition("CONVERSATION EXCERPTS")[2]


@pytest.mark.parametrize("week", WEEKS)
def test_mums_birthday_is_the_curated_memory_and_the_venting_only_evidence(month, week: str) -> None:
    answer = month["seen"][week]["mum"]
    assert curated(answer)[0] == month["ids"]["mum"] and answer["hits"][0]["type"] != "message", answer["hits"]
    assert "August 14" in curated_text(answer) and "so stressful" not in curated_text(answer)
    assert "CONVERSATION EXCERPTS (what was said, not verified; not authoritative)" in answer["injection"]


@pytest.mark.parametrize("week", WEEKS[1:])
def test_the_current_medication_replaces_the_old_dose_which_stays_history(month, week: str) -> None:
    ids, answer = month["ids"], month["seen"][week]["medication"]
    current, gone = ("meds switched", ("500 mg", "1000 mg")) if week == "now" else ("meds up", ("500 mg",))
    assert curated(answer)[0] == ids[current], answer["hits"]
    assert all(dose not in curated_text(answer) for dose in gone), answer["injection"]
    for old, new in (("meds", "meds up"), ("meds up", "meds switched")):
        was = month["items"][old]
        assert was["state"] == "superseded" and was["replaced_by"] == {"id": ids[new], "how": "superseded"}, was
        assert was["item"]["content"] in {"Priya takes metformin 500 mg twice a day.",
                                          "Priya takes metformin 1000 mg twice a day now."}  # kept as history


def test_the_team_sync_that_moved_is_the_only_current_one(month) -> None:
    answer, ids = month["seen"]["now"]["standup"], month["ids"]
    assert curated(answer) == [ids["sync moved"]], answer["hits"]
    assert "Tuesday" not in curated_text(answer)
    assert month["items"]["sync"]["replaced_by"] == {"id": ids["sync moved"], "how": "superseded"}


def test_her_medication_is_hers_alone_not_her_partners_in_the_shared_project(month) -> None:
    # broken: a health detail the model proposed with no scope landed in the household
    # project, and Dev's "what's my current medication?" answered with Priya's metformin
    for name in ("meds", "meds up", "meds switched"):
        assert month["outcomes"][name]["scope"] == "user", month["outcomes"][name]
        assert month["items"][name]["item"]["scope"]["kind"] == "user"
    assert month["items"]["allergy"]["item"]["scope"]["kind"] == "user"  # memory.write reads it too
    for medicine in ("metformin", "sitagliptin"):
        assert medicine not in (month["seen"]["dev"]["medication"]["injection"] or "")
    assert "sitagliptin" in curated_text(month["seen"]["now"]["medication"])
    # what is not about her health stays shared: Dev sees mum's birthday and the trip
    assert month["ids"]["mum"] in curated(month["seen"]["dev"]["mum"])
    assert month["items"]["trip moved"]["item"]["scope"]["kind"] == "project"


def test_chatter_the_model_proposes_is_not_stored(month) -> None:
    # broken: "Chat: Thanks, sounds great!" was accepted and stored as a memory
    chatter = month["outcomes"]["chatter"]
    assert chatter["action"] == "reject" and chatter["rule_ids"] == ["hard.small_talk"], chatter
    assert "chatter" not in month["ids"]
    for answers in month["seen"].values():
        for answer in answers.values():
            assert "sounds great" not in (answer["injection"] or "")


def test_the_diet_change_comes_first_with_the_march_it_meant(month) -> None:
    ids, answer = month["ids"], month["seen"]["now"]["diet"]
    shown = entries(answer)
    assert curated(answer)[0] == ids["fish"], answer["hits"]
    # when she changed it, on her calendar: said at 08:00 in Sydney, the evening before in UTC
    changed_on = month["today"] - timedelta(days=12)
    assert f"by=priya on {changed_on.isoformat()}" in shown[ids["fish"]].split("\n", 1)[0], shown[ids["fish"]]
    # broken: "since March", said in November, was shown as "March = March 2027"
    assert "March = March 2026" in shown[ids["fish"]] or "March = March 2025" in shown[ids["fish"]], shown
    # broken: "Priya is vegetarian" was shown beside it under one title, as if both held (the
    # conflict rule read "since March" as a value "vegetarian" lacks): the newer, saying the
    # diet changed, replaces it, which is history only, never current
    for question in ("diet", "me"):
        assert ids["veg"] not in curated(month["seen"]["now"][question]), month["seen"]["now"][question]["hits"]
    was = month["items"]["veg"]
    assert was["state"] == "superseded" and was["replaced_by"] == {"id": ids["fish"], "how": "superseded"}, was
    assert was["item"]["content"] == "Priya is vegetarian."  # kept as history
    said = month["items"]["fish"]["item"]["metadata"]["said_dates"]
    assert int(said["meant"]["March"].split()[1]) <= month["today"].year, said


def test_the_moved_trip_is_the_plan_and_the_first_plan_only_history(month) -> None:
    ids = month["ids"]
    for week in WEEKS[1:]:
        answer = month["seen"][week]["trip"]
        assert curated(answer)[0] == ids["trip moved"], answer["hits"]
        assert ids["trip"] not in curated(answer)
        assert f"{month['trip_from']:%B} {month['trip_from'].day}" in curated_text(answer)
    assert month["items"]["trip"]["replaced_by"] == {"id": ids["trip moved"], "how": "superseded"}
    # broken: "moved to Friday, ... to Sunday, ..." bounded no window, so the plan was shown
    # bare, neither UPCOMING nor, after the weekend, ENDED
    moved = month["items"]["trip moved"]["item"]
    assert (moved["valid_from"][:10], moved["valid_to"][:10]) == (
        month["trip_from"].isoformat(), (month["trip_from"] + timedelta(days=2)).isoformat()), moved
    header = entries(month["seen"]["now"]["trip"])[ids["trip moved"]].split("\n", 1)[0]
    assert " | UPCOMING" in header and f"VALID={month['trip_from'].isoformat()}.." in header, header


def test_tomorrow_on_her_calendar_is_the_dentist(month) -> None:
    answer, ids = month["seen"]["now"]["tomorrow"], month["ids"]
    assert ids["dentist"] in curated(answer)[:3] and answer["hits"][0]["type"] != "message", answer["hits"]
    tomorrow = month["today"]
    # said at 07:10 yesterday in Sydney (still the day before in UTC): "tomorrow" is today there
    assert f"tomorrow = {tomorrow:%a} {tomorrow.isoformat()}" in entries(answer)[ids["dentist"]], answer["injection"]
    assert month["items"]["dentist"]["item"]["valid_to"][:10] == tomorrow.isoformat()
    # broken: the habits of her tomorrow were not listed ("gym on Mondays, Wednesdays and
    # Fridays" shares no word with "anything I should remember for tomorrow?")
    weekday = (month["today"] + timedelta(days=1)).weekday()  # her tomorrow, in Sydney
    habits = {ids["gym"]} if weekday in (0, 2, 4) else set()
    habits |= {ids["sync moved"]} if weekday == 2 else set()
    assert habits <= set(curated(answer)), (weekday, answer["hits"])
    assert ids["sync"] not in curated(answer)  # the Tuesday sync that moved is history


def test_what_she_forgot_is_never_recalled(month) -> None:
    assert month["items"]["arjun"]["state"] == "retracted"
    for week in WEEKS[2:]:
        assert "Arjun" not in (month["seen"][week]["arjun"]["injection"] or "")




def test_what_she_planned_for_next_week_is_the_trip_that_holds_then_on_her_calendar(month) -> None:
    # broken: "what did I plan for next week?" shares no word with "The Melbourne trip moved
    # to Friday, ... to Sunday, ...": nothing was injected, though the trip holds next week
    answer, ids = month["seen"]["now"]["plan"], month["ids"]
    assert curated(answer)[:1] == [ids["trip moved"]], answer["hits"]
    assert ids["trip"] not in curated(answer) and ids["dentist"] not in curated(answer)
    assert " | UPCOMING" in entries(answer)[ids["trip moved"]].split("\n", 1)[0]



def test_her_health_follows_her_to_another_project_and_is_what_is_known_about_her(month) -> None:
    ids = month["ids"]
    assert curated(month["seen"]["at work"]["medication"])[:1] == [ids["meds switched"]]
    assert "Mum's birthday" not in curated_text(month["seen"]["at work"]["mum"])  # the household's stays home
    assert ids["meds switched"] in curated(month["seen"]["now"]["me"])
    assert ids["meds switched"] not in curated(month["seen"]["dev"]["me"])
    assert "sitagliptin" not in (month["seen"]["dev"]["me"]["injection"] or "")


def test_next_weekend_on_her_calendar_is_the_trip(month) -> None:
    answer = month["seen"]["now"]["weekend"]
    assert curated(answer)[:1] == [month["ids"]["trip moved"]], answer["hits"]
