"""What `loci export` does with what a user asked to forget (a trial found a default export
carrying a forgotten memory's full text): a default export keeps only its tombstone (id, no
text), and importing it retracts the copy another store holds; `--all` is a full backup, the
forgotten memory whole and still forgotten once imported."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.inbox import open_inbox
from pipelines.materialize import fold_events
from tests.assets.support import make_settings
from tests.e2e.chat import consolidate, recall, tool, turn

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
SECRET_SPOT = "the blue flowerpot by the back door"


def cli(*args: str) -> str:
    result = CliRunner().invoke(cli_app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def stored(settings, item_id: str):
    """The item as the importing store holds it: its inbox folded, as its service and its
    next consolidation fold it."""
    with open_inbox(settings) as inbox:
        return fold_events(inbox.read_after(0)).items[item_id]


def test_a_forgotten_memory_leaves_a_default_export_as_a_tombstone_only(service, tmp_path, monkeypatch) -> None:
    client, settings = service
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the stores' embedder
    (spot,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": f"The spare key is under {SECRET_SPOT}."}]})["proposals"]
    tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Bin day", "content": "The bins go out on Tuesday evenings."}]})
    consolidate(client, settings)
    before, after, backup = (tmp_path / n for n in ("before.jsonl", "after.jsonl", "backup.jsonl"))
    cli("export", "--out", str(before), "--data-dir", settings.data_dir)
    laptop = make_settings(tmp_path / "laptop")  # her other store, with the memory from an earlier export
    cli("import", str(before), "--data-dir", laptop.data_dir)

    tool(client, ANN, "memory.forget", {"id": spot["item_id"]})
    consolidate(client, settings)
    cli("export", "--out", str(after), "--data-dir", settings.data_dir)
    assert "flowerpot" not in after.read_text()  # before the fix: the whole item, text and all
    rows = {r["id"]: r for r in map(json.loads, after.read_text().splitlines())}
    assert rows[spot["item_id"]]["validation"] == "retracted", rows[spot["item_id"]]
    assert any(r["title"] == "Bin day" for r in rows.values())
    cli("import", str(after), "--data-dir", laptop.data_dir)
    assert stored(laptop, spot["item_id"]).validation == "retracted"  # forgotten there too
    assert stored(laptop, spot["item_id"]).content == f"The spare key is under {SECRET_SPOT}."  # with its history

    cli("export", "--all", "--out", str(backup), "--data-dir", settings.data_dir)
    assert "flowerpot" in backup.read_text()  # a full backup keeps it whole
    restored = make_settings(tmp_path / "restored")
    cli("import", str(backup), "--data-dir", restored.data_dir)
    assert stored(restored, spot["item_id"]).validation == "retracted"


def test_the_turns_that_said_a_forgotten_memory_leave_a_default_export_too(service, tmp_path) -> None:
    """Recall never shows the raw turns that said a forgotten memory; a default export kept
    their text (a trial found the spare key's hiding place in the chat turns of an export
    whose memory was a tombstone)."""
    client, settings = service
    turn(client, ANN, "user", f"Note this: the spare key is under {SECRET_SPOT}.")
    (spot,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": f"The spare key is under {SECRET_SPOT}."}]})["proposals"]
    turn(client, ANN, "user", "Also, the bins go out on Tuesday evenings.")
    consolidate(client, settings)
    tool(client, ANN, "memory.forget", {"id": spot["item_id"]})
    consolidate(client, settings)
    assert "flowerpot" not in json.dumps(recall(client, ANN, "Where is the spare key?", mode="catalog"))

    out = tmp_path / "after.jsonl"
    cli("export", "--out", str(out), "--data-dir", settings.data_dir)
    assert "flowerpot" not in out.read_text()  # before the fix: in the user's raw turn
    rows = list(map(json.loads, out.read_text().splitlines()))
    assert any("bins go out" in r["content"] for r in rows if r["type"] == "message")  # other turns stay
    said = [r for r in rows if r["type"] == "message" and r["validation"] == "retracted"]
    assert said and all(r["content"] == "" for r in said)  # the exchange that said it, as tombstones
