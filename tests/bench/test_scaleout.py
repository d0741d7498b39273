"""`loci bench scaleout`'s parts on small inputs: the inbox append measurement against a real
PostgreSQL server, CPU accounting from /proc, and the tenants of the shard workload."""

from __future__ import annotations

import os

from bench.scaleout import ORGS, cpu_seconds, inbox_appends, shard_turn_rows
from pipelines.inbox import open_inbox
from pipelines.shards import shard_of


def test_inbox_appends_counts_what_was_stored(postgres_url):
    measured = inbox_appends(postgres_url, writers=2, duration=0.5)
    with open_inbox(postgres_url) as inbox:
        stored = inbox.read_after(0)
    assert measured["appends"] == len(stored) > 0
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    assert measured["latency_ms"]["n"] == measured["appends"]


def test_cpu_seconds_of_a_live_process_and_of_none():
    spent = cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert cpu_seconds(2**22 + 12345) is None  # no such pid


def test_shard_workload_spreads_turns_over_tenants_and_shards():
    rows = shard_turn_rows(1000, seed=0)  # sessions of 20 turns: 50 users
    assert len(rows) == 1000 and len({r["org_id"] for r in rows}) == ORGS
    assert len({shard_of(r["org_id"], 4) for r in rows}) == 4
