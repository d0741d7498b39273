"""Numbered DuckDB migrations: applied once, in order, each atomically; edits refused."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from pipelines.migrations import (
    MIGRATIONS_DIR,
    MigrationError,
    apply_migrations,
    current_version,
    latest_version,
    migration_files,
)
from pipelines.warehouse import Warehouse

# The tables and views the warehouse contract promises (sql/README.md).
TABLES = {
    "items", "revisions", "embeddings", "links", "palace_locations", "events", "chat_turns",
    "proposals", "consolidation_runs", "ingest_state", "landed_events", "schema_version",
}  # fmt: skip
VIEWS = {
    "v_items_by_tier_type_scope", "v_tier_summary", "v_item_growth_daily",
    "v_tier_transitions_daily", "v_policy_outcomes", "v_policy_actions",
    "v_policy_outcomes_daily", "v_merges_per_run", "v_consolidation_runs",
    "v_audit_actions_daily", "v_embedding_coverage", "v_palace_rooms", "v_ingest_status",
}  # fmt: skip


def versions_table(con):
    return con.execute("SELECT * FROM schema_version ORDER BY version").fetchall()


def test_fresh_database_gets_every_migration_once(tmp_path):
    files = migration_files()
    assert [m.version for m in files] == sorted({m.version for m in files})
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    assert apply_migrations(con) == [m.version for m in files]
    before = versions_table(con)
    assert [(r[0], r[1], r[3]) for r in before] == [(m.version, m.name, m.checksum) for m in files]
    assert apply_migrations(con) == []
    assert versions_table(con) == before
    assert current_version(con) == latest_version()
    objects = dict(
        con.execute("SELECT table_name, table_type FROM information_schema.tables").fetchall()
    )
    assert {n for n, t in objects.items() if t == "BASE TABLE"} >= TABLES
    assert {n for n, t in objects.items() if t == "VIEW"} >= VIEWS
    for view in VIEWS:  # every view compiles against the tables
        con.execute(f"SELECT * FROM {view}").fetchall()
    con.close()


def test_opening_the_warehouse_twice_changes_nothing(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        assert wh.applied_migrations == [m.version for m in migration_files()]
        first = wh.query("SELECT * FROM schema_version ORDER BY version")
    with Warehouse(path) as wh:
        assert wh.applied_migrations == []
        assert wh.query("SELECT * FROM schema_version ORDER BY version") == first
        assert wh.schema_version == latest_version()


@pytest.fixture
def migrations_copy(tmp_path):
    directory = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, directory)
    return directory


def test_new_migration_is_applied_incrementally(tmp_path, migrations_copy):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    apply_migrations(con, migrations_copy)
    nxt = latest_version(migrations_copy) + 1
    (migrations_copy / f"{nxt:03d}_extra.sql").write_text(
        "CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (7);"
    )
    assert apply_migrations(con, migrations_copy) == [nxt]
    assert con.execute("SELECT x FROM extra").fetchall() == [(7,)]
    assert current_version(con) == nxt


def test_edited_migration_is_refused(tmp_path, migrations_copy):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    apply_migrations(con, migrations_copy)
    first = migration_files(migrations_copy)[0]
    first.path.write_text(first.sql + "\n-- edited later\n")
    with pytest.raises(MigrationError, match="changed after it was applied"):
        apply_migrations(con, migrations_copy)


def test_failing_migration_is_rolled_back(tmp_path, migrations_copy):
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    apply_migrations(con, migrations_copy)
    nxt = latest_version(migrations_copy) + 1
    (migrations_copy / f"{nxt:03d}_broken.sql").write_text(
        "CREATE TABLE half_done (x INTEGER); SELEC nonsense;"
    )
    with pytest.raises(MigrationError, match="broken"):
        apply_migrations(con, migrations_copy)
    assert current_version(con) == nxt - 1
    tables = {
        r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
    }
    assert "half_done" not in tables


def test_duplicate_versions_are_refused(migrations_copy):
    (migrations_copy / "001_again.sql").write_text("SELECT 1;")
    with pytest.raises(MigrationError, match="duplicate"):
        migration_files(migrations_copy)


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(MigrationError, match="not found"):
        migration_files(tmp_path / "nope")


def test_a_warehouse_with_history_gains_change_origins(tmp_path, migrations_copy):
    """A warehouse written before changes carried their origin opens with its history
    intact: the old rows have no actor (unknown), new writes record theirs."""
    from pipelines.records import MemoryItem, Scope
    from pipelines.warehouse import Origin

    later = sorted(f.name for f in migrations_copy.glob("*.sql") if f.name >= "003")
    for name in later:
        (migrations_copy / name).unlink()
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    apply_migrations(con, migrations_copy)
    con.execute(
        "INSERT INTO revisions VALUES ('a#1', 'a', 1, '{}', '2025-01-01T00:00:00+00:00', 'create')"
    ).fetchall()
    con.execute(
        "INSERT INTO events (action, item_id, details, content_sha256, \"at\", inbox_seq) "
        "VALUES ('create', 'a', '{}', 'h', '2025-01-01T00:00:00+00:00', 3)"
    ).fetchall()
    con.close()
    with Warehouse(path) as wh:
        assert wh.applied_migrations == [int(name[:3]) for name in later]
        assert wh.revisions("a")[0]["actor"] is None and wh.item_events("a")[0]["inbox_seq"] == 3
        item = MemoryItem(id="b", tier="stm", type="fact", title="t", content="c", scope=Scope())
        wh.put_items([item], origin=Origin(actor="ann", inbox_seq=9, requested_at="2025-02-01T00:00:00+00:00"))
        assert [(r["actor"], r["inbox_seq"]) for r in wh.revisions("b")] == [("ann", 9)]
        assert wh.item_events("b")[0]["requested_at"] == "2025-02-01T00:00:00+00:00"


def test_a_store_is_marked_for_the_forgetting_sweep_which_is_made_once(tmp_path):
    from pipelines.consolidate.forgetting_sweep import SWEEP_KEY, sweep_forgetting

    with Warehouse(tmp_path / "w.duckdb") as wh:
        assert wh.sweep_pending(SWEEP_KEY)  # migration 005
        assert sweep_forgetting(wh) == 0  # nothing forgotten yet
        assert not wh.sweep_pending(SWEEP_KEY)
    with Warehouse(tmp_path / "w.duckdb") as wh:  # opened again: not marked again
        assert not wh.sweep_pending(SWEEP_KEY)
