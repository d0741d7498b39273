"""The linear re-ordering of raw turns at the head of a ranking (`pipelines/recall/rerank.py`):
question shapes, which turns rise, what stays in place."""

from __future__ import annotations

import pytest

from pipelines.recall import RecallError, RecallOptions
from pipelines.recall.candidates import Candidate
from pipelines.recall.episodic import named_words
from pipelines.recall.query import asks_what_i_said, question_parts
from pipelines.recall.rerank import (
    WEIGHTS,
    asks_across_sessions,
    asks_for_several,
    asks_when,
    rerank_turns,
    rerankable,
    spread_over_sessions,
    turn_signals,
)
from pipelines.recall.select import session_mass
from pipelines.records import Provenance
from tests.pipelines.recall.test_engine import ME, corpus, engine, mem, turn


@pytest.mark.parametrize("question", [
    "What activities does Melanie partake in?", "Which cities has Jon visited?",
    "How many tournaments has Nate won?", "What do Jon and Gina both have in common?",
    "What kinds of pottery did they make?", "What are some changes she has faced?",
    "Which classical musicians does she enjoy?",
])
def test_questions_that_ask_for_several_things(question):
    assert asks_for_several(question)


@pytest.mark.parametrize("question", [
    "What did Caroline research?", "What is Caroline's identity?", "Where has Melanie camped?",
    "What kind of flooring is Jon looking for?", "Which song did she sing?", "Is this glass?",
])
def test_questions_that_ask_for_one_thing(question):
    assert not asks_for_several(question)


def test_questions_that_ask_when():
    assert asks_when("When did Melanie paint a sunrise?")
    assert asks_when("How long has Nate had his turtles?")
    assert asks_when("In what year did she move?")
    assert not asks_when("What did Melanie paint?")
    assert not asks_when("Where did they go camping?")


def chat():
    return [
        turn("q1", "Bob", "Lake camping trip.", "s-b", 1),
        turn("a1", "Ann", "We went on a camping trip at the lake with the kids last summer and we swam, "
                          "fished and hiked every day until the rain came.", "s-a", 2),
        turn("a2", "Ann", "The lake camping trip was our best yet, the kids still talk about it.", "s-a", 3),
        turn("a3", "Ann", "Camping by the lake again this year, the trip is booked.", "s-a", 4),
        turn("c1", "Bob", "I painted the fence blue.", "s-c", 5),
    ]


def ids(result) -> list[str]:
    return [h.item.id for h in result.hits]


def recall(question, items, **opts):
    return engine().recall(question, ME, corpus(items), mode="catalog", k=6,
                           options=RecallOptions(qstar=False, **opts))


def test_turns_that_state_more_in_a_matching_session_rise_over_a_bare_mention():
    question = "What camping trip at the lake did Ann talk about?"
    before = recall(question, chat(), rerank_pool=0)
    after = recall(question, chat())
    # the bare mention matches the words better than the long account of the trip (a turn that
    # only asks is no hit at all since episodic.states_nothing, so the bare turn is a fragment)
    assert ids(before).index("q1") < ids(before).index("a1")
    assert set(ids(after)) == set(ids(before))
    assert ids(after).index("a1") < ids(after).index("q1")
    assert all("rerank" in h.components for h in after.hits)
    # the turns take the slots' scores: scores still fall with rank
    assert [h.score for h in after.hits] == sorted((h.score for h in before.hits), reverse=True)


def test_a_question_that_asks_when_keeps_the_first_ranking():
    question = "When did Ann talk about a camping trip at the lake?"
    before, after = recall(question, chat(), rerank_pool=0), recall(question, chat())
    assert ids(after) == ids(before)
    assert [h.score for h in after.hits] == [h.score for h in before.hits]
    assert not any("rerank" in h.components for h in after.hits)


def test_a_curated_memory_keeps_its_slot():
    items = [*chat(), mem("m1", "Camping", "Ann's family goes camping at the lake every summer.",
                          kind="user", tier="ltm")]
    question = "What camping trip at the lake did Ann talk about?"
    before = ids(recall(question, items, rerank_pool=0))
    after = recall(question, items)
    assert ids(after).index("m1") == before.index("m1")
    assert "rerank" not in after.hits[ids(after).index("m1")].components


def test_rerank_pool_must_not_be_negative():
    with pytest.raises(RecallError):
        RecallOptions(rerank_pool=-1)


def test_ranking_stops_at_the_ranking_recall_would_show():
    question = "What camping trip at the lake did Ann talk about?"
    opts = RecallOptions(qstar=False)
    shown = engine().recall(question, ME, corpus(chat()), mode="catalog", k=6, options=opts)
    q = engine().ranking(question, ME, corpus(chat()), opts)
    assert [c.id for c in q.ranked][: len(shown.hits)] == ids(shown)
    assert q.hits == [] and q.injection == ""  # nothing rendered


def test_session_mass_sums_each_sessions_best_turns_and_skips_what_has_no_session():
    def cand(item, value):
        return Candidate(0, 0, item, "snapshot", relevance=value)

    cands = [cand(turn("a1", "Ann", "x", "s-a", 1), 0.5), cand(turn("a2", "Bob", "y", "s-a", 2), 0.25),
             cand(turn("a3", "Ann", "z", "s-a", 3), 0.125), cand(turn("b1", "Ann", "w", "s-b", 4), 0.75),
             cand(mem("m1", "Curated", "not a turn"), 1.0)]
    mass = session_mass(cands, lambda c: c.relevance, top=2)
    assert mass == {(ME.user_id, "s-a"): 0.75, (ME.user_id, "s-b"): 0.75}


@pytest.mark.parametrize("question, across", [
    ("What books has Melanie read?", True), ("How many times has Nate won a tournament?", True),
    ("What pets does Melanie have?", True), ("What kinds of art have they made?", True),
    ("What books did Melanie read?", False), ("Where has Melanie camped?", False),
    ("What did Caroline research?", False),
])
def test_questions_that_ask_across_sessions(question, across):
    assert asks_across_sessions(question) is across


def test_spread_over_sessions_lowers_each_turn_per_turn_of_its_session_already_picked():
    logits = [3.0, 2.9, 2.8, 2.5, 2.4]
    sessions = ["a", "a", "a", "b", None]
    assert spread_over_sessions(range(5), logits, sessions, 1.0, 10) == [0, 3, 4, 1, 2]
    assert spread_over_sessions(range(5), logits, sessions, 0.05, 10) == [0, 1, 2, 3, 4]
    # only the first `slots` are picked greedily, the rest keep their order
    assert spread_over_sessions(range(5), logits, sessions, 1.0, 2) == [0, 3, 1, 2, 4]


def book_chat():
    return [
        turn("a1", "Ann", "I read a book about the lake, the book was lovely.", "s-a", 1),
        turn("a2", "Ann", "That book about the lake was the best book I read.", "s-a", 2),
        turn("a3", "Ann", "I read the lake book again, what a book.", "s-a", 3),
        turn("b1", "Ann", "Finished a mystery novel last night, I read it in one go.", "s-b", 4),
        turn("c1", "Bob", "I painted the fence blue.", "s-c", 5),
    ]


def test_a_question_that_asks_across_sessions_gets_the_best_turn_of_another_session_in_the_head():
    question = "What books has Ann read?"
    assert asks_across_sessions(question)
    together = ids(engine().recall(question, ME, corpus(book_chat()), mode="catalog", k=3,
                                   options=RecallOptions(qstar=False, rerank_session_penalty=0.0)))
    spread = ids(engine().recall(question, ME, corpus(book_chat()), mode="catalog", k=3,
                                 options=RecallOptions(qstar=False)))
    assert set(together) == {"a1", "a2", "a3"}
    assert "b1" in spread and together[0] == spread[0]
    # a question that asks for one thing keeps its session together
    one = "What book did Ann read about the lake?"
    assert set(ids(engine().recall(one, ME, corpus(book_chat()), mode="catalog", k=3,
                                   options=RecallOptions(qstar=False)))) == {"a1", "a2", "a3"}


def test_rerank_session_penalty_must_not_be_negative():
    with pytest.raises(RecallError):
        RecallOptions(rerank_session_penalty=-0.5)


def test_named_words_are_capitalised_words_inside_sentences_outside_brackets():
    text = "Thanks, Caroline! We watched Little Women. Great. [shares a photo: a photo of Paris]"
    assert named_words(text) == {"caroline", "little", "women"}
    assert named_words("I'm fine. OK, all good!") == frozenset()
    assert named_words("Do you play, Melanie? I do, with Anna.") == {"anna"}  # not what a question names


def reading_chat():
    return [
        turn("a1", "Ann", "Books, books, I read books: the books I read are the books I love to read.", "s-a", 1),
        turn("a2", "Ann", "I read books and more books, reading books is what I do, books every day.", "s-a", 2),
        turn("a3", "Ann", "Reading books, I read books all the time, and I read books at night.", "s-a", 3),
        turn("n1", "Ann", "I read a book last week, the book was lovely and so calm to read.", "s-a", 4),
        turn("n2", "Ann", "I read Little Women last week, the book was lovely and so calm to read.", "s-a", 5),
        turn("c1", "Bob", "I painted the fence blue, Ann.", "s-c", 6),
    ]


def test_a_turn_that_names_something_rises_for_a_question_that_asks_for_several_things():
    question = "What books did Ann read?"
    assert asks_for_several(question) and not asks_across_sessions(question)
    q = engine().ranking(question, ME, corpus(reading_chat()), RecallOptions(qstar=False, rerank_pool=0))
    turns = rerankable(q.ranked, 60)
    names = {c.id: sig[-1] for (_, c), sig in zip(turns, turn_signals(q.search, turns, True))}
    assert names["n2"] == 1.0 and names["n1"] == 0.0  # "Little Women"; "Ann" is a speaker
    assert {c.id: sig[-1] for (_, c), sig in zip(turns, turn_signals(q.search, turns, False))}["n2"] == 0.0
    first = [c.id for c in q.ranked]
    assert first.index("n1") < first.index("n2")
    reranked = [c.id for c in rerank_turns(q.search, list(q.ranked), question, 60)]
    assert reranked.index("n2") < reranked.index("n1")
    without = [c.id for c in rerank_turns(q.search, list(q.ranked), question, 60, (*WEIGHTS[:-1], 0.0))]
    assert without.index("n1") < without.index("n2")


def said(id_: str, role: str, content: str, seq: int):
    return mem(id_, "", content, kind="user", type="message", provenance=Provenance(source_id=f"turn-{id_}"),
               metadata={"role": role, "session_id": "s1", "inbox_seq": seq})


def allergy_chat():
    return [
        said("mine", "user", "I'm allergic to penicillin.", 1),
        said("echo", "assistant", "Got it, you're allergic to penicillin. I'll never recommend penicillin or "
                                  "related antibiotics such as amoxicillin; ask your doctor about alternatives.", 2),
        said("other", "user", "My sister Lena moved to Porto.", 3),
        mem("note", "Allergy", "The user is allergic to penicillin.", kind="user", tier="ltm"),
    ]


@pytest.mark.parametrize(("question", "asks"), [
    ("What did I tell you about penicillin?", True), ("Did I ever mention my sister?", True),
    ("What have I said about the move?", True), ("remind me what I told you about Lena", True),
    ("what was it I said about the car", True), ("What did you tell me about penicillin?", False),
    ("What did we decide?", False), ("What did Caroline say about adoption?", False),
    ("What is penicillin?", False),
])
def test_questions_that_ask_what_the_caller_said(question, asks):
    assert asks_what_i_said(question) is asks


def test_asked_what_they_said_the_callers_own_turn_comes_before_an_echo_of_it():
    question = "What did I tell you about penicillin?"
    plain = ids(recall("Anything on penicillin?", allergy_chat()))
    assert plain.index("echo") < plain.index("mine"), plain  # the longer echo ranks first otherwise
    asked = recall(question, allergy_chat())
    order = ids(asked)
    assert order.index("mine") < order.index("echo"), order
    assert order.index("note") == plain.index("note") == 0  # a curated memory keeps its place
    assert "other" not in order[:order.index("echo")]  # her turn that does not say it stays put
    assert asked.hits[order.index("mine")].components["own_words"] == 1.0
    assert [h.score for h in asked.hits] == sorted((h.score for h in asked.hits), reverse=True)


@pytest.mark.parametrize(("question", "parts"), [
    ("Where does Maya live and what's her dog called?", ["Where does Maya live", "what's her dog called"]),
    ("Where is the cabin? What is the wifi called?", ["Where is the cabin", "What is the wifi called"]),
    ("What schools did John play in, and how many years was he there?",
     ["What schools did John play in", "how many years was he there"]),
    ("What charity might John work with and why?", []),  # "why" has no word of its own to search with
    ("When did Caroline go on a hike and have a bad time?", []),  # one thing: no question word after "and"
    ("What did Mel and Caroline do?", []),
    ("Who is my dentist?", []),
])
def test_the_parts_of_a_question_that_asks_several_things(question, parts):
    assert question_parts(question) == parts
