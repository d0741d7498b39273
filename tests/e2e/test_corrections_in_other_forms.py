"""A team and its members keep facts through the tool API, and a fact changes in a form the
rule did not read as the same thing, under another title and with no cosine (words only):

- a count whose noun has a word before it: "We run 8 ingest workers in production", then
  "Production ingest has 12 workers now" (the rule took "ingest" for the unit: 8 ingests
  and 12 workers were two things);
- a change to a count: "Sprints are two weeks long", then "We moved to 3-week sprints"
  ("moved to" said no change, and "sprint" was the only word the two shared);
- a move away from where one was: "I commute to the office daily", then "I work remotely
  now" (no word shared; only a return, "back in the office", ended an absence).

Before, each correction was stored beside the fact it corrects and recall gave both. Now
the author's correction replaces it at write. And a day written two ways ("Dec 24" / "24
December") is one date: a teammate restating the launch day is no longer held for review as
contradicting it, while a teammate naming another day ("Dec 27") still is."""

from __future__ import annotations

from tests.e2e.chat import recall, tool

LEAD = {"user_id": "maya", "project_id": "ingest", "session_id": "m1"}
LATER = {**LEAD, "session_id": "m2"}
TEAMMATE = {"user_id": "theo", "project_id": "ingest", "session_id": "t1"}


def write(client, who: dict, title: str, content: str, scope: str = "project") -> dict:
    return tool(client, who, "memory.write", {"item": {"type": "fact", "title": title, "content": content},
                                              "default_scope": scope})


def propose(client, who: dict, title: str, content: str) -> dict:
    (outcome,) = tool(client, who, "memory.propose",
                      {"items": [{"type": "fact", "title": title, "content": content}]})["proposals"]
    return outcome


def test_a_count_corrected_in_another_form_replaces_the_old_one(service) -> None:
    client, _ = service
    for (old_title, old_text), (new_title, new_text), question, new_word, old_word in (
            (("Worker pool size", "We run 8 ingest workers in production."),
             ("Ingest workers", "Production ingest has 12 workers now."),
             "how many ingest workers run in production?", "12 workers", "8 ingest"),
            (("Sprint length", "Sprints are two weeks long."),
             ("Sprint cadence", "We moved to 3-week sprints."),
             "how long are our sprints?", "3-week", "two weeks")):
        old = write(client, LEAD, old_title, old_text)
        new = write(client, LATER, new_title, new_text)
        assert new["supersedes"] == [old["item_id"]], new
        block = recall(client, LEAD, question)["injection"]
        assert new_word in block and old_word not in block, block


def test_working_remotely_now_replaces_commuting_to_the_office(service) -> None:
    client, _ = service
    me = {"user_id": "sam", "project_id": "home", "session_id": "a"}
    old = write(client, me, "Commute", "I commute to the office daily.", scope="user")
    new = write(client, {**me, "session_id": "b"}, "Work setup", "I work remotely now.", scope="user")
    assert new["supersedes"] == [old["item_id"]], new
    block = recall(client, me, "do I go to the office?")["injection"]
    assert "remotely" in block and "commute to the office" not in block, block


def test_a_day_written_two_ways_is_one_date(service) -> None:
    client, _ = service
    launch = propose(client, LEAD, "Launch", "The public launch is on Dec 24.")
    assert launch["action"] == "accept", launch
    same = propose(client, TEAMMATE, "Launch date", "We launch publicly on 24 December.")
    assert "soft.contradiction" not in same["rule_ids"], same
    other = propose(client, TEAMMATE, "Launch day", "The public launch is on Dec 27.")
    assert other["action"] == "quarantine" and "soft.contradiction" in other["rule_ids"], other
