"""What un-forgetting is, over HTTP and `loci import`: nothing brings a forgotten memory
back. An edit or a review of it is refused (409, saying what to do instead), an import of
a live copy of it (an export taken before the forgetting, or another store's) leaves it
forgotten, and so do the turns that said it. To have it again the user says or writes it
again: a new memory, recalled, while the old turns stay gone (before: an import of an
older export quietly restored the claim, its raw turns still forgotten)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.materialize import message_item_id
from tests.e2e.chat import consolidate, recall, tool, turn

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
SPOT = "The spare key is under the blue flowerpot."
ASKED = "Where is the spare key? blue flowerpot"


def cli(*args: str) -> str:
    result = CliRunner().invoke(cli_app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_a_forgotten_memory_comes_back_only_as_a_new_one_and_its_turns_stay_forgotten(
        service, tmp_path, monkeypatch) -> None:
    client, settings = service
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the store's embedder
    said = message_item_id(turn(client, ANN, "user", "Note this: the spare key is under the blue flowerpot "
                                                     "by the back door.")["turn_id"])
    (spot,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": SPOT}]})["proposals"]
    bins = message_item_id(turn(client, ANN, "user", "Also, the bins go out on Tuesday evenings.")["turn_id"])
    consolidate(client, settings)
    before = tmp_path / "before.jsonl"
    cli("export", "--out", str(before), "--data-dir", settings.data_dir)
    tool(client, ANN, "memory.forget", {"id": spot["item_id"]})
    consolidate(client, settings)

    for action, args in (("memory.update", {"id": spot["item_id"], "patch": {"validation": "verified"}}),
                         ("memory.review", {"id": spot["item_id"], "decision": "approve"}),
                         ("memory.forget", {"id": said})):
        resp = client.post("/v1/tools", json={"action": action, "identity": ANN, "args": args})
        assert resp.status_code == 409, (action, resp.text)
    refused = client.post("/v1/tools", json={"action": "memory.update", "identity": ANN, "args": {
        "id": spot["item_id"], "patch": {"validation": "verified"}}}).json()
    assert "write a new memory" in json.dumps(refused), refused

    cli("import", str(before), "--data-dir", settings.data_dir)  # her export from before the forgetting
    consolidate(client, settings)
    # before: the claim and the turn that said it, brought back by the import
    assert recall(client, ANN, ASKED, mode="catalog")["hits"] == []  # nor the bins turn, by its old context
    assert bins in {h["id"] for h in recall(client, ANN, "When do the bins go out?", mode="catalog")["hits"]}
    (kept,) = tool(client, ANN, "memory.read", {"ids": [spot["item_id"]]})["items"]
    assert kept["validation"] == "retracted", kept

    (again,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": SPOT}]})["proposals"]
    for moment in ("at once", "after consolidation"):
        if moment != "at once":
            consolidate(client, settings)
        found = {h["id"] for h in recall(client, ANN, ASKED, mode="catalog")["hits"]}
        assert again["item_id"] in found, (moment, found)  # written again: a new memory, recalled
        assert said not in found and spot["item_id"] not in found, (moment, found)  # the old ones stay gone
