"""A memory forgotten over HTTP while a consolidation holds the warehouse: `loci stats`,
`loci list` and `loci search` answer from the published snapshot and the inbox, folded as
the service folds them (`pipelines.forgetting.fold_served`), so the forgetting is applied
there too: the exchange that said it is forgotten with it, and no turn next to it is found
by its words. Before, `stats` and `list` folded the inbox without the forgetting step
(the turns that said it stayed recallable, their neighbours quoting them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.item_report import served_items
from pipelines.materialize import message_item_id
from pipelines.message_context import context_of
from tests.e2e.chat import consolidate, tool, turn
from tests.e2e.test_cli import HOLDER, ROOT

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
BUSY = "note: a consolidation is running (it holds the warehouse)"


def test_a_forgetting_reaches_what_the_cli_shows_while_a_run_holds_the_warehouse(service, monkeypatch) -> None:
    client, settings = service
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the store's embedder, for `loci search`
    said = message_item_id(turn(client, ANN, "user", "Note this: the spare key is under the blue flowerpot "
                                                     "by the back door.")["turn_id"])
    (spot,) = tool(client, ANN, "memory.propose", {"items": [
        {"type": "fact", "title": "Spare key", "content": "The spare key is under the blue flowerpot."}]})["proposals"]
    bins = message_item_id(turn(client, ANN, "user", "Also, the bins go out on Tuesday evenings.")["turn_id"])
    consolidate(client, settings)
    tool(client, ANN, "memory.forget", {"id": spot["item_id"]})

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, settings.data_dir], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout.readline().strip() == "holding"
        cli = CliRunner()
        stats = cli.invoke(cli_app, ["stats", "--data-dir", settings.data_dir])
        assert stats.exit_code == 0 and BUSY in stats.stderr, stats.output
        # the claim and the exchange that said it (the user's turn, the tool call's): before, the claim only
        assert json.loads(stats.stdout)["served"]["by_state"]["retracted"] == 3, stats.stdout
        listed = cli.invoke(cli_app, ["list", "--data-dir", settings.data_dir])
        assert listed.exit_code == 0 and BUSY in listed.stderr
        assert "Spare key" in listed.stdout and "retracted" in listed.stdout
        found = cli.invoke(cli_app, ["search", "blue flowerpot back door", "--user", "ann", "--project", "home",
                                     "--data-dir", settings.data_dir])
        assert found.exit_code == 0 and BUSY in found.stderr
        assert "No memory found" in found.stdout and bins not in found.stdout, found.stdout
        shown = {it.id: it for it in served_items(settings)}  # what those commands read
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    assert shown[said].validation == "retracted"  # before: unverified, recallable
    assert "flowerpot" not in context_of(shown[bins])  # before: its context quoted the forgotten turn
    assert "flowerpot" not in json.dumps([it.content for it in shown.values() if it.validation != "retracted"])
