"""A store whose corrections were made before they named the turns they replaced gets those
turns marked once, without anyone asking; over HTTP a recall hit says which correction
replaced a turn (`replaced_by`), for a client rendering its own view.

Until 2026-11-29 a correction ("Change of plan: the offsite moves to Lisbon") superseded
the claim it corrected but named no turn, so once consolidation retired the claim, the
turn it was said in ("We decided: ... Porto") came back unmarked. Since, the fold names
the turns (`materialize.REPLACED_TURNS`) as each correction arrives; migration 007 marks
an old store and its next consolidation names them on the corrections already stored, the
merged ones included (`pipelines.consolidate.replaced_turns`), then stops.

The old store is built by the old code itself (the fold and the merge naming no turn) and
put back at schema version 6, before the migration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

import pipelines.consolidate.merges as merges
import pipelines.materialize as materialize
from loci.cli import app as loci
from online.app import create_app
from pipelines.consolidate import consolidate_once
from pipelines.consolidate.replaced_turns import BACKFILL_KEY
from pipelines.embedders import HashEmbedder
from pipelines.materialize import REPLACED_TURNS
from pipelines.recall.render import REPLACED_SINCE
from pipelines.warehouse import Warehouse
from tests.assets.support import make_settings
from tests.e2e.chat import back_to_schema, recall
from tests.e2e.test_superseded_turns_marked import DECIDED, LENA, MARK, PIA, QUESTION, exchanges, turns_shown


def run(client: TestClient, settings) -> dict[str, Any]:
    """One consolidation as the scheduled job runs it, the service reloaded; its reports."""
    assert client.app.state.service.usage.flush()
    reports = consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    return reports


def decided_turn(answer: dict) -> tuple[str, str]:
    """The Porto turn's id and its entry in the block."""
    entry = turns_shown(answer).get(DECIDED[:20])
    assert entry is not None, answer["injection"]
    return entry.split("[TURN: ", 1)[1].split(" |", 1)[0], entry


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Lena decides and corrects; Pia decides and says her correction twice (merged). All
    under the old code, consolidated; then the upgrade's run, and one more."""
    settings = make_settings(tmp_path_factory.mktemp("old_corrections"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    out: dict[str, Any] = {}
    with TestClient(app) as client:
        with pytest.MonkeyPatch.context() as old_code:  # before 2026-11-29: no turn named
            for module in (materialize, merges):
                old_code.setattr(module, "with_replaced_turns", lambda item, *_a, **_k: item)
            exchanges(client, LENA, "decided")
            out["lena fix"] = exchanges(client, LENA, "moved")
            exchanges(client, PIA, "decided")
            pia = [exchanges(client, PIA, "moved"), exchanges(client, PIA, "moved again")]
            run(client, settings)
        (out["pia fix"],) = {client.get(f"/v1/items/{i}", params=PIA).json()["item"]["superseded_by"] for i in pia}
        back_to_schema(settings.data_dir, 6, BACKFILL_KEY)
        for moment in ("old", "new"):
            if moment == "new":
                out["upgrade"] = run(client, settings)["govern"]
            out[moment] = {who: recall(client, ident, QUESTION, mode="hybrid") for who, ident in (("lena", LENA),
                                                                                                ("pia", PIA))}
            turns = {who: decided_turn(out[moment][who])[0] for who in ("lena", "pia")}
            out[f"{moment} card"] = {who: client.get(f"/ui/items/{turns[who]}", params=ident).text
                                     for who, ident in (("lena", LENA), ("pia", PIA))}
            out[f"{moment} show"] = {who: CliRunner().invoke(loci, ["show", turns[who], "--data-dir",
                                                                    str(settings.data_dir)]).output
                                     for who in ("lena", "pia")}
        out["again"] = run(client, settings)["govern"]
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            out["pending"] = wh.sweep_pending(BACKFILL_KEY)
            out["named"] = {who: wh.get_item(out[f"{who} fix"]).metadata.get(REPLACED_TURNS)
                            for who in ("lena", "pia")}
    assert app.state.internal_errors == 0
    yield out


@pytest.mark.parametrize("who", ["lena", "pia"])
def test_the_old_store_left_the_replaced_turn_unmarked(upgraded, who) -> None:
    turn_id, entry = decided_turn(upgraded["old"][who])
    assert MARK not in entry, entry  # what the backfill is for
    (hit,) = [h for h in upgraded["old"][who]["hits"] if h["id"] == turn_id]
    assert hit["replaced_by"] == [], hit


@pytest.mark.parametrize("who", ["lena", "pia"])
def test_after_the_upgrade_the_turn_names_its_correction_in_the_block_and_the_hit(upgraded, who) -> None:
    answer, fix = upgraded["new"][who], upgraded[f"{who} fix"]
    turn_id, entry = decided_turn(answer)
    assert REPLACED_SINCE.format(fix) in entry, entry  # the merged correction for Pia
    ids = [h["id"] for h in answer["hits"]]
    assert ids[0] == fix and ids.index(turn_id) > 0, ids  # the correction first
    hits = {h["id"]: h for h in answer["hits"]}
    assert hits[turn_id]["replaced_by"] == [fix], hits[turn_id]  # over HTTP, for a client's own view
    assert all(h["replaced_by"] == [] for i, h in hits.items() if i != turn_id), hits
    assert len(upgraded["named"][who]) == 1, upgraded["named"]  # the turn that proposed Porto (the user's answered)


@pytest.mark.parametrize("who", ["lena", "pia"])
def test_the_turns_card_names_the_correction_after_the_upgrade(upgraded, who) -> None:
    assert 'id="said-otherwise"' not in upgraded["old card"][who]
    card = upgraded["new card"][who]
    assert 'id="said-otherwise"' in card, card
    assert f'class="corrected-by" href="/ui/items/{upgraded[f"{who} fix"]}?' in card, card


@pytest.mark.parametrize("who", ["lena", "pia"])
def test_loci_show_of_the_turn_names_the_correction_after_the_upgrade(upgraded, who) -> None:
    assert "corrected since by" not in upgraded["old show"][who], upgraded["old show"][who]
    shown = upgraded["new show"][who].split("corrected since by:\n", 1)
    assert len(shown) == 2 and shown[1].lstrip().startswith(upgraded[f"{who} fix"]), upgraded["new show"][who]


def test_the_backfill_is_made_once(upgraded) -> None:
    assert upgraded["upgrade"].replaced_turns_filled == 2, upgraded["upgrade"]  # Lena's fix, Pia's merged one
    assert upgraded["again"].replaced_turns_filled == 0 and not upgraded["pending"], upgraded["again"]
