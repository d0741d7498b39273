"""One settings object for every layer.

Resolution order (later wins): defaults < `loci.toml` (or the file named by LOCI_CONFIG)
< environment variables `LOCI_<FIELD>` (upper case; lists are comma separated).
Paths are relative to the data directory unless absolute.
"""

from __future__ import annotations

import logging
import os
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from .records import time_zone

# Feature flags and their defaults: the one list the CLI, the proxy and the in-process
# middleware read. `enabled` is the master switch (off: memory does nothing at all);
# `memory_tools` offers Loci's memory.* tools to the model and is off by default.
FLAG_DEFAULTS: dict[str, bool] = {
    "enabled": True,
    "context_injection": True,
    "post_response_scan": True,
    "recall_interception": True,
    "reset_summarize": True,
    "memory_tools": False,
}


class Settings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    # Storage
    data_dir: str = "data"
    inbox_file: str = "inbox.sqlite3"
    # Empty: the SQLite inbox at `inbox_file` (the embedded default). "postgresql://...": the
    # PostgreSQL inbox that several service replicas and the pipeline share (docs/deploy.md).
    inbox_url: str = ""
    warehouse_file: str = "warehouse.duckdb"
    snapshots_dir: str = "snapshots"
    snapshots_keep: int = 3
    # A snapshot shares the previous one's item table and history and adds a delta segment;
    # past this many delta and removed rows per base row the next one rewrites them (compacts).
    snapshot_compact_fraction: float = 0.25
    # The HNSW graph file is kept too while the vectors it does not hold (an exact delta index)
    # are at most this fraction of its slots; past it a run folds them in and rewrites it
    # (`pipelines.snapshot.INDEX_DELTA_FRACTION`; 0: every run rewrites the graph).
    snapshot_index_delta_fraction: float = 0.05
    # Tenants (orgs) hash to `shards` shards, each with its own warehouse file and snapshot
    # folder (pipelines/shards.py); 1 = one warehouse, today's layout. `shard`: the shard
    # this process consolidates or serves (-1: none chosen; only meaningful with shards > 1).
    shards: int = 1
    shard: int = -1

    # Embedding: "minilm" (default, offline), "ollama", or "hash" (deterministic, tests)
    embedder: str = "minilm"
    embedder_dim: int = 384  # used by the hash embedder
    # MiniLM: the service embeds queries and delta items with the int8 model (3x faster);
    # `minilm_precision` is what stored vectors are made with: "auto" (default, per store:
    # int8 vectors in a new store or after `loci reembed`, ~1.5x fewer consolidation
    # CPU-seconds than bf16, LoCoMo turn recall@10 within 0.002 of float32 with pooled
    # message vectors; a store holding float32 vectors keeps float32, a consolidation-sized
    # batch made with bf16 matmuls on a CPU with AVX512_BF16 or AMX — bf16 vectors are
    # float32's within cosine 0.0001 and share its name), "float32", "bf16" (always, also
    # where the CPU emulates it: slower) or "int8" (always; named apart, so a change to or
    # from int8 needs `loci reembed`).
    minilm_int8_online: bool = True
    minilm_precision: str = "auto"
    ollama_host: str = "http://127.0.0.1:11434"
    ollama_embed_model: str = "nomic-embed-text"
    ollama_timeout_s: float = 30.0

    # Consolidation
    merger: str = "ollama"  # "ollama" (Granite) or "extractive"
    merge_model: str = "granite3.2:2b"
    merge_timeout_s: float = 60.0
    cluster_min_size: int = 2
    cluster_reduce_dim: int = 32  # PCA target when vectors are larger and there are many
    stm_threshold: int = 200  # sensor: STM items per scope that trigger a run
    schedule_cron: str = "0 * * * *"
    usage_count_for_ltm: int = 5
    usage_count_for_mtm: int = 2
    auto_promote_types: list[str] = msgspec.field(default_factory=lambda: ["decision", "constraint"])
    stm_aging_days: float = 30.0
    stm_aging_max_importance: int = 3
    quarantine_days: float = 7.0
    importance_decay: bool = False
    retention_days_by_tag: dict[str, float] = {}
    merge_w_max: float = 0.4
    merge_w_overlap: float = 0.3
    merge_w_recency: float = 0.2
    merge_w_validation: float = 0.1
    recency_lambda: float = 0.05
    hnsw_threshold: int = 50_000  # exact inner product below, HNSW above
    # Retrieval context of message items (pipelines.message_context): neighbouring turns
    # of the same session and the day, used to find a turn, never shown as its content.
    message_context_previous: int = 2
    message_context_following: int = 1
    message_context_date: bool = True
    # Off: a message's vector embeds its text with its context (one model pass per message).
    # On: each turn is embedded once, bare, and a message's vector composed from its own and
    # its neighbours' (several times faster consolidation, lower recall: see README).
    message_context_composed: bool = False
    # On (default since 2026-11-28): pooled windows (message_context.POOLING): windows of 5
    # turns at every third turn, each read once; a turn's vector pools its own tokens (half the
    # model work of a text vector, the same recall: see README). Needs an embedder with
    # token states (MiniLM); others give such turns the text vector. Off: the text vector
    # (message + context in one text). A store holds one scheme: changing this (or
    # message_context_composed, which wins when both are on) asks for `loci reembed`.
    message_context_pooled: bool = True

    # Policy
    max_content_chars: int = 2000  # longer content becomes a pointer
    min_confidence: float = 0.4  # below: quarantine
    # Who decides (approves or rejects) what waits for review on an org's org-wide memory:
    # org id -> user ids (its admins, named reviewers). An org not named here: anyone in it
    # who may see the item (`online.review.review_refusal`). Env: LOCI_ORG_REVIEWERS as JSON.
    org_reviewers: dict[str, list[str]] = {}

    # Recall
    recall_mode: str = "hybrid"  # inject | catalog | hybrid | auto (`recall.deliver`)
    recall_k: int = 10
    # The zone "yesterday", "last week" and "on Monday" are read in (an IANA name): the
    # asker's days, not UTC's. A recall may name its own (`tz` on /v1/recall).
    timezone: str = "UTC"
    catalog_k: int = 20
    inject_budget_tokens: int = 800
    confidence_threshold: float = 0.7
    always_inject_importance: int = 8
    qstar_max_expansions: int = 8
    qstar_max_ms: float = 40.0
    qstar_max_tokens: int = 2000

    # Service / proxy
    host: str = "127.0.0.1"
    port: int = 8765
    proxy_port: int = 11435
    # How long the proxy waits for the upstream Ollama, in seconds (0 = no limit): to connect,
    # for the first byte of an answer (a `stream: false` answer arrives all at once, so this
    # bounds its whole generation), between two pieces of a streamed answer, and for the whole
    # answer. Past a limit the client gets a 504 naming it.
    proxy_connect_timeout_s: float = 10.0
    proxy_first_byte_timeout_s: float = 600.0
    proxy_between_bytes_timeout_s: float = 600.0
    proxy_total_timeout_s: float = 0.0
    max_body_bytes: int = 1_000_000
    flags: dict[str, bool] = msgspec.field(default_factory=lambda: dict(FLAG_DEFAULTS))

    def __post_init__(self) -> None:
        if self.shards < 1:
            raise ValueError("shards must be >= 1")
        if self.shard >= self.shards or self.shard < -1:
            raise ValueError(f"shard must be -1 (none) or within 0..{self.shards - 1}")
        time_zone(self.timezone)  # an unknown zone fails at start, not at the first question

    def path(self, name: str) -> Path:
        p = Path(name)
        return p if p.is_absolute() else Path(self.data_dir) / p

    @property
    def inbox_path(self) -> Path:
        return self.path(self.inbox_file)

    @property
    def sharded(self) -> bool:
        """True when this process works on one shard of several."""
        return self.shards > 1 and self.shard >= 0

    def for_shard(self, shard: int) -> "Settings":
        """These settings for one shard (its warehouse, snapshots and share of the inbox)."""
        if not 0 <= shard < self.shards:
            raise ValueError(f"shard {shard} outside 0..{self.shards - 1}")
        return msgspec.structs.replace(self, shard=shard)

    @property
    def inbox_location(self) -> str:
        """What `pipelines.inbox.open_inbox` opens: the PostgreSQL URL, else the SQLite path."""
        return self.inbox_url or str(self.inbox_path)

    @property
    def warehouse_path(self) -> Path:
        from pipelines.shards import shard_file

        path = self.path(self.warehouse_file)
        return shard_file(path, self.shard) if self.sharded else path

    @property
    def snapshots_path(self) -> Path:
        from pipelines.shards import shard_folder

        path = self.path(self.snapshots_dir)
        return shard_folder(path, self.shard) if self.sharded else path


_FIELDS = {f.name: f for f in msgspec.structs.fields(Settings)}


def _from_env(environ: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in _FIELDS.items():
        raw = environ.get(f"LOCI_{name.upper()}")
        if raw is None:
            continue
        default = field.default if field.default is not msgspec.NODEFAULT else field.default_factory()
        if isinstance(default, bool):
            out[name] = raw.strip().lower() in {"1", "true", "yes", "on"}
        elif isinstance(default, int):
            out[name] = int(raw)
        elif isinstance(default, float):
            out[name] = float(raw)
        elif isinstance(default, list):
            out[name] = [p.strip() for p in raw.split(",") if p.strip()]
        elif isinstance(default, dict):
            out[name] = msgspec.json.decode(raw)
        else:
            out[name] = raw
    return out


def load_settings(
    config_file: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Defaults < config file < environment < explicit overrides."""
    env = dict(os.environ if environ is None else environ)
    merged: dict[str, Any] = {}
    path = Path(config_file or env.get("LOCI_CONFIG", "loci.toml"))
    if path.is_file():
        merged.update(tomllib.loads(path.read_text(encoding="utf-8")))
    merged.update(_from_env(env))
    if "OLLAMA_HOST" in env and "ollama_host" not in merged:
        merged["ollama_host"] = _normalise_ollama_host(env["OLLAMA_HOST"])
    merged.update(overrides)
    if "flags" in merged:
        merged["flags"] = {**FLAG_DEFAULTS, **merged["flags"]}
    return msgspec.convert(merged, Settings)


def _normalise_ollama_host(value: str) -> str:
    return value if "://" in value else f"http://{value}"


def flag_on(flags: dict[str, bool], name: str) -> bool:
    """A feature flag with the master switch applied (`enabled` off turns every flag off);
    a flag missing from `flags` takes its default."""
    if not bool(flags.get("enabled", FLAG_DEFAULTS["enabled"])):
        return False
    return bool(flags.get(name, FLAG_DEFAULTS.get(name, True)))


def config_path(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("LOCI_CONFIG", "loci.toml"))


class LiveFlags:
    """Feature flags that follow the config file while a process runs (`loci flags disable
    X` reaches a running proxy without a restart).

    `refresh()` stats the file at most once per `interval_s` (cheap enough for every
    request) and, when its modification time or size changed, re-reads its `[flags]` table
    into `settings.flags` in place, so everything holding these settings sees the flip.
    Resolution as in `load_settings`: defaults < the file < `LOCI_FLAGS`. A file that
    cannot be parsed (caught mid-write) keeps the current flags until the next change."""

    def __init__(self, settings: Settings, path: str | os.PathLike[str], *, interval_s: float = 1.0,
                 environ: dict[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if interval_s < 0:
            raise ValueError("interval_s must be >= 0")
        self.settings = settings
        self.path = Path(path)
        self.interval_s = interval_s
        self.clock = clock
        self._env_flags = _from_env(dict(os.environ if environ is None else environ)).get("flags", {})
        self._stamp = self._stat()
        self._checked = clock()

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def refresh(self) -> dict[str, bool]:
        """The current flags (re-read when the file changed)."""
        now = self.clock()
        if now - self._checked < self.interval_s:
            return self.settings.flags
        self._checked = now
        stamp = self._stat()
        if stamp == self._stamp:
            return self.settings.flags
        try:
            text = self.path.read_text(encoding="utf-8") if stamp is not None else ""
            from_file = tomllib.loads(text).get("flags", {})
            if not isinstance(from_file, dict):
                raise ValueError("[flags] is not a table")
            flags = msgspec.convert({**FLAG_DEFAULTS, **from_file, **self._env_flags}, dict[str, bool])
        except (OSError, ValueError, msgspec.ValidationError) as exc:  # tomllib errors are ValueErrors
            logging.getLogger("loci.settings").warning("flags in %s not re-read: %s", self.path, exc)
            return self.settings.flags
        self._stamp = stamp
        self.settings.flags.update(flags)
        return self.settings.flags


def set_flag(name: str, value: bool, path: str | os.PathLike[str] | None = None) -> Path:
    """Persist one feature flag in the config file, keeping the rest of it as written."""
    import tomlkit

    if name not in FLAG_DEFAULTS:
        raise ValueError(f"unknown flag {name!r}; known: {', '.join(sorted(FLAG_DEFAULTS))}")

    target = Path(path) if path else config_path()
    doc = tomlkit.parse(target.read_text(encoding="utf-8")) if target.is_file() else tomlkit.document()
    if "flags" not in doc:
        doc["flags"] = tomlkit.table()
    doc["flags"][name] = value  # type: ignore[index]
    # Written aside then renamed: a running proxy re-reading the file never sees half of it.
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    partial.write_text(tomlkit.dumps(doc), encoding="utf-8")
    os.replace(partial, target)
    return target
