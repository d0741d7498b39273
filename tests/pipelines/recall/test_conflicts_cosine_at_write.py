"""The write-time check (`contradicted`) reads the proposal's cosine with a stored claim as recall
reads two stored claims' (`CHANGED_CLOSE`), under two titles and when one says it changed."""

from __future__ import annotations

import numpy as np

from pipelines.recall.conflicts import CHANGED_COSINE, contradicted, find_conflicts, proposed_claim
from pipelines.recall.conflicts.values import stated_values
from pipelines.records import MemoryItem, Scope

RULE = MemoryItem(id="rule", tier="ltm", type="decision", title="Incident channel",
                  content="Incidents are posted in #ops-alerts.", scope=Scope(kind="project", project_id="p"))


def reasons(title: str, content: str, cosine: float | None) -> list[str]:
    new = proposed_claim(title, content, "decision")
    return [why for _, why in contradicted(new, [RULE], None if cosine is None else (lambda _old: cosine))]


def test_a_change_close_in_meaning_under_another_title_is_found_with_the_cosine_only() -> None:
    change = ("On-call alerts", "We switched incident reports over to #incident-room.")
    assert reasons(*change, None) == []  # words alone: nothing shared
    assert reasons(*change, CHANGED_COSINE) == ["close in meaning, one says it changed"]
    assert reasons(*change, CHANGED_COSINE - 0.01) == []
    # the same signal recall reads of the two stored claims
    stored = MemoryItem(id="new", tier="ltm", type="decision", title=change[0], content=change[1], scope=RULE.scope)
    close = CHANGED_COSINE + 0.01
    vectors = {"rule": [1.0, 0.0], "new": [close, (1 - close ** 2) ** 0.5]}

    found = find_conflicts([RULE, stored], lambda it: np.asarray(vectors[it.id], np.float32))
    assert [why for _, _, why in found] == ["close in meaning, one says it changed"]


def test_a_write_asks_no_cosine_unless_the_proposal_says_it_changed_under_another_title() -> None:
    asked: list[str] = []

    def cosine_to(old: MemoryItem) -> float:
        asked.append(old.id)
        return 0.99

    restated = proposed_claim("On-call alerts", "Incident reports go to #incident-room.", "decision")
    assert list(contradicted(restated, [RULE], cosine_to)) == [] and asked == []
    # under one title the title says one subject: whether it replaces is the words' call
    same_title = proposed_claim("Incident channel", "We switched incident reports over to #incident-room.",
                                "decision")
    assert [why for _, why in contradicted(same_title, [RULE], cosine_to)] == [
        why for _, why in contradicted(same_title, [RULE])] and asked == []
    # a write replaces or holds on what the proposal says: a stored claim's change is recall's to flag
    changed = MemoryItem(id="changed", tier="ltm", type="decision", title="On-call alerts",
                         content="We switched incident reports over to #incident-room.", scope=RULE.scope)
    plain = proposed_claim("Incident channel", "Incidents are posted in #ops-alerts.", "decision")
    assert list(contradicted(plain, [changed], cosine_to)) == [] and asked == []


def _asked(proposal: str, stored: str, title: str = "Earlier") -> tuple[list[str], list[str]]:
    """The reasons a write gives against `stored` with every cosine 0.99, and whether it asked."""
    asked: list[str] = []

    def cosine_to(old: MemoryItem) -> float:
        asked.append(old.id)
        return 0.99

    old = MemoryItem(id="old", tier="ltm", type="fact", title=title, content=stored, scope=RULE.scope)
    new = proposed_claim("Later", proposal, "fact")
    return [why for _, why in contradicted(new, [old], cosine_to)], asked


def test_a_write_asks_the_cosine_only_when_the_proposal_states_that_what_the_claim_states_changed() -> None:
    # the change word is about what the stored claim states, in a phrase of the proposal's own
    for proposal, stored in (("Offsite got moved to October.", "The team offsite is in September."),
                             ("cancelled netflix, we only have disney+ now", "We pay for Netflix premium."),
                             ("I don't smoke anymore - 3 months clean.", "I smoke about half a pack a day."),
                             ("quit duolingo, doing spanish with a tutor instead", "I learn Spanish on Duolingo.")):
        assert _asked(proposal, stored) == (["close in meaning, one says it changed"], ["old"]), proposal
    # chat: a denied change, a change of something else, a bare "now", a question
    for proposal, stored in (("Thanks, Gina! I won't quit, even when it's hard.", "I won't quit on my dreams."),
                             ("Dancing makes me so happy, and now I get to share that with others.",
                              "I'm passionate about dancing."),
                             ("Hiking has opened up a new world and I feel like a different person now.",
                              "I think I am an expert hiker now, I feel like it."),
                             ("Have you switched your diet to dairy-free?", "I'm trying dairy-free options.")):
        assert _asked(proposal, stored) == ([], []), proposal


def test_a_title_before_a_name_gives_the_name_as_the_value() -> None:
    assert stated_values("Dr. Okafor is our family doctor now.") == {"okafor"}
    assert stated_values("Our family doctor is Dr. Patel.") == {"patel"}
    # found by the words alone: one subject, the names differ
    assert _asked("Dr. Okafor is our family doctor now.", "Our family doctor is Dr. Patel.")[0] == [
        "same subject, different values"]


def test_a_sentence_that_says_it_corrects_asks_the_cosine_of_what_it_names() -> None:
    for proposal, stored in (("Scratch that, retro is every other Thursday.", "Sprint retro is every other Friday."),
                             ("Turns out the venue is the Old Mill.", "The party venue is the Corn Exchange.")):
        assert _asked(proposal, stored)[1] == ["old"], proposal
    # a correction of something else asks nothing
    assert _asked("Scratch that, lunch is at the deli.", "Sprint retro is every other Friday.") == ([], [])


def test_a_bare_now_counts_with_a_value_its_sentence_states() -> None:
    assert _asked("We moved to York in the summer and live there now.", "We live in Leeds.")[1] == ["old"]
    assert _asked("I love the park and I walk there every day now.", "I walk in the park.") == ([], [])
