"""Memory palace: deterministic domain/room/shelf/card locations and browsing."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pipelines.palace import (
    PalaceError,
    assign_locations,
    location_of,
    palace_get,
    palace_list,
    slugify,
)
from pipelines.records import MemoryItem, PalaceLocation, Scope


def mem(item_id: str, *, type: str = "fact", project: str = "Loci", tags: tuple[str, ...] = (),
        entities: tuple[str, ...] = (), **kw: Any) -> MemoryItem:
    return MemoryItem(id=item_id, tier="stm", type=type, title=item_id, content="c",  # type: ignore[arg-type]
                      scope=Scope(project_id=project), tags=list(tags), entities=list(entities), **kw)


@pytest.fixture()
def items() -> list[MemoryItem]:
    return [
        mem("m1", tags=("Postgres Replicas", "ops")),
        mem("m2", type="decision", tags=("deploy",)),
        mem("m3", entities=("Atlas DB",)),
        mem("m4", type="note"),
        mem("m5", project="Side Project", tags=("travel",)),
        mem("m6", tags=("!!!", "pets")),  # first tag slugifies to nothing
        mem("m7", metadata={"corpus": "Handbook v2"}, tags=("hr",)),
    ]


def test_locations_follow_domain_room_shelf_card(items):
    locs = {loc.item_id: loc for loc in assign_locations(items)}
    assert locs["m1"].path == "loci/postgres-replicas/fact/m1"
    assert locs["m2"].path == "loci/deploy/decision/m2"
    assert locs["m3"].path == "loci/atlas-db/fact/m3"  # entity when there is no tag
    assert locs["m4"].path == "loci/general/note/m4"  # nothing to go on
    assert locs["m5"].path == "side-project/travel/fact/m5"
    assert locs["m6"].room == "pets"
    assert locs["m7"].domain == "handbook-v2"  # document corpus
    for loc in locs.values():
        assert isinstance(loc, PalaceLocation) and loc.card == loc.item_id
        assert len(loc.path.split("/")) == 4


def test_room_from_clustering_wins_as_dict_or_function(items):
    by_dict = {loc.item_id: loc.room
               for loc in assign_locations(items, room_of={"m1": "Database HA", "m4": "Ops Notes"})}
    assert by_dict["m1"] == "database-ha" and by_dict["m4"] == "ops-notes" and by_dict["m2"] == "deploy"
    by_fn = {loc.item_id: loc.room
             for loc in assign_locations(items, room_of=lambda i: "shared" if i.type == "fact" else None)}
    assert by_fn["m1"] == by_fn["m3"] == "shared" and by_fn["m2"] == "deploy"
    # a room that slugifies to nothing falls back to the item's own topic
    assert assign_locations([items[0]], room_of={"m1": "???"})[0].room == "postgres-replicas"
    with pytest.raises(PalaceError, match="room_of"):
        assign_locations(items, room_of=42)  # type: ignore[arg-type]


def test_assignment_is_deterministic_for_repeated_and_shuffled_input(items):
    rooms = {"m2": "Release Train"}
    first = assign_locations(items, room_of=rooms)
    assert assign_locations(items, room_of=rooms) == first
    shuffled = items[:]
    random.Random(7).shuffle(shuffled)
    assert assign_locations(shuffled, room_of=rooms) == first
    assert [loc.item_id for loc in first] == sorted(loc.item_id for loc in first)


def test_odd_ids_and_bad_input():
    loc = assign_locations([mem("a/b c")])[0]
    assert loc.item_id == "a/b c" and loc.card == "a_b_c" and len(loc.path.split("/")) == 4
    with pytest.raises(PalaceError, match="duplicate"):
        assign_locations([mem("x"), mem("x")])
    with pytest.raises(PalaceError, match="MemoryItem"):
        assign_locations([{"id": "x"}])  # type: ignore[list-item]


def test_slugify():
    assert slugify("Postgres 16 / Replicas") == "postgres-16-replicas"
    assert slugify("Café") == "café" and slugify("日本 旅行") == "日本-旅行"
    assert slugify("  --  ") == "" and len(slugify("x" * 100)) == 40


def test_palace_list_walks_one_level_at_a_time(items):
    locs = assign_locations(items)
    assert palace_list(locs, "") == ["handbook-v2", "loci", "side-project"]
    assert palace_list(locs, "loci") == ["atlas-db", "deploy", "general", "pets", "postgres-replicas"]
    assert palace_list(locs, "/loci/deploy/") == ["decision"]
    assert palace_list(locs, "loci/deploy/decision") == ["m2"]
    assert palace_list(locs, "nowhere") == [] and palace_list(locs, "loci/deploy/fact") == []


def test_palace_get_returns_items_at_or_below(items):
    locs = assign_locations(items)
    assert palace_get(locs, "loci") == ["m3", "m2", "m4", "m6", "m1"]  # ordered by path
    assert palace_get(locs, "loci/deploy") == ["m2"]
    assert palace_get(locs, "side-project/travel/fact/m5") == ["m5"]
    assert sorted(palace_get(locs, "")) == sorted(i.id for i in items)
    assert palace_get(locs, "loci/deploy/decision/m9") == []


@pytest.mark.parametrize("path", ["loci//deploy", "loci/../x", "loci/de ploy", "loci/a\x00b", 7, None])
def test_malformed_paths_raise_value_error(items, path):
    locs = assign_locations(items)
    with pytest.raises(ValueError, match="palace path"):
        palace_list(locs, path)  # type: ignore[arg-type]
    with pytest.raises(PalaceError):
        palace_get(locs, path)  # type: ignore[arg-type]


def test_depth_limits(items):
    locs = assign_locations(items)
    with pytest.raises(PalaceError, match="at most 3 segments"):
        palace_list(locs, "loci/deploy/decision/m2")  # a card has no children
    with pytest.raises(PalaceError, match="at most 4 segments"):
        palace_get(locs, "loci/deploy/decision/m2/extra")
    with pytest.raises(PalaceError, match="PalaceLocation"):
        palace_list(["loci/x/y/z"], "")  # type: ignore[list-item]


def test_build_palace_after_a_run_looks_only_at_what_changed(tmp_path, items):
    """After a successful run, the palace stage locates items written since, items without
    a location and clustered items, never the whole store; the result equals a full pass."""
    from pipelines.consolidate import ClusterRef, build_palace
    from pipelines.palace import location_of
    from pipelines.warehouse import Warehouse

    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.put_items(items)
        assert build_palace(wh).assigned == len(items)  # no run finished yet: everything
        wh.start_run("r1", 0)
        wh.finish_run("r1", "success", {}, to_seq=0)
        assert build_palace(wh).assigned == 0  # nothing changed since
        wh.update_items({"m4": {"tags": ["garden"]}}, reason="test")
        wh.put_items([mem("m8", tags=("new",))])
        report = build_palace(wh, [ClusterRef("p", 0, ["m2"], room="cluster-room")])
        assert report.assigned == 3 and report.moved == 3  # m4 moved, m8 new, m2 into the cluster room
        assert wh.location_of("m4").room == "garden" and wh.location_of("m8").room == "new"
        assert wh.location_of("m2").room == "cluster-room"
        for item in wh.active_items():
            if item.id != "m2":
                assert wh.location_of(item.id) == location_of(item)
                assert item.metadata["palace"] == location_of(item).path


def test_the_domain_is_the_place_of_those_who_read_it():
    """An org-wide item lives under the org, a user's own under the user, a project's, a
    session's and a chat turn under the project; a document's corpus still wins."""
    owners = {"org_id": "Acme", "user_id": "omar", "project_id": "Atlas", "session_id": "s1"}
    def placed(kind: str, type: str = "fact", **kw: Any) -> str:
        item = MemoryItem(id=f"m-{kind}", tier="stm", type=type, title="t", content="c",  # type: ignore[arg-type]
                          scope=Scope(kind=kind, **owners), **kw)  # type: ignore[arg-type]
        return location_of(item).domain

    assert {kind: placed(kind) for kind in ("org", "user", "project", "session")} == {
        "org": "acme", "user": "omar", "project": "atlas", "session": "atlas"}
    assert placed("user", type="message") == "atlas"  # a chat turn: where it was said
    assert placed("org", metadata={"corpus": "Handbook"}) == "handbook"


def test_a_store_located_under_an_older_rule_is_compared_in_sql(tmp_path, monkeypatch):
    """`misplaced_domains` finds exactly the items whose stored domain today's rule places
    elsewhere: not a document (its corpus wins), a chat turn or a pinned item, whose
    domain the rule did not change; and nothing once they are moved."""
    import pipelines.palace as palace
    from pipelines.palace import domain_of_inputs
    from pipelines.warehouse import Warehouse

    owners = {"org_id": "Acme", "user_id": "omar", "project_id": "Atlas", "session_id": "s1"}
    def made(item_id: str, kind: str, type: str = "fact", **kw: Any) -> MemoryItem:
        return MemoryItem(id=item_id, tier="stm", type=type, title="t", content="c",  # type: ignore[arg-type]
                          scope=Scope(kind=kind, **owners), **kw)  # type: ignore[arg-type]

    stored = [made("org", "org"), made("mine", "user"), made("proj", "project"), made("turn", "user", "message"),
              made("doc", "org", metadata={"corpus": "Handbook"}),
              made("pinned", "org", metadata={"palace_pin": {"domain": "Atlas", "room": "r", "shelf": "s"}})]
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.put_items(stored)
        with monkeypatch.context() as old_rule:
            old_rule.setattr(palace, "scope_domain", lambda item: slugify(item.scope.project_id))
            wh.put_locations(assign_locations(stored))
        assert wh.misplaced_domains(domain_of_inputs) == ["mine", "org"]
        wh.put_locations(assign_locations(stored))
        assert wh.misplaced_domains(domain_of_inputs) == []
