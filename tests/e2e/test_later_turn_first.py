"""Dated raw turns that say two things of one subject (a user trial's finding): with no
curated memory, "The billing-api release is on Friday, December 4." (said 2026-11-20) and
"the billing-api release slipped to Tuesday, December 8." (said 2026-11-26) both come back
as conversation excerpts for "When is the billing-api release?". They came oldest first,
nothing saying the Friday turn was out of date. Now the later turn comes first and the
earlier one is marked as said earlier, a later turn saying otherwise. Two turns of one
subject that do not contradict (hiking on Saturday, hiking again on Sunday) are both shown
unmarked: two events, not a correction. Nor are two plans of the speaker's that differ only
in the day ("I'll be at the climbing gym on Monday" / "... on Wednesday", which was marked),
unless the later says the plan moved ("got pushed back to Friday"), however the two word it
("I'm meeting Priya for dinner on Thursday" / "Dinner with Priya got pushed back to Friday")."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.recall.render import SAID_EARLIER
from tests.assets.support import write_jsonl
from tests.e2e.chat import recall

MARK = SAID_EARLIER.split(";")[0]
DEV = {"user_id": "dev", "project_id": "billing-api", "session_id": "s1", "org_id": "default"}


def ingest(settings, tmp_path, monkeypatch, rows: list[tuple[str, str]]) -> None:
    """`loci ingest` of an exported chat: the user's turns `rows` (said at, text)."""
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the store's embedder
    exported = write_jsonl(tmp_path / "chat.jsonl", [{**DEV, "role": "user", "at": at, "text": text}
                                                     for at, text in rows])
    result = CliRunner().invoke(cli_app, ["ingest", str(exported), "--data-dir", str(settings.data_dir)])
    assert result.exit_code == 0, result.output


def excerpts(found: dict) -> list[str]:
    """The injected turns, in block order, each as its header and text."""
    part = (found["injection"] or "").split("CONVERSATION EXCERPTS", 1)[-1]
    return re.findall(r"\[TURN: [^\]]*\]\n[^\n]*", part)


def test_the_later_of_two_contradicting_turns_comes_first_and_the_earlier_is_marked(service, tmp_path,
                                                                                  monkeypatch) -> None:
    client, settings = service
    ingest(settings, tmp_path, monkeypatch, [
        ("2026-11-20T10:00:00Z", "The billing-api release is on Friday, December 4."),
        ("2026-11-20T10:05:00Z", "I went hiking with my sister on Saturday."),
        ("2026-11-26T10:00:00Z", "the billing-api release slipped to Tuesday, December 8."),
        ("2026-11-26T10:05:00Z", "I'm going hiking at Mount Tam on Sunday with Ben."),
        ("2026-11-20T10:10:00Z", "I'll be at the climbing gym on Monday."),
        ("2026-11-26T10:10:00Z", "I'll be at the climbing gym on Wednesday."),
        ("2026-11-20T10:15:00Z", "I'm meeting Priya for dinner on Thursday."),
        ("2026-11-26T10:15:00Z", "Dinner with Priya got pushed back to Friday."),
    ])
    found = recall(client, DEV, "When is the billing-api release?")
    shown = excerpts(found)
    assert len(shown) == 2, shown
    later, earlier = shown
    later_id = later.split(" | ", 1)[0].removeprefix("[TURN: ")
    assert "Tuesday, December 8" in later and "2026-11-26" in later and MARK not in later, shown
    assert "Friday, December 4" in earlier and "2026-11-20" in earlier, shown
    assert SAID_EARLIER.format(later_id) in found["injection"].split(earlier, 1)[1].split("[/TURN]")[0], shown
    # two events of one subject, not a correction: both shown, neither marked
    found = recall(client, DEV, "When did I go hiking?")
    shown = excerpts(found)
    assert len(shown) == 2 and MARK not in found["injection"], shown
    # two plans that differ only in the day, nothing said to change: two visits, unmarked
    found = recall(client, DEV, "When will I be at the climbing gym?")
    shown = excerpts(found)
    assert len(shown) == 2 and MARK not in found["injection"], shown
    # a plan of the speaker's the later turn says was moved ("pushed back"): marked
    found = recall(client, DEV, "When is dinner with Priya?")
    shown = excerpts(found)
    assert len(shown) == 2 and "Friday" in shown[0] and MARK in found["injection"].split(shown[1], 1)[1], shown


def test_a_later_turn_marks_an_earlier_one_only_when_it_denies_what_that_one_said(service, tmp_path,
                                                                                  monkeypatch) -> None:
    """A negation elsewhere in a chatty turn ("Didn't expect them to love fishing"), after
    "and" ("... and never quit"), in a tag question ("isn't it?") or an idiom ("Can't wait
    for ...") denies nothing of an earlier turn it shares words with (on LoCoMo every pair
    marked as said otherwise by a denial was such a pair); a turn whose negation is about
    what the earlier one said ("not actually allergic to penicillin") still marks it."""
    client, settings = service
    ingest(settings, tmp_path, monkeypatch, [
        ("2026-11-20T10:00:00Z", "Camping at the lake with the kids was so much fun!"),
        ("2026-11-27T10:00:00Z", "We went camping at the lake with the kids again, so fun. "
                                 "Didn't expect them to love fishing that much."),
        ("2026-11-20T10:05:00Z", "I'm allergic to penicillin."),
        ("2026-11-27T10:05:00Z", "The allergy test came back negative, I'm not actually allergic to penicillin."),
        # a negation after "and" denies what follows it; a tag question or "can't wait" denies nothing
        ("2026-11-20T10:10:00Z", "I'm gonna keep going after my dreams."),
        ("2026-11-27T10:10:00Z", "Keep going after your dreams and never quit!"),
        ("2026-11-20T10:15:00Z", "The lake was so calm this morning."),
        ("2026-11-27T10:15:00Z", "The lake is so calm in the morning, isn't it?"),
        ("2026-11-20T10:20:00Z", "We're going to the grand opening tomorrow!"),
        ("2026-11-27T10:20:00Z", "Can't wait for the grand opening tomorrow!"),
    ])
    for question in ("How was camping at the lake with the kids?", "Should I keep going after my dreams?",
                     "Is the lake calm in the morning?", "When is the grand opening?"):
        found = recall(client, DEV, question)
        shown = excerpts(found)
        assert len(shown) >= 2 and MARK not in found["injection"], (question, shown)
    found = recall(client, DEV, "Am I allergic to penicillin?")
    shown = excerpts(found)
    assert len(shown) == 2 and "negative" in shown[0] and MARK in found["injection"].split(shown[1], 1)[1], shown


def test_turns_that_open_alike_or_answer_someone_are_not_marked_as_said_otherwise(service, tmp_path,
                                                                                 monkeypatch) -> None:
    """Chat turns open with thanks and answer someone by name ("Thanks! The Nike and Gatorade
    deals ...", "No problem, John! ..."): the opener is no subject they share, nor is whom
    they answer a value they state, so a later turn that opens alike is not taken to say
    otherwise of an earlier one (on LoCoMo most pairs of turns marked so were such pairs)."""
    client, settings = service
    ingest(settings, tmp_path, monkeypatch, [
        ("2026-11-20T10:00:00Z", "Thanks! The Nike and Gatorade deals have me stoked!"),
        ("2026-11-27T10:00:00Z", "Thanks! The Wolves are my team for sure, and LeBron is the man."),
        ("2026-11-20T10:05:00Z", "No problem, John! It's great to feel this sense of community."),
        ("2026-11-27T10:05:00Z", "No problem, Maria! Working with passionate people like you is great."),
    ])
    for question in ("What did I say about Nike, Gatorade, the Wolves and LeBron?",
                     "What did I say about community and working with passionate people?"):
        found = recall(client, DEV, question)
        shown = excerpts(found)
        assert len(shown) == 2 and MARK not in found["injection"], shown
