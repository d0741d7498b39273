"""A service restarted after several incremental consolidations (each snapshot the first
one's item table and history plus a delta segment) serves what a service over a snapshot
rebuilt from the warehouse alone serves: same recall answers, same item histories."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from bench.harness import make_settings
from online.state import MemoryService
from pipelines.consolidate import consolidate_once, publish_snapshot
from pipelines.embedders import HashEmbedder
from pipelines.snapshot import INDEX_DELTA_FILE, ITEMS_DELTA_FILE, load_snapshot
from pipelines.warehouse import Warehouse
from tests.reliability.test_snapshot_corruption import say, started


def served(settings, acks) -> tuple[str, list, dict]:
    """(version, each ack's top hits with scores, each hit's published history) from a
    freshly started service (the restart); recalls are not recorded as usage, so both
    services answer over the same inbox."""
    with MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), swap_in_background=False) as svc:
        view = svc.view()
        answers, histories = [], {}
        for a in acks:
            hits = svc.recall(a.phrase, a.who, k=5, mode="catalog", record_usage=False, view=view).hits
            assert a.item_id in [h.item.id for h in hits], a.phrase
            answers.append([(h.item.id, h.score, h.source) for h in hits])
            for h in hits:
                histories[h.item.id] = view.snap.loaded.history(h.item.id)
        return view.snap.version, answers, histories


@pytest.mark.parametrize("hnsw_threshold", [50_000, 4], ids=["flat", "hnsw-delta"])
def test_restart_after_incremental_publishes_serves_what_a_full_snapshot_serves(tmp_path: Path,
                                                                               hnsw_threshold: int) -> None:
    """hnsw-delta: every incremental version keeps the first one's HNSW graph file and puts
    the items written since in its exact delta index; recall finds them all the same."""
    settings = make_settings(tmp_path, snapshot_compact_fraction=100.0,  # no compaction here
                             hnsw_threshold=hnsw_threshold, snapshot_index_delta_fraction=100.0)
    rng = random.Random(3)
    with started(settings) as client:
        acks = say(client, rng, 6)
        first = consolidate_once(settings)["snapshot"]
        for _ in range(3):
            acks += say(client, rng, 6)
            assert consolidate_once(settings)["snapshot"].published
    manifest = load_snapshot(settings.snapshots_path).manifest
    assert manifest.base == first.version and ITEMS_DELTA_FILE in manifest.files and manifest.delta_count >= 18
    if hnsw_threshold < 50_000:
        assert manifest.index_kind == "hnsw" and manifest.index_base == first.version
        assert INDEX_DELTA_FILE in manifest.files and manifest.index_delta_count >= 18

    version, segmented, seg_histories = served(settings, acks)
    assert version == manifest.version
    assert all(h is not None and h[0] for h in seg_histories.values())  # revisions published for every hit

    with Warehouse(settings.warehouse_path) as wh:
        full = publish_snapshot(wh, HashEmbedder(settings.embedder_dim), settings, force=True)
    assert full.published and full.version != version
    assert load_snapshot(settings.snapshots_path).manifest.delta_count == 0
    version, rebuilt, full_histories = served(settings, acks)
    assert version == full.version
    # Same hits in the same order; scores equal up to float summation order (rows differ).
    assert [[(i, src) for i, _, src in a] for a in segmented] == [[(i, src) for i, _, src in a] for a in rebuilt]
    assert [s for a in segmented for _, s, _ in a] == pytest.approx([s for a in rebuilt for _, s, _ in a], rel=1e-5)
    assert seg_histories == full_histories
