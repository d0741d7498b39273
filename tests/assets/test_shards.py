"""Sharded consolidation: tenants (orgs) hash to shards, each shard consolidated by its own
Dagster run (partition "shard-K") into its own warehouse file and snapshot, shards in
parallel processes; a service on one shard serves only that shard's tenants; one
read-only DuckDB session over every shard answers the `sql/` views for the union."""

from __future__ import annotations

from collections import Counter

import pytest

from assets.run import consolidate_shards, run_consolidation
from bench.harness import block, ingest, make_settings
from online.state import MemoryService
from pipelines.inbox import open_inbox
from pipelines.records import Identity
from pipelines.shards import ShardInbox, open_all_shards, shard_of
from pipelines.snapshot import current_version
from pipelines.warehouse import Warehouse

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

ORGS = [f"org{i}" for i in range(8)]


def rows_for(org: str) -> list[dict]:
    who = {"user_id": "ana", "project_id": "atlas", "session_id": "s1", "org_id": org}
    fact = {"type": "fact", "title": f"Codename of {org}", "content": f"The codename of {org} is quartz-{org}.",
            "scope": "org"}
    return [{**who, "role": "user", "text": f"What is the codename for {org}?"},
            {**who, "role": "assistant", "text": "Noted. " + block(fact)}]


def test_shard_of_is_stable_and_spreads_tenants():
    assert [shard_of(o, 4) for o in ORGS] == [shard_of(o, 4) for o in ORGS]  # no salted hash
    assert shard_of("anything", 1) == 0
    spread = Counter(shard_of(f"org-{i}", 4) for i in range(400))
    assert set(spread) == {0, 1, 2, 3} and min(spread.values()) > 60
    with pytest.raises(ValueError):
        shard_of("x", 0)


def test_one_shard_is_todays_layout(tmp_path):
    settings = make_settings(tmp_path)
    assert settings.shards == 1 and not settings.sharded
    assert settings.warehouse_path.name == "warehouse.duckdb" and settings.snapshots_path.name == "snapshots"
    with pytest.raises(ValueError):
        settings.for_shard(1)


def test_shards_consolidate_in_parallel_and_never_mix_tenants(tmp_path):
    settings = make_settings(tmp_path, shards=4)
    ingest(settings, [r for org in ORGS for r in rows_for(org)])
    with pytest.raises(ValueError, match="name the shard"):
        run_consolidation(settings)

    summaries = consolidate_shards(settings, processes=2)
    assert sorted(summaries) == [0, 1, 2, 3]
    assert all(s["status"] == "success" for s in summaries.values()), summaries

    orgs_seen: dict[int, set[str]] = {}
    for k in range(4):
        shard = settings.for_shard(k)
        assert shard.warehouse_path.name == f"warehouse-shard-{k}.duckdb"
        assert current_version(shard.snapshots_path) is not None  # its own snapshot
        with Warehouse(shard.warehouse_path, read_only=True) as wh:
            orgs_seen[k] = {it.scope.org_id for it in wh.active_items()}
        assert all(shard_of(org, 4) == k for org in orgs_seen[k])  # only its own tenants
    assert set().union(*orgs_seen.values()) == set(ORGS)  # every tenant somewhere, once
    assert not settings.warehouse_path.exists()  # no unsharded warehouse was written

    # A replica serving one shard recalls its tenants' memory and nothing of the others'.
    mine = next(o for o in ORGS if shard_of(o, 4) == 0)
    other = next(o for o in ORGS if shard_of(o, 4) != 0)
    with MemoryService(settings.for_shard(0), swap_in_background=False) as service:
        assert isinstance(service.inbox, ShardInbox)
        hit = service.recall(f"codename of {mine}", Identity(user_id="ana", project_id="atlas", org_id=mine),
                             mode="catalog", record_usage=False)
        assert any(f"quartz-{mine}" in h.item.content for h in hit.hits)
        miss = service.recall(f"codename of {other}", Identity(user_id="ana", project_id="atlas", org_id=other),
                              mode="catalog", record_usage=False)
        assert not any(other in h.item.content for h in miss.hits)

    # A new write lands once in the shared inbox; only its shard's next run takes it.
    ingest(settings, rows_for(mine)[:1] + [{**rows_for(mine)[0], "text": "One more question for the log."}],
           name="more.jsonl")
    again = run_consolidation(settings.for_shard(0), instance="ephemeral")
    assert again["status"] == "success"

    # Cross-shard analytics: the sql/ views over the union of every shard.
    con = open_all_shards(settings)
    try:
        per_shard = 0
        for k in range(4):
            with Warehouse(settings.for_shard(k).warehouse_path, read_only=True) as wh:
                per_shard += len(wh.active_items())
        union = con.execute("SELECT sum(active) FROM v_tier_summary").fetchone()[0]
        assert union == per_shard > 0
        orgs = {r[0] for r in con.execute("SELECT DISTINCT org_id FROM items").fetchall()}
        assert orgs == set(ORGS)
    finally:
        con.close()


def test_a_shard_inbox_pages_through_other_shards_events(tmp_path):
    settings = make_settings(tmp_path, shards=4)
    ingest(settings, [r for org in ORGS for r in rows_for(org)] * 1)
    with open_inbox(settings) as everything, open_inbox(settings.for_shard(1)) as shard:
        mine = [e for e in everything.read_after(0) if shard_of(e.identity.org_id, 4) == 1]
        assert mine and shard.read_after(0) == mine
        assert shard.read_after(0, limit=1) == mine[:1]  # a limit counts this shard's events
        assert shard.max_seq() == everything.max_seq()  # seqs stay global


def test_serve_with_shards_names_its_shard(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from loci import cli

    monkeypatch.setenv("LOCI_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("LOCI_SHARDS", "4")
    result = CliRunner().invoke(cli.app, ["serve", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "--shard 0..3" in " ".join(result.output.split())
    result = CliRunner().invoke(cli.app, ["consolidate", "--data-dir", str(tmp_path), "--shard", "7"])
    assert result.exit_code == 2 and "outside 0..3" in " ".join(result.output.split())


def test_sharded_definitions_partition_the_assets_and_schedule_every_shard(tmp_path):
    from datetime import datetime, timezone

    import dagster as dg

    from assets.definitions import build_definitions

    defs = build_definitions(make_settings(tmp_path, shards=3))
    job = defs.resolve_job_def("consolidate_job")
    assert job.partitions_def.get_partition_keys() == ["shard-0", "shard-1", "shard-2"]
    schedule = defs.resolve_schedule_def("consolidation_schedule")
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 1, 1, tzinfo=timezone.utc),
                                        repository_def=defs.get_repository_def())
    requests = list(schedule.evaluate_tick(context).run_requests)
    assert sorted(r.partition_key for r in requests) == ["shard-0", "shard-1", "shard-2"]
    assert len({r.run_key for r in requests}) == 3
    single = build_definitions(make_settings(tmp_path / "one"))  # the default: unpartitioned, as before
    assert single.resolve_job_def("consolidate_job").partitions_def is None


def test_sensors_request_runs_of_the_shards_that_need_one(tmp_path):
    import json

    from assets.sensors import evaluate_consolidate_requests
    from assets.shards import evaluate_per_shard
    from pipelines.records import Event

    settings = make_settings(tmp_path, shards=4)
    ingest(settings, rows_for("org1"))
    quiet = evaluate_per_shard(evaluate_consolidate_requests, settings, None)
    assert not quiet.run_requests and set(json.loads(quiet.cursor)) == {"0", "1", "2", "3"}

    who = Identity(user_id="ana", project_id="atlas", org_id="org5")
    with open_inbox(settings) as inbox:
        inbox.append([Event(event_id="evt-consolidate-org5", kind="memory.consolidate", identity=who,
                            payload={"scope": "project"})])
    fired = evaluate_per_shard(evaluate_consolidate_requests, settings, quiet.cursor)
    (request,) = fired.run_requests  # only org5's shard asked
    assert request.partition_key == f"shard-{shard_of('org5', 4)}"
    assert request.run_key.startswith(f"shard-{shard_of('org5', 4)}:memory.consolidate:")
    assert not evaluate_per_shard(evaluate_consolidate_requests, settings, fired.cursor).run_requests
