"""Edits and moves a new user makes over a few days (the fifteenth new-user trial), over
HTTP: Noor's turns and her chat model's proposals land on `/v1/turns` with `at` and her zone,
her model edits with `memory.update`, `/v1/recall` is asked in the same zone; checked when
they land, and again after a real Dagster consolidation and the snapshot swap.

- A move names the plan it moves under another title: "Dentist appointment on <day> at
  3pm", then "The dentist got moved to <a later day>" kept as "Dentist", replaces the first
  (broken: a move was only checked against to-dos of its own title, and "Dentist" beside
  "Dentist appointment" read as a case of it). Each holds until the end of its day: a
  to-do's weekday, and the day a plan moved to, is the coming one (broken: no window, so a
  past appointment was never marked ENDED).
- An edit of what a memory says that holds from a later day ("From <date>, my address is
  Rua Nova 5", made with `memory.update` on the address) takes over then, as a proposal
  saying so does: the address stands, current, until the day before, and the new words are
  a memory of their own, UPCOMING until that day (broken: the edit rewrote the address in
  place, so the only address known until the move was the one that did not hold yet). A plan
  corrected before it holds ("from <a day later>") is corrected in place.
- What holds now comes before what takes it over later (broken: the UPCOMING address could
  rank first).
- Scope priority counts when the words barely meet: the project's "4-space indentation"
  comes before her own "2-space" habit, both marked SCOPE.
- A turn sent again under its id with another `at` is a 409 naming both times, not a
  silent 201 that keeps the first (a retry without `at`, or with the same instant written
  otherwise, is answered as stored).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from pipelines.recall.dates import WEEKDAYS
from tests.e2e.chat import curated, entry_header, zoned_chat
from tests.e2e.test_trial12_weeks import consolidate

TZ = "Asia/Karachi"  # UTC+5 all year
ZONE = ZoneInfo(TZ)
NOOR = {"user_id": "noor", "project_id": "home", "session_id": "chat"}


def weekday(day: date) -> str:
    return WEEKDAYS[day.weekday()].capitalize()


@pytest.fixture(scope="module")
def noor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with zoned_chat(tmp_path_factory, "takeover", NOOR, TZ) as chat:
        client, today, yesterday, say, item, recall = chat.client, chat.today, chat.yesterday, chat.say, chat.item, \
            chat.recall
        out: dict[str, Any] = {"today": today, "ids": chat.ids, "first": today + timedelta(days=2),
                               "moved to": today + timedelta(days=4), "move": today + timedelta(days=3)}

        first, moved_to = out["first"], out["moved to"]
        say("appointment", yesterday, f"I have a dentist appointment on {weekday(first)} at 3pm.",
            {"type": "todo", "title": "Dentist appointment", "why_store": "she said so",
             "content": f"Dentist appointment on {weekday(first)} at 3pm."})
        out["moved"] = say("moved", yesterday + timedelta(hours=2), f"The dentist got moved to {weekday(moved_to)}.",
                           {"type": "todo", "title": "Dentist", "why_store": "she said so",
                            "content": f"The dentist got moved to {weekday(moved_to)}."})
        out["dentist"] = recall("when is the dentist?")

        say("address", yesterday - timedelta(days=20), "I live at Rua Velha 12, Lisbon.",
            {"type": "fact", "title": "Home address", "content": "Noor lives at Rua Velha 12, Lisbon.",
             "why_store": "she said so"})
        move = out["move"]
        out["edit"] = chat.tool("memory.update", {
            "id": out["ids"]["address"], "tz": TZ,
            "patch": {"content": f"From {move:%B} {move.day}, Noor's address is Rua Nova 5, Lisbon."}})
        out["ids"]["new address"] = out["edit"]["item_id"]
        out["address"] = recall("what's my address?")
        # a plan corrected before it holds: in place ("from <a day later>", not "from <move>")
        later = move + timedelta(days=1)
        say("gym", yesterday, f"From {move:%B} {move.day}, my gym membership is 40 euros a month.",
            {"type": "fact", "title": "Gym membership", "why_store": "she said so",
             "content": f"From {move:%B} {move.day}, Noor's gym membership is 40 euros a month."})
        out["correction"] = chat.tool("memory.update", {
            "id": out["ids"]["gym"], "tz": TZ,
            "patch": {"content": f"From {later:%B} {later.day}, Noor's gym membership is 40 euros a month."}})
        out["items"] = {name: item(item_id) for name, item_id in out["ids"].items()}

        # her own habit beside her project's rule, on one subject the question never names
        say("atlas indentation", yesterday, "In atlas the team agreed on 4-space indentation.",
            {"type": "decision", "title": "Atlas indentation", "why_store": "team decision",
             "content": "The atlas codebase uses 4-space indentation."})
        say("my indentation", yesterday, "For myself I like 2-space indentation.",
            {"type": "preference", "title": "Indentation", "scope": "user", "why_store": "her habit",
             "content": "Noor prefers 2-space indentation."})
        out["indent"] = recall("how many spaces do I indent with?")

        def resend(at: str | None) -> Any:
            return client.post("/v1/turns", json={"identity": NOOR, "role": "user", "text": "Back from the dentist.",
                                                  "turn_id": "turn_noor_1", **({"at": at} if at else {})})
        said = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=2)
        out["resent"] = [resend(said.isoformat()), resend(said.astimezone(ZONE).isoformat()), resend(None),
                         resend((said - timedelta(hours=1)).isoformat())]

        consolidate(client, chat.settings)
        out["history"] = item(out["ids"]["address"])["revisions"]
        out["after"] = {"items": {name: item(item_id)["item"] for name, item_id in out["ids"].items()},
                        "address": recall("what's my address?"), "dentist": recall("when is the dentist?")}
        yield out


def test_a_move_replaces_the_plan_it_names_under_another_title(noor) -> None:
    ids, items = noor["ids"], noor["items"]
    assert noor["moved"]["supersedes"] == [ids["appointment"]], noor["moved"]
    assert items["appointment"]["item"]["valid_to"][:10] == noor["first"].isoformat(), items["appointment"]["item"]
    assert items["moved"]["item"]["valid_to"][:10] == noor["moved to"].isoformat(), items["moved"]["item"]
    for answer in (noor["dentist"], noor["after"]["dentist"]):
        shown = curated(answer)
        assert ids["moved"] in shown and ids["appointment"] not in shown, answer["hits"]
    assert noor["after"]["items"]["appointment"]["superseded_by"] == ids["moved"]


def test_an_edit_holding_from_a_later_day_takes_over_then(noor) -> None:
    ids, items, move, edit = noor["ids"], noor["items"], noor["move"], noor["edit"]
    assert ids["new address"] != ids["address"] and edit["ends"] == [ids["address"]], edit
    old, new = items["address"]["item"], items["new address"]["item"]
    assert old["content"] == "Noor lives at Rua Velha 12, Lisbon." and old["superseded_by"] is None, old
    assert old["valid_to"][:10] == (move - timedelta(days=1)).isoformat(), old
    assert new["valid_from"][:10] == move.isoformat() and new["valid_to"] is None, new
    correction, gym = noor["correction"], items["gym"]["item"]
    assert correction["item_id"] == ids["gym"] and "ends" not in correction, correction
    assert gym["valid_from"][:10] == (move + timedelta(days=1)).isoformat(), gym
    assert new["metadata"]["takes_over"] == ids["address"] and new["scope"]["kind"] == old["scope"]["kind"], new
    # the old address's history says who ended it, and keeps what it said
    history = noor["history"]
    assert history[0]["reason"] == "create" and history[0]["snapshot"]["valid_to"] is None, history
    (ended,) = [r for r, before in zip(history[1:], history) if r["snapshot"]["valid_to"] != before["snapshot"][
        "valid_to"]]
    assert (ended["reason"], ended["actor"]) == ("ended", "noor"), history
    assert ended["snapshot"]["valid_to"] == old["valid_to"], history
    assert ended["snapshot"]["content"] == history[0]["snapshot"]["content"] == old["content"], history
    after = noor["after"]["items"]
    assert after["address"]["valid_to"] == old["valid_to"] and after["new address"]["valid_from"] == new["valid_from"]


def test_what_holds_now_comes_before_what_takes_it_over(noor) -> None:
    ids = noor["ids"]
    for answer in (noor["address"], noor["after"]["address"]):
        assert curated(answer)[:2] == [ids["address"], ids["new address"]], answer["hits"]
        old, new = entry_header(answer, ids["address"]), entry_header(answer, ids["new address"])
        assert " | ENDED" not in old and " | UPCOMING" not in old and " | UPCOMING" in new, (old, new)


def test_the_projects_rule_comes_before_her_own_habit_both_marked(noor) -> None:
    # (broken: "Noor prefers 2-space" and "the atlas codebase uses 4-space" shared one word,
    # so they were two subjects: her habit first, unmarked, and the block said to follow it)
    ids, answer = noor["ids"], noor["indent"]
    assert curated(answer)[:2] == [ids["atlas indentation"], ids["my indentation"]], answer["hits"]
    assert "SCOPE=project" in entry_header(answer, ids["atlas indentation"]), answer["injection"]
    assert "SCOPE=user" in entry_header(answer, ids["my indentation"]), answer["injection"]


def test_a_turn_resent_with_another_time_is_a_conflict(noor) -> None:
    first, same_instant, no_time, other_time = noor["resent"]
    assert first.status_code == 201, first.text
    for retry in (same_instant, no_time):
        assert retry.status_code == 201 and retry.json()["seq"] == first.json()["seq"], retry.text
    assert other_time.status_code == 409 and "landed said at" in other_time.json()["error"], other_time.text
