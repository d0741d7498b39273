"""Numbered DuckDB migrations for the warehouse (`sql/migrations/NNN_name.sql`).

`apply_migrations(con)` applies, in order and each in its own transaction, every file whose
version is not yet in the `schema_version` table (version, name, applied_at, checksum).
Running it again is a no-op. A migration that was applied and later edited is refused
(`MigrationError`): schema changes go into a new numbered file, never into an old one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from pipelines.records import utcnow

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "sql" / "migrations"
_FILE_NAME = re.compile(r"^(\d+)_([A-Za-z0-9_\-]+)\.sql$")

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    applied_at VARCHAR NOT NULL,
    checksum   VARCHAR NOT NULL
)
"""


class MigrationError(RuntimeError):
    """A migration file set that cannot be applied safely (duplicate version, edited
    after it was applied, or SQL that fails)."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode("utf-8")).hexdigest()


def migration_files(directory: str | Path | None = None) -> list[Migration]:
    """The numbered migrations in `directory` (default: the repo's sql/migrations), in
    version order. Files not named NNN_name.sql are ignored."""
    root = Path(directory) if directory is not None else MIGRATIONS_DIR
    if not root.is_dir():
        raise MigrationError(f"migrations directory not found: {root}")
    found: dict[int, Migration] = {}
    for path in sorted(root.glob("*.sql")):
        match = _FILE_NAME.match(path.name)
        if match is None:
            continue
        version = int(match.group(1))
        if version in found:
            raise MigrationError(
                f"duplicate migration version {version}: {found[version].path.name}, {path.name}"
            )
        found[version] = Migration(version, match.group(2), path, path.read_text("utf-8"))
    return [found[v] for v in sorted(found)]


def latest_version(directory: str | Path | None = None) -> int:
    files = migration_files(directory)
    return files[-1].version if files else 0


def applied_versions(con: duckdb.DuckDBPyConnection) -> dict[int, str]:
    """version -> checksum of what the database has applied ({} for a fresh database)."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchall()[0][0]
    if not exists:
        return {}
    return dict(con.execute("SELECT version, checksum FROM schema_version").fetchall())


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    applied = applied_versions(con)
    return max(applied) if applied else 0


def apply_migrations(
    con: duckdb.DuckDBPyConnection, directory: str | Path | None = None
) -> list[int]:
    """Apply the pending migrations; return the versions applied now ([] when up to date)."""
    migrations = migration_files(directory)
    con.execute(_VERSION_TABLE).fetchall()
    applied = applied_versions(con)
    for migration in migrations:
        recorded = applied.get(migration.version)
        if recorded is not None and recorded != migration.checksum:
            raise MigrationError(
                f"migration {migration.path.name} was changed after it was applied "
                f"(checksum {recorded[:12]} in the database, {migration.checksum[:12]} on "
                "disk); add a new numbered migration instead of editing an applied one"
            )
    done: list[int] = []
    for migration in migrations:
        if migration.version in applied:
            continue
        # Results are fetched: DuckDB refuses other work while a result is unfinished.
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            con.execute(migration.sql).fetchall()
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?, ?, ?)",
                [migration.version, migration.name, utcnow(), migration.checksum],
            ).fetchall()
            con.execute("COMMIT").fetchall()
        except duckdb.Error as exc:
            con.execute("ROLLBACK").fetchall()
            raise MigrationError(f"migration {migration.path.name} failed: {exc}") from exc
        done.append(migration.version)
    return done
