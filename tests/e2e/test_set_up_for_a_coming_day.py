"""What is set up now for a day is the coming day, not the one gone by, over HTTP: Ines's
turns and her chat model's proposals land on `/v1/turns` with `at` and her zone.

- "We've just added Tom to the on-call rota from <day>" (the present perfect, an adverb
  between): Tom is on the rota from the coming <day>, a window from then (broken: "added"
  read as told in the past past the "just", the window started on the <day> gone by).
- "We've also booked the room for the offsite on <day>": over after the coming <day>
  (broken: read as the <day> gone by, no window).
- "We added Ana to the rota on <day>" (the simple past, a plain day) stays the <day> gone
  by, noted, no window (kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from tests.e2e.chat import zoned_chat

TZ = "Europe/Lisbon"
INES = {"user_id": "ines", "project_id": "team", "session_id": "chat"}


@pytest.fixture(scope="module")
def ines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with zoned_chat(tmp_path_factory, "set_up", INES, TZ) as chat:
        said = chat.yesterday
        coming = said.date() + timedelta(days=2)  # never the day said: the two readings differ
        day = f"{coming:%A}"
        texts = {"rota": ("fact", f"We've just added Tom to the on-call rota from {day}."),
                 "room": ("event", f"We've also booked the room for the offsite on {day}."),
                 "past": ("fact", f"We added Ana to the rota on {day}.")}
        for name, (type_, text) in texts.items():
            chat.say(name, said, text, {"type": type_, "title": name, "content": text, "why_store": "she said so"})
        yield {"coming": coming, "gone": coming - timedelta(days=7),
               **{name: chat.item(chat.ids[name])["item"] for name in texts}}


def test_set_up_from_a_day_holds_from_the_coming_one(ines) -> None:
    rota = ines["rota"]
    assert rota["valid_from"] and rota["valid_from"][:10] == ines["coming"].isoformat(), rota
    assert rota["valid_to"] is None, rota


def test_booked_for_a_day_is_over_after_the_coming_one(ines) -> None:
    room = ines["room"]
    assert room["valid_to"] and room["valid_to"][:10] == ines["coming"].isoformat(), room


def test_done_on_a_day_is_the_day_gone_by(ines) -> None:
    past = ines["past"]
    assert (past["valid_from"], past["valid_to"]) == (None, None), past
    assert any(ines["gone"].isoformat() in meant for meant in past["metadata"]["said_dates"]["meant"].values()), past
