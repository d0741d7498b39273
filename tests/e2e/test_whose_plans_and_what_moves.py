"""Whose plan a claim is, and what says a plan moved, over HTTP: Ines's turns and her chat
model's proposals land on `/v1/turns` with `at` and her zone.

- A move to a place is no move in time: "I moved to Berlin on Friday" is her home from
  then, no plan over after the coming Friday (broken: "moved" read as a reschedule, and a
  reschedule's weekday as the coming one).
- Someone else's words about themselves are no window of Ines's: "Maria said she'd be off
  on Friday", "Tom told me he'd be away next week" stay current facts about Maria and Tom,
  the days they meant noted under them (broken: each ended after Friday / next week, as
  Ines's own "I'm off on Friday" does).
- Someone else's plan does not take over Ines's: "From <day> I work remotely", then, under
  the same title, "Tom works remotely from <day + 2>" leaves her plan as it was (broken:
  read as her plan said again for another day, her plan was replaced, moved to Tom's day).
- A return ends an absence under any title: Rui says "From <day> I work remotely" ("Remote work"),
  then "I'm back in the office from <day + 2>" ("Office return"): the remote plan holds
  until the day before the return, not replaced (broken: ended only under one title, as no
  word or value of one compares with the other's). "I'm going back to the gym from
  <day + 2>" ends nothing.

- A standing change is no move: "I'm in Porto from Monday to Thursday next week", then
  "From now on I work from Lisbon" under the same title leaves the Porto trip standing, a
  plan for another time (broken: "now on" inside "from now on" read as a move, and a move
  replaces what it moves whatever its window: the trip was superseded).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest

from tests.e2e.chat import ZonedChat, zoned_chat

TZ = "Europe/Lisbon"
INES = {"user_id": "ines", "project_id": "home", "session_id": "chat"}


def proposal(type_: str, title: str, content: str) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so"}


@pytest.fixture(scope="module")
def ines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with zoned_chat(tmp_path_factory, "whose", INES, TZ) as chat:
        say, at = chat.say, chat.yesterday
        out: dict[str, Any] = {}
        say("trip", at, "I'm in Porto from Monday to Thursday next week.",
            proposal("fact", "Where I work", "Ines works in Porto from Monday to Thursday next week."))
        out["standing"] = say("standing", at + timedelta(hours=1), "From now on I work from Lisbon.",
                              proposal("fact", "Where I work", "From now on Ines works from Lisbon."))
        say("berlin", at, "I moved to Berlin on Friday.", proposal("fact", "Home", "I moved to Berlin on Friday."))
        out["maria"] = say("maria", at, "Maria said she'd be off on Friday.",
                           proposal("fact", "Maria", "Maria said she'd be off on Friday."))
        say("tom away", at, "Tom told me he'd be away next week.",
            proposal("fact", "Tom", "Tom told me he would be away next week."))
        mine, toms = chat.today + timedelta(days=3), chat.today + timedelta(days=5)
        out["mine"] = mine
        say("my plan", at, f"From {mine:%B} {mine.day} I work remotely.",
            proposal("fact", "Working remotely", f"From {mine:%B} {mine.day} I work remotely."))
        out["toms plan"] = say("toms plan", at + timedelta(hours=2), f"Tom works remotely from {toms:%B} {toms.day}.",
                               proposal("fact", "Working remotely", f"Tom works remotely from {toms:%B} {toms.day}."))
        # Rui, in the same app: one remote plan, ended by a return under another title
        rui = ZonedChat(chat.client, chat.settings, {**INES, "user_id": "rui", "project_id": "rui-home"}, TZ)
        say = rui.say
        remote_day, back_day = (f"{chat.today + timedelta(days=n):%A}" for n in (2, 4))
        say("remote", at, f"From {remote_day} I work remotely.",
            proposal("fact", "Remote work", f"From {remote_day} I work remotely."))
        out["gym"] = say("gym", at + timedelta(hours=3), f"I'm going back to the gym from {back_day}.",
                         proposal("fact", "Gym", f"I'm going back to the gym from {back_day}."))
        out["back"] = say("back", at + timedelta(hours=4), f"I'm back in the office from {back_day}.",
                          proposal("fact", "Office return", f"I'm back in the office from {back_day}."))
        out["items"] = {name: chat.item(item_id)["item"] for name, item_id in chat.ids.items()}
        out["items"].update({name: rui.item(item_id)["item"] for name, item_id in rui.ids.items()})
        yield out


def test_a_move_to_a_place_is_no_plan_for_a_day(ines) -> None:
    assert ines["items"]["berlin"]["valid_to"] is None, ines["items"]["berlin"]


def test_a_standing_change_leaves_a_plan_for_another_time(ines) -> None:
    trip = ines["items"]["trip"]
    assert trip["valid_from"] and trip["valid_to"], trip  # next week's window
    assert trip["id"] not in ines["standing"].get("supersedes", []), ines["standing"]
    assert trip["superseded_by"] is None, trip
    assert ines["items"]["standing"]["valid_to"] is None


@pytest.mark.parametrize(("name", "meant"), [("maria", "Friday"), ("tom away", "next week")])
def test_someone_elses_words_about_themselves_bound_no_window_of_the_users(ines, name, meant) -> None:
    item = ines["items"][name]
    assert (item["valid_from"], item["valid_to"]) == (None, None), item
    assert any(meant in said for said in item["metadata"]["said_dates"]["meant"]), item["metadata"]  # still noted


def test_someone_elses_plan_does_not_take_over_the_users(ines) -> None:
    mine, toms = ines["items"]["my plan"], ines["items"]["toms plan"]
    assert mine["valid_from"][:10] == ines["mine"].isoformat() and mine["valid_to"] is None, mine
    assert mine["superseded_by"] is None and mine["id"] not in ines["toms plan"].get("supersedes", []), mine
    assert toms["valid_from"] is not None, toms


def test_a_return_ends_an_absence_under_another_title_from_its_day(ines) -> None:
    remote, back = ines["items"]["remote"], ines["items"]["back"]
    assert back["valid_from"] and remote["valid_from"] < back["valid_from"], (remote, back)
    assert ines["back"]["ends"] == [remote["id"]] and not ines["back"].get("supersedes"), ines["back"]
    assert remote["valid_to"] == (datetime.fromisoformat(back["valid_from"]) - timedelta(seconds=1)).isoformat()
    assert remote["superseded_by"] is None, remote
    assert not ines["gym"].get("ends") and not ines["gym"].get("supersedes"), ines["gym"]
