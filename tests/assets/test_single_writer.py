"""One writer on the warehouse through Dagster's run queue: every run that touches the
warehouse, the consolidation job's or one the UI builds ad hoc ("Materialize all", a
single asset, a check), needs the `loci/warehouse` pool, and the shipped instance
configuration lets one such run be in progress while the others wait in the queue."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest
from dagster._core.execution.api import create_execution_plan
from dagster._core.remote_origin import (
    InProcessCodeLocationOrigin,
    LoadableTargetOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from assets.definitions import build_definitions
from assets.graph import WAREHOUSE_POOL, WAREHOUSE_TAG
from assets.run import SHIPPED_DAGSTER_YAML, limit_warehouse_pool
from tests.assets.support import make_settings


@pytest.fixture(scope="module")
def defs(tmp_path_factory) -> dg.Definitions:
    return build_definitions(make_settings(tmp_path_factory.mktemp("defs")))


@pytest.fixture(scope="module")
def instance(tmp_path_factory):
    """An instance configured by the shipped dagster.yaml (as `loci ui` copies it)."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copyfile(SHIPPED_DAGSTER_YAML, home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as inst:
        limit_warehouse_pool(inst)  # as `loci ui` and `loci consolidate` do
        yield inst


def test_every_asset_and_check_needs_the_warehouse_pool(defs):
    assets = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)]
    assert assets and all(spec.pool == WAREHOUSE_POOL for a in assets for spec in [a.node_def])
    checks = list(defs.asset_checks)
    assert checks and all(c.node_def.pool == WAREHOUSE_POOL for c in checks)
    assert defs.resolve_job_def("consolidate_job").tags[WAREHOUSE_TAG] == "write"


LOCATION = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name="assets.definitions"), location_name="loci")


def _run(instance, defs, selection: list[str] | None, status: dg.DagsterRunStatus, *, job: str | None = None):
    """A run as the webserver or the daemon submits it: `job`, or the implicit asset job
    over `selection` (all assets when None), with its execution plan."""
    keys = {dg.AssetKey(name) for name in selection} if selection else None
    if job:
        job_def = defs.resolve_job_def(job)
    else:
        job_def = defs.resolve_implicit_global_asset_job_def()
        if keys:
            job_def = job_def.get_subset(asset_selection=keys)
    origin = RemoteJobOrigin(repository_origin=RemoteRepositoryOrigin(LOCATION, "__repository__"),
                             job_name=job_def.name)
    return instance.create_run_for_job(job_def, status=status, asset_selection=keys, remote_job_origin=origin,
                                       execution_plan=create_execution_plan(job_def))


def _dequeued(instance) -> set[str]:
    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)
    return {run.run_id for run in daemon._get_runs_to_dequeue(instance, instance.get_concurrency_config(), None)}


def test_shipped_instance_limits_the_pool_to_one_run(instance):
    config = instance.get_concurrency_config()
    assert config.pool_config.pool_granularity.value == "run"
    assert [(p.name, p.limit) for p in instance.event_log_storage.get_pool_limits()] == [(WAREHOUSE_POOL, 1)]


def test_ad_hoc_runs_queue_behind_a_run_that_holds_the_warehouse(instance, defs):
    # A UI "Materialize selected" of one asset is in progress ...
    holder = _run(instance, defs, ["lifecycle"], dg.DagsterRunStatus.STARTED)
    assert WAREHOUSE_POOL in holder.run_op_concurrency.all_pools
    # ... so "Materialize all" and the scheduled job wait in the queue.
    materialize_all = _run(instance, defs, None, dg.DagsterRunStatus.QUEUED)
    _run(instance, defs, None, dg.DagsterRunStatus.QUEUED, job="consolidate_job")  # the schedule's
    assert _dequeued(instance) == set()

    instance.report_run_failed(holder)
    # Once it ends, exactly one of the waiting runs may start (the oldest first).
    assert _dequeued(instance) == {materialize_all.run_id}
