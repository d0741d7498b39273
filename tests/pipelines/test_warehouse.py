"""The DuckDB warehouse access layer: round trips, revision history, never-delete, audit
events, transactions, bulk paths, embeddings, landing, palace, runs, views, locking."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from pipelines.records import (
    ChatTurn,
    Event,
    Identity,
    Link,
    MemoryItem,
    PalaceLocation,
    Provenance,
    Scope,
    item_content_hash,
    sha256_text,
)
from pipelines.warehouse import (
    ItemConflictError,
    Origin,
    UnknownItemError,
    Warehouse,
    WarehouseError,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
TABLES = ("items", "revisions", "events", "links", "embeddings", "palace_locations")


def make_item(item_id: str, content: str | None = None, **fields) -> MemoryItem:
    defaults = dict(
        tier="stm",
        type="fact",
        title=f"title {item_id}",
        content=content if content is not None else f"content of {item_id}",
        scope=Scope(kind="project", user_id="u1", project_id="p1"),
    )
    defaults.update(fields)
    return MemoryItem(id=item_id, **defaults)


def counts(wh: Warehouse) -> dict[str, int]:
    return {t: wh.query(f"SELECT count(*) FROM {t}")[0][0] for t in TABLES}


@pytest.fixture(scope="module")
def migrated_file(tmp_path_factory) -> Path:
    """A freshly migrated, closed warehouse file; copied per test (migrating is the slow
    part of opening a new file)."""
    path = tmp_path_factory.mktemp("template") / "warehouse.duckdb"
    Warehouse(path).close()
    return path


@pytest.fixture
def wh(tmp_path, migrated_file):
    path = tmp_path / "data" / "warehouse.duckdb"
    path.parent.mkdir()
    shutil.copyfile(migrated_file, path)
    with Warehouse(path) as warehouse:
        assert warehouse.applied_migrations == []  # the copy is already up to date
        yield warehouse


# -- items --------------------------------------------------------------------------------


def test_put_and_get_round_trip_every_field(wh):
    wh.put_items([make_item("other")])
    item = make_item(
        "full",
        tier="mtm",
        type="decision",
        scope=Scope(kind="session", user_id="u9", project_id="p9", session_id="s9", org_id="o9"),
        tags=["db", "duckdb"],
        entities=["DuckDB", "Loci"],
        links=[Link(rel="references", to="other")],
        provenance=Provenance(
            source_kind="chat",
            source_id="turn-1",
            chunk_ids=["c1"],
            content_hashes=["h1"],
            turn_refs=["D1:3"],
            event_ids=["e1", "e2"],
        ),  # fmt: skip
        confidence=0.82,
        importance=8,
        validation="verified",
        valid_from="2024-01-01T00:00:00+00:00",
        valid_to="2025-01-01T00:00:00+00:00",
        expires_at="2030-01-01T00:00:00+00:00",
        usage_count=3,
        last_used_at="2024-06-01T00:00:00+00:00",
        metadata={"merger": "extractive-fallback", "nested": {"a": [1, 2]}},
    )
    stored = wh.put_items([item])[0]
    assert stored == item
    assert wh.get_item("full") == item
    assert wh.get_item("missing") is None
    assert [i.id for i in wh.get_items(["full", "missing", "other"])] == ["full", "other"]


def test_put_item_recomputes_a_wrong_content_hash(wh):
    item = make_item("a")
    item.content = "edited after construction"
    stored = wh.put_items([item])[0]
    assert stored.content_hash == item_content_hash(item.title, "edited after construction")
    assert wh.get_item("a").content_hash == stored.content_hash


def test_put_item_is_idempotent_for_same_content_and_refuses_other_content(wh):
    wh.put_items([make_item("a")])
    before = counts(wh)
    again = wh.put_items([make_item("a", tier="ltm")])[0]  # same title+content -> same hash
    assert again.tier == "stm"  # the stored item, untouched
    assert counts(wh) == before
    with pytest.raises(ItemConflictError, match="update_item"):
        wh.put_items([make_item("a", content="something else")])
    assert counts(wh) == before


def test_update_keeps_every_revision(wh):
    """Seed 000 test_store: revision history preserved."""
    created = wh.put_items([make_item("a", content="v1")])[0]
    contents = ["v1"]
    for n in (2, 3, 4):
        updated = wh.update_items({"a": {"content": f"v{n}", "confidence": n / 10}})[0]
        contents.append(f"v{n}")
        assert updated.content_hash == item_content_hash(updated.title, f"v{n}")
        assert updated.updated_at >= created.updated_at
    promoted = wh.update_items({"a": {"tier": "mtm"}}, reason="promotion")[0]
    assert promoted.content == "v4" and promoted.tier == "mtm"
    assert wh.get_item("a") == promoted

    history = wh.revisions("a")
    assert [r["revision_num"] for r in history] == [1, 2, 3, 4, 5]
    assert [r["snapshot"]["content"] for r in history] == contents + ["v4"]
    assert [r["reason"] for r in history] == ["create", "update", "update", "update", "promotion"]
    assert history[0]["snapshot"]["content_hash"] == created.content_hash
    assert history[-1]["snapshot"]["tier"] == "mtm"


def test_update_rejects_bad_patches_and_writes_nothing(wh):
    wh.put_items([make_item("a")])
    before = counts(wh)
    with pytest.raises(ValueError, match="unknown MemoryItem fields"):
        wh.update_items({"a": {"colour": "red"}})
    with pytest.raises(ValueError, match="cannot be patched"):
        wh.update_items({"a": {"content_hash": "x"}})
    with pytest.raises(ValueError, match="cannot be patched"):
        wh.update_items({"a": {"id": "b"}})
    with pytest.raises(ValueError, match="invalid patch"):
        wh.update_items({"a": {"tier": "forever"}})
    with pytest.raises(UnknownItemError):
        wh.update_items({"missing": {"tier": "mtm"}})
    with pytest.raises(TypeError):
        wh.update_items({"a": ["tier", "mtm"]})
    assert counts(wh) == before
    assert wh.get_item("a").tier == "stm"


def test_update_items_in_bulk(wh):
    wh.put_items([make_item(f"i{k}") for k in range(50)])
    updated = wh.update_items(
        {f"i{k}": {"usage_count": k} for k in range(0, 50, 2)}, reason="usage"
    )
    assert [u.usage_count for u in updated] == list(range(0, 50, 2))
    assert wh.get_item("i10").usage_count == 10 and wh.get_item("i11").usage_count == 0
    assert len(wh.revisions("i10")) == 2 and len(wh.revisions("i11")) == 1


def test_update_items_patches_the_versions_a_stage_holds_without_reading_them_again(wh, monkeypatch):
    """A stage that read the items under the warehouse lock gives them as `current`: they are
    patched as given, not read again (columns and links); one not stored with that content,
    or not stored at all, is refused and nothing is written."""
    held = {i.id: i for i in wh.put_items([make_item("a", content="v1"), make_item("b", content="v2")])}
    stale = wh.update_items({"b": {"content": "v3"}})[0]
    before = counts(wh)

    def no_full_read(ids):
        raise AssertionError(f"read again: {ids}")

    monkeypatch.setattr(wh, "_load_items", no_full_read)
    with pytest.raises(ItemConflictError, match="'b': the version given as current is not the stored one"):
        wh.update_items({"a": {"tier": "mtm"}, "b": {"tier": "mtm"}}, current=held, touch=False)
    with pytest.raises(UnknownItemError):
        wh.update_items({"nope": {"tier": "mtm"}}, current={"nope": make_item("nope")}, touch=False)
    assert counts(wh) == before
    (done,) = wh.update_items({"b": {"metadata": {"palace": "home/room"}}}, current={"b": stale}, touch=False)
    monkeypatch.undo()
    assert wh.get_item("b") == done and done.content == "v3" and done.metadata["palace"] == "home/room"
    assert [r["revision_num"] for r in wh.revisions("b")] == [1, 2, 3]


def test_supersede_and_archive_never_delete(wh):
    wh.put_items([make_item("a"), make_item("b"), make_item("c"), make_item("merged", tier="mtm")])
    history = [counts(wh)]

    olds = wh.supersede(["a", "b"], "merged")
    assert [o.superseded_by for o in olds] == ["merged", "merged"]
    history.append(counts(wh))
    assert wh.supersede(["a"], "merged")[0].superseded_by == "merged"  # idempotent
    assert counts(wh) == history[-1]

    archived = wh.archive_items(["c"], reason="expired")[0]
    assert archived.archived
    history.append(counts(wh))
    assert wh.archive_items(["c"], reason="expired")[0] == archived  # already archived: unchanged
    assert counts(wh) == history[-1]

    for earlier, later in zip(history, history[1:]):
        assert all(later[t] >= earlier[t] for t in TABLES)  # row counts only grow
    assert history[-1]["items"] == 4
    assert {i.id for i in wh.get_items(["a", "b", "c"])} == {"a", "b", "c"}  # still readable
    assert [i.id for i in wh.active_items()] == ["merged"]
    assert wh.count_items() == 1 and wh.count_items(active_only=False) == 4

    links = set(wh.get_item("merged").links)
    assert links == {
        Link(rel="derived_from", to="a"), Link(rel="derived_from", to="b"),
        Link(rel="supersedes", to="a"), Link(rel="supersedes", to="b"),
    }  # fmt: skip
    assert [r["reason"] for r in wh.revisions("a")] == ["create", "consolidation_merge"]
    assert wh.revisions("a")[-1]["snapshot"]["superseded_by"] == "merged"
    assert wh.revisions("c")[-1]["snapshot"]["archived"] is True


def test_supersede_refuses_contradictions(wh):
    wh.put_items([make_item("a"), make_item("m1"), make_item("m2")])
    wh.supersede(["a"], "m1")
    with pytest.raises(ItemConflictError, match="already superseded"):
        wh.supersede(["a"], "m2")
    with pytest.raises(ItemConflictError, match="inactive"):
        wh.supersede(["m2"], "a")
    with pytest.raises(ValueError, match="itself"):
        wh.supersede(["m1"], "m1")
    with pytest.raises(UnknownItemError):
        wh.supersede(["nope"], "m1")


def test_changes_record_who_asked_and_refusals_change_nothing(wh):
    """Each change carries its origin (actor, inbox seq, request time) on its revision and
    its event; a retraction is audited as such; a refused attempt is an event only."""
    dana = Origin(actor="dana", inbox_seq=4, requested_at="2026-01-01T10:00:00+00:00")
    omar = Origin(actor="omar", inbox_seq=5, requested_at="2026-01-01T10:05:00+00:00")
    wh.put_items([make_item("a"), make_item("b")], origin={"a": dana})
    wh.update_items({"a": {"content": "v2"}}, origin=dana)
    wh.update_items({"a": {"content": "v3", "validation": "retracted"}}, origin=omar)
    before = counts(wh)
    wh.refuse("a", attempted="memory.update", reason="not visible to the caller", origin=omar)
    wh.refuse("ghost", attempted="memory.update", reason="rejected by the policy", origin=omar)
    after = counts(wh)
    assert after["events"] == before["events"] + 2
    assert {k: v for k, v in after.items() if k != "events"} == {k: v for k, v in before.items() if k != "events"}

    revisions = wh.revisions("a")
    assert [(r["actor"], r["inbox_seq"], r["snapshot"]["content"]) for r in revisions] == [
        ("dana", 4, "content of a"), ("dana", 4, "v2"), ("omar", 5, "v3")]
    assert revisions[2]["requested_at"] == "2026-01-01T10:05:00+00:00"
    assert wh.revisions("b")[0]["actor"] is None  # no origin given for b
    events = wh.item_events("a")
    assert [(e["action"], e["actor"]) for e in events] == [
        ("create", "dana"), ("update", "dana"), ("retract", "omar"), ("refused", "omar")]
    assert events[3]["content_sha256"] == wh.get_item("a").content_hash  # unchanged
    assert events[3]["details"] == {"attempted": "memory.update", "reason": "not visible to the caller"}
    (ghost,) = wh.item_events("ghost")
    assert ghost["action"] == "refused" and ghost["content_sha256"] == sha256_text("")
    with pytest.raises(TypeError, match="Origin"):
        wh.update_items({"a": {"importance": 2}}, origin=7)


def test_every_mutation_writes_an_event_with_the_content_hash(wh):
    a = wh.put_items([make_item("a")], origin=Origin(actor="ann", inbox_seq=7))[0]
    wh.put_items([make_item("m")])
    b = wh.update_items({"a": {"content": "new"}})[0]
    assert wh.link("a", "m", "supports") is True
    assert wh.link("a", "m", "supports") is False  # idempotent: no second event
    wh.supersede(["a"], "m")
    wh.archive_items(["m"], reason="expired")

    events = wh.item_events("a")
    assert [e["action"] for e in events] == ["create", "update", "link", "supersede"]
    assert events[0]["content_sha256"] == a.content_hash and events[0]["inbox_seq"] == 7
    assert events[0]["actor"] == "ann" and events[1]["actor"] is None  # None: the pipeline's own
    assert events[1]["content_sha256"] == b.content_hash != a.content_hash
    assert events[1]["details"]["fields"] == ["content"]
    assert events[2]["content_sha256"] == sha256_text("a\x1fsupports\x1fm")
    assert events[3]["details"] == {"reason": "consolidation_merge", "new_id": "m"}
    assert [e["action"] for e in wh.item_events("m")][-1] == "archive"
    # one event per revision, at least
    revisions = wh.query("SELECT count(*) FROM revisions")[0][0]
    item_events = wh.query(
        "SELECT count(*) FROM events WHERE action IN ('create','update','supersede','archive')"
    )[0][0]
    assert item_events == revisions


def test_link_validates(wh):
    wh.put_items([make_item("a"), make_item("b")])
    with pytest.raises(ValueError, match="unknown link rel"):
        wh.link("a", "b", "likes")
    with pytest.raises(UnknownItemError):
        wh.link("a", "ghost", "supports")
    wh.link("a", "b", "refines")
    assert wh.get_item("a").links == [Link(rel="refines", to="b")]


def test_active_items_filters_by_tier_and_type(wh):
    wh.put_items(
        [make_item("s1"), make_item("s2", type="todo"), make_item("m1", tier="mtm"),
         make_item("l1", tier="ltm", type="todo")]
    )  # fmt: skip
    wh.archive_items(["s1"], reason="aged")
    assert [i.id for i in wh.active_items()] == ["l1", "m1", "s2"]
    assert [i.id for i in wh.active_items(tier="stm")] == ["s2"]
    assert [i.id for i in wh.active_items(types=["todo"])] == ["l1", "s2"]
    assert wh.active_items(types=[]) == []
    assert wh.count_items(tier="ltm") == 1
    assert wh.count_items() == 3 and wh.count_items(active_only=False) == 4
    with pytest.raises(ValueError, match="unknown tier"):
        wh.active_items(tier="xl")


def test_bad_item_input_is_a_clear_error(wh):
    with pytest.raises(TypeError):
        wh.put_items([{"id": "a"}])
    bad = make_item("a")
    bad.tier = "huge"
    with pytest.raises(ValueError, match="invalid memory item"):
        wh.put_items([bad])
    with pytest.raises(ItemConflictError, match="twice"):
        wh.put_items([make_item("x", content="one"), make_item("x", content="two")])
    with pytest.raises(ValueError):
        wh.get_item("")
    assert counts(wh)["items"] == 0


# -- transactions ---------------------------------------------------------------------------


def test_failed_transaction_leaves_nothing(wh):
    wh.put_items([make_item("base")])
    before = counts(wh)
    with pytest.raises(RuntimeError, match="boom"):
        with wh.transaction():
            wh.put_items([make_item("new")])
            wh.update_items({"base": {"content": "changed"}})
            wh.link("new", "base", "refines")
            wh.put_locations([PalaceLocation("base", "d", "r", "s", "c")])
            raise RuntimeError("boom")
    assert counts(wh) == before
    assert wh.get_item("new") is None
    assert wh.get_item("base").content == "content of base"


def test_nested_failure_rolls_back_the_outer_transaction(wh):
    before = counts(wh)
    with pytest.raises(WarehouseError, match="nested"):
        with wh.transaction():
            wh.put_items([make_item("a")])
            try:
                wh.put_items([make_item("a", content="conflict")])  # raises inside
            except ItemConflictError:
                pass  # swallowed by the caller, but the transaction is spoiled
    assert counts(wh) == before


def test_grouped_calls_commit_together(wh):
    with wh.transaction():
        wh.put_items([make_item("a")])
        wh.put_items([make_item("b")])
        wh.supersede(["a"], "b")
    assert wh.get_item("a").superseded_by == "b"


def test_threads_can_share_a_warehouse(wh):
    def worker(t: int) -> None:
        wh.put_items([make_item(f"t{t}-{k}") for k in range(25)])
        for k in range(5):
            wh.update_items({f"t{t}-{k}": {"usage_count": k + 1}})

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert wh.count_items() == 100
    assert wh.query("SELECT count(*) FROM revisions")[0][0] == 120


# -- bulk ---------------------------------------------------------------------------------


def test_bulk_insert_of_20k_items(wh):
    items = [
        make_item(
            f"bulk{k:05d}",
            tier=("stm", "mtm", "ltm")[k % 3],
            tags=[f"t{k % 5}"],
            metadata={"k": k},
            scope=Scope(kind="session", user_id=f"u{k % 7}", session_id=f"s{k % 11}"),
        )
        for k in range(20_000)
    ]
    stored = wh.put_items(items, reason="import")
    assert [s.id for s in stored] == [i.id for i in items]
    assert wh.count_items() == 20_000
    assert wh.count_items(tier="mtm") == sum(1 for i in items if i.tier == "mtm")
    for k in (0, 1, 9_999, 19_999):
        assert wh.get_item(f"bulk{k:05d}") == items[k]
    c = counts(wh)
    assert c["revisions"] == 20_000 and c["events"] == 20_000
    assert wh.revisions("bulk00042")[0]["reason"] == "import"
    assert wh.query("SELECT count(*), min(metadata::VARCHAR) FROM items") == [(20_000, '{"k":0}')]
    assert len(wh.active_items(tier="ltm")) == sum(1 for i in items if i.tier == "ltm")

    again = wh.put_items(items[5_000:7_000])  # idempotent: nothing new is written
    assert again == items[5_000:7_000]
    assert counts(wh) == c


# -- embeddings ---------------------------------------------------------------------------


def test_embeddings_round_trip_and_staleness(wh):
    items = wh.put_items([make_item(f"e{k}") for k in range(5)])
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((5, 8))
    written = wh.put_embeddings(
        [(i.id, i.content_hash, v) for i, v in zip(items, vectors)], model_name="hash", dim=8
    )
    assert written == 5
    assert wh.stored_embedding_models() == [("hash", 8)]
    matrix = wh.embedding_matrix("hash", ["e4", "e1", "e4"])
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(matrix, vectors[[4, 1, 4]].astype(np.float32))
    with pytest.raises(UnknownItemError):
        wh.embedding_matrix("hash", ["e1", "nope"])

    assert wh.stale_embedding_ids("hash") == []
    wh.update_items({"e2": {"content": "rewritten"}})
    wh.put_items([make_item("e5")])
    wh.archive_items(["e0"], reason="aged")
    assert wh.stale_embedding_ids("hash") == ["e2", "e5"]

    new_hash = wh.get_item("e2").content_hash
    wh.put_embeddings([("e2", new_hash, np.ones(8))], model_name="hash", dim=8)  # replaces
    assert wh.query("SELECT count(*) FROM embeddings")[0][0] == 5
    np.testing.assert_array_equal(wh.embedding_matrix("hash", ["e2"]), np.ones((1, 8)))
    assert wh.stale_embedding_ids("hash") == ["e5"]
    assert wh.query("SELECT count(*) FROM events WHERE action = 'embed'")[0][0] == 2
    assert wh.embedding_matrix("other-model", []).shape == (0, 0)


def test_embedding_input_is_validated(wh):
    item = wh.put_items([make_item("a")])[0]
    with pytest.raises(ValueError, match="shape"):
        wh.put_embeddings([("a", item.content_hash, np.ones(3))], model_name="m", dim=4)
    with pytest.raises(ValueError, match="finite"):
        wh.put_embeddings([("a", item.content_hash, np.full(4, np.nan))], model_name="m", dim=4)
    with pytest.raises(UnknownItemError):
        wh.put_embeddings([("ghost", "h", np.ones(4))], model_name="m", dim=4)
    with pytest.raises(TypeError):
        wh.put_embeddings([("a", np.ones(4))], model_name="m", dim=4)
    wh.put_embeddings([("a", item.content_hash, np.ones(4))], model_name="m", dim=4)
    with pytest.raises(ValueError, match="dimension"):
        wh.put_embeddings([("a", item.content_hash, np.ones(5))], model_name="m", dim=5)
    assert wh.query("SELECT count(*) FROM embeddings")[0][0] == 1


def test_embeddings_bulk_matrix(wh):
    n, dim = 5_000, 32
    items = wh.put_items([make_item(f"v{k:05d}") for k in range(n)])
    vectors = np.random.default_rng(1).standard_normal((n, dim)).astype(np.float32)
    wh.put_embeddings(
        [(i.id, i.content_hash, vectors[k]) for k, i in enumerate(items)], model_name="m", dim=dim
    )
    np.testing.assert_array_equal(wh.embedding_matrix("m", [i.id for i in items]), vectors)
    order = [items[k].id for k in range(n - 1, -1, -7)]
    np.testing.assert_array_equal(wh.embedding_matrix("m", order), vectors[n - 1 :: -7])


# -- landing, turns, proposals ------------------------------------------------------------


def test_chat_turns_and_proposals_are_idempotent(wh):
    turn = ChatTurn(turn_id="t1", identity=Identity(user_id="u1"), role="user", text="hi",
                    turn_ref="D1:1", speaker="Ann")  # fmt: skip
    assert wh.put_chat_turns([turn, turn]) == 1
    assert wh.put_chat_turns([turn]) == 0
    assert wh.query("SELECT user_id, text, turn_ref, speaker FROM chat_turns") == [
        ("u1", "hi", "D1:1", "Ann")
    ]
    proposals = [
        {"proposal_id": f"p{k}", "form": "tool_call", "proposal": {"title": f"x{k}"},
         "action": action, "rule_ids": rules, "policy_version": "v1",
         "at": "2024-05-01T10:00:00+00:00"}
        for k, (action, rules) in enumerate(
            [("accept", []), ("reject", ["secret"]), ("reject", ["secret", "injection"]),
             ("quarantine", ["low_confidence"])]
        )
    ]  # fmt: skip
    assert wh.put_proposals(proposals) == 4
    assert wh.put_proposals(proposals[:2]) == 0
    outcomes = wh.query(
        "SELECT action, rule_id, proposals FROM v_policy_outcomes ORDER BY action, rule_id"
    )
    assert outcomes == [
        ("accept", "(none)", 1), ("quarantine", "low_confidence", 1),
        ("reject", "injection", 1), ("reject", "secret", 2),
    ]  # fmt: skip
    shares = dict(wh.query("SELECT action, share FROM v_policy_actions"))
    assert shares == {"accept": 0.25, "reject": 0.5, "quarantine": 0.25}
    with pytest.raises(ValueError, match="lacks"):
        wh.put_proposals([{"proposal_id": "p9", "form": "api", "proposal": {}}])
    with pytest.raises(ValueError, match="unknown proposals columns"):
        wh.put_proposals([{**proposals[0], "proposal_id": "p8", "colour": "red"}])


def test_landing_is_idempotent_and_watermarked(wh):
    events = [
        Event(event_id=f"ev{k}", kind="turn", identity=Identity(), payload={"k": k}, seq=k + 1)
        for k in range(4)
    ]
    assert wh.last_ingested_seq() == 0
    assert wh.mark_landed(events[:3]) == 3
    assert wh.mark_landed(events) == 1
    assert wh.landed_ids(["ev2", "ev9"]) == {"ev2"}
    assert wh.landed_ids(["ev0", "ev9", "ev3"]) == {"ev0", "ev3"}
    wh.set_last_ingested_seq(4)
    assert wh.last_ingested_seq() == 4
    with pytest.raises(ValueError, match="cannot move back"):
        wh.set_last_ingested_seq(2)
    wh.set_last_ingested_seq(2, allow_rewind=True)
    assert wh.last_ingested_seq() == 2
    assert wh.query(
        "SELECT kind, landed_events, max_seq, last_ingested_seq FROM v_ingest_status"
    ) == [("turn", 4, 4, 2)]


# -- palace -------------------------------------------------------------------------------


def test_palace_locations(wh):
    wh.put_items([make_item("a"), make_item("b"), make_item("c")])
    locs = [
        PalaceLocation("a", "work", "db", "duckdb", "card-a"),
        PalaceLocation("b", "work", "db", "sqlite", "card-b"),
        PalaceLocation("c", "home", "garden", "roses", "card-c"),
    ]
    assert wh.put_locations(locs) == 3
    assert wh.put_locations(locs) == 0  # unchanged: nothing written
    assert wh.location_of("b") == locs[1]
    moved = PalaceLocation("a", "work", "archive", "duckdb", "card-a")
    assert wh.put_locations([moved]) == 1
    assert wh.location_of("a") == moved
    assert wh.location_of("zzz") is None
    assign = [e for e in wh.item_events("a") if e["action"] == "palace.assign"]
    assert [e["details"]["path"] for e in assign] == ["work/db/duckdb/card-a", moved.path]
    assert assign[1]["details"]["previous"] == "work/db/duckdb/card-a"
    with pytest.raises(UnknownItemError):
        wh.put_locations([PalaceLocation("ghost", "d", "r", "s", "c")])
    rooms = wh.query("SELECT domain, room, items FROM v_palace_rooms ORDER BY domain, room")
    assert rooms == [("home", "garden", 1), ("work", "archive", 1), ("work", "db", 1)]


# -- runs and views -----------------------------------------------------------------------


def test_consolidation_runs_and_merge_view(wh):
    wh.put_items([make_item("a"), make_item("b"), make_item("m")])
    wh.start_run("run-1", 0)
    with pytest.raises(ItemConflictError):
        wh.start_run("run-1", 0)
    wh.supersede(["a", "b"], "m")
    wh.finish_run("run-1", "success", {"merged": 2}, 42, "snap-1")
    with pytest.raises(ItemConflictError, match="already finished"):
        wh.finish_run("run-1", "success", {}, 42)
    with pytest.raises(WarehouseError, match="unknown"):
        wh.finish_run("run-2", "success", {}, 1)
    run = wh.get_run("run-1")
    assert run["status"] == "success" and run["counts"] == {"merged": 2}
    assert run["inbox_to_seq"] == 42 and run["snapshot_version"] == "snap-1"
    wh.start_run("run-2", 42)
    assert [r["run_id"] for r in wh.runs()] == ["run-2", "run-1"]
    assert [r["run_id"] for r in wh.runs(limit=1)] == ["run-2"]
    view = wh.query(
        "SELECT run_id, status, inbox_events, superseded_items, canonical_items "
        "FROM v_consolidation_runs ORDER BY started_at"
    )
    assert view == [("run-1", "success", 42, 2, 1), ("run-2", "running", None, 0, 0)]


def test_tier_views(wh):
    wh.put_items(
        [make_item("s1"), make_item("s2", type="note"), make_item("m1", tier="mtm"),
         make_item("u1", scope=Scope(kind="user", user_id="u1")),
         make_item("old", created_at="2024-01-01T08:00:00+00:00")]
    )  # fmt: skip
    wh.archive_items(["s1"], reason="aged")
    wh.update_items({"s2": {"tier": "ltm"}}, reason="promotion")
    by_scope = wh.query(
        "SELECT tier, type, scope_kind, items FROM v_items_by_tier_type_scope ORDER BY ALL"
    )
    assert by_scope == [
        ("ltm", "note", "project", 1), ("mtm", "fact", "project", 1),
        ("stm", "fact", "project", 1), ("stm", "fact", "user", 1),
    ]  # fmt: skip
    summary = {r[0]: r[1:] for r in wh.query("SELECT * FROM v_tier_summary")}
    assert summary["stm"] == (2, 0, 1, 3)
    growth = wh.query(
        "SELECT CAST(day AS VARCHAR), tier, items_created, items_total FROM v_item_growth_daily "
        "WHERE tier = 'stm' ORDER BY day"
    )
    assert growth[0] == ("2024-01-01", "stm", 1, 1)
    assert growth[-1][3] == 3
    transitions = wh.query("SELECT from_tier, to_tier, items FROM v_tier_transitions_daily")
    assert transitions == [("stm", "ltm", 1)]
    actions = wh.query("SELECT DISTINCT action FROM v_audit_actions_daily")
    assert {a for (a,) in actions} == {"create", "archive", "update"}


# -- opening, locking ---------------------------------------------------------------------


def test_read_only_open_when_no_writer_holds_the_file(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as writer:
        writer.put_items([make_item("a")])[0]
    with Warehouse(path, read_only=True) as reader, Warehouse(path, read_only=True) as second:
        assert reader.get_item("a").id == "a"
        assert second.count_items() == 1
        with pytest.raises(WarehouseError, match="read-only"):
            reader.put_items([make_item("b")])[0]
    with pytest.raises(WarehouseError, match="no warehouse"):
        Warehouse(tmp_path / "missing.duckdb", read_only=True)


_OPEN_READ_ONLY = """
import sys
from pipelines.warehouse import Warehouse, WarehouseLockedError
try:
    Warehouse(sys.argv[1], read_only=True).close()
    print("opened")
except WarehouseLockedError:
    print("locked")
"""


def _open_in_subprocess(path: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_READ_ONLY, str(path)],
        capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_writer_locks_out_other_processes(tmp_path):
    """DuckDB: while one process holds the file read-write, no other process can open it,
    not even read-only (readers after the writer closes: the test above)."""
    path = tmp_path / "w.duckdb"
    with Warehouse(path):
        assert _open_in_subprocess(path) == "locked"


def test_closed_warehouse_refuses_work(tmp_path):
    wh = Warehouse(tmp_path / "w.duckdb")
    wh.close()
    wh.close()  # idempotent
    with pytest.raises(WarehouseError, match="closed"):
        wh.get_item("a")
    with pytest.raises(TypeError):
        Warehouse(42)


@pytest.mark.parametrize("history", ["hashed", "written before text_hash"])
def test_items_text_changed_since_ignores_revisions_that_keep_the_text(wh, history):
    """What the policy check re-reads: new items and items whose title, content, tags or
    entities changed after the mark; a promotion or a palace move is not a text change.
    Revisions written before migration 004 carry no `text_hash` and are compared by their
    JSON: the answer is the same."""
    from pipelines.records import utcnow

    wh.put_items([make_item("a"), make_item("b"), make_item("c"), make_item("d", tags=["x"]), make_item("f"),
                  make_item("g")])
    wh.update_items({"f": {"content": "f before the mark"}})  # a second revision before the mark
    if history != "hashed":
        with wh.transaction():
            wh._sql("UPDATE revisions SET text_hash = NULL")
    mark = utcnow()
    wh.update_items({"a": {"tier": "mtm"}}, reason="promote_type")  # text kept
    wh.update_items({"f": {"content": "f after the mark"}})
    wh.update_items({"f": {"content": "f before the mark"}})  # ...and back: the text is what it was
    wh.update_items({"g": {"entities": ["Ada"]}})  # entities changed
    wh.update_items({"b": {"content": "new content of b"}})  # text changed
    wh.update_items({"d": {"tags": ["x", "y"]}})  # tags changed
    wh.put_items([make_item("e")])  # new
    wh.archive_items(["c"], reason="aged")  # touched, and no longer active
    assert {i.id for i in wh.items_text_changed_since(mark)} == {"b", "d", "e", "g"}
    assert wh.items_text_changed_since(utcnow()) == []


def test_a_revision_that_keeps_the_text_keeps_its_text_hash(wh):
    """`text_hash` names what the policy reads: the same after a promotion or a palace
    move, different after a change of content, tags or entities."""
    wh.put_items([make_item("a", tags=["x"])])
    wh.update_items({"a": {"tier": "mtm"}}, reason="promote_type")
    wh.update_items({"a": {"tags": ["x", "y"]}})
    wh.update_items({"a": {"entities": ["Ada"]}})
    wh.update_items({"a": {"content": "new words"}})
    hashes = [r[0] for r in wh.query("SELECT text_hash FROM revisions WHERE item_id = 'a' ORDER BY revision_num")]
    assert all(hashes) and hashes[0] == hashes[1]
    assert len(set(hashes[1:])) == 4


def test_the_embedding_check_hashes_only_items_whose_text_changed(wh):
    """`stale_embedding_ids(written_since=...)` compares vectors only for items whose text
    changed since: a palace move leaves a (hand-made) stale vector unseen, as before the
    window; a message's new retrieval context (its answer arrived) is a text change."""
    from pipelines.message_context import embedding_hash
    from pipelines.records import utcnow

    message = make_item("m", type="message", metadata={"context": "before: hi"})
    wh.put_items([make_item("a"), message])
    wh.put_embeddings([(i.id, embedding_hash(i), np.ones(4, dtype=np.float32)) for i in (make_item("a"), message)],
                      model_name="hash", dim=4)
    mark = utcnow()
    wh.query("UPDATE embeddings SET content_hash = 'x' WHERE item_id = 'a'")
    wh.update_items({"a": {"metadata": {"palace": "d/r/s"}}}, reason="palace")
    assert wh.stale_embedding_ids("hash", written_since=mark) == []
    wh.update_items({"m": {"metadata": {"context": "before: hi\nafter: hello"}}})
    assert wh.stale_embedding_ids("hash", written_since=mark) == ["m"]
    assert wh.stale_embedding_ids("hash") == ["a", "m"]


def test_stored_stm_counts_per_partition_equal_counting_the_loaded_items(wh):
    """The snapshot's short-term counts per owner partition (the threshold sensor reads them)
    are counted in SQL without loading items, and equal `stm_by_partition` over the loaded
    items: messages, quarantined, retracted, archived and non-STM items do not count."""
    from pipelines.consolidate.common import MERGEABLE_TYPES, stm_by_partition, stored_stm_by_partition

    alice = Scope(kind="user", user_id="alice", project_id="p1")
    session = Scope(kind="session", user_id="bob", session_id="s1", org_id="acme")
    wh.put_items([
        make_item("a"), make_item("b", type="preference"), make_item("c", scope=alice),
        make_item("d", scope=session), make_item("e", scope=session, type="message"),
        make_item("f", metadata={"verdict": "quarantine"}), make_item("g", validation="retracted"),
        make_item("h", tier="mtm"), make_item("i", scope=alice), make_item("j", metadata={"verdict": "accept"}),
    ])
    wh.archive_items(["i"], reason="aged")
    loaded = stm_by_partition(wh.active_items(tier="stm", types=MERGEABLE_TYPES))
    assert loaded == {"project:default/p1": 3, "session:acme/bob/s1": 1, "user:default/alice": 1}
    assert stored_stm_by_partition(wh) == loaded
    # Clustering reads the same candidates as (id, owner, type, verdict, validation) rows.
    from pipelines.consolidate.common import mergeable, mergeable_kind
    kinds = wh.active_item_kinds(tier="stm", types=MERGEABLE_TYPES)
    items = wh.active_items(tier="stm", types=MERGEABLE_TYPES)
    assert [(i, Scope(**o).partition_key(), t) for i, o, t, v, val in kinds if mergeable_kind("stm", t, v, val)] == [
        (i.id, i.scope.partition_key(), i.type) for i in items if mergeable(i)]


def test_stored_provenance_check_equals_checking_the_loaded_items(wh):
    """The provenance check reads ids and provenance only, and finds what checking the
    loaded MTM/LTM items finds: active MTM/LTM items without provenance."""
    from pipelines.consolidate.invariants import provenance_violations, stored_provenance_violations
    from pipelines.records import Provenance

    sourced = Provenance(source_id="turn-1")
    wh.put_items([
        make_item("a", tier="mtm", provenance=sourced), make_item("b", tier="mtm"),
        make_item("c", tier="ltm", provenance=Provenance(turn_refs=["D1:1"])), make_item("d", tier="ltm"),
        make_item("e"), make_item("f", tier="ltm"),
    ])
    wh.archive_items(["f"], reason="aged")
    loaded = wh.active_items(tier="mtm") + wh.active_items(tier="ltm")
    assert stored_provenance_violations(wh) == (4, provenance_violations(loaded)) == (4, ["b", "d"])
