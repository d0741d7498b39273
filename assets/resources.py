"""Dagster resources: the settings, the inbox, the warehouse (with its run lock), the
embedder and the merger. All are built from one `pipelines.settings.Settings` by
`resources_from_settings`, so a run in the UI and a run from `loci consolidate` see the
same configuration.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import dagster as dg
import msgspec
from pydantic import PrivateAttr

from pipelines.consolidate import WarehouseLock
from pipelines.inbox import Inbox
from pipelines.settings import Settings, load_settings
from pipelines.warehouse import Warehouse


class LociSettingsResource(dg.ConfigurableResource):
    """The Loci settings: `loci.toml` / `LOCI_*` environment, then `overrides_json` (a JSON
    object of Settings fields) on top. `from_settings` pins a whole Settings object."""

    config_file: Optional[str] = None
    overrides_json: str = "{}"

    @classmethod
    def from_settings(cls, settings: Settings) -> "LociSettingsResource":
        return cls(overrides_json=msgspec.json.encode(settings).decode("utf-8"))

    def get(self) -> Settings:
        try:
            overrides = json.loads(self.overrides_json or "{}")
        except json.JSONDecodeError as exc:
            raise dg.Failure(f"LociSettingsResource.overrides_json is not JSON: {exc}") from exc
        if not isinstance(overrides, dict):
            raise dg.Failure("LociSettingsResource.overrides_json must be a JSON object")
        try:
            return load_settings(self.config_file, **overrides)
        except (msgspec.ValidationError, TypeError, ValueError) as exc:
            raise dg.Failure(f"invalid Loci settings: {exc}") from exc


class InboxResource(dg.ConfigurableResource):
    """The SQLite inbox (read concurrently with the service's appends)."""

    path: str
    _inbox: Any = PrivateAttr(default=None)

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["InboxResource"]:
        self._inbox = Inbox(self.path)
        try:
            yield self
        finally:
            self._inbox.close()
            self._inbox = None

    def get(self) -> Inbox:
        if self._inbox is None:  # used outside a run (e.g. direct invocation)
            self._inbox = Inbox(self.path)
        return self._inbox


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse, opened read-write once per run. The run holds the warehouse
    file lock from start to end (in-process executor: resources live for the whole run),
    so a second run waits here instead of failing on DuckDB's single-writer lock."""

    path: str
    lock_timeout_s: float = 6 * 3600.0
    _warehouse: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default=None)

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator["WarehouseResource"]:
        log = context.log
        lock = WarehouseLock(self.path, timeout_s=self.lock_timeout_s)
        lock.acquire(on_wait=(log.info if log is not None else None))
        if lock.waited_s and log is not None:
            log.info(f"warehouse lock acquired after {lock.waited_s:.1f}s")
        self._lock = lock
        try:
            self._warehouse = Warehouse(self.path)
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
    """`pipelines.embedders.make_embedder` for the configured backend (minilm, ollama, hash)."""

    backend: str = "minilm"
    dim: int = 384
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "nomic-embed-text"
    timeout_s: float = 30.0

    def get(self):
        from pipelines.embedders import make_embedder

        settings = Settings(
            embedder=self.backend, embedder_dim=self.dim, ollama_host=self.ollama_host,
            ollama_embed_model=self.ollama_model, ollama_timeout_s=self.timeout_s,
        )  # fmt: skip
        key = ("embedder", self.backend, self.dim, self.ollama_host, self.ollama_model, self.timeout_s)
        try:
            return _cached(key, lambda: make_embedder(settings))
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
    settings = msgspec.structs.replace(settings, data_dir=str(Path(settings.data_dir).resolve()))
    return {
        "loci": LociSettingsResource.from_settings(settings),
        "inbox": InboxResource(path=str(settings.inbox_path)),
        "warehouse": WarehouseResource(path=str(settings.warehouse_path)),
        "embedder": EmbedderResource(
            backend=settings.embedder, dim=settings.embedder_dim, ollama_host=settings.ollama_host,
            ollama_model=settings.ollama_embed_model, timeout_s=settings.ollama_timeout_s,
        ),  # fmt: skip
        "merger": MergerResource(
            kind=settings.merger, host=settings.ollama_host, model=settings.merge_model,
            timeout_s=settings.merge_timeout_s, max_chars=settings.max_content_chars,
        ),  # fmt: skip
    }
