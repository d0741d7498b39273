"""Whose plan a claim is, and what says a plan moved, over HTTP: Ines's turns and her chat
model's proposals land on `/v1/turns` with `at` and her zone.

- A standing change is no move: "I'm in Porto from Monday to Thursday next week", then
  "From now on I work from Lisbon" under the same title leaves the Porto trip standing, a
  plan for another time (broken: "now on" inside "from now on" read as a move, and a move
  replaces what it moves whatever its window: the trip was superseded).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.e2e.chat import zoned_chat

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
        out["items"] = {name: chat.item(item_id)["item"] for name, item_id in chat.ids.items()}
        yield out


def test_a_standing_change_leaves_a_plan_for_another_time(ines) -> None:
    trip = ines["items"]["trip"]
    assert trip["valid_from"] and trip["valid_to"], trip  # next week's window
    assert trip["id"] not in ines["standing"].get("supersedes", []), ines["standing"]
    assert trip["superseded_by"] is None, trip
    assert ines["items"]["standing"]["valid_to"] is None
