"""Lifecycle planning: promotion rules, expiry, aging with per-tag
retention, and idempotent importance decay."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from typing import Any

import msgspec
import pytest

from pipelines.promotion import Change, LifecycleError, plan_lifecycle
from pipelines.records import MemoryItem, Provenance, Scope
from pipelines.settings import Settings

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
SETTINGS = Settings()


def iso(days_ago: float) -> str:
    return (NOW - timedelta(days=days_ago)).isoformat()


def mem(item_id: str, *, tier: str = "stm", type: str = "fact", usage: int = 0, importance: int = 5,
        age: float = 1.0, provenance: bool = True, **kw: Any) -> MemoryItem:
    return MemoryItem(
        id=item_id, tier=tier, type=type, title=item_id, content=f"content {item_id}",  # type: ignore[arg-type]
        scope=Scope(), usage_count=usage, importance=importance,
        provenance=Provenance(source_id=f"turn-{item_id}") if provenance else Provenance(),
        created_at=kw.pop("created_at", iso(age)), updated_at=kw.pop("updated_at", iso(age)), **kw,
    )


def plan(*items: MemoryItem, settings: Settings = SETTINGS, now: datetime = NOW, **kw: Any) -> dict[str, Change]:
    changes = plan_lifecycle(list(items), settings, now, **kw)
    by_id = {c.item_id: c for c in changes}
    assert len(by_id) == len(changes), "at most one change per item"
    return by_id


def apply(item: MemoryItem, change: Change) -> MemoryItem:
    return msgspec.structs.replace(item, **change.patch)


# -- promotion ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "item, tier, reason",
    [
        (mem("u", usage=5), "mtm", "promote_usage"),
        (mem("u2", tier="mtm", usage=7), "ltm", "promote_usage"),
        (mem("d", type="decision"), "mtm", "promote_type"),
        (mem("c", tier="mtm", type="constraint"), "ltm", "promote_type"),
        (mem("v", validation="verified"), "mtm", "promote_verified"),
        (mem("v2", tier="mtm", validation="verified"), "ltm", "promote_verified"),
        (mem("r", usage=2), "mtm", "promote_usage_mtm"),
    ],
)
def test_promotion_rules_move_one_tier(item, tier, reason):
    change = plan(item)[item.id]
    assert (change.action, change.patch, change.reason) == ("promote", {"tier": tier}, reason)


@pytest.mark.parametrize(
    "item",
    [
        mem("mtm-relaxed", tier="mtm", usage=2),  # the relaxed rule is STM -> MTM only
        mem("low", usage=1),
        mem("top", tier="ltm", usage=50, type="decision", validation="verified"),  # LTM stays
        mem("noprov", usage=9, provenance=False),  # provenance required for MTM/LTM
        mem("msg", type="message", usage=10),  # raw turns stay episodic
        mem("quar", usage=9, metadata={"verdict": "quarantine"}),
        mem("disputed", usage=9, validation="contested"),
        mem("gone", usage=9, validation="retracted"),
        mem("archived", usage=9, archived=True),
        mem("superseded", usage=9, superseded_by="other"),
    ],
)
def test_items_that_are_not_promoted(item):
    assert item.id not in plan(item)


def test_thresholds_come_from_settings():
    strict = msgspec.structs.replace(SETTINGS, usage_count_for_ltm=10, usage_count_for_mtm=4,
                                     auto_promote_types=["todo"])
    assert plan(mem("u", usage=9), settings=strict)["u"].reason == "promote_usage_mtm"  # below 10
    assert plan(mem("u", usage=10), settings=strict)["u"].reason == "promote_usage"
    assert plan(mem("u", usage=3), settings=strict) == {}
    assert plan(mem("t", type="todo"), settings=strict)["t"].reason == "promote_type"
    assert plan(mem("d", type="decision"), settings=strict) == {}


def test_provenance_from_turn_refs_counts():
    item = mem("tr", usage=5, provenance=False)
    item = msgspec.structs.replace(item, provenance=Provenance(turn_refs=["D1:3"]))
    assert plan(item)["tr"].patch == {"tier": "mtm"}


# -- expiry and aging --------------------------------------------------------------------------


def test_expired_items_are_archived_before_anything_else():
    change = plan(mem("e", usage=9, expires_at=iso(0.01), tier="mtm"))["e"]
    assert (change.action, change.reason, change.patch) == ("archive", "expired", {})
    assert plan(mem("later", expires_at=iso(-1))) == {}
    assert plan(mem("badexp", expires_at="soon")) == {}


def test_low_importance_stm_ages_out_after_the_aging_period():
    old = mem("old", importance=3, age=31)
    assert plan(old)["old"].action == "archive" and plan(old)["old"].reason == "aged"
    assert plan(mem("young", importance=3, age=29)) == {}
    assert plan(mem("important", importance=4, age=300)) == {}
    assert plan(mem("mtm", tier="mtm", importance=1, age=300)) == {}
    recently_used = mem("used", importance=2, age=60, last_used_at=iso(3))
    assert plan(recently_used) == {}
    assert plan(mem("used-long-ago", importance=2, age=90, last_used_at=iso(40)))["used-long-ago"].reason == "aged"


def test_a_birthday_is_not_stale_before_it_came_round_again():
    def birthday(item_id: str, age: float) -> MemoryItem:
        return msgspec.structs.replace(mem(item_id, importance=2, age=age), content="Mom's birthday is March 3.")
    assert plan(birthday("this-year", 200)) == {}  # told in March, asked about next February
    assert plan(birthday("two-years", 400))["two-years"].reason == "aged"  # a year on and a month unused


def test_aging_counts_from_when_loci_learned_an_item_not_when_it_was_said():
    # A conversation said 200 days ago, imported 2 days ago: new to memory.
    imported = mem("imported", importance=3, age=200, metadata={"learned_at": iso(2)})
    assert plan(imported) == {}
    assert plan(imported, now=NOW + timedelta(days=27)) == {}  # 29 days after it was learned
    assert plan(imported, now=NOW + timedelta(days=29))["imported"].reason == "aged"  # 31 days
    # Use still counts, and an item without the record ages from created_at as before.
    used = mem("used", importance=3, age=200, metadata={"learned_at": iso(100)}, last_used_at=iso(1))
    assert plan(used) == {}
    assert plan(mem("legacy", importance=3, age=31))["legacy"].reason == "aged"
    # A malformed record is ignored, not a reason to keep an item forever.
    assert plan(mem("bad", importance=3, age=31, metadata={"learned_at": "soon"}))["bad"].reason == "aged"


def test_decay_counts_from_when_loci_learned_an_item():
    settings = msgspec.structs.replace(SETTINGS, importance_decay=True)
    imported = mem("imported", importance=8, age=200, metadata={"learned_at": iso(15)})
    change = plan(imported, settings=settings)["imported"]
    assert change.patch["importance"] == 6  # two weeks since it was learned, not 28 since said
    assert change.patch["metadata"]["importance_decay"]["since"] == iso(15)


def test_retention_by_tag_overrides_the_aging_age():
    settings = msgspec.structs.replace(SETTINGS, retention_days_by_tag={"travel": 90, "scratch": 2})
    assert plan(mem("trip", importance=2, age=60, tags=["Travel"]), settings=settings) == {}
    assert plan(mem("trip-old", importance=2, age=91, tags=["travel"]), settings=settings)["trip-old"].reason == "aged"
    assert plan(mem("tmp", importance=2, age=3, tags=["scratch"]), settings=settings)["tmp"].reason == "aged"
    # several matching tags: the longest retention wins
    assert plan(mem("both", importance=2, age=30.5, tags=["scratch", "travel"]), settings=settings) == {}


# -- importance decay --------------------------------------------------------------------------


def test_decay_is_off_unless_enabled():
    assert plan(mem("idle", importance=8, age=60)) == {}


def test_decay_lowers_importance_per_interval_and_is_idempotent():
    settings = msgspec.structs.replace(SETTINGS, importance_decay=True)
    item = mem("idle", importance=8, age=15)
    change = plan(item, settings=settings)["idle"]
    assert change.action == "decay" and change.patch["importance"] == 6  # 2 whole weeks unused
    assert change.patch["metadata"]["importance_decay"] == {"since": item.created_at, "steps": 2}
    decayed = apply(item, change)
    assert plan(decayed, settings=settings) == {}  # same run again: nothing more
    week_later = plan(decayed, settings=settings, now=NOW + timedelta(days=7))["idle"]
    assert week_later.patch["importance"] == 5
    # a new use restarts the count
    used = msgspec.structs.replace(decayed, last_used_at=iso(1))
    assert plan(used, settings=settings) == {}
    assert plan(used, settings=settings, now=NOW + timedelta(days=8))["idle"].patch["importance"] == 5


def test_decay_floor_interval_and_scope():
    settings = msgspec.structs.replace(SETTINGS, importance_decay=True)
    floor = plan(mem("floor", importance=4, age=365), settings=settings)["floor"]  # 4 > aging max 3
    assert floor.action == "decay" and floor.patch["importance"] == 1  # 52 steps due, floor 1
    assert plan(mem("one", importance=1, age=365), settings=settings)["one"].action == "archive"  # aged, not decayed
    assert plan(mem("mtm", tier="mtm", importance=9, age=60), settings=settings) == {}
    daily = plan(mem("daily", importance=9, age=3.5), settings=settings, decay_every_days=1)["daily"]
    assert daily.patch["importance"] == 6
    with pytest.raises(LifecycleError, match="decay_every_days"):
        plan_lifecycle([], settings, NOW, decay_every_days=0)


# -- general -------------------------------------------------------------------------------------


def test_plan_is_deterministic_and_ordered_by_id():
    items = [mem(f"i{n:02d}", usage=n % 6, importance=1 + n % 10, age=n * 3) for n in range(30)]
    first = plan_lifecycle(items, SETTINGS, NOW)
    shuffled = items[:]
    random.Random(4).shuffle(shuffled)
    assert plan_lifecycle(shuffled, SETTINGS, NOW) == first
    assert [c.item_id for c in first] == sorted(c.item_id for c in first)
    assert {c.action for c in first} == {"promote", "archive"}


def test_naive_now_is_utc_and_bad_input_raises():
    assert plan_lifecycle([mem("u", usage=5)], SETTINGS, NOW.replace(tzinfo=None)) == plan_lifecycle(
        [mem("u", usage=5)], SETTINGS, NOW)
    with pytest.raises(LifecycleError, match="MemoryItem"):
        plan_lifecycle([{"id": "x"}], SETTINGS, NOW)  # type: ignore[list-item]
    with pytest.raises(LifecycleError, match="now"):
        plan_lifecycle([], SETTINGS, "2026-01-01")  # type: ignore[arg-type]


# -- the SQL pre-filter ----------------------------------------------------------------------------


@pytest.mark.parametrize("decay", [False, True])
def test_lifecycle_candidates_cover_every_change_and_skip_the_rest(tmp_path, decay):
    """`lifecycle_candidates` (DuckDB) returns every item `plan_lifecycle` would change, so
    planning on it equals planning on the whole store, and leaves out items with nothing
    due (the bulk of a large store: recent raw turns)."""
    from pipelines.consolidate.lifecycle import lifecycle_candidates
    from pipelines.warehouse import Warehouse

    settings = msgspec.structs.replace(
        SETTINGS, importance_decay=decay, retention_days_by_tag={"keep": 90.0, "short": 3.0})
    rng = random.Random(7)
    items = [mem(f"i{n:03d}", tier=rng.choice(["stm", "stm", "mtm", "ltm"]),
                 type=rng.choice(["fact", "message", "message", "decision", "note"]),
                 usage=rng.choice([0, 0, 1, 2, 5]), importance=rng.randint(1, 9),
                 age=rng.choice([0.1, 2, 5, 20, 45, 400]),
                 validation=rng.choice(["unverified", "unverified", "verified", "contested"]),
                 tags=rng.choice([[], ["keep"], ["short"]]),
                 expires_at=rng.choice([None, None, iso(1), iso(-3)]),
                 last_used_at=rng.choice([None, iso(0.5), iso(50)]),
                 metadata=rng.choice([{}, {"learned_at": iso(0.2)}, {"verdict": "quarantine"}]))
             for n in range(300)]
    items += [mem("recent-turn", type="message", age=0.1, importance=2),
              mem("odd-time", type="message", importance=2, created_at="yesterday-ish")]
    with Warehouse(tmp_path / "w.duckdb") as wh:
        wh.put_items(items)
        candidates = lifecycle_candidates(wh, settings, NOW)
    got = {i.id for i in candidates}
    expected = {c.item_id for c in plan_lifecycle(items, settings, NOW)}
    assert expected and expected <= got
    assert plan_lifecycle(candidates, settings, NOW) == plan_lifecycle(items, settings, NOW)
    assert "recent-turn" not in got and "odd-time" in got  # an unreadable time is always looked at
    assert len(got) < len(items)
