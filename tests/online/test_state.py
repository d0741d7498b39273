"""MemoryService without HTTP: snapshot loading and hot swap, the inbox delta, restarts,
several workers on one inbox, refused (wrong-embedder) and corrupt snapshots, embedder
outage fallback."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from online.state import MemoryService, embedding_text
from online.tools import ToolDispatcher
from pipelines.embedders import EmbedderUnavailable, HashEmbedder
from pipelines.records import Identity, MemoryItem, Provenance, Scope
from pipelines.settings import Settings
from pipelines.snapshot import CURRENT_FILE, INDEX_FILE, build_snapshot

WHO = Identity(user_id="dana", project_id="atlas", session_id="s1")


def make_item(item_id: str, title: str, content: str, who: Identity = WHO, kind: str = "project",
              **kw) -> MemoryItem:
    return MemoryItem(id=item_id, tier=kw.pop("tier", "ltm"), type=kw.pop("type", "decision"),
                      title=title, content=content, scope=Scope.for_identity(kind, who),
                      provenance=Provenance(source_kind="chat", source_id=f"src-{item_id}"),
                      confidence=kw.pop("confidence", 0.9), **kw)


def publish(settings: Settings, items: list[MemoryItem], watermark: int, embedder_name: str | None = None):
    emb = HashEmbedder(settings.embedder_dim)
    vecs = emb.embed([embedding_text(i) for i in items]) if items else np.zeros((0, emb.dim), np.float32)
    return build_snapshot(settings.snapshots_path, items, vecs, embedder_name=embedder_name or emb.name,
                          dim=emb.dim, watermark=watermark, keep=5)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(embedder="hash", data_dir=str(tmp_path))


@pytest.fixture
def service(settings: Settings):
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    yield svc
    svc.close()


def write(svc: MemoryService, content: str, title: str, who: Identity = WHO, **item) -> str:
    out = ToolDispatcher(svc).dispatch("memory.write", {"item": {"title": title, "content": content,
                                                                  "type": "decision", **item}}, who)
    return out["result"]["item_id"]


def ids(result) -> list[str]:
    return [h.item.id for h in result.hits]


def settle(svc: MemoryService):
    """Let the service notice CURRENT and finish its background load."""
    svc.view()
    return svc.wait_for_swap()


def test_empty_store_is_ready_and_says_nothing_found(service: MemoryService) -> None:
    report = service.report()
    assert report["ready"] is True and report["snapshot_version"] is None and report["problems"] == []
    result = service.recall("what is the tile latency budget?", WHO)
    assert not result.found and result.hits == []
    assert "No memory found" in result.message


def test_the_service_runs_blas_on_one_thread(service: MemoryService) -> None:
    """A recall's products are one query's: the serving process keeps BLAS single-threaded
    (its worker threads only contend, see single_threaded_blas)."""
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


def test_the_service_collects_the_young_generation_less_often(settings: Settings) -> None:
    """A recall's short-lived objects do not trigger a young-generation collection about
    once a recall (YOUNG_GC_THRESHOLD); a higher threshold the host set is kept."""
    from online.snapshot_holder import YOUNG_GC_THRESHOLD

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim)):
            assert gc.get_threshold() == (YOUNG_GC_THRESHOLD, 10, 10)
        gc.set_threshold(YOUNG_GC_THRESHOLD * 2, 10, 10)
        with MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim)):
            assert gc.get_threshold() == (YOUNG_GC_THRESHOLD * 2, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_warm_loads_what_the_first_write_would_otherwise_wait_for(service: MemoryService) -> None:
    from pipelines.policy_rules.secrets.find import _one_pass
    from pipelines.policy_rules.secrets.vendors import _detect_secrets_patterns, _vendor_patterns

    _vendor_patterns.cache_clear()
    _detect_secrets_patterns.cache_clear()
    _one_pass.cache_clear()
    assert service.warm() == []
    assert _vendor_patterns.cache_info().currsize == 1  # detect-secrets' plugins imported
    assert _one_pass.cache_info().currsize == 1  # the long-text screen built or loaded


def test_snapshot_loaded_at_start_and_recalled(settings: Settings) -> None:
    manifest = publish(settings, [make_item("m1", "Tile latency budget", "The tile latency budget is 40 ms.")], 0)
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    try:
        assert svc.report()["snapshot_version"] == manifest.version
        result = svc.recall("tile latency budget", WHO)
        assert ids(result) == ["m1"] and result.hits[0].source == "snapshot"
    finally:
        svc.close()


def test_write_is_recalled_on_the_next_request_from_the_delta(service: MemoryService) -> None:
    item_id = write(service, "Deploys happen on Tuesdays only.", "Deploy day")
    result = service.recall("when do deploys happen?", WHO)
    assert item_id in ids(result)
    assert next(h for h in result.hits if h.item.id == item_id).source == "delta"
    # The recall itself was recorded as one usage event with the returned ids (queued off the
    # request path; flushing writes it now).
    assert service.usage.flush()
    usage = service.inbox.read_after(0, kinds=["usage"])
    assert usage and item_id in usage[-1].payload["item_ids"]


def test_new_snapshot_is_swapped_in_and_the_overlay_drops_what_it_contains(service: MemoryService,
                                                                         settings: Settings) -> None:
    item_id = write(service, "Deploys happen on Tuesdays only.", "Deploy day")
    view = service.view()
    assert item_id in view.delta.items and view.snap.version is None
    # The pipeline publishes a snapshot holding that item, watermark = everything so far.
    published = publish(settings, [view.delta.items[item_id]], service.inbox.max_seq())
    fresh = settle(service)  # check_interval_ms=0: CURRENT is checked before every request
    assert fresh.snap.version == published.version
    assert item_id not in fresh.delta.items and fresh.source_of(item_id) == "snapshot"
    result = service.recall("deploy day", WHO)
    assert ids(result).count(item_id) == 1 and result.hits[0].source == "snapshot"
    # Events after the watermark are still served from the delta.
    later = write(service, "Freeze deploys during the holidays.", "Holiday freeze")
    assert later in service.view().delta.items


def test_in_flight_view_keeps_its_corpus_across_a_swap(service: MemoryService, settings: Settings) -> None:
    publish(settings, [make_item("old", "Cache policy", "Cache tiles for one hour.")], 0)
    before = service.view()
    publish(settings, [make_item("old", "Cache policy", "Cache tiles for one hour."),
                       make_item("new", "Tile format", "Tiles are served as WebP.")], 0)
    after = service.reload()
    assert before.snap.version != after.snap.version
    assert ids(service.recall("tile format webp", WHO, view=before, record_usage=False)) != ["new"]
    assert "new" in ids(service.recall("tile format webp", WHO, view=after, record_usage=False))


def test_a_slow_load_does_not_hold_up_requests(service: MemoryService, settings: Settings,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import online.snapshot_holder as state_module

    real = state_module.load_latest_good

    def slow(*args, **kw):
        time.sleep(0.5)
        return real(*args, **kw)

    monkeypatch.setattr(state_module, "load_latest_good", slow)
    published = publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0)
    started = time.perf_counter()
    view = service.view()  # notices CURRENT changed, starts the load, answers at once
    assert time.perf_counter() - started < 0.3 and view.snap.version is None
    assert not service.recall("tile format", WHO).found
    assert service.wait_for_swap().snap.version == published.version
    assert ids(service.recall("tile format", WHO)) == ["m1"]


def test_check_is_throttled_but_reload_forces_it(settings: Settings) -> None:
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=60_000)
    try:
        published = publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0)
        assert svc.view().snap.version is None  # within the interval: not looked at yet
        assert svc.reload().snap.version == published.version
    finally:
        svc.close()


def test_update_in_the_delta_shadows_the_snapshot_version(service: MemoryService, settings: Settings) -> None:
    publish(settings, [make_item("m1", "Tile latency budget", "The tile latency budget is 40 ms.")], 0)
    service.reload()
    ToolDispatcher(service).dispatch("memory.update",
                                     {"id": "m1", "patch": {"content": "The tile latency budget is 25 ms."}}, WHO)
    result = service.recall("tile latency budget", WHO)
    assert ids(result) == ["m1"]
    assert result.hits[0].item.content == "The tile latency budget is 25 ms." and result.hits[0].source == "delta"


def test_restart_replays_the_inbox_after_the_watermark(settings: Settings) -> None:
    first = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    item_id = write(first, "The on-call rotation is weekly.", "On-call rotation")
    first.close()
    second = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    try:
        assert item_id in ids(second.recall("on-call rotation", WHO))
    finally:
        second.close()


def test_two_workers_on_one_inbox_see_each_others_writes(settings: Settings) -> None:
    a = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    b = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    try:
        assert not b.recall("postgres version", WHO).found
        item_id = write(a, "We run Postgres 16 in production.", "Postgres version")
        assert item_id in ids(b.recall("postgres version", WHO))
        other = write(b, "Backups run nightly at 02:00 UTC.", "Backup schedule")
        assert other in ids(a.recall("backup schedule", WHO))
    finally:
        a.close()
        b.close()


class RecordingEmbedder(HashEmbedder):
    """A hash embedder that remembers every text it embedded."""

    def __init__(self) -> None:
        super().__init__(384)
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        return super().embed(texts)


def test_a_write_is_embedded_once_whichever_worker_folds_it(settings: Settings) -> None:
    """The worker that accepts a write embeds its items and shares the vectors through the
    inbox: another worker (and the writer itself) folds the write without embedding it."""
    a = MemoryService(settings, embedder=RecordingEmbedder(), check_interval_ms=0)
    b = MemoryService(settings, embedder=RecordingEmbedder(), check_interval_ms=0)
    try:
        a.capture(WHO, "user", "The staging deploy moved to slot 7 on rack 2.")
        item_id = write(b, "Backups run nightly at 02:00 UTC.", "Backup schedule")
        views = [a.view(), b.view()]
        embedded = a.embedder.texts + b.embedder.texts
        assert sum("slot 7" in t for t in embedded) == 1
        assert sum("Backups run nightly" in t for t in embedded) == 1
        for view in views:
            assert len(view.delta.items) == 2
        vectors = [{it.id: seg.vectors[row] for seg in v.delta.segments for row, it in enumerate(seg.items)}
                   for v in views]
        assert vectors[0].keys() == vectors[1].keys()
        for key in vectors[0]:
            assert np.array_equal(vectors[0][key], vectors[1][key])
        assert item_id in ids(a.recall("backup schedule", WHO))
        assert ids(b.recall("staging deploy slot", WHO))
    finally:
        a.close()
        b.close()


def test_a_captured_turn_shares_its_vectors_in_its_own_append(settings: Settings) -> None:
    """The vectors a write makes (its checks' and its items') are committed with its events,
    one inbox transaction, not one commit each: nothing is shared on its own."""
    svc = MemoryService(settings, embedder=RecordingEmbedder(), check_interval_ms=0)
    calls: list[tuple[str, int]] = []
    inbox = svc.inbox
    share, append_sharing = inbox.share_vectors, inbox.append_sharing
    inbox.share_vectors = lambda vectors: (calls.append(("share", len(vectors))), share(vectors))[1]
    inbox.append_sharing = lambda events, vectors, **kw: (calls.append(("append", len(vectors))),
                                                          append_sharing(events, vectors, **kw))[1]
    try:
        svc.capture(WHO, "user", "Remember: the staging deploy moved to slot 7 on rack 2.")
        assert [kind for kind, _ in calls] == ["append"] and calls[0][1] >= 1
        keys = list(svc.deltas._recent)
        assert inbox.shared_vectors(keys).keys() == set(keys)
    finally:
        svc.close()


def test_snapshot_from_another_embedder_is_refused_and_reported(settings: Settings) -> None:
    publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0, embedder_name="minilm-other")
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    try:
        report = svc.report()
        assert report["ready"] is True and report["snapshot_version"] is None
        problem = " ".join(report["problems"])
        assert "minilm-other" in problem and "hash-384" in problem and "embedder" in problem
        assert not svc.recall("tile format", WHO).found  # nothing served from the refused snapshot
        item_id = write(svc, "Tiles are served as AVIF now.", "Tile format v2")
        assert item_id in ids(svc.recall("tile format avif", WHO))  # the delta still works
    finally:
        svc.close()


def _corrupt_current(settings: Settings) -> str:
    root = settings.snapshots_path
    version = (root / CURRENT_FILE).read_text().strip()
    index = root / version / INDEX_FILE
    data = bytearray(index.read_bytes())
    data[len(data) // 2] ^= 0xFF
    index.write_bytes(bytes(data))
    return version


def test_corrupt_newest_snapshot_falls_back_and_is_reported(settings: Settings) -> None:
    good = publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0)
    publish(settings, [make_item("m2", "Cache policy", "Cache tiles for one hour.")], 0)
    bad = _corrupt_current(settings)
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    try:
        report = svc.report()
        assert report["snapshot_version"] == good.version
        assert any(bad in p and "corrupt" in p for p in report["problems"])
    finally:
        svc.close()


def test_corrupt_only_snapshot_leaves_the_service_up_on_the_delta(settings: Settings) -> None:
    publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0)
    _corrupt_current(settings)
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    try:
        report = svc.report()
        assert report["ready"] and report["snapshot_version"] is None and report["problems"]
        item_id = write(svc, "Deploys happen on Tuesdays.", "Deploy day")
        assert item_id in ids(svc.recall("deploy day", WHO))
    finally:
        svc.close()


def test_corrupt_snapshot_published_later_keeps_the_old_one_serving(service: MemoryService,
                                                                     settings: Settings) -> None:
    first = publish(settings, [make_item("m1", "Tile format", "Tiles are WebP.")], 0)
    assert settle(service).snap.version == first.version
    publish(settings, [make_item("m2", "Cache policy", "Cache tiles for one hour.")], 0)
    bad = _corrupt_current(settings)
    view = service.reload()
    assert view.snap.version == first.version
    assert any(bad in p for p in service.problems(view))
    assert ids(service.recall("tile format", WHO)) == ["m1"]


class DownEmbedder(HashEmbedder):
    """Answers the first `ok_calls` embed calls, then behaves like an unreachable server."""

    def __init__(self, ok_calls: int) -> None:
        super().__init__(384)
        self.ok_calls = ok_calls

    def embed(self, texts):
        if self.ok_calls <= 0:
            raise EmbedderUnavailable("hash", "connection refused", "start the server")
        self.ok_calls -= 1
        return super().embed(texts)


def test_embedder_outage_degrades_to_lexical_and_is_reported(settings: Settings) -> None:
    svc = MemoryService(settings, embedder=DownEmbedder(ok_calls=0))
    try:
        item_id = write(svc, "Deploys happen on Tuesdays only.", "Deploy day")
        result = svc.recall("deploy day tuesdays", WHO)
        assert item_id in ids(result)  # found lexically, nothing embedded
        assert any("not embedded" in p for p in svc.problems())
    finally:
        svc.close()


def test_delta_is_a_log_of_segments_with_later_versions_shadowing_earlier(service: MemoryService) -> None:
    """Each write adds a small segment; segments merge when the newer is at least half the
    older, so a growing delta stays a handful of segments (sizes at least doubling towards
    the oldest) and nothing is lost or shown twice."""
    written = [write(service, f"Service number {i} listens on port {9000 + i}.", f"Port of service {i}")
               for i in range(40)]
    view = service.view()
    sizes = [seg.n for seg in view.delta.segments]
    assert sum(sizes) == 40 and len(sizes) <= 6
    assert all(a > 2 * b for a, b in zip(sizes, sizes[1:]))  # older segments are bigger
    for i in (0, 17, 39):
        assert written[i] in ids(service.recall(f"which port does service number {i} listen on?", WHO))
    # An update lands in a new segment and hides the old version wherever it sits.
    ToolDispatcher(service).dispatch(
        "memory.update", {"id": written[0], "patch": {"content": "Service number 0 moved to port 7000."}}, WHO)
    result = service.recall("which port does service number 0 listen on?", WHO)
    assert ids(result).count(written[0]) == 1
    assert "7000" in next(h for h in result.hits if h.item.id == written[0]).item.content
    assert len(service.view().visible_items(WHO)) == 40


def test_an_item_updated_back_to_its_first_words_gets_their_vector_again(service: MemoryService) -> None:
    """A fold embeds an item once per version (keyed by its inputs' hash) and keeps older
    versions' vectors a while: each version still gets the vector of its own words, as a
    delta rebuilt from the inbox gives it."""
    from online.delta_log import DeltaLog

    def vector(delta):
        newest = next(seg for seg in reversed(delta.segments) if item_id in seg.row_of)
        return newest.items[newest.row_of[item_id]].content, newest.vectors[newest.row_of[item_id]]

    item_id = write(service, "Deploys go out on Thursdays.", "Deploy day")
    for content in ("Deploys go out on Fridays after the freeze.", "Deploys go out on Thursdays."):
        ToolDispatcher(service).dispatch("memory.update", {"id": item_id, "patch": {"content": content}}, WHO)
        view = service.view()
        said, folded = vector(view.delta)
        again = vector(DeltaLog(service.inbox, service.embedder).rebuild(view.snap))[1]
        assert said == content and np.array_equal(folded, again)


@pytest.mark.real_gc_freeze
def test_snapshot_objects_are_frozen_out_of_the_gc_and_still_freed_after_a_swap(service: MemoryService,
                                                                                settings: Settings) -> None:
    """The loaded snapshot is moved out of the cyclic GC's full passes (their pauses were the
    p99 tail under load); a swap unfreezes, so the previous snapshot is still freed."""
    import gc
    import weakref

    publish(settings, [make_item("old", "Cache policy", "Cache tiles for one hour.")], 0)
    first = settle(service)
    assert first.snap.version is not None and gc.get_freeze_count() > 0
    old_corpus = weakref.ref(first.snap.corpus)
    del first
    publish(settings, [make_item("new", "Cache policy", "Cache tiles for a day.")], 0)
    assert settle(service).snap.get("new") is not None
    gc.collect()
    assert old_corpus() is None and gc.get_freeze_count() > 0
    service.close()
    assert gc.get_freeze_count() == 0


def test_a_delta_segment_without_any_word_is_searched_without_error(service: MemoryService) -> None:
    """A segment of one item whose text has no token for BM25 (schema fuzzing found this
    as a 500): recall answers, and the item is still found by other channels or not at all."""
    write(service, "Deploys happen on Tuesdays only.", "Deploy day")
    write(service, "Releases are tagged on Mondays.", "Release day")
    write(service, "Dana owns the billing service.", "Billing owner")
    # Only stopwords: words, so a valid write, but no BM25 token.
    out = ToolDispatcher(service).dispatch("memory.write", {"item": {"title": "It is", "content": "It is what it is.",
                                                                     "type": "fact"}}, WHO)
    assert out["ok"] is True, out
    assert len(service.view().delta.segments) == 2  # the blank item sits alone in the newest
    result = service.recall("when do deploys happen?", WHO)
    assert result.hits and result.hits[0].item.title == "Deploy day"


def test_a_cli_recall_in_its_own_process_exits_cleanly(settings: Settings) -> None:
    """`loci search` closes its service, which hands the frozen snapshot back to the GC: a CLI
    recall once ended with DuckDB's bindings listing hundreds of "leaked" objects on stderr
    (DuckDB is connected in the child, as anything importing the warehouse does)."""
    import os
    import subprocess
    import sys

    publish(settings, [make_item("m1", "Tile latency budget", "The tile latency budget is 40 ms.")], 0)
    code = (
        "import sys, duckdb\n"
        "con = duckdb.connect()\n"
        "from loci.cli import app\n"
        "app(sys.argv[1:], prog_name='loci')\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCI_")}
    env.update(LOCI_CONFIG=str(Path(settings.data_dir) / "absent.toml"), LOCI_EMBEDDER="hash",
               COLUMNS="200")
    out = subprocess.run([sys.executable, "-c", code, "search", "tile latency budget", "--user", "dana",
                          "--project", "atlas", "--data-dir", settings.data_dir],
                         capture_output=True, text=True, cwd=root, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "m1" in out.stdout, out.stdout
    assert "leaked" not in out.stderr


class ReleaseEmbedder(HashEmbedder):
    """A hash embedder that reads any text about a deploy or a release as one meaning, as a
    model would, with no word shared."""

    def __init__(self, down: bool = False) -> None:
        super().__init__(384)
        self.down = down
        self.texts: list[str] = []

    def embed(self, texts):
        self.texts.extend(texts)
        if self.down:
            raise EmbedderUnavailable("hash", "connection refused", "start the server")
        out = super().embed(texts)
        for n, text in enumerate(texts):
            if "deploy" in text.lower() or "release" in text.lower():
                out[n] = 0.0
                out[n][0] = 1.0
        return out


@pytest.mark.parametrize("down", [False, True])
def test_a_proposal_is_checked_against_the_claims_nearest_it_in_meaning(settings: Settings, down: bool) -> None:
    """`existing_like`: beside the claims sharing its words, those nearest a proposal by
    vector (`NEAR_CLAIMS`), so a claim on its subject in other words is checked too, the
    proposal embedded once for the check and the write; with the embedder down, the words
    alone, no error."""
    from pipelines.records import ProposedItem

    items = [make_item("r1", "Release day", "Release day is Friday.", type="fact"),
             make_item("l1", "Lunch", "Lunch is at noon.", type="fact")]
    emb = ReleaseEmbedder()
    build_snapshot(settings.snapshots_path, items, emb.embed([embedding_text(i) for i in items]),
                   embedder_name=emb.name, dim=emb.dim, watermark=0, keep=5)
    svc = MemoryService(settings, embedder=ReleaseEmbedder(down=down))
    try:
        proposal = ProposedItem(type="fact", title="Deploys", content="Deploys go out on Thursdays.")
        view = svc.view()
        assert svc._claims_like(f"{proposal.title} {proposal.content}", WHO, view) == []  # no word shared
        found = [item.id for item in svc.existing_like(WHO, view)(proposal)]
        assert ("r1" in found) is not down
        if not down:
            write(svc, proposal.content, proposal.title, type="fact")
            svc.view()
            assert sum("Thursdays" in text for text in svc.embedder.texts) == 1
    finally:
        svc.close()
