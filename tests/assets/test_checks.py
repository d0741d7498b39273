"""The asset checks on landing, clustering and the palace: they pass on a real consolidation,
and each fails when its invariant is broken (an event lost between the inbox and the
warehouse, a cluster spanning two owners, an active item without a location)."""

from __future__ import annotations

import dagster as dg
import pytest

from assets.checks import CONSOLIDATION_CHECKS, every_active_item_has_a_location, landing_matches_inbox
from assets.graph import CONSOLIDATION_ASSETS
from assets.resources import resources_from_settings
from assets.run import run_consolidation
from pipelines import consolidate as stages
from pipelines.warehouse import Warehouse
from tests.assets.support import BATCH_1, ingest, make_settings, shared_instance

ALL = [*CONSOLIDATION_ASSETS, *CONSOLIDATION_CHECKS]
NEW_CHECKS = {"landing_matches_inbox", "clusters_within_one_owner", "every_active_item_has_a_location"}


def evaluations(result: dg.ExecuteInProcessResult) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def run(settings, selection) -> dict[str, dg.AssetCheckEvaluation]:
    result = dg.materialize(ALL, selection=selection, resources=resources_from_settings(settings),
                            instance=shared_instance(), raise_on_error=True)
    return evaluations(result)


def sample(evaluation: dg.AssetCheckEvaluation) -> list:
    return evaluation.metadata["sample"].value


@pytest.fixture
def consolidated(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    summary = run_consolidation(settings, instance=shared_instance())
    assert summary["status"] == "success"
    assert NEW_CHECKS <= set(summary["checks"]) and {summary["checks"][c] for c in NEW_CHECKS} == {"passed"}
    return settings


def test_landing_check_fails_when_an_inbox_event_was_not_landed(consolidated):
    with Warehouse(consolidated.warehouse_path) as wh:
        (lost,) = wh.query("SELECT seq FROM landed_events ORDER BY seq LIMIT 1 OFFSET 3")[0]
        wh.query("DELETE FROM landed_events WHERE seq = ?", [lost])
    found = run(consolidated, dg.AssetSelection.checks(landing_matches_inbox))["landing_matches_inbox"]
    assert not found.passed and sample(found) == [lost]
    assert found.metadata["landed"].value == found.metadata["inbox_events"].value - 1


def test_cluster_check_fails_on_a_cluster_across_two_owners(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    run(settings, ["landed_events", "governed_items", "item_embeddings"])
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        items = [i for i in wh.active_items(tier="stm") if i.type != "message"]
    dana = next(i for i in items if i.scope.user_id == "dana")
    erin = next(i for i in items if i.scope.user_id == "erin")
    assert dana.scope.partition_key() != erin.scope.partition_key()
    crossing = stages.ClusterRef(dana.scope.partition_key(), 0, [dana.id, erin.id])
    monkeypatch.setattr(stages, "cluster_stm", lambda *a, **k: stages.ClusterReport([crossing], 2, 0, [2], {}))
    found = run(settings, ["stm_clusters"])["clusters_within_one_owner"]
    assert not found.passed and sample(found) == [f"{crossing.partition}#0: {erin.id} belongs to "
                                                  f"{erin.scope.partition_key()}"]
    monkeypatch.undo()  # the real clustering never crosses owners
    assert run(settings, ["stm_clusters"])["clusters_within_one_owner"].passed


def test_location_check_fails_for_an_active_item_without_a_location(consolidated):
    with Warehouse(consolidated.warehouse_path) as wh:
        (item_id,) = wh.query("SELECT item_id FROM palace_locations ORDER BY item_id LIMIT 1")[0]
        wh.query("DELETE FROM palace_locations WHERE item_id = ?", [item_id])
    check = dg.AssetSelection.checks(every_active_item_has_a_location)
    found = run(consolidated, check)["every_active_item_has_a_location"]
    assert not found.passed and sample(found) == [f"{item_id}: no location"]
    # The palace stage puts it back.
    assert run(consolidated, ["palace_locations"])["every_active_item_has_a_location"].passed


def test_location_check_compares_paths_of_what_was_written_since_the_last_run(consolidated):
    """A path is compared for items written since the last successful run (the palace stage
    writes a revision whenever it moves one); a wrong path written now is caught."""
    with Warehouse(consolidated.warehouse_path) as wh:
        item = next(i for i in wh.active_items() if i.metadata.get("palace"))
        assert stages.location_violations(wh, since=stages.last_finished_run(wh)) == []
        wh.update_items({item.id: {"metadata": {**item.metadata, "palace": "nowhere/else/x/y"}}}, reason="test")
        assert stages.location_violations(wh, since=stages.last_finished_run(wh)) == [
            f"{item.id}: metadata says 'nowhere/else/x/y', stored {item.metadata['palace']!r}"]
    found = run(consolidated, dg.AssetSelection.checks(every_active_item_has_a_location))
    assert not found["every_active_item_has_a_location"].passed
