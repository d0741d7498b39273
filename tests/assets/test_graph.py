"""The consolidation graph: each asset materialized in turn with `dg.materialize` on a
temporary data dir (asset-level expectations after each), then the whole job end to end,
idempotence, new events, and the embedder-change guard."""

from __future__ import annotations

from collections import Counter

import dagster as dg
import msgspec
import pytest

from assets.checks import CONSOLIDATION_CHECKS
from assets.definitions import build_definitions
from assets.graph import CONSOLIDATION_ASSETS
from assets.resources import resources_from_settings
from assets.run import STAGE_COUNTS, reembed_all, run_consolidation
from pipelines import consolidate as stages
from pipelines.embedders import HashEmbedder
from pipelines.policy import POLICY_VERSION
from pipelines.snapshot import list_versions, load_snapshot
from pipelines.warehouse import Warehouse
from tests.assets.support import (
    BATCH_1,
    BATCH_2,
    active_items,
    faults,
    inbox_max_seq,
    ingest,
    make_settings,
    shared_instance,
    snapshot_state,
    table_counts,
    warehouse_state,
)

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

ALL = [*CONSOLIDATION_ASSETS, *CONSOLIDATION_CHECKS]


def materialize(settings, instance, name: str) -> dg.ExecuteInProcessResult:
    result = dg.materialize(ALL, selection=[name], resources=resources_from_settings(settings), instance=instance)
    assert result.success
    return result


def metadata(result: dg.ExecuteInProcessResult, name: str) -> dict:
    (mat,) = result.asset_materializations_for_node(name)
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_definitions_load_and_job_covers_graph():
    defs = build_definitions(make_settings_for_defs())
    job = defs.resolve_job_def("consolidate_job")
    assert job.tags["loci/warehouse"] == "write"
    assert job.executor_def.name == "in_process"
    keys = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert keys == {a.key.to_user_string() for a in CONSOLIDATION_ASSETS}
    assert {s.name for s in defs.sensors} == {"stm_threshold_sensor", "consolidate_request_sensor"}
    (schedule,) = defs.schedules
    assert schedule.cron_schedule == "0 * * * *"
    dg.Definitions.validate_loadable(defs)


def make_settings_for_defs():
    from pipelines.settings import Settings

    return Settings(data_dir="/nonexistent-loci-data", embedder="hash", merger="extractive")


def test_assets_step_by_step(tmp_path):
    settings = make_settings(tmp_path)
    report = ingest(settings, BATCH_1)
    assert report["rejected"] >= 1 and report["quarantined"] >= 1 and report["accepted"] >= 4
    top = inbox_max_seq(settings)

    with dg.DagsterInstance.ephemeral() as instance:
        # 1. landing: every event landed, nothing governed yet; idempotent.
        md = metadata(materialize(settings, instance, "landed_events"), "landed_events")
        assert (md["events_landed"], md["from_seq"], md["to_seq"]) == (top, 0, top)
        counts = table_counts(settings)
        assert counts["landed_events"] == top
        assert counts["chat_turns"] == report["turns"]
        assert counts["proposals"] == report["accepted"] + report["quarantined"] + report["rejected"]
        assert counts["items"] == 0
        assert metadata(materialize(settings, instance, "landed_events"), "landed_events")["events_landed"] == 0
        assert table_counts(settings)["landed_events"] == top

        # 2. governance: same verdicts as online, turns become messages, watermark moves.
        result = materialize(settings, instance, "governed_items")
        md = metadata(result, "governed_items")
        assert (md["accepted"], md["quarantined"], md["rejected"]) == (
            report["accepted"], report["quarantined"], report["rejected"])
        assert md["messages"] == report["turns"]
        assert md["to_seq"] == top and md["policy_version"] == POLICY_VERSION
        assert checks(result) == {"active_items_pass_policy": True}
        items = active_items(settings)
        assert Counter(i.type == "message" for i in items)[True] == report["turns"]
        assert all(i.tier == "stm" for i in items)
        proposals = [i for i in items if i.type != "message"]
        assert all(i.metadata["policy_version"] == POLICY_VERSION for i in proposals)
        quarantined = [i for i in proposals if i.metadata["verdict"] == "quarantine"]
        assert len(quarantined) == report["quarantined"]
        assert all(i.validation == "unverified" and i.expires_at for i in quarantined)
        assert not any("AKIA" in i.content or "AKIA" in i.title for i in items)
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            assert wh.last_ingested_seq() == top

        # 3. embeddings: every active item once; nothing the second time.
        md = metadata(materialize(settings, instance, "item_embeddings"), "item_embeddings")
        assert md["embedded"] == len(items) and md["model"] == "hash-384" and md["dimension"] == 384
        assert table_counts(settings)["embeddings"] == len(items)
        with Warehouse(settings.warehouse_path) as wh:  # unchanged content: nothing to embed
            assert stages.embed_items(wh, HashEmbedder(384)).embedded == 0

        # 4. clusters: Dana's three latency facts together, never with Erin's.
        result = materialize(settings, instance, "stm_clusters")
        clusters = result.output_for_node("stm_clusters")
        by_id = {i.id: i for i in items}
        dana_latency = {i.id for i in proposals if "latency" in i.tags and i.scope.project_id == "atlas"}
        assert any(len(dana_latency & set(c["item_ids"])) >= 2 for c in clusters)
        for c in clusters:
            assert len({by_id[i].scope.partition_key() for i in c["item_ids"]}) == 1
            assert not any(by_id[i].type == "message" for i in c["item_ids"])
        assert metadata(result, "stm_clusters")["clusters_found"] == len(clusters)

        # 5. merges: one canonical MTM item per cluster, originals superseded and linked.
        result = materialize(settings, instance, "merged_items")  # clusters loaded from the IO manager
        md = metadata(result, "merged_items")
        assert md["merged"] == len(clusters) >= 1
        assert md["by_fallback"] == md["merged"] and md["by_llm"] == 0  # extractive merger configured
        assert checks(result) == {"no_active_superseded_items": True}
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            for new_id, cluster in zip(md["merged_item_ids"], clusters):
                new = wh.get_item(new_id)
                assert new.tier == "mtm" and new.active and new.provenance.is_present()
                assert new.metadata["cluster"]["size"] == len(cluster["item_ids"])
                assert wh.revisions(new_id)[0]["reason"] == "consolidation_merge"
                for old in wh.get_items(cluster["item_ids"]):
                    assert old.superseded_by == new_id and not old.archived  # superseded, never deleted
                rels = {(link.rel, link.to) for link in new.links}
                assert {("derived_from", i) for i in cluster["item_ids"]} <= rels
                assert {("supersedes", i) for i in cluster["item_ids"]} <= rels
                assert wh.embedding_matrix("hash-384", [new_id]).shape[0] == 1

        # 6. lifecycle: the decision is promoted (auto-promote type, has provenance).
        result = materialize(settings, instance, "lifecycle")
        assert metadata(result, "lifecycle")["promoted"] >= 1
        assert checks(result) == {"mtm_ltm_have_provenance": True}
        decision = next(i for i in active_items(settings) if i.type == "decision")
        assert decision.tier in ("mtm", "ltm")

        # 7. palace: every active item has a location, mirrored in its metadata.
        md = metadata(materialize(settings, instance, "palace_locations"), "palace_locations")
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            active = wh.active_items()
            assert md["assigned"] == len(active)
            for item in active:
                loc = wh.location_of(item.id)
                assert loc is not None and item.metadata["palace"] == loc.path
        with Warehouse(settings.warehouse_path) as wh:  # stable: nothing rewritten the second time
            assert stages.build_palace(wh, [stages.ClusterRef.from_dict(c) for c in clusters]).moved == 0

        # 8. snapshot: published, holds the active items, watermark = landed seq, run recorded.
        result = materialize(settings, instance, "memory_snapshot")
        md = metadata(result, "memory_snapshot")
        assert checks(result) == {"snapshot_matches_warehouse": True}
        snap = load_snapshot(settings.snapshots_path)
        assert snap.version == md["version"] and md["published"] is True
        assert {i.id for i in snap.items} == {i.id for i in active}
        assert snap.manifest.watermark == top and snap.manifest.embedder == "hash-384"
        assert snap.manifest.index_kind == "flat-ip" == md["index_kind"]
        assert all(i.metadata.get("palace") for i in snap.items)
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            runs = wh.runs()
        assert any(r["status"] == "success" and r["snapshot_version"] == snap.version for r in runs)


def test_whole_graph_then_idempotent_then_new_events(tmp_path):
    settings = make_settings(tmp_path, snapshots_keep=2)
    ingest(settings, BATCH_1)
    first = run_consolidation(settings, instance=shared_instance())
    assert first["status"] == "success", first
    assert first["checks"] and set(first["checks"].values()) == {"passed"}
    assert first["snapshot_published"] and first["merged"] >= 1 and first["promoted"] >= 1
    assert first["snapshot_items"] == sum(first["tiers"].values())
    # each step's own process CPU time, stages and checks alike (the pipeline bench's breakdown)
    assert set(STAGE_COUNTS) <= set(first["step_cpu_s"])
    assert all(step in STAGE_COUNTS or any(step.endswith(c) for c in first["checks"]) for step in first["step_cpu_s"])
    assert all(secs >= 0 for secs in first["step_cpu_s"].values())
    before, snap_before = warehouse_state(settings), snapshot_state(settings)

    # Nothing new: nothing written (only the run log), the snapshot is not republished.
    second = run_consolidation(settings, instance=shared_instance())
    assert second["status"] == "success" and set(second["checks"].values()) == {"passed"}
    assert (second["landed"], second["embedded"], second["merged"], second["promoted"]) == (0, 0, 0, 0)
    assert second["snapshot_published"] is False and second["snapshot_version"] == first["snapshot_version"]
    after = warehouse_state(settings)
    assert after["items"] == before["items"]
    assert after["counts"]["revisions"] == before["counts"]["revisions"]
    new_events = after["events"][len(before["events"]):]
    assert after["events"][: len(before["events"])] == before["events"]
    assert {action for _, action, _ in new_events} == {"run.start", "run.finish"}
    assert snapshot_state(settings) == snap_before

    # New events: landed, merged, published as a new version; old versions pruned to 2.
    ingest(settings, BATCH_2, name="more.jsonl")
    settings = make_settings(tmp_path, snapshots_keep=2, hnsw_threshold=3)  # HNSW from 3 items
    third = run_consolidation(settings, instance=shared_instance())
    assert third["status"] == "success" and set(third["checks"].values()) == {"passed"}
    assert third["landed"] == inbox_max_seq(settings) - before["watermark"]
    assert third["merged"] == 1 and third["snapshot_published"]
    snap = load_snapshot(settings.snapshots_path)
    assert snap.version == third["snapshot_version"] != first["snapshot_version"]
    assert snap.manifest.watermark == inbox_max_seq(settings)
    assert snap.manifest.index_kind == "hnsw" == third["index_kind"]
    assert len(list_versions(settings.snapshots_path)) == 2  # the oldest pruned (keep = 2)
    assert {i.id for i in snap.items} == {i.id for i in active_items(settings)}
    assert any("standup" in i.content.lower() and i.tier == "mtm" for i in snap.items)


def test_embedder_change_fails_until_reembed(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    stages.consolidate_once(settings)  # the same stages without Dagster: a quick baseline
    published = snapshot_state(settings)
    assert published["current"]

    changed = make_settings(tmp_path, embedder_dim=64)  # hash-64: another model
    failed = run_consolidation(changed, instance=shared_instance())
    assert failed["status"] == "failure"
    assert "item_embeddings" in failed["error"] and "loci reembed" in failed["error"]
    assert "hash-64" in failed["error"] and "hash-384" in failed["error"]
    assert snapshot_state(settings) == published  # nothing published by the failed run

    result = reembed_all(changed)
    assert result["model"] == "hash-64" and result["dim"] == 64
    assert result["embedded"] == len(active_items(changed))
    again = stages.consolidate_once(changed)  # the same stages, without Dagster
    assert again["embed"].embedded == 0 and again["snapshot"].published
    assert load_snapshot(settings.snapshots_path).manifest.embedder == "hash-64"
    assert list(result["dropped_vectors"]) == ["hash-384"]  # every row, inactive items' too
    with Warehouse(settings.warehouse_path, read_only=True) as wh:  # the old model's vectors dropped
        assert stages.dimension_violations(wh) == {}
        assert wh.stored_embedding_models() == [("hash-64", 64)]


def test_a_run_records_its_message_vectors_and_a_change_fails_until_reembed(tmp_path):
    settings = make_settings(tmp_path)  # pooled windows: the default
    ingest(settings, BATCH_1)
    first = run_consolidation(settings, instance=shared_instance())
    assert first["status"] == "success", first
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        run = next(r for r in wh.runs() if r["status"] == "success")
    assert run["counts"]["governed_items.message_vectors"] == "pooled"

    ingest(settings, BATCH_2, name="more.jsonl")
    text = make_settings(tmp_path, message_context_pooled=False)
    failed = run_consolidation(text, instance=shared_instance())
    assert failed["status"] == "failure"
    assert "governed_items" in failed["error"] and "loci reembed" in failed["error"]
    assert "'text'" in failed["error"] and "'pooled'" in failed["error"]
    assert reembed_all(text)["message_vectors"] == "text"
    assert run_consolidation(text, instance=shared_instance())["status"] == "success"


def test_failure_inside_a_stage_keeps_that_stage_unwritten(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    stages.consolidate_once(settings)
    ingest(settings, BATCH_2, name="more.jsonl")
    before, snap_before = warehouse_state(settings), snapshot_state(settings)

    fail_in_governance = {"faults": faults("govern:before_commit", "fail")}
    failed = run_consolidation(settings, instance=shared_instance(), resources=fail_in_governance)
    assert failed["status"] == "failure" and "injected failure" in failed["error"]
    after = warehouse_state(settings)
    # Landing committed (idempotent, harmless); governance rolled back entirely.
    assert after["items"] == before["items"] and after["watermark"] == before["watermark"]
    assert after["counts"]["revisions"] == before["counts"]["revisions"]
    assert after["counts"]["landed_events"] > before["counts"]["landed_events"]
    assert snapshot_state(settings) == snap_before

    done = run_consolidation(settings, instance=shared_instance())
    assert done["status"] == "success" and set(done["checks"].values()) == {"passed"}
    assert done["landed"] == 0  # already landed by the failed run, not landed twice
    assert done["messages"] + done["accepted"] > 0
    statuses = Counter(status for _, status in warehouse_state(settings)["runs"])
    assert statuses == Counter({"success": 2, "abandoned": 1})


def test_settings_resource_config_is_the_settings_fields():
    from assets.resources import LociSettingsResource
    from pipelines.settings import Settings

    fields = LociSettingsResource.model_fields
    defaults = {name: f.get_default(call_default_factory=True) for name, f in fields.items()}
    assert defaults == msgspec.structs.asdict(Settings())
    custom = Settings(stm_threshold=3, retention_days_by_tag={"tmp": 1.5}, flags={"enabled": False})
    assert LociSettingsResource.from_settings(custom).get() == custom


def test_bad_settings_value_is_a_clear_failure():
    from assets.resources import LociSettingsResource

    with pytest.raises(dg.Failure, match="invalid Loci settings"):
        LociSettingsResource.model_construct(stm_threshold="many").get()


@pytest.mark.parametrize("precision", ["auto", "float32", "int8", "bf16"])
def test_the_pipeline_embeds_with_the_stored_precision_the_service_expects(tmp_path, precision) -> None:
    """Consolidation's embedder and the service's are built from the same settings: a
    `minilm_precision` the pipeline ignored would store vectors under one name while the
    service asks for the other (and refuse the snapshot). Nothing is loaded to check it."""
    from pipelines.embedders import make_embedder

    settings = make_settings(tmp_path, embedder="minilm", minilm_precision=precision)
    pipeline_embedder = resources_from_settings(settings)["embedder"].get()
    assert pipeline_embedder.name == make_embedder(settings).name
    assert ("-int8" in pipeline_embedder.name) == (precision == "int8")
    assert pipeline_embedder.precision == precision


def test_auto_minilm_makes_int8_vectors_for_a_new_store_at_every_stage(tmp_path, monkeypatch):
    """The job resolves MiniLM "auto" for the store (`stages.store_embedder`) in each asset:
    a new store's vectors, merged items' included, and its snapshot are int8 (named apart),
    and the next run finds nothing stale. A stand-in encoder replaces the model."""
    import assets.resources as resources
    from pipelines.embedders import MINILM_NAMES, MiniLMEmbedder
    from tests.pipelines.test_pooled_windows import StandInEncoder

    stand_in = StandInEncoder().runner_
    monkeypatch.setattr(MiniLMEmbedder, "_load_runner", lambda self, precision: stand_in)
    monkeypatch.setattr(resources, "_CACHE", {})
    settings = make_settings(tmp_path, embedder="minilm")
    ingest(settings, BATCH_1)
    assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
    assert load_snapshot(settings.snapshots_path).manifest.embedder == MINILM_NAMES["int8"]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.stored_embedding_models() == [(MINILM_NAMES["int8"], 384)]
    ingest(settings, BATCH_2)
    assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
    assert load_snapshot(settings.snapshots_path).manifest.embedder == MINILM_NAMES["int8"]
