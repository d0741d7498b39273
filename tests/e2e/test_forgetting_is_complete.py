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
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.materialize import message_item_id
from tests.assets.support import make_settings
from tests.e2e.chat import consolidate, recall, tool, turn

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
LATER = {**ANN, "session_id": "a2"}
BIKE = {**ANN, "session_id": "a3"}  # another chat: forgotten at once, then the next turn
GYM = {**ANN, "session_id": "a4"}
MOMENTS = ("at once", "after consolidation")
# What recall is asked after the forgetting, at each moment.
ASKED = {"key": "blue flowerpot back door", "bike": "north rack old library bike chained",
         "bins": "When do the bins go out?", "plants": "When do the plants need water?",
         "gym": "What did I say about my gym and the name of a grey kitten?"}


def said_in(answer: dict) -> str:
    """The id of the raw turn a /v1/turns answer stored."""
    return message_item_id(answer["turn_id"])


def propose(client: TestClient, who: dict, title: str, content: str) -> str:
    (outcome,) = tool(client, who, "memory.propose", {"items": [
        {"type": "fact", "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


def hits(client: TestClient, query: str) -> list[dict]:
    return recall(client, LATER, query, mode="catalog")["hits"]


@pytest.fixture(scope="module")
def forgetting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Ann's chats, consolidated; then she forgets three memories the assistant proposed,
    and says one more thing; what recall finds at once and after the next consolidation,
    and her export."""
    tmp = tmp_path_factory.mktemp("forgetting")
    settings = make_settings(tmp)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, str] = {}
    found: dict[str, dict[str, list[dict]]] = {}
    shown: dict[str, Any] = {}  # `loci show --json` of the bins turn, whose context quoted the key
    with TestClient(app) as client:
        turn(client, ANN, "user", "Note this: the spare key is under the blue flowerpot by the back door.")
        ids["key"] = propose(client, ANN, "Spare key", "The spare key is under the blue flowerpot.")
        ids["bins"] = said_in(turn(client, ANN, "user", "Also, the bins go out on Tuesday evenings."))
        turn(client, ANN, "assistant", "Noted: Tuesday evenings for the bins.")
        turn(client, BIKE, "user", "My bike is chained at the north rack behind the old library.")
        ids["bike"] = propose(client, BIKE, "Bike", "Ann's bike is chained at the north rack behind the library.")
        turn(client, GYM, "user", "Please keep this: my gym is the Riverside Climbing Hall on Dock Street.")
        turn(client, GYM, "assistant", "Sure.")
        turn(client, GYM, "user", "Unrelated, but I named my grey kitten Pepper.")
        # the tool call's carrier turn follows the kitten turn (a statement: a turn that only asks is no hit)
        ids["gym"] = propose(client, GYM, "Gym", "Ann's gym is the Riverside Climbing Hall on Dock Street.")
        consolidate(client, settings)
        found["before"] = {"key": hits(client, ASKED["key"])}
        for memory in ("key", "bike", "gym"):
            tool(client, ANN, "memory.forget", {"id": ids[memory]})
        ids["plants"] = said_in(turn(client, BIKE, "user", "Also, the plants need water on Sundays."))
        for moment in MOMENTS:
            if moment != "at once":
                consolidate(client, settings)
            found[moment] = {name: hits(client, query) for name, query in ASKED.items()}
            shown[moment] = CliRunner().invoke(
                cli_app, ["show", ids["bins"], "--json", "--data-dir", settings.data_dir])
    assert app.state.internal_errors == 0
    out = tmp / "export.jsonl"
    result = CliRunner().invoke(cli_app, ["export", "--out", str(out), "--data-dir", settings.data_dir])
    assert result.exit_code == 0, result.output
    yield {"ids": ids, "found": found, "shown": shown,
           "export": {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}}


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_forgotten_memory_no_longer_finds_the_turns_next_to_the_ones_that_said_it(forgetting, moment) -> None:
    ids, found = forgetting["ids"], forgetting["found"]
    assert ids["bins"] in {h["id"] for h in found["before"]["key"]}  # found through its context until then
    assert found[moment]["key"] == [], found[moment]["key"]  # before the fix: the bins turn
    assert found[moment]["bike"] == [], found[moment]["bike"]  # before the fix: the plants turn, said after
    assert ids["bins"] in {h["id"] for h in found[moment]["bins"]}  # what it says itself stays
    assert ids["plants"] in {h["id"] for h in found[moment]["plants"]}


def test_an_export_keeps_no_forgotten_words_in_a_neighbours_context_and_the_rest_of_it(forgetting) -> None:
    rows = forgetting["export"]
    said = json.dumps(rows)
    assert "flowerpot" not in said and "north rack" not in said and "Riverside" not in said
    assert "Noted: Tuesday evenings" in rows[forgetting["ids"]["bins"]]["metadata"]["context"]


@pytest.mark.parametrize("moment", MOMENTS)
def test_loci_show_of_a_neighbour_shows_the_context_the_service_serves(forgetting, moment) -> None:
    """Between a forgetting and the next consolidation `loci show` printed the stored
    context, still quoting the forgotten turn; now the inbox is folded over it as served."""
    result = forgetting["shown"][moment]
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert "flowerpot" not in json.dumps(shown["item"]), shown["item"]["metadata"].get("context")
    assert "Noted: Tuesday evenings" in shown["item"]["metadata"]["context"]
    assert shown["source"] == ("warehouse, with inbox changes not consolidated yet" if moment == "at once"
                               else "warehouse")


@pytest.mark.parametrize("moment", MOMENTS)
def test_forgetting_a_proposal_hides_the_turn_it_came_from_not_the_unrelated_one_before_it(forgetting, moment) -> None:
    shown = json.dumps(forgetting["found"][moment]["gym"])
    assert "Riverside" not in shown, shown
    assert "grey kitten" in shown, shown  # before the fix: hidden as the proposal's exchange
    turns = [r for r in forgetting["export"].values() if r["type"] == "message"]
    assert any("grey kitten" in r["content"] for r in turns)  # before the fix: a tombstone
