"""Three `loci serve` replicas, one memory: a real PostgreSQL inbox and one snapshot folder
shared by three service processes on different 127.0.0.1 ports, each with a data folder of
its own.

Mixed traffic (turns and memory.write on every replica, and a recall of each acknowledged
write from another replica right after its acknowledgement), then `kill -9` of one replica
mid-load, a new snapshot published while the survivors keep serving. Checked: no
acknowledged write lost or stored twice, gap-free seqs, no error from a surviving replica,
read-your-writes across replicas, each replica hot-swapping the snapshot on its own, and
every replica (the killed one restarted) recalling every acknowledged write.
"""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

from bench.harness import WriteLoad, audit_inbox, make_settings, publish, read_back, tenant_items, unanswered_landed
from bench.replicas import CrossReplicaReads, ReplicaSet, wait_until
from pipelines.embedders import make_embedder
from pipelines.records import Identity

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)


def test_three_replicas_share_one_memory_and_survive_a_kill_9(tmp_path: Path, postgres_url: str) -> None:
    shared = tmp_path / "shared"
    base = make_settings(tmp_path, inbox_url=postgres_url, snapshots_dir=str(shared / "snapshots"))
    embedder = make_embedder(base)
    owners = [Identity(user_id=f"u{i}", project_id="p0", org_id="o0") for i in range(3)]
    first = publish(base, tenant_items(40, random.Random(1), owners, prefix="old"), embedder)

    with ReplicaSet(base, 3, tmp_path) as replicas:
        assert replicas.snapshot_versions() == [first] * 3
        loads = [WriteLoad(url, writers=2, seed=10 + i).start() for i, url in enumerate(replicas.urls)]
        reads = CrossReplicaReads(replicas, loads, seed=3).start()
        try:
            wait_until(lambda: len(loads[0].acks) >= 15 and reads.checked >= 20, 60, "acks before the kill")
            loads[0].mark_kill()
            assert replicas.kill(0) == -signal.SIGKILL  # mid-load: its writers are still sending
            before = [len(load.acks) for load in loads]

            # A new snapshot in the shared folder: each survivor swaps it in on its own.
            second = publish(base, tenant_items(60, random.Random(2), owners, prefix="new"), embedder)
            wait_until(lambda: replicas.snapshot_versions()[1:] == [second, second], 30, "hot swap on every replica")
            wait_until(lambda: all(len(loads[i].acks) >= before[i] + 15 for i in (1, 2)), 60, "acks after the kill")
        finally:
            for load in loads:
                load.stop()
            reads.stop()

        acks = [a for load in loads for a in load.acks]
        survivors_failed = [f for load in loads[1:] for f in (*load.refused, *load.dropped_before_kill)]
        assert survivors_failed == [] and reads.errors == [], (survivors_failed[:3], reads.errors[:3])
        assert loads[0].refused == [] and loads[0].dropped_before_kill == []
        assert reads.checked == len(acks) and reads.missed == [], reads.missed[:5]  # read-your-writes

        audit, events = audit_inbox(postgres_url)
        assert audit.missing(acks) == [] and audit.duplicated(acks) == []  # 0 acknowledged writes lost
        assert audit.duplicate_event_ids == [] and audit.seqs_contiguous
        landed, lost = unanswered_landed(events, loads[0].unanswered)
        assert landed + lost == len(loads[0].unanswered)

        print(f"replicas: acknowledged {len(acks)} (killed replica {len(loads[0].acks)}), lost "
              f"{len(audit.missing(acks))}, unanswered at the kill {len(loads[0].unanswered)} (landed {landed}), "
              f"survivor errors {len(survivors_failed) + len(reads.errors)}, cross-replica recalls {reads.checked}")
        replicas.restart(0)
        assert replicas.snapshot_versions() == [second] * 3
        for url in replicas.urls:  # every replica recalls every acknowledged write
            assert read_back(url, acks) == {"not_read": [], "not_recalled": []}, url
