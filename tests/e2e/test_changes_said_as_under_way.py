"""Changes said as under way or in the present, over the tool API: "The vet appointment is
moving to Friday" (a to-do rescheduled), "Our team is switching from sprints to kanban"
(one thing for another, under the old one's title) replace what they change at write time,
as "moved to Friday" / "switched to kanban" did (broken: only "moved" read as a reschedule,
and "from X to Y" said nothing changed, so both notes stood side by side). Two releases
named noun first ("Release 4.2 ships on Friday" / "Release 4.3 ships on Monday") are two
things, not one date said twice (broken: "4.2 ships" read as a count, flagged as one
subject)."""

from __future__ import annotations

from tests.e2e.chat import recall, tool

WHO = {"user_id": "maya", "project_id": "home", "session_id": "s1"}


def write(client, type_: str, title: str, content: str) -> dict:
    (outcome,) = tool(client, WHO, "memory.propose",
                      {"items": [{"type": type_, "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome


def test_a_plan_said_to_be_moving_replaces_the_first(service) -> None:
    client, _ = service
    vet = write(client, "todo", "Vet", "Vet appointment for Biscuit next Wednesday at 10am.")
    moved = write(client, "todo", "Vet", "Biscuit's vet appointment is moving to Friday.")
    assert moved["supersedes"] == [vet["item_id"]], moved


def test_a_switch_from_one_thing_to_another_replaces_the_first(service) -> None:
    client, _ = service
    sprints = write(client, "decision", "Team process", "Our team works in two-week sprints.")
    kanban = write(client, "decision", "Team process", "Our team is switching from sprints to kanban.")
    assert kanban["supersedes"] == [sprints["item_id"]], kanban
    ids = [h["id"] for h in recall(client, WHO, "how does our team plan its work?")["hits"]]
    assert kanban["item_id"] in ids and sprints["item_id"] not in ids, ids


def test_two_releases_named_noun_first_are_two_things(service) -> None:
    client, _ = service
    first = write(client, "fact", "Releases", "Release 4.2 ships on Friday.")
    second = write(client, "fact", "Release dates", "Release 4.3 ships on Monday.")
    assert second["supersedes"] == [], second
    got = recall(client, WHO, "when do the releases ship?", mode="hybrid")
    flagged = [h["id"] for h in got["hits"] if h.get("conflict_with")]
    assert {first["item_id"], second["item_id"]} <= {h["id"] for h in got["hits"]}, got["hits"]
    assert flagged == [], got["hits"]
