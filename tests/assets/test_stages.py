"""The framework-free stages behind the assets (`pipelines.consolidate`): governance details
that are awkward to reach through whole runs (re-governed verdicts, usage, updates, links,
malformed events), the warehouse lock and the snapshot skip."""

from __future__ import annotations

import threading
import time

import msgspec
import pytest

from pipelines import consolidate as stages
from pipelines.embedders import HashEmbedder
from pipelines.inbox import Inbox
from pipelines.materialize import REPLACED_TURNS, message_item_id, proposal_item_id, said_in
from pipelines.policy import POLICY_VERSION, Policy
from pipelines.records import Event, Identity, ProposedItem, Provenance, Verdict, stable_id
from pipelines.warehouse import Warehouse
from tests.assets.support import BATCH_1, ingest, make_settings

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

WHO = Identity(user_id="dana", project_id="atlas", session_id="s9")


def proposal_event(key: str, content: str, *, online: str = "accept", title: str = "T") -> Event:
    """A proposal as the service lands it, with the verdict it got online."""
    return Event(
        event_id=stable_id("evt", "test-proposal", key), kind="proposal", identity=WHO,
        payload={
            "proposal_id": stable_id("prop", key), "turn_id": f"turn-{key}", "form": "api",
            "proposal": msgspec.to_builtins(ProposedItem(type="fact", title=title, content=content)),
            "verdict": msgspec.to_builtins(Verdict(action=online, policy_version="2020.01-old")),
            "provenance": msgspec.to_builtins(Provenance(source_id=f"turn-{key}")),
            "default_scope": "project",
        },
    )  # fmt: skip


def land_and_govern(settings, events):
    with Inbox(settings.inbox_path) as inbox:
        inbox.append(events)
        with Warehouse(settings.warehouse_path) as wh:
            stages.land_events(inbox, wh)
            return stages.govern_items(inbox, wh, Policy(settings), settings=settings)


def test_governance_reruns_the_current_policy(tmp_path):
    settings = make_settings(tmp_path)
    leaked = proposal_event("leak", "The key is AKIAIOSFODNN7EXAMPLE.")  # accepted by an old policy
    fine = proposal_event("fine", "The renderer is written in Rust.")
    report = land_and_govern(settings, [leaked, fine])
    assert (report.accepted, report.rejected, report.tightened) == (1, 1, 1)
    assert report.rejected_now == [leaked.event_id]
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert wh.get_item(proposal_item_id(leaked.event_id)) is None  # only the event remains
        kept = wh.get_item(proposal_item_id(fine.event_id))
        assert kept.metadata["policy_version"] == POLICY_VERSION  # governed again, now
        (row,) = wh.query("SELECT action, policy_version FROM proposals WHERE event_id = ?", [leaked.event_id])
        assert row == ("accept", "2020.01-old")  # the online verdict stays on record


def test_usage_updates_links_and_bad_events(tmp_path):
    settings = make_settings(tmp_path)
    a, b = proposal_event("a", "Alpha runs on port 8001."), proposal_event("b", "Alpha runs on port 8002.")
    land_and_govern(settings, [a, b])
    a_id, b_id = proposal_item_id(a.event_id), proposal_item_id(b.event_id)
    events = [
        Event(event_id="u1", kind="usage", identity=WHO, payload={"item_ids": [a_id, b_id]},
              at="2026-01-01T00:00:00+00:00"),
        Event(event_id="u2", kind="usage", identity=WHO, payload={"item_ids": [a_id]}, at="2026-01-02T00:00:00+00:00"),
        Event(event_id="up", kind="memory.update", identity=WHO,
              payload={"item_id": a_id, "patch": {"content": "Alpha runs on port 9001."}}),
        Event(event_id="ln", kind="memory.link", identity=WHO,
              payload={"src_id": a_id, "dst_id": b_id, "rel": "supersedes"}),
        Event(event_id="bad", kind="turn", identity=WHO, payload={"no": "turn id"}),  # malformed
        Event(event_id="gone", kind="usage", identity=WHO, payload={"item_ids": ["mem_unknown"]}),
    ]
    report = land_and_govern(settings, events)
    assert report.usage == 3 and report.updated == 2 and report.links == 1
    assert any(s.startswith("bad:") for s in report.skipped)  # reported, not fatal
    assert any("mem_unknown" in s for s in report.skipped)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        item_a, item_b = wh.get_item(a_id), wh.get_item(b_id)
        assert (item_a.usage_count, item_a.last_used_at) == (2, "2026-01-02T00:00:00+00:00")
        assert item_a.content == "Alpha runs on port 9001."
        # The edit is a revision of its own (with its author); the link's bookkeeping (the
        # turns b was said in are now replaced by a: REPLACED_TURNS) one of no author; usage
        # lands last.
        revisions = wh.revisions(a_id)
        assert [r["reason"] for r in revisions] == ["create", "inbox_update", "inbox_update", "inbox_update"]
        assert revisions[1]["actor"] is None
        assert revisions[1]["snapshot"]["metadata"][REPLACED_TURNS] == said_in(item_b) != []
        assert (revisions[2]["actor"], revisions[2]["snapshot"]["content"]) == (WHO.user_id, "Alpha runs on port 9001.")
        assert revisions[3]["actor"] is None and revisions[3]["snapshot"]["usage_count"] == 2
        assert item_b.usage_count == 1 and item_b.superseded_by == a_id  # "a supersedes b"
        assert ("supersedes", b_id) in {(link.rel, link.to) for link in item_a.links}
        assert stages.supersede_violations(wh) == []
        assert wh.last_ingested_seq() == 8
    # Everything up to the watermark is done: a second pass changes nothing.
    with Inbox(settings.inbox_path) as inbox, Warehouse(settings.warehouse_path) as wh:
        again = stages.govern_items(inbox, wh, Policy(settings), settings=settings)
        assert again.events == 0 and wh.revisions(a_id)[-1]["reason"] == "inbox_update"


def test_governance_stops_at_the_landed_prefix(tmp_path):
    """Events appended after landing wait for the next run: the watermark never passes an
    event that was not landed."""
    settings = make_settings(tmp_path)
    with Inbox(settings.inbox_path) as inbox, Warehouse(settings.warehouse_path) as wh:
        inbox.append([proposal_event("one", "First fact here.")])
        stages.land_events(inbox, wh)
        inbox.append([proposal_event("two", "Second fact here.")])  # arrives mid-run
        report = stages.govern_items(inbox, wh, Policy(settings), settings=settings)
        assert (report.events, report.to_seq, wh.last_ingested_seq()) == (1, 1, 1)
        assert stages.land_events(inbox, wh).landed == 1
        assert stages.govern_items(inbox, wh, Policy(settings), settings=settings).to_seq == 2


def test_messages_are_kept_verbatim_and_never_merged(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    out = stages.consolidate_once(settings, embedder=HashEmbedder(384))
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        messages = wh.active_items(types=["message"])
    assert len(messages) == out["govern"].messages == 6
    assert all(m.tier == "stm" and m.superseded_by is None for m in messages)
    assert all(m.id == message_item_id(m.provenance.source_id) for m in messages)


def test_warehouse_lock_waits_for_the_holder(tmp_path):
    path = tmp_path / "w.duckdb"
    first = stages.WarehouseLock(path)
    first.acquire()
    released = threading.Timer(0.3, first.release)
    released.start()
    second = stages.WarehouseLock(path, timeout_s=5)
    messages: list[str] = []
    waited = second.acquire(on_wait=messages.append)
    second.release()
    assert waited >= 0.2 and messages and "waiting" in messages[0]
    # A holder that never lets go: a clear error after the timeout, not a hang.
    first.acquire()
    try:
        with pytest.raises(stages.ConsolidationError, match="stayed locked"):
            stages.WarehouseLock(path, timeout_s=0.2).acquire()
    finally:
        first.release()


def test_snapshot_not_republished_when_nothing_changed(tmp_path):
    settings = make_settings(tmp_path)
    ingest(settings, BATCH_1)
    first = stages.consolidate_once(settings)["snapshot"]
    time.sleep(0.01)
    second = stages.consolidate_once(settings)["snapshot"]
    assert first.published and not second.published and second.version == first.version
    with Warehouse(settings.warehouse_path) as wh:  # forced: a new version with the same items
        forced = stages.publish_snapshot(wh, HashEmbedder(384), settings, force=True)
    assert forced.published and forced.version != first.version and forced.count == first.count


def test_policy_check_covers_everything_once_then_only_what_was_written_since(tmp_path):
    """The active-items policy check scans the whole store under a new policy version and
    afterwards only what was written after the last successful run finished governing: not
    that run's own items, merges, promotions or palace revisions."""
    from assets.run import run_consolidation
    from pipelines.consolidate import policy_check_since
    from pipelines.policy import POLICY_VERSION
    from pipelines.warehouse import Warehouse
    from tests.assets.support import BATCH_1, BATCH_2, ingest, make_settings

    settings = make_settings(tmp_path)
    with Warehouse(settings.warehouse_path) as wh:
        assert policy_check_since(wh, POLICY_VERSION) is None  # no run yet: full scan
    ingest(settings, BATCH_1)
    first = run_consolidation(settings, instance="ephemeral")
    assert first["status"] == "success"
    with Warehouse(settings.warehouse_path) as wh:
        since = policy_check_since(wh, POLICY_VERSION)
        assert since is not None and since > wh.runs()[0]["started_at"]
        assert policy_check_since(wh, "some-other-version") is None  # new policy: full scan
        first_items = {i.id for i in wh.active_items()}
        merges = {i.id for i in wh.active_items() if i.metadata.get("merged_from")}
        touched_later = {r[0] for r in wh.query(
            "SELECT DISTINCT r.item_id FROM revisions r JOIN items i ON i.id = r.item_id "
            "WHERE r.changed_at >= ? AND NOT i.archived AND i.superseded_by IS NULL", [since])}
        # The first run revised its items after governing them (palace, promotion)...
        assert touched_later - merges
        # ...but kept their text: the next run re-checks none of them, only its merges.
        assert {i.id for i in wh.items_text_changed_since(since)} <= merges
    ingest(settings, BATCH_2, name="more.jsonl")
    second = run_consolidation(settings, instance="ephemeral")
    assert second["status"] == "success" and set(second["checks"].values()) == {"passed"}
    with Warehouse(settings.warehouse_path) as wh:
        new_since = policy_check_since(wh, POLICY_VERSION)
        # ...while what the second run landed was (written after the first run's mark).
        landed_second = {i.id for i in wh.items_text_changed_since(since)} - first_items
        everything = {i.id for i in wh.active_items()}
    assert new_since > since
    assert landed_second and landed_second <= everything


def test_stale_vector_check_hashes_only_what_was_written_since_the_last_run(tmp_path):
    """The embedding stage compares content hashes for every item once, then only for items
    written since the last successful run checked (same model and recipe); an item without
    a vector is found anywhere. After incremental runs nothing is stale store-wide."""
    from assets.run import run_consolidation
    from pipelines.consolidate import embedding_check_since
    from tests.assets.support import BATCH_2

    settings = make_settings(tmp_path)
    model = HashEmbedder(settings.embedder_dim).name
    with Warehouse(settings.warehouse_path) as wh:
        assert embedding_check_since(wh, model) is None  # no run yet: every item
    ingest(settings, BATCH_1)
    assert run_consolidation(settings, instance="ephemeral")["status"] == "success"
    with Warehouse(settings.warehouse_path) as wh:
        first = embedding_check_since(wh, model)
        assert first is not None and first > wh.runs()[0]["started_at"]
        assert embedding_check_since(wh, "another-model") is None  # another model: every item
    ingest(settings, BATCH_2, name="more.jsonl")
    assert run_consolidation(settings, instance="ephemeral")["status"] == "success"
    with Warehouse(settings.warehouse_path) as wh:
        since = embedding_check_since(wh, model)
        assert since > first
        assert wh.stale_embedding_ids(model) == []  # the incremental check left nothing stale
        untouched = [r[0] for r in wh.query(
            "SELECT i.id FROM items i WHERE NOT i.archived AND i.superseded_by IS NULL AND i.id NOT IN "
            "(SELECT item_id FROM revisions WHERE changed_at >= ?) ORDER BY 1", [since])]
        old, gone, *_ = untouched
        # A vector made from other content, for an item not written since: only a full
        # comparison sees it (nothing but a direct table edit can make one).
        wh.query("UPDATE embeddings SET content_hash = 'x' WHERE item_id = ?", [old])
        wh.query("DELETE FROM embeddings WHERE item_id = ?", [gone])
        assert wh.stale_embedding_ids(model) == sorted([old, gone])
        assert wh.stale_embedding_ids(model, written_since=since) == [gone]  # no vector: found anyway
        wh.update_items({old: {"content": "rewritten after the run"}})
        assert wh.stale_embedding_ids(model, written_since=since) == sorted([old, gone])
    assert run_consolidation(settings, instance="ephemeral")["status"] == "success"
    with Warehouse(settings.warehouse_path) as wh:
        assert wh.stale_embedding_ids(model) == []


def test_next_snapshot_is_built_from_the_published_one_plus_what_changed(tmp_path):
    """A later run takes unchanged rows and vectors from the published snapshot and only
    the items written since from the warehouse: it shares the published item table and
    history (hard links) and adds a delta segment; the result serves what a snapshot built
    from the warehouse alone serves (same items, vectors and histories)."""
    import os

    import numpy as np

    from pipelines.snapshot import HISTORY_FILE, ITEMS_FILE, load_snapshot
    from tests.assets.support import BATCH_2

    settings = make_settings(tmp_path, snapshot_compact_fraction=100.0)  # never compacts here
    ingest(settings, BATCH_1)
    first = stages.consolidate_once(settings)["snapshot"]
    assert first.published
    ingest(settings, BATCH_2)
    with Warehouse(settings.warehouse_path) as wh:
        some = wh.active_ids()[:2]
        wh.update_items({some[0]: {"tags": ["changed"]}}, reason="test")
        wh.archive_items([some[1]], reason="test")
    report = stages.consolidate_once(settings)["snapshot"]
    incremental = load_snapshot(settings.snapshots_path)
    assert report.published and 0 < incremental.manifest.extra["changed_rows"] < report.count
    assert incremental.manifest.base == first.version and incremental.manifest.delta_count > 0
    assert incremental.manifest.removed_count >= 2  # the changed item's old row and the archived one
    base_folder = settings.snapshots_path / first.version
    for name in (ITEMS_FILE, HISTORY_FILE):  # shared, not rewritten
        assert os.path.samefile(incremental.path / name, base_folder / name)
    with Warehouse(settings.warehouse_path) as wh:
        full = stages.publish_snapshot(wh, HashEmbedder(384), settings, force=True)
        expected = wh.active_items()
        histories = {i.id: (wh.revisions(i.id), wh.item_events(i.id)) for i in [*expected, *wh.get_items([some[1]])]}
    rebuilt = load_snapshot(settings.snapshots_path)
    assert full.published and "changed_rows" not in rebuilt.manifest.extra and rebuilt.manifest.delta_count == 0
    assert sorted(incremental.items, key=lambda i: i.id) == rebuilt.items == expected
    assert some[1] not in {i.id for i in incremental.items}
    assert incremental.items[incremental.row_of[some[0]]].tags == ["changed"]
    for item in expected:
        np.testing.assert_array_equal(incremental.vectors[incremental.row_of[item.id]],
                                      rebuilt.vectors[rebuilt.row_of[item.id]])
        assert incremental.history(item.id) == rebuilt.history(item.id) == histories[item.id]
    # Archived: not served, its history still is (base rows and the archive revision since).
    assert incremental.history(some[1]) == rebuilt.history(some[1]) == histories[some[1]]
    assert histories[some[1]][0][-1]["snapshot"]["archived"] is True
    assert incremental.manifest.tier_counts == rebuilt.manifest.tier_counts


def test_a_damaged_shared_base_is_replaced_by_a_full_snapshot_at_the_next_run(tmp_path):
    """Versions built on one base share its files (one inode): damage to it makes them all
    unreadable, and the next run, unable to build on the published version, publishes a
    full one from the warehouse."""
    from pipelines.snapshot import ITEMS_FILE, SnapshotError, load_snapshot
    from tests.assets.support import BATCH_2

    settings = make_settings(tmp_path, snapshot_compact_fraction=100.0)
    ingest(settings, BATCH_1)
    first = stages.consolidate_once(settings)["snapshot"]
    ingest(settings, BATCH_2)
    second = load_snapshot(settings.snapshots_path, stages.consolidate_once(settings)["snapshot"].version)
    assert second.manifest.base == first.version
    shared = second.path / ITEMS_FILE
    data = bytearray(shared.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shared.write_bytes(bytes(data))  # in place: the same inode as the base version's file
    with pytest.raises(SnapshotError, match="checksum"):
        load_snapshot(settings.snapshots_path)
    third = stages.consolidate_once(settings)["snapshot"]
    rebuilt = load_snapshot(settings.snapshots_path)
    assert third.published and rebuilt.version == third.version and rebuilt.manifest.base == ""
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        assert sorted(i.id for i in rebuilt.items) == wh.active_ids()
