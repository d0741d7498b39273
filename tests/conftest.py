"""Shared fixtures. Keep this small: the real MiniLM loads once per session (seconds)."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest

import online.snapshot_holder
import online.state
from pipelines.embedders import HashEmbedder, MiniLMEmbedder

_REAL_FREEZE = online.snapshot_holder.freeze_long_lived


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "real_gc_freeze: runs the service's real freeze_long_lived (a full collection)")


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Importing the test modules (Dagster, Hypothesis, schemathesis, ...) allocates hundreds
    of thousands of long-lived objects: the cyclic GC's full passes over them were ~4 s of
    CPU per worker. Collect once at the end instead, and keep what is loaded frozen."""
    gc.disable()
    try:
        return (yield)
    finally:
        gc.enable()
        gc.collect()
        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Test files marked `slow` (their `pytestmark`: the longest, by measured time) run
    first, the others by their number of tests, most first; each file's own order kept.
    pytest-xdist (`--dist loadfile --no-loadscope-reorder`, bootstrap.py) hands out files in
    this order, so a long file with few tests is not left for one worker at the end."""
    per_file: dict[object, int] = {}
    for item in items:
        per_file[item.getparent(pytest.Module)] = per_file.get(item.getparent(pytest.Module), 0) + 1
    items.sort(key=lambda item: (item.getparent(pytest.Module).get_closest_marker("slow") is None,
                                 -per_file[item.getparent(pytest.Module)]))


def pytest_unconfigure(config) -> None:
    gc.unfreeze()  # the interpreter's final collection sees everything (nanobind reports leaks otherwise)


def _freeze_without_collecting() -> None:
    """`freeze_long_lived` less its full collection: the objects alive are frozen all the
    same, cyclic garbage is only collected at a later unfreeze."""
    gc.unfreeze()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def _no_full_collection_per_service() -> Iterator[None]:
    """Every MemoryService start and snapshot swap runs a full cyclic collection
    (`freeze_long_lived`). In a test worker that walks the whole suite's heap (pytest,
    Dagster, Hypothesis, every collected module: ~0.3-0.5 s CPU each time, ~90% of the CPU
    of a scenario file), not the service's. Patched for the session, not per test: module
    fixtures (the scenarios' shared services) are set up before any function fixture.
    Tests that assert what the collection does are marked `real_gc_freeze` (below)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(online.snapshot_holder, "freeze_long_lived", _freeze_without_collecting)
        patch.setattr(online.state, "freeze_long_lived", _freeze_without_collecting)
        yield


@pytest.fixture(autouse=True)
def _real_gc_freeze_where_marked(request, monkeypatch) -> None:
    """A test marked `real_gc_freeze` runs the service's real `freeze_long_lived`."""
    if request.node.get_closest_marker("real_gc_freeze") is not None:
        monkeypatch.setattr(online.snapshot_holder, "freeze_long_lived", _REAL_FREEZE)
        monkeypatch.setattr(online.state, "freeze_long_lived", _REAL_FREEZE)


@pytest.fixture(scope="session")
def minilm_embedder() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder(dim=384)


@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL server (Debian binaries, a temporary folder, 127.0.0.1) for the
    session. Skipped only where no server binary exists; CI installs one (.ci/run) and sets
    LOCI_REQUIRE_POSTGRES=1, which turns the skip into a failure."""
    from bench.pg_local import LocalPostgres, PostgresUnavailable

    try:
        server = LocalPostgres().start()
    except PostgresUnavailable as exc:
        if os.environ.get("LOCI_REQUIRE_POSTGRES"):
            pytest.fail(f"PostgreSQL is required here (LOCI_REQUIRE_POSTGRES): {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server, request) -> str:
    """A fresh, empty database on the session's server, for one test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[-50:]
    return postgres_server.fresh_database(name)


@pytest.fixture(params=["sqlite", "postgres"])
def inbox_location(request, tmp_path) -> str:
    """Where an inbox lives, once per backend: the same tests run against both."""
    if request.param == "sqlite":
        return str(tmp_path / "nested" / "inbox.sqlite3")
    return request.getfixturevalue("postgres_url")
