"""Dagster resources: the settings, the inbox, the warehouse (with its run lock), the
embedder, the merger, and the fault-injection points tests use.

Each resource's fields are its configuration (what the launchpad shows and edits); `get()`
builds what the pipeline needs from them directly. `resources_from_settings` fills them
from one `pipelines.settings.Settings`, so a run in the UI and a run from `loci consolidate`
see the same configuration.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import msgspec
import pydantic
from pydantic import PrivateAttr

from pipelines.consolidate import WarehouseLock
from pipelines.inbox import InboxBackend, open_inbox
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse


def run_shard(context: dg.InitResourceContext, shards: int) -> int | None:
    """The shard a run works on: its partition key ("shard-K") when the deployment has
    several shards, else None (the single-warehouse layout)."""
    from pipelines.shards import shard_from_partition

    run = getattr(context, "dagster_run", None)
    key = (run.tags.get("dagster/partition") if run is not None else None) if shards > 1 else None
    if key is None:
        return None
    try:
        return shard_from_partition(key, shards)
    except ValueError as exc:
        raise dg.Failure(str(exc)) from exc


def _settings_fields() -> dict[str, Any]:
    """Every `Settings` field as a resource config field, with the same type and default."""
    namespace: dict[str, Any] = {"__module__": __name__, "__annotations__": {}}
    for field in msgspec.structs.fields(Settings):
        namespace["__annotations__"][field.name] = field.type
        if field.default_factory is not msgspec.NODEFAULT:
            namespace[field.name] = pydantic.Field(default_factory=field.default_factory)
        else:
            namespace[field.name] = field.default
    return namespace


_SettingsFields = type("_SettingsFields", (dg.ConfigurableResource,), _settings_fields())


class LociSettingsResource(_SettingsFields):
    """The Loci settings the stages read (policy, clustering, lifecycle, snapshot...). Its
    config fields are the fields of `pipelines.settings.Settings`, declared from them (one
    list, one set of defaults); `get()` is that Settings object."""

    _run_shard: Any = PrivateAttr(default=None)

    @classmethod
    def from_settings(cls, settings: Settings) -> "LociSettingsResource":
        return cls(**msgspec.structs.asdict(settings))

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._run_shard = run_shard(context, self.shards)

    def get(self) -> Settings:
        """The settings; inside a shard's run, that shard's (`Settings.for_shard`)."""
        values = {f.name: getattr(self, f.name) for f in msgspec.structs.fields(Settings)}
        if self._run_shard is not None:
            values["shard"] = self._run_shard
        try:
            return msgspec.convert(values, Settings)
        except msgspec.ValidationError as exc:
            raise dg.Failure(f"invalid Loci settings: {exc}") from exc


class FaultInjectionResource(dg.ConfigurableResource):
    """Named points inside the stages (such as "govern:before_commit" or
    "<asset>:start") where a test makes a run fail or pause. The default does nothing;
    tests replace it. `marker_file`, when set, is written when the point is reached (so a
    test knows when to kill the run)."""

    point: str = ""
    action: str = ""  # "fail" or "sleep:<seconds>"
    marker_file: str = ""

    def reached(self, point: str) -> None:
        if not self.point or point != self.point:
            return
        if self.marker_file:
            Path(self.marker_file).write_text(point, encoding="utf-8")
        if self.action == "fail":
            raise InjectedFailure(f"injected failure at {point}")
        if self.action.startswith("sleep:"):
            time.sleep(float(self.action.split(":", 1)[1]))


class InjectedFailure(RuntimeError):
    """Raised at a fault-injection point whose action is "fail"."""


class InboxResource(dg.ConfigurableResource):
    """The inbox (read concurrently with the service's appends). `path`: a SQLite file or a
    postgresql:// URL (`Settings.inbox_location`). In a shard's run: that shard's events."""

    path: str
    shards: int = 1
    _inbox: Any = PrivateAttr(default=None)

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["InboxResource"]:
        from pipelines.shards import ShardInbox

        self._inbox = open_inbox(self.path)
        shard = run_shard(context, self.shards)
        if shard is not None:
            self._inbox = ShardInbox(self._inbox, shard, self.shards)
        try:
            yield self
        finally:
            self._inbox.close()
            self._inbox = None

    def get(self) -> InboxBackend:
        if self._inbox is None:  # used outside a run (e.g. direct invocation)
            self._inbox = open_inbox(self.path)
        return self._inbox


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse, opened read-write once per run. The run holds the warehouse
    file lock from start to end (in-process executor: resources live for the whole run),
    so a second run waits here instead of failing on DuckDB's single-writer lock. With
    several shards, a shard's run opens (and locks) that shard's file: one writer per shard."""

    path: str
    shards: int = 1
    lock_timeout_s: float = 6 * 3600.0
    _warehouse: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default=None)

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["WarehouseResource"]:
        from pipelines.shards import shard_file

        log = context.log
        shard = run_shard(context, self.shards)
        path = str(shard_file(Path(self.path), shard)) if shard is not None else self.path
        lock = WarehouseLock(path, timeout_s=self.lock_timeout_s)
        lock.acquire(on_wait=(log.info if log is not None else None))
        if lock.waited_s and log is not None:
            log.info(f"warehouse lock acquired after {lock.waited_s:.1f}s")
        self._lock = lock
        try:
            self._warehouse = Warehouse(path)
            try:
                yield self
            finally:
                self._warehouse.close()
                self._warehouse = None
        finally:
            lock.release()
            self._lock = None

    def get(self) -> Warehouse:
        if self._warehouse is None:
            raise dg.Failure("the warehouse is only available inside a run (resource not initialised)")
        return self._warehouse

    @property
    def lock_wait_s(self) -> float:
        return float(self._lock.waited_s) if self._lock is not None else 0.0


# Embedders and mergers are cached per process: MiniLM loads once, not once per run.
_CACHE: dict[tuple, Any] = {}
_CACHE_LOCK = threading.Lock()


def _cached(key: tuple, build):
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = build()
        return _CACHE[key]


class EmbedderResource(dg.ConfigurableResource):
    """The embedder (`pipelines.embedders.build_embedder`): minilm, ollama or hash."""

    backend: str = "minilm"
    dim: int = 384
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    timeout_s: float = 30.0
    minilm_precision: str = "auto"  # what stored MiniLM vectors are made with (settings.minilm_precision)

    def get(self):
        from pipelines.embedders import build_embedder

        key = ("embedder", self.backend, self.dim, self.ollama_host, self.ollama_model, self.timeout_s,
               self.minilm_precision)
        build = lambda: build_embedder(  # noqa: E731
            self.backend, dim=self.dim, ollama_host=self.ollama_host, ollama_model=self.ollama_model,
            ollama_timeout_s=self.timeout_s, minilm_precision=self.minilm_precision,
        )  # fmt: skip
        try:
            return _cached(key, build)
        except ValueError as exc:
            raise dg.Failure(str(exc)) from exc


class MergerResource(dg.ConfigurableResource):
    """The cluster merger: Granite through Ollama ("ollama", with the extractive merge as
    fallback when Ollama is unreachable or answers badly) or "extractive" only."""

    kind: str = "ollama"
    host: str = "http://127.0.0.1:11434"
    model: str = "granite3.2:2b"
    timeout_s: float = 60.0
    max_chars: int = 2000

    def get(self):
        """A new merger per call: the Ollama merger's circuit breaker (stop calling a dead
        server) lasts one run, and the next run tries Ollama again."""
        from pipelines.merging import ExtractiveMerger, OllamaMerger

        kind = self.kind.strip().lower()
        extractive = ExtractiveMerger(self.max_chars)
        if kind == "extractive":
            return extractive
        if kind == "ollama":
            try:
                return OllamaMerger(self.host, self.model, self.timeout_s, fallback=extractive,
                                    max_chars=self.max_chars)
            except ValueError as exc:
                raise dg.Failure(f"invalid merger settings: {exc}") from exc
        raise dg.Failure(f"unknown merger {self.kind!r}; use 'ollama' or 'extractive'")


def resources_from_settings(settings: Settings) -> dict[str, dg.ConfigurableResource]:
    """Every resource the graph needs, from one Settings object. The data directory is made
    absolute, so a run launched from another working directory uses the same files."""
    # With shards, resources describe the whole layout; each run's partition picks its shard.
    settings = msgspec.structs.replace(settings, data_dir=str(Path(settings.data_dir).resolve()), shard=-1)
    return {
        "faults": FaultInjectionResource(),
        "loci": LociSettingsResource.from_settings(settings),
        "inbox": InboxResource(path=settings.inbox_location, shards=settings.shards),
        "warehouse": WarehouseResource(path=str(settings.warehouse_path), shards=settings.shards),
        "embedder": EmbedderResource(
            backend=settings.embedder, dim=settings.embedder_dim, ollama_host=settings.ollama_host,
            ollama_model=settings.ollama_embed_model, timeout_s=settings.ollama_timeout_s,
            minilm_precision=settings.minilm_precision,
        ),  # fmt: skip
        "merger": MergerResource(
            kind=settings.merger, host=settings.ollama_host, model=settings.merge_model,
            timeout_s=settings.merge_timeout_s, max_chars=settings.max_content_chars,
        ),  # fmt: skip
    }
