"""A store that forgot things before forgetting reached every copy (2026-11-28) gets today's
rule once, without anyone asking: its next consolidation (or `loci reembed`) makes the
forgetting sweep migration 005 marks (`pipelines.consolidate.forgetting_sweep`).

The old state is written straight into the warehouse, as the old code left it: a forgotten
claim retracted but the turns that said it not, a turn its speaker forgot retracted, and the
turns next to both still quoting them in their retrieval context; the store at schema
version 4, before the migration. Before the sweep the next consolidation kept those contexts,
so searching the forgotten words found the neighbours until an export."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import duckdb
import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from pipelines.consolidate import reembed_all
from pipelines.consolidate.forgetting_sweep import SWEEP_KEY, SWEEP_REASON
from pipelines.embedders import HashEmbedder
from pipelines.materialize import message_item_id
from pipelines.message_context import CONTEXT_KEY
from pipelines.warehouse import Warehouse
from tests.assets.support import make_settings
from tests.e2e.chat import back_to_schema, consolidate, recall, tool, turn

ANN = {"user_id": "ann", "project_id": "home", "session_id": "a1"}
LOCKER = {**ANN, "session_id": "a2"}
ASKED = {"key": "blue flowerpot back door", "locker": "green locker behind the sauna"}


def said(client: TestClient, who: dict, text: str) -> str:
    """The id of the raw turn the user's `text` is stored as."""
    return message_item_id(turn(client, who, "user", text)["turn_id"])


def contexts(data_dir: str, ids: list[str]) -> dict[str, str]:
    """The stored retrieval context of each message in `ids` (read with DuckDB alone: an old
    store's schema is behind the code's, which a read-only Warehouse refuses)."""
    con = duckdb.connect(f"{data_dir}/warehouse.duckdb", read_only=True)
    try:
        rows = con.execute(f"SELECT id, metadata ->> '{CONTEXT_KEY}' FROM items WHERE id IN "
                           f"({', '.join('?' for _ in ids)})", ids).fetchall()
    finally:
        con.close()
    return {i: c or "" for i, c in rows}


def forget_the_old_way(data_dir: str, claim: str, turn_id: str) -> None:
    """What forgetting did before 2026-11-28: the claim and the turn retracted, nothing else
    (written as the old consolidation wrote it, a revision each), and the store put back
    at schema version 4 (before the sweep's migration)."""
    with Warehouse(f"{data_dir}/warehouse.duckdb") as wh:
        wh.update_items({claim: {"validation": "retracted"}, turn_id: {"validation": "retracted"}},
                        reason="inbox_update")
    back_to_schema(data_dir, 4, SWEEP_KEY)


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Ann's chats consolidated, then forgotten the old way; a copy of that store taken; the
    store upgraded by its next consolidation, the copy by `loci reembed`."""
    tmp = tmp_path_factory.mktemp("old_store")
    settings = make_settings(tmp)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, str] = {}
    out: dict[str, Any] = {"ids": ids}
    with TestClient(app) as client:
        ids["said"] = said(client, ANN, "Note this: the spare key is under the blue flowerpot by the back door.")
        (outcome,) = tool(client, ANN, "memory.propose", {"items": [
            {"type": "fact", "title": "Spare key", "content": "The spare key is under the blue flowerpot."}]}
        )["proposals"]
        ids["claim"] = outcome["item_id"]
        ids["bins"] = said(client, ANN, "Also, the bins go out on Tuesday evenings.")
        ids["locker"] = said(client, LOCKER, "My locker is the green one behind the sauna.")
        ids["plants"] = said(client, LOCKER, "The plants need water on Sundays.")
        consolidate(client, settings)
        forget_the_old_way(settings.data_dir, ids["claim"], ids["locker"])
        out["old"] = contexts(settings.data_dir, [ids["bins"], ids["plants"]])
        copy = make_settings(tmp / "copy")
        shutil.copytree(settings.data_dir, copy.data_dir)

        consolidate(client, settings)  # the upgrade: the migration marks the sweep, the run makes it
        out["found"] = {name: recall(client, ANN, query, mode="catalog")["hits"] for name, query in ASKED.items()}
        out["after"] = contexts(settings.data_dir, [ids["bins"], ids["plants"]])
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            out["said"] = wh.get_item(ids["said"])
            out["reasons"] = [r["reason"] for r in wh.revisions(ids["bins"])]
            out["pending"] = wh.sweep_pending(SWEEP_KEY)  # the next run sweeps nothing again
    assert app.state.internal_errors == 0
    search = ["search", "--user", "ann", "--project", "home", "--data-dir", settings.data_dir]
    out["cli"] = {name: CliRunner().invoke(cli_app, [*search, query], env={"LOCI_EMBEDDER": "hash"}).output
                  for name, query in ASKED.items()}
    out["reembed"] = reembed_all(copy)
    out["reembedded"] = contexts(copy.data_dir, [ids["bins"], ids["plants"]])
    yield out


def test_the_old_state_quotes_what_was_forgotten(upgraded) -> None:
    ids, old = upgraded["ids"], upgraded["old"]
    assert "flowerpot" in old[ids["bins"]] and "sauna" in old[ids["plants"]]  # what the sweep is for


def test_after_the_upgrade_searching_the_forgotten_words_finds_nothing(upgraded) -> None:
    ids = upgraded["ids"]
    assert upgraded["found"]["key"] == [], upgraded["found"]["key"]  # before the fix: the bins turn
    assert upgraded["found"]["locker"] == [], upgraded["found"]["locker"]  # before the fix: the plants turn
    for name, shown in upgraded["cli"].items():
        assert "No memory found" in shown and ids["bins"] not in shown and ids["plants"] not in shown, (name, shown)
    after = upgraded["after"]
    assert "flowerpot" not in after[ids["bins"]] and "sauna" not in after[ids["plants"]]
    assert "(said on " in after[ids["bins"]] and "(said on " in after[ids["plants"]]  # the rest of it stays


def test_the_sweep_retracts_the_turn_that_said_the_claim_once_as_the_pipelines_own_work(upgraded) -> None:
    assert upgraded["said"].validation == "retracted"  # before the fix: unverified, quoted by its neighbours
    assert upgraded["reasons"].count(SWEEP_REASON) == 1 and not upgraded["pending"]


def test_loci_reembed_makes_the_sweep_before_it_reads_the_sessions_again(upgraded) -> None:
    ids = upgraded["ids"]
    assert upgraded["reembed"]["forgetting_swept"] >= 2, upgraded["reembed"]
    assert "flowerpot" not in upgraded["reembedded"][ids["bins"]]
    assert "sauna" not in upgraded["reembedded"][ids["plants"]]
