"""Dagster entry point: `workspace.yaml` loads this module (`dagster dev -w workspace.yaml`,
`loci ui`). Everything is configured from one settings object (`loci.toml`, `LOCI_*`)."""


import dagster as dg

from assets.checks import CONSOLIDATION_CHECKS
from assets.graph import CONSOLIDATION_ASSETS
from assets.resources import resources_from_settings
from assets.sensors import (
    build_schedule,
    consolidate_job,
    consolidate_request_sensor,
    stm_threshold_sensor,
)
from pipelines.settings import Settings, load_settings


def build_definitions(
    settings: Settings, *, loggers: dict | None = None, resources: dict[str, dg.ConfigurableResource] | None = None
) -> dg.Definitions:
    """The assets, checks, job, schedule, sensors and resources for `settings`; `resources`
    replaces some of them (tests: a `faults` resource that fails or pauses a run)."""
    if settings.shards > 1:  # the same assets partitioned by shard (assets/shards.py)
        from assets.shards import sharded_assets, sharded_job, sharded_schedule, sharded_sensors

        job = sharded_job(settings)
        return dg.Definitions(
            assets=sharded_assets(settings),
            asset_checks=CONSOLIDATION_CHECKS,
            jobs=[job],
            schedules=[sharded_schedule(settings, job)],
            sensors=sharded_sensors(settings, job),
            resources={**resources_from_settings(settings), **(resources or {})},
            executor=dg.in_process_executor,
            loggers=loggers,
        )
    return dg.Definitions(
        assets=CONSOLIDATION_ASSETS,
        asset_checks=CONSOLIDATION_CHECKS,
        jobs=[consolidate_job],
        schedules=[build_schedule(settings)],
        sensors=[stm_threshold_sensor, consolidate_request_sensor],
        resources={**resources_from_settings(settings), **(resources or {})},
        # Also for runs the UI builds ad hoc ("Materialize selected"): one process, so the
        # run's single warehouse connection and lock serve every step.
        executor=dg.in_process_executor,
        loggers=loggers,
    )


defs = build_definitions(load_settings())
