"""Plans that move, over HTTP (left open by the fourteenth trial): Ines's turns and her chat
model's proposals land on `/v1/turns` with `at` and her zone; `/v1/recall` is asked in the
same zone. What is decided when a turn lands or an edit is made is checked then, and again
after a real Dagster consolidation (`run_consolidation`) and the snapshot swap.

- A rescheduled appointment replaces the first one: "The dentist is next Tuesday at 3pm",
  then "Dentist moved to Thursday", kept by the model as to-dos (not claims), leaves
  Thursday's, and Tuesday's is superseded (broken: Tuesday's stood, shown first: to-dos
  were never corrected, and Tuesday's window kept the move "apart in time" from it).
- A move from a date ends the old address the day before: before it, the old address is
  current (its window ends the day before the move) and the new one UPCOMING; after it,
  the new office holds and comes first, the old one is ENDED (broken: the two were shown
  flagged as one title's notes, nothing ending the old one, which never became history).
- A move whose date is corrected leaves no day with nothing current: "From <day> my studio
  is Rua do Sol 3", then "the studio move is two days later: from <day+2>", replaces the
  first plan, and the old studio holds until the day before the new start (broken: the old
  one still ended before the first date, the first plan held two days, both shown). The
  same move made by editing the plan (`memory.update`, "from <day+2>") keeps the old
  locker until the day before the new start too.
- An edit of what a memory says reads its time words again, on the day of the edit, in
  the editor's zone: "Call the bank next Monday" edited to "Call the bank next Friday" ends
  on that Friday (broken: its window stayed Monday's); an edit that names the window
  itself keeps it.
- A plan said twice, merged by consolidation, still says what its time words meant the day
  they were said (broken: the merged item lost its members' "Said on ..." note).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.chat import curated, entry_header, zoned_chat
from tests.e2e.test_trial12_weeks import consolidate

TZ = "Europe/Lisbon"
ZONE = ZoneInfo(TZ)
INES = {"user_id": "ines", "project_id": "home", "session_id": "chat"}


def coming(day: date, weekday: int) -> date:
    """`next <weekday>` said on `day`: the first such day after it."""
    return day + timedelta(days=(weekday - day.weekday()) % 7 or 7)


def proposal(type_: str, title: str, content: str) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so"}


@pytest.fixture(scope="module")
def ines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with zoned_chat(tmp_path_factory, "moves", INES, TZ) as chat:
        client, today, yesterday, say, tool, recall = chat.client, chat.today, chat.yesterday, chat.say, chat.tool, \
            chat.recall
        move = today + timedelta(days=3)
        out: dict[str, Any] = {"today": today, "said": yesterday.date(), "move": move, "ids": chat.ids}

        def item(name: str) -> dict:
            return chat.item(chat.ids[name])["item"]

        say("tuesday", yesterday, "The dentist is next Tuesday at 3pm.",
            proposal("todo", "Dentist", "Dentist appointment next Tuesday at 3pm."))
        out["moved"] = say("thursday", yesterday + timedelta(hours=2), "Dentist moved to Thursday.",
                           proposal("todo", "Dentist", "Dentist moved to Thursday."))
        out["dentist"] = recall("when is the dentist?")

        say("old address", yesterday - timedelta(days=20), "I live at Rua Velha 12, Lisbon.",
            proposal("fact", "Home address", "Ines lives at Rua Velha 12, Lisbon."))
        out["address said"] = say(
            "new address", yesterday + timedelta(hours=3), f"My new address from {move:%B} {move.day} is Rua Nova 5.",
            proposal("fact", "Home address", f"From {move:%B} {move.day}, Ines's address is Rua Nova 5, Lisbon."))
        out["address"] = recall("what's my address?")
        # a move that has happened: said twelve days ago, from five days ago
        moved = today - timedelta(days=5)
        out["moved on"] = moved
        say("old office", yesterday - timedelta(days=40), "My office is at Avenida da Liberdade 10.",
            proposal("fact", "Office", "Ines's office is at Avenida da Liberdade 10."))
        say("new office", yesterday - timedelta(days=11), f"From {moved:%B} {moved.day} my office is Rua do Ouro 7.",
            proposal("fact", "Office", f"From {moved:%B} {moved.day}, Ines's office is at Rua do Ouro 7."))
        out["office"] = recall("where is my office?")

        # a move whose date is corrected before it: one plan, the old studio holds until then
        plan, moved_plan = today + timedelta(days=4), today + timedelta(days=6)
        out["studio moves"] = (plan, moved_plan)
        say("old studio", yesterday - timedelta(days=30), "My studio is at Rua Larga 2.",
            proposal("fact", "Studio", "Ines's studio is at Rua Larga 2, Lisbon."))
        say("studio plan", yesterday, f"From {plan:%B} {plan.day} my studio is Rua do Sol 3.",
            proposal("fact", "Studio", f"From {plan:%B} {plan.day}, Ines's studio is at Rua do Sol 3, Lisbon."))
        out["studio moved"] = say(
            "studio moved", yesterday + timedelta(hours=4), f"The studio move is later: from {moved_plan:%B} "
            f"{moved_plan.day}.", proposal("fact", "Studio",
                                           f"From {moved_plan:%B} {moved_plan.day}, Ines's studio is at Rua do Sol 3, "
                                           "Lisbon."))
        out["studio"] = recall("where is my studio?")
        say("old locker", yesterday - timedelta(days=30), "My locker is number 12.",
            proposal("fact", "Locker", "Ines's locker is number 12."))
        say("locker plan", yesterday, f"From {plan:%B} {plan.day} my locker is number 40.",
            proposal("fact", "Locker", f"From {plan:%B} {plan.day}, Ines's locker is number 40."))
        out["locker edit"] = tool("memory.update", {"id": out["ids"]["locker plan"], "tz": TZ, "patch": {
            "content": f"From {moved_plan:%B} {moved_plan.day}, Ines's locker is number 40."}})

        say("bank", yesterday, "Remind me to call the bank next Monday.",
            proposal("todo", "Call the bank", "Call the bank next Monday."))
        tool("memory.update", {"id": out["ids"]["bank"], "patch": {"content": "Call the bank next Friday."},
                               "tz": TZ})
        say("passport", yesterday, "Renew my passport next Wednesday.",
            proposal("todo", "Passport", "Renew the passport next Wednesday."))
        tool("memory.update", {"id": out["ids"]["passport"], "patch": {
            "content": "Renew the passport next Friday.", "valid_to": "2031-01-31T23:59:59+00:00"}})
        # said twice the same day: one plan, merged by consolidation
        for n in (1, 2):
            say(f"parcel {n}", yesterday + timedelta(hours=n), "Pick up the parcel tomorrow.",
                proposal("todo", "Parcel", "Pick up the parcel at the post office tomorrow."))
        out["items"] = {name: item(name) for name in out["ids"]}
        consolidate(client, chat.settings)
        out["after"] = {"items": {name: item(name) for name in out["ids"]}, "dentist": recall("when is the dentist?"),
                        "office": recall("where is my office?"), "parcel": recall("when do I pick up the parcel?"),
                        "studio": recall("where is my studio?")}
        yield out


def test_a_rescheduled_appointment_replaces_the_first(ines) -> None:
    ids, items = ines["ids"], ines["items"]
    assert ines["moved"]["supersedes"] == [ids["tuesday"]], ines["moved"]
    assert items["tuesday"]["superseded_by"] == ids["thursday"], items["tuesday"]
    shown = curated(ines["dentist"])
    assert ids["thursday"] in shown and ids["tuesday"] not in shown, ines["dentist"]["hits"]


def test_a_move_from_a_date_ends_the_old_address_the_day_before(ines) -> None:
    ids, items, move = ines["ids"], ines["items"], ines["move"]
    assert items["new address"]["valid_from"][:10] == move.isoformat(), items["new address"]
    assert items["old address"]["superseded_by"] is None, items["old address"]
    assert items["old address"]["valid_to"][:10] == (move - timedelta(days=1)).isoformat(), items["old address"]
    # before the move: the old address holds, marked with its end; the new one is UPCOMING
    old, new = entry_header(ines["address"], ids["old address"]), entry_header(ines["address"], ids["new address"])
    assert f"VALID=..{(move - timedelta(days=1)).isoformat()}" in old and " | ENDED" not in old, old
    assert " | UPCOMING" in new and "SAME_TITLE" not in new, new
    # after it: the new office holds, first; the old one is history
    moved, answer = ines["moved on"], ines["office"]
    assert curated(answer)[:2] == [ids["new office"], ids["old office"]], answer["hits"]
    assert items["old office"]["valid_to"][:10] == (moved - timedelta(days=1)).isoformat(), items["old office"]
    assert " | ENDED" in entry_header(answer, ids["old office"]), answer["injection"]
    new = entry_header(answer, ids["new office"])
    assert " | ENDED" not in new and " | UPCOMING" not in new, new


def test_a_corrected_move_date_leaves_no_day_without_a_studio(ines) -> None:
    ids, (plan, moved) = ines["ids"], ines["studio moves"]
    assert ines["studio moved"]["supersedes"] == [ids["studio plan"]], ines["studio moved"]
    assert ines["studio moved"]["ends"] == [ids["old studio"]], ines["studio moved"]
    for items, answer in ((ines["items"], ines["studio"]), (ines["after"]["items"], ines["after"]["studio"])):
        old, first, new = items["old studio"], items["studio plan"], items["studio moved"]
        assert old["valid_to"][:10] == (moved - timedelta(days=1)).isoformat(), old
        assert first["superseded_by"] == ids["studio moved"] and first["valid_from"][:10] == plan.isoformat(), first
        assert new["valid_from"][:10] == moved.isoformat() and new["valid_to"] is None, new
        assert curated(answer)[:2] == [ids["old studio"], ids["studio moved"]], answer["hits"]
        assert ids["studio plan"] not in curated(answer), answer["hits"]
        assert items["old locker"]["valid_to"][:10] == (moved - timedelta(days=1)).isoformat(), items["old locker"]
        assert items["locker plan"]["valid_from"][:10] == moved.isoformat(), items["locker plan"]
    assert ines["locker edit"]["ends"] == [ids["old locker"]], ines["locker edit"]


def test_an_edit_reads_its_time_words_again(ines) -> None:
    items, said, today = ines["items"], ines["said"], ines["today"]
    friday = coming(today, 4)
    assert items["bank"]["content"] == "Call the bank next Friday."
    assert items["bank"]["valid_to"][:10] == friday.isoformat(), items["bank"]
    assert items["bank"]["metadata"]["said_dates"]["meant"] == {"next Friday": f"Fri {friday.isoformat()}"}
    assert coming(said, 0) != friday
    # an edit that names the window keeps it
    assert items["passport"]["valid_to"] == "2031-01-31T23:59:59+00:00", items["passport"]


def test_what_was_decided_holds_after_consolidation_and_a_merge_keeps_the_said_dates(ines) -> None:
    ids, after = ines["ids"], ines["after"]
    items = after["items"]
    assert items["tuesday"]["superseded_by"] == ids["thursday"] and items["thursday"]["superseded_by"] is None
    assert ids["tuesday"] not in curated(after["dentist"]) and ids["thursday"] in curated(after["dentist"])
    assert items["old office"]["valid_to"] == ines["items"]["old office"]["valid_to"], items["old office"]
    order = curated(after["office"])
    assert order.index(ids["new office"]) < order.index(ids["old office"]), after["office"]["hits"]
    merged = items["parcel 1"]["superseded_by"]
    assert merged and merged == items["parcel 2"]["superseded_by"], items["parcel 1"]
    said, tomorrow = ines["said"], ines["said"] + timedelta(days=1)
    entry = after["parcel"]["injection"].split(f"[MEMORY: {merged}")[1].split("[/MEMORY]")[0]
    assert f"(Said on {said:%a} {said.isoformat()}: tomorrow = {tomorrow:%a} {tomorrow.isoformat()}.)" in entry, entry
