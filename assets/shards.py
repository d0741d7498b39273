"""Sharded consolidation (`shards = N > 1`): the same assets, partitioned by shard with
Dagster static partitions ("shard-0" .. "shard-N-1"). A run materialises one partition;
its resources (assets/resources.py) open that shard's warehouse file, snapshot folder and
share of the inbox, so runs of different shards touch no common file and run in parallel,
while the warehouse file lock keeps one writer per shard.

In a Dagster deployment (docs/deploy.md) the schedule requests one run per shard, and the
two sensors evaluate each shard on its own (its snapshot, its tenants' inbox events, a
cursor per shard) and request runs of the shards that need one; the run
queue's tag limit on `dagster/partition` (dagster.yaml: one run per unique value) keeps one
run per shard in progress, and the pool `loci/warehouse` needs a limit of N so that N
shards may run at once. The run launcher (the default subprocess launcher here; Dagster's
Kubernetes or Celery launchers in a cluster) decides where each run executes.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import dagster as dg

from assets.graph import CONSOLIDATION_ASSETS
from assets.resources import LociSettingsResource
from assets.sensors import TRIGGER_TAG, evaluate_consolidate_requests, evaluate_stm_threshold
from pipelines.settings import Settings
from pipelines.shards import partition_key, partition_keys

SHARD_WRITER_TAG = "loci/shard-writer"


def shard_partitions(settings: Settings) -> dg.StaticPartitionsDefinition:
    return dg.StaticPartitionsDefinition(partition_keys(settings.shards))


def sharded_assets(settings: Settings) -> list[dg.AssetsDefinition]:
    """The consolidation assets with one partition per shard (same code, same keys)."""
    partitions = shard_partitions(settings)
    return list(dg.map_asset_specs(lambda spec: spec.replace_attributes(partitions_def=partitions),
                                   CONSOLIDATION_ASSETS))


def sharded_job(settings: Settings) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(
        name="consolidate_job",
        selection=dg.AssetSelection.assets(*CONSOLIDATION_ASSETS),
        partitions_def=shard_partitions(settings),
        executor_def=dg.in_process_executor,  # one shard's run: one process, one warehouse connection
        tags={SHARD_WRITER_TAG: "write"},
        description=f"Consolidate one shard (of {settings.shards}) into its warehouse and publish its snapshot.",
    )


def sharded_schedule(settings: Settings, job: dg.UnresolvedAssetJobDefinition) -> dg.ScheduleDefinition:
    """Every `schedule_cron` tick: one run request per shard."""

    @dg.schedule(name="consolidation_schedule", job=job, cron_schedule=settings.schedule_cron,
                 execution_timezone="UTC", default_status=dg.DefaultScheduleStatus.RUNNING,
                 description=f"Periodic consolidation of each of the {settings.shards} shards.")
    def consolidation_schedule(context: dg.ScheduleEvaluationContext):
        tick = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "now"
        for key in partition_keys(settings.shards):
            yield dg.RunRequest(run_key=f"{key}:{tick}", partition_key=key, tags={TRIGGER_TAG: "schedule"})

    return consolidation_schedule


Evaluate = Callable[[Settings, "str | None"], dg.SensorResult]


def evaluate_per_shard(evaluate: Evaluate, settings: Settings, cursor: str | None) -> dg.SensorResult:
    """A sensor's logic run once per shard with that shard's settings; the cursor keeps one
    cursor per shard, and each run request targets its shard's partition."""
    try:
        cursors = {str(k): v for k, v in json.loads(cursor).items()} if cursor else {}
    except (ValueError, AttributeError):
        cursors = {}  # an unreadable cursor restarts every shard from its snapshot
    requests, skipped = [], []
    for k in range(settings.shards):
        result = evaluate(settings.for_shard(k), cursors.get(str(k)))
        cursors[str(k)] = result.cursor
        for request in result.run_requests or ():
            requests.append(dg.RunRequest(run_key=f"{partition_key(k)}:{request.run_key}", tags=request.tags,
                                          partition_key=partition_key(k)))
        if result.skip_reason is not None and result.skip_reason.skip_message:
            skipped.append(f"{partition_key(k)}: {result.skip_reason.skip_message}")
    if requests:
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(cursors, sort_keys=True))
    return dg.SensorResult(skip_reason="; ".join(skipped)[:1000] or "nothing to do",
                           cursor=json.dumps(cursors, sort_keys=True))


def sharded_sensors(settings: Settings, job: dg.UnresolvedAssetJobDefinition) -> list[dg.SensorDefinition]:
    """The STM-threshold and memory.consolidate sensors, evaluated per shard."""

    @dg.sensor(name="stm_threshold_sensor", job=job, minimum_interval_seconds=60,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Per shard: a run when consolidatable STM items of a scope pass settings.stm_threshold.")
    def stm_threshold_sensor(context: dg.SensorEvaluationContext, loci: LociSettingsResource) -> dg.SensorResult:
        return evaluate_per_shard(evaluate_stm_threshold, loci.get(), context.cursor)

    @dg.sensor(name="consolidate_request_sensor", job=job, minimum_interval_seconds=30,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Per shard: a run when a memory.consolidate event of its tenants lands in the inbox.")
    def consolidate_request_sensor(context: dg.SensorEvaluationContext,
                                   loci: LociSettingsResource) -> dg.SensorResult:
        return evaluate_per_shard(evaluate_consolidate_requests, loci.get(), context.cursor)

    return [stm_threshold_sensor, consolidate_request_sensor]
