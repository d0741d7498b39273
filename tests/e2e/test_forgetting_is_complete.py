"""What forgetting promises a user, over HTTP: once they forget a memory the assistant
proposed, nothing finds it again, not the turns that said it nor the turns next to them,
in the live service, after a consolidation and in an export; and nothing more is hidden
than what said it.

- The turns next to them: a turn is indexed with its neighbours as retrieval context, so
  the turn after the one that said it was still found by the forgotten words (it never
  showed them), live and after every consolidation; a turn said after the forgetting was
  given them as context by the next consolidation. Now the turns that said it are
  forgotten with it (retracted) and every context quoting them is rebuilt without them, at
  once in the service's delta, by consolidation and in an export (`pipelines.forgetting`).
- The exchange rule (`answered_turn`): the user turn a proposal came from goes with it
  (broken: when the tool call's carrier turn followed an unrelated user turn, that turn
  was hidden from recall and tombstoned in an export instead of, or beside, the turn the
  proposal came from).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.materialize import message_item_id
from tests.e2e.chat import consolidate, recall, tool, turn

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
LATER = {**ANN, "session_id": "a2"}


def export(settings, tmp_path) -> list[dict]:
    out = tmp_path / "export.jsonl"
    result = CliRunner().invoke(cli_app, ["export", "--out", str(out), "--data-dir", settings.data_dir])
    assert result.exit_code == 0, result.output
    return list(map(json.loads, out.read_text().splitlines()))


def test_forgetting_a_proposal_hides_the_turn_it_came_from_not_the_unrelated_one_before_it(service, tmp_path) -> None:
    client, settings = service
    turn(client, ANN, "user", "Please keep this: my gym is the Riverside Climbing Hall on Dock Street.")
    turn(client, ANN, "assistant", "Sure.")
    turn(client, ANN, "user", "Unrelated, but what is a good name for a grey kitten?")
    said = "Ann's gym is the Riverside Climbing Hall on Dock Street."
    (gym,) = tool(client, ANN, "memory.propose", {"items": [  # its carrier follows the kitten question
        {"type": "fact", "title": "Gym", "content": said}]})["proposals"]
    tool(client, ANN, "memory.forget", {"id": gym["item_id"]})
    asked = "What did I say about my gym and the name of a grey kitten?"
    for moment in ("at once", "after consolidation"):
        if moment != "at once":
            consolidate(client, settings)
        found = json.dumps(recall(client, LATER, asked, mode="catalog")["hits"])
        assert "Riverside" not in found, (moment, found)
        assert "grey kitten" in found, (moment, found)  # before the fix: hidden as the proposal's exchange
    turns = {r["id"]: r for r in export(settings, tmp_path) if r["type"] == "message"}
    assert "Riverside" not in json.dumps(list(turns.values()))
    assert any("grey kitten" in r["content"] for r in turns.values())  # before the fix: a tombstone


def said_in(answer: dict) -> str:
    """The id of the raw turn a /v1/turns answer stored."""
    return message_item_id(answer["turn_id"])


def hit_ids(client, query: str) -> set[str]:
    return {h["id"] for h in recall(client, LATER, query, mode="catalog")["hits"]}


def test_a_forgotten_memory_no_longer_finds_the_turns_next_to_the_ones_that_said_it(service, tmp_path) -> None:
    client, settings = service
    turn(client, ANN, "user", "Note this: the spare key is under the blue flowerpot by the back door.")
    (spot,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": "The spare key is under the blue flowerpot."}]})["proposals"]
    bins = said_in(turn(client, ANN, "user", "Also, the bins go out on Tuesday evenings."))
    turn(client, ANN, "assistant", "Noted: Tuesday evenings for the bins.")
    bike = {**ANN, "session_id": "a3"}  # another chat: forgotten at once, then the next turn
    turn(client, bike, "user", "My bike is chained at the north rack behind the old library.")
    (rack,) = tool(client, bike, "memory.propose", {"items": [
        {"type": "fact", "title": "Bike", "content": "Ann's bike is chained at the north rack behind the library."}]}
    )["proposals"]
    consolidate(client, settings)
    assert bins in hit_ids(client, "blue flowerpot back door")  # found through its context until now
    tool(client, ANN, "memory.forget", {"id": spot["item_id"]})
    tool(client, bike, "memory.forget", {"id": rack["item_id"]})
    plants = said_in(turn(client, bike, "user", "Also, the plants need water on Sundays."))
    for moment in ("at once", "after consolidation"):
        if moment != "at once":
            consolidate(client, settings)
        assert hit_ids(client, "blue flowerpot back door") == set(), moment  # before the fix: the bins turn
        assert hit_ids(client, "north rack old library bike chained") == set(), moment  # the plants turn
        assert bins in hit_ids(client, "When do the bins go out?"), moment  # what it says itself stays
        assert plants in hit_ids(client, "When do the plants need water?"), moment
    rows = {r["id"]: r for r in export(settings, tmp_path)}
    assert "flowerpot" not in json.dumps(rows) and "north rack" not in json.dumps(rows)
    assert "Noted: Tuesday evenings" in rows[bins]["metadata"]["context"]  # the rest of its context stays
