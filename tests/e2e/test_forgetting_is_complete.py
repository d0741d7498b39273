"""What forgetting promises a user, over HTTP: once they forget a memory the assistant
proposed, nothing finds it again, not the turns that said it nor the turns next to them,
in the live service, after a consolidation and in an export; and nothing more is hidden
than what said it.

- The exchange rule (`answered_turn`): the user turn a proposal came from goes with it
  (broken: when the tool call's carrier turn followed an unrelated user turn, that turn
  was hidden from recall and tombstoned in an export instead of, or beside, the turn the
  proposal came from).
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from loci.cli import app as cli_app
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
        found = json.dumps(recall(client, LATER, asked, mode="catalog")["hits"])
        assert "Riverside" not in found, (moment, found)
        assert "grey kitten" in found, (moment, found)  # before the fix: hidden as the proposal's exchange
        consolidate(client, settings)
    turns = {r["id"]: r for r in export(settings, tmp_path) if r["type"] == "message"}
    assert "Riverside" not in json.dumps(list(turns.values()))
    assert any("grey kitten" in r["content"] for r in turns.values())  # before the fix: a tombstone
