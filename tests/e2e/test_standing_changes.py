"""A standing change names the day of each week it holds on, not one coming day, over HTTP:
Ines's turns and her chat model's proposals land on `/v1/turns` with `at` and her zone.

- "Standup is on Thursday from now on", "Going forward, the design review is on Wednesday",
  "Henceforth payroll runs on Friday": each holds with no end (broken: "now on" read as a
  move, so "from now on" ended the standup after the coming Thursday, and a bare weekday
  ended the other two after theirs: gone from recall a few days later).
- A one-off keeps its day: "I'm off on Friday" and "The offsite is now on Thursday" (a
  move) are over after that day (kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.chat import zoned_chat

TZ = "Europe/Lisbon"
INES = {"user_id": "ines", "project_id": "home", "session_id": "chat"}
SAID = {  # name: (what Ines says, the proposal's type and content)
    "from now on": ("Standup is on Thursday from now on.", "fact", "The team standup is on Thursday from now on."),
    "going forward": ("Going forward, the design review is on Wednesday.", "fact",
                      "Going forward, the design review is on Wednesday."),
    "henceforth": ("Henceforth payroll runs on Friday.", "fact", "Henceforth payroll runs on Friday."),
    "off": ("I'm off on Friday.", "fact", "Ines is off on Friday."),
    "offsite": ("The offsite is now on Thursday.", "event", "The offsite is now on Thursday."),
}


@pytest.fixture(scope="module")
def ines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with zoned_chat(tmp_path_factory, "standing", INES, TZ) as chat:
        for name, (said, type_, content) in SAID.items():
            chat.say(name, chat.yesterday, said, {"type": type_, "title": name, "content": content,
                                                   "why_store": "she said so"})
        yield {name: chat.item(chat.ids[name])["item"] for name in SAID}


@pytest.mark.parametrize("name", ["from now on", "going forward", "henceforth"])
def test_a_standing_change_holds_with_no_end(ines, name) -> None:
    assert ines[name]["valid_to"] is None, ines[name]  # before the fix: the coming weekday's end


@pytest.mark.parametrize("name", ["off", "offsite"])
def test_a_one_off_is_over_after_its_day(ines, name) -> None:
    assert ines[name]["valid_to"] is not None, ines[name]
