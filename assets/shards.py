"""Sharded consolidation (`shards = N > 1`): the same assets, partitioned by shard with
Dagster static partitions ("shard-0" .. "shard-N-1"). A run materialises one partition;
its resources (assets/resources.py) open that shard's warehouse file, snapshot folder and
share of the inbox, so runs of different shards touch no common file and run in parallel,
while the warehouse file lock keeps one writer per shard.

In a Dagster deployment (docs/deploy.md) the schedule requests one run per shard; the run
queue's tag limit on `dagster/partition` (dagster.yaml: one run per unique value) keeps one
run per shard in progress, and the pool `loci/warehouse` needs a limit of N so that N
shards may run at once. The run launcher (the default subprocess launcher here; Dagster's
Kubernetes or Celery launchers in a cluster) decides where each run executes.
"""

from __future__ import annotations

import dagster as dg

from assets.graph import CONSOLIDATION_ASSETS
from assets.sensors import TRIGGER_TAG
from pipelines.settings import Settings
from pipelines.shards import partition_keys

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

