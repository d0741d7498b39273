"""Run the consolidation job in-process (for `loci consolidate`) and summarise it.

`run_consolidation` executes `consolidate_job` in this process with the project-local
Dagster instance (`.dagster_home/`, so the run shows up in `loci ui`) or an ephemeral one,
and turns the materialization metadata and asset-check results into one flat summary.
The job is not queued here: concurrent runs are serialised by the warehouse file lock.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import dagster as dg

from pipelines.consolidate import reembed_all as _reembed_all
from pipelines.embedders import PREFETCH_CPU
from pipelines.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_DAGSTER_YAML = ROOT / "dagster.yaml"
# sha256 of every earlier shipped dagster.yaml: a copy still equal to one of them was never
# edited, so it is replaced by the current one (which adds the warehouse pool); an edited
# copy is the user's and is kept.
EARLIER_SHIPPED_DAGSTER_YAML = frozenset({
    "c5d6af400a5713ce3d763f11bf556bf1d0ab1b579f4a39daf4c736360f165989",  # run-tag limit only
})
Progress = Callable[[str], None]


def dagster_home(settings: Settings) -> Path:
    """The project-local DAGSTER_HOME: `.dagster_home/` in the working directory when the
    data directory is relative (the default `data`), else inside the data directory. The
    shipped `dagster.yaml` is copied in when the folder has none, or has an unedited copy of
    an earlier shipped one."""
    data_dir = Path(settings.data_dir)
    home = (data_dir if data_dir.is_absolute() else Path.cwd()) / ".dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    stale = target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() in EARLIER_SHIPPED_DAGSTER_YAML
    if (stale or not target.exists()) and SHIPPED_DAGSTER_YAML.exists():
        shutil.copyfile(SHIPPED_DAGSTER_YAML, target)
    return home.resolve()


def limit_warehouse_pool(instance: dg.DagsterInstance) -> None:
    """Give the warehouse pool its limit (the instance's `pools.default_limit`) now. The run
    queue only sets it the first time it sees a queued run that needs the pool, and lets
    that run start even if another run holds the pool."""
    from assets.graph import WAREHOUSE_POOL

    storage = instance.event_log_storage
    if storage.supports_global_concurrency_limits:
        storage.initialize_concurrency_limit_to_default(WAREHOUSE_POOL)


def prepare_dagster_home(settings: Settings, *, dotenv_dir: Path | None = None) -> Path:
    """`dagster_home(settings)` with the warehouse pool limited, for `loci ui`. With
    `dotenv_dir`, the home is also named in that folder's `.env` (`announce_dagster_home`)."""
    home = dagster_home(settings)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        limit_warehouse_pool(instance)
    if dotenv_dir is not None:
        announce_dagster_home(home, dotenv_dir)
    return home


def announce_dagster_home(home: Path, folder: Path) -> Path:
    """Set `DAGSTER_HOME=<home>` in `folder/.env` (other lines kept). `dagster dev` and
    `dg dev` read the `.env` of the folder they run in (for `dg dev`, the project root)
    before they choose an instance, so started there they use this project's instance and
    its run history instead of an empty temporary one. DAGSTER_HOME must be absolute, so
    the file is written per checkout (it is git-ignored), not shipped."""
    from dotenv import set_key

    path = Path(folder) / ".env"
    set_key(str(path), "DAGSTER_HOME", str(Path(home).resolve()), quote_mode="never")
    return path


def reembed_all(settings: Settings, *, progress: Progress | None = None) -> dict[str, Any]:
    """`loci reembed`: every active item embedded with the configured embedder."""
    return _reembed_all(settings, progress=progress)


def _lifecycle_changes(md: dict[str, Any]) -> int:
    return sum(int(md.get(key, 0) or 0) for key in ("promoted", "archived", "decayed"))


# What each stage's progress line counts: (count from its materialization metadata, unit).
STAGE_COUNTS: dict[str, tuple[Callable[[dict[str, Any]], int], str]] = {
    "landed_events": (lambda md: md.get("events_landed", 0), "events landed"),
    "governed_items": (lambda md: md.get("events", 0), "events governed"),
    "item_embeddings": (lambda md: md.get("embedded", 0), "items embedded"),
    "stm_clusters": (lambda md: md.get("clusters_found", 0), "clusters found"),
    "merged_items": (lambda md: md.get("merged", 0), "clusters merged"),
    "lifecycle": (_lifecycle_changes, "items promoted, archived or decayed"),
    "palace_locations": (lambda md: md.get("new_or_moved", 0), "locations new or moved"),
    "memory_snapshot": (lambda md: md.get("count", 0), "items in the snapshot"),
}
EMBEDDING_STEP = "item_embeddings"


def stage_line(stage: str, metadata: dict[str, Any], seconds: float) -> str:
    """One stage's progress line: its name, what it counted and how long it took."""
    count, unit = STAGE_COUNTS[stage]
    return f"{stage:<17} {count(metadata):>7} {unit:<36} {seconds:7.2f} s"


class _ProgressHandler(logging.Handler):
    """Forwards to a callback one line per stage as it completes (`stage_line`), step and
    check failures, and the resources' own log lines (waiting for the warehouse lock). The
    assets' log lines stay in the Dagster event log: the stage line says the same."""

    def __init__(self, callback: Progress) -> None:
        super().__init__(level=logging.DEBUG)  # Dagster logs its structured events at DEBUG
        self.callback = callback
        self.metadata: dict[str, dict[str, Any]] = {}
        # Process CPU seconds (every thread) from each step's start to its end: the
        # in-process executor runs one step at a time, so this is the step's own CPU time,
        # but for the embedding stage's model work started early (`prefetch_item_vectors`,
        # metered in `PREFETCH_CPU`): that goes to the embedding stage wherever it ran.
        self.started_cpu: dict[str, tuple[float, float]] = {}
        self.step_cpu_s: dict[str, float] = {}
        self.prefetch_cpu_at_start = PREFETCH_CPU.seconds
        self.prefetch_cpu_in_embedding = 0.0

    def finish_cpu(self) -> dict[str, float]:
        """`step_cpu_s` once the run is over: the prefetch CPU spent outside the embedding
        step (beside other steps, or between steps) moved to it."""
        out = dict(self.step_cpu_s)
        if EMBEDDING_STEP in out:
            outside = PREFETCH_CPU.seconds - self.prefetch_cpu_at_start - self.prefetch_cpu_in_embedding
            out[EMBEDDING_STEP] = round(out[EMBEDDING_STEP] + outside, 3)
        return out

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._forward(record)
        except Exception:  # noqa: BLE001 - progress output must never break a run
            pass

    def _forward(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        step = meta.get("step_key") or ""
        if event is None:
            if record.levelno >= logging.INFO and (meta.get("resource_name") or not step):
                self.callback(str(meta.get("orig_message", record.getMessage())))
            return
        kind = event.event_type_value
        data = event.event_specific_data
        if kind == "STEP_START":
            self.started_cpu[step] = (time.process_time(), PREFETCH_CPU.seconds)
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and step in self.started_cpu:
            cpu0, prefetch0 = self.started_cpu.pop(step)
            cpu, prefetch = time.process_time() - cpu0, PREFETCH_CPU.seconds - prefetch0
            if step == EMBEDDING_STEP:
                self.prefetch_cpu_in_embedding += prefetch
            else:
                cpu -= prefetch
            self.step_cpu_s[step] = round(cpu, 3)
        if kind == "ASSET_MATERIALIZATION":
            mat = data.materialization
            self.metadata[mat.asset_key.to_user_string()] = {k: _value(v) for k, v in mat.metadata.items()}
        elif kind == "STEP_SUCCESS" and step in STAGE_COUNTS:  # checks report failures only
            self.callback(stage_line(step, self.metadata.get(step, {}), data.duration_ms / 1000.0))
        elif kind == "STEP_FAILURE":
            self.callback(f"{step} FAILED: {event.message or ''}".strip())
        elif kind == "ASSET_CHECK_EVALUATION" and data is not None and not data.passed:
            self.callback(f"check {data.check_name} FAILED")


def _progress_logger(handler: _ProgressHandler) -> dg.LoggerDefinition:
    @dg.logger(description="Forwards run progress to a callback (loci consolidate).")
    def progress(_init_context) -> logging.Logger:
        log = logging.Logger("loci.consolidate.progress", level=logging.DEBUG)
        log.addHandler(handler)
        return log

    return progress


def _value(meta_value: Any) -> Any:
    return getattr(meta_value, "value", meta_value)


def _metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = getattr(event.event_specific_data, "materialization", None)
        if mat is not None:
            out[mat.asset_key.to_user_string()] = {k: _value(v) for k, v in mat.metadata.items()}
    return out


def _failure(result: dg.ExecuteInProcessResult) -> str | None:
    for event in result.all_events:
        if event.is_step_failure:
            data = event.step_failure_data
            if data.user_failure_data is not None and data.user_failure_data.description:
                return f"{event.step_key}: {data.user_failure_data.description}"
            error = data.error
            while (error is not None and error.cause is not None
                   and "DagsterExecutionStepExecutionError" in (error.cls_name or "")):
                error = error.cause
            message = (error.message if error is not None else "").strip()
            return f"{event.step_key}: {message}"
    return None


def summarise(result: dg.ExecuteInProcessResult, *, duration_s: float) -> dict[str, Any]:
    """The flat summary `loci consolidate` prints."""
    md = _metadata(result)
    land = md.get("landed_events", {})
    gov = md.get("governed_items", {})
    emb = md.get("item_embeddings", {})
    clu = md.get("stm_clusters", {})
    mer = md.get("merged_items", {})
    life = md.get("lifecycle", {})
    pal = md.get("palace_locations", {})
    snap = md.get("memory_snapshot", {})
    checks = {ev.check_name: ("passed" if ev.passed else "FAILED") for ev in result.get_asset_check_evaluations()}
    summary: dict[str, Any] = {
        "status": "success" if result.success else "failure",
        "run_id": result.run_id,
        "landed": land.get("events_landed", 0),
        "inbox_seq": f"{land.get('from_seq', 0)}..{gov.get('to_seq', land.get('from_seq', 0))}",
        "accepted": gov.get("accepted", 0),
        "quarantined": gov.get("quarantined", 0),
        "rejected": gov.get("rejected", 0),
        "messages": gov.get("messages", 0),
        "embedded": emb.get("embedded", 0),
        "clusters": clu.get("clusters_found", 0),
        "clustered": clu.get("clustered_items", 0),
        "merged": mer.get("merged", 0),
        "merged_llm": mer.get("by_llm", 0),
        "merged_fallback": mer.get("by_fallback", 0),
        "fallback_reasons": mer.get("fallback_reasons", {}),
        "promoted": life.get("promoted", 0),
        "archived": life.get("archived", 0),
        "decayed": life.get("decayed", 0),
        "palace_new_or_moved": pal.get("new_or_moved", 0),
        "snapshot_version": snap.get("version"),
        "snapshot_published": snap.get("published", False),
        "snapshot_items": snap.get("count"),
        "index_kind": snap.get("index_kind"),
        "tiers": snap.get("tier_counts", {}),
        "checks": checks,
        "lock_wait_s": land.get("lock_wait_s", 0.0),
        "duration_s": round(duration_s, 3),
    }
    if not result.success:
        summary["error"] = _failure(result) or "the run failed (see the Dagster event log)"
    return summary


def run_consolidation(
    settings: Settings,
    *,
    progress: Progress | None = None,
    instance: Literal["local", "ephemeral"] | dg.DagsterInstance = "local",
    resources: dict[str, dg.ConfigurableResource] | None = None,
) -> dict[str, Any]:
    """Run the whole consolidation graph once, in this process, and return its summary
    (status "success" or "failure" with "error"). Waits if another run holds the warehouse.
    With several shards (`settings.shards > 1`) `settings` names the shard to consolidate
    (`Settings.for_shard`); `consolidate_shards` runs every shard.

    `instance`: "local" (the project-local `.dagster_home/`, runs visible in `loci ui`),
    "ephemeral" (in memory, nothing kept), or a DagsterInstance to use as is. `resources`
    replaces some of the resources built from `settings` (tests)."""
    from assets.definitions import build_definitions

    if not isinstance(instance, dg.DagsterInstance) and instance not in ("local", "ephemeral"):
        raise ValueError(f"instance must be 'local', 'ephemeral' or a DagsterInstance, not {instance!r}")
    # The progress logger replaces Dagster's console logger (the CLI prints a summary).
    partition = None
    if settings.shards > 1:
        from pipelines.shards import partition_key

        if settings.shard < 0:
            raise ValueError(f"{settings.shards} shards: name the shard to consolidate (Settings.for_shard)")
        partition = partition_key(settings.shard)
    handler = _ProgressHandler(progress or (lambda _msg: None))
    loggers = {"progress": _progress_logger(handler)}
    job = build_definitions(settings, loggers=loggers, resources=resources).resolve_job_def("consolidate_job")
    started = time.monotonic()

    def execute(dagster_instance: dg.DagsterInstance) -> dict[str, Any]:
        limit_warehouse_pool(dagster_instance)
        result = job.execute_in_process(
            run_config={"loggers": {"progress": {}}},
            instance=dagster_instance,
            raise_on_error=False,
            tags={"loci/trigger": "cli"},
            partition_key=partition,
        )
        summary = summarise(result, duration_s=time.monotonic() - started)
        summary["step_cpu_s"] = handler.finish_cpu()  # stages and asset checks, by step key
        return summary

    if isinstance(instance, dg.DagsterInstance):
        return execute(instance)
    if instance == "ephemeral":
        with dg.DagsterInstance.ephemeral() as dagster_instance:
            return execute(dagster_instance)
    with dg.DagsterInstance.from_config(str(dagster_home(settings))) as dagster_instance:
        return execute(dagster_instance)


def _run_one_shard(settings: Settings) -> dict[str, Any]:
    return run_consolidation(settings, instance="ephemeral")


def consolidate_shards(settings: Settings, *, processes: int | None = None) -> dict[int, dict[str, Any]]:
    """Consolidate every shard, each shard's run in a process of its own, up to `processes`
    (default: the number of shards) at once: one writer per shard, shards in parallel.
    Returns each shard's run summary (with its wall time in `duration_s`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    if settings.shards < 2:
        return {0: run_consolidation(settings)}
    workers = max(1, min(processes or settings.shards, settings.shards))
    context = multiprocessing.get_context("spawn")  # no Dagster or DuckDB state shared with the parent
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {k: pool.submit(_run_one_shard, settings.for_shard(k)) for k in range(settings.shards)}
        return {k: f.result() for k, f in futures.items()}
