"""A command written as code is a value: after "We switched the api tests to `pytest -n
auto` instead of `pytest -q`", the model's note "The api tests now run with `pytest -n
auto`." under another title replaces "Run the test suite with `pytest -q`." at write, and
recall gives the new command as what holds. Before, a code span stated no value, so the
two were not read as one thing with two values and recall showed both as current."""

from tests.e2e.chat import consolidate, recall, turn
from tests.online.test_proxy import block

KAI = {"user_id": "kai", "project_id": "api", "session_id": "s1"}
OLD = {"type": "fact", "title": "Test command", "content": "Run the test suite with `pytest -q`."}
NEW = {"type": "fact", "title": "Running the api tests", "content": "The api tests now run with `pytest -n auto`."}


def test_a_switched_command_replaces_the_old_one_across_titles(service) -> None:
    client, settings = service
    outcomes = []
    for said, item in [("In this repo the tests run with `pytest -q`.", OLD),
                       ("We switched the api tests to `pytest -n auto` instead of `pytest -q`.", NEW)]:
        turn(client, KAI, "user", said)
        answer = turn(client, KAI, "assistant", "Noted. " + block({**item, "why_store": "x", "confidence": 0.9}))
        outcomes += answer["proposals"]
    old, new = outcomes
    assert old["item_id"] in new["supersedes"], new
    consolidate(client, settings)
    block_text = recall(client, KAI, "How do I run the tests in this repo?")["injection"]
    curated = block_text.split("CONVERSATION EXCERPTS")[0]
    assert "pytest -n auto" in curated and "Run the test suite with `pytest -q`" not in curated, block_text
