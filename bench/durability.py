"""Randomised crash runs: SIGKILL the service mid-writes and the consolidation mid-run, N times.

    python -m bench.durability --service-rounds 10 --consolidation-rounds 4 --json out.json
    python -m bench.durability --quick      # 3 service rounds, 2 consolidation rounds

Service rounds (one data directory for the whole run, so the inbox keeps growing): start
the service (`online.server.serve` in a subprocess on 127.0.0.1), let `--writers` threads
send turns and memory.write, SIGKILL it at a random moment (`--max-kill-s`), then restart
it on the same directory and check, over everything acknowledged in every round so far:
each acknowledged write is in the inbox exactly once, read back with its writer's identity
and recalled by its phrase (a random sample of `--recall-sample` per round); writes that
got no answer are counted (landed or not, never twice); unanswered turns retried with the
same turn id are stored once. Time to ready after each kill is recorded.

Consolidation rounds (`assets.run.run_consolidation`, the Dagster job, in a child process):
each round lands a new batch of chats, starts a run and SIGKILLs it either at a random
stage hook (`LOCI_TEST_HOOK`: inside a stage's transaction) or at a random moment. After
each kill the published snapshot must be the previous one or a complete new one (CURRENT
always loads and verifies), the warehouse opens, and the next run succeeds with every asset
check passing. At the end the active items equal those of a control directory that got the
same batches and was never interrupted.

Counts and failures are printed as a table and written as JSON; exit status 1 if any
invariant failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench import driver
from bench.harness import (
    ServiceProcess,
    WriteLoad,
    active_items,
    audit_inbox,
    block,
    child_summary,
    dana,
    erin,
    ident,
    ingest,
    make_settings,
    read_back,
    snapshot_state,
    start_child_run,
    unanswered_landed,
)
from bench.metrics import machine_info
from pipelines.settings import Settings

HOOK_POINTS = (
    "landed_events:start", "land:before_commit", "governed_items:start", "govern:before_commit",
    "item_embeddings:start", "embed:before_commit", "stm_clusters:start", "merged_items:start",
    "merge:before_commit", "lifecycle:start", "lifecycle:before_commit", "palace_locations:start",
    "palace:before_commit", "memory_snapshot:start",
)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("durability", __doc__, quick="3 service rounds, 2 consolidation rounds")
    p.add_argument("--service-rounds", type=int, default=None, help="service kill rounds (default 10; --quick 3)")
    p.add_argument("--consolidation-rounds", type=int, default=None,
                   help="consolidation kill rounds (default 4; --quick 2; 0 skips them)")
    p.add_argument("--writers", type=int, default=4, help="concurrent writer threads")
    p.add_argument("--max-kill-s", type=float, default=3.0, help="kill within this many seconds of the first ack")
    p.add_argument("--recall-sample", type=int, default=100, help="acknowledged writes recalled per round")
    p.add_argument("--embedder", choices=["hash", "minilm"], default="hash")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.service_rounds is None:
        args.service_rounds = 3 if args.quick else 10
    if args.consolidation_rounds is None:
        args.consolidation_rounds = 2 if args.quick else 4
    if args.service_rounds < 0 or args.consolidation_rounds < 0 or args.writers < 1:
        p.error("rounds must be >= 0 and --writers >= 1")
    return args


# -- service kills ------------------------------------------------------------------------------


def service_rounds(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    rng = random.Random(f"service:{args.seed}")
    settings = Settings(embedder=args.embedder, data_dir=str(workdir / "service" / "data"))
    acks: list = []
    rounds = []
    for r in range(args.service_rounds):
        started = time.monotonic()
        service = ServiceProcess(settings, ready_timeout_s=600).start()
        ready_s = time.monotonic() - started
        row: dict[str, Any] = {"round": r, "ready_after_restart_s": round(ready_s, 2)}
        try:
            if acks:  # everything acknowledged before the previous kill is still there
                row.update(check_acks(service.url, acks, rng, args.recall_sample))
            load = WriteLoad(service.url, writers=args.writers, seed=args.seed * 1000 + r).start()
            try:
                load.wait_for_acks(1, timeout_s=120)
                kill_after = rng.uniform(0.0, args.max_kill_s)
                time.sleep(kill_after)
                load.mark_kill()
                code = service.kill()
            finally:
                load.stop()
        finally:
            service.kill()
        acks += load.acks
        audit, events = audit_inbox(settings.inbox_location)
        landed, lost = unanswered_landed(events, load.unanswered)
        row.update({
            "kill_after_s": round(kill_after, 3), "exit_code": code, "acked": len(load.acks),
            "unanswered": len(load.unanswered), "unanswered_landed": landed, "unanswered_lost": lost,
            "refused": len(load.refused), "dropped_before_kill": len(load.dropped_before_kill),
            "missing": len(audit.missing(acks)),
            "duplicated": len(audit.duplicated(acks)), "duplicate_event_ids": len(audit.duplicate_event_ids),
            "seqs_contiguous": audit.seqs_contiguous, "inbox_events": audit.events,
        })
        if code != -signal.SIGKILL:  # it died on its own before the kill
            row["crash_log"] = service.log_tail(4000)
        row["retry"] = load.unanswered
        rounds.append(row)
        say(f"service round {r}: killed after {row['kill_after_s']} s, {row['acked']} acked, "
            f"{row['unanswered']} in flight ({landed} landed), missing {row['missing']}, dup {row['duplicated']}")

    # Final restart: every ack of every round, plus unanswered turns retried once each.
    service = ServiceProcess(settings, ready_timeout_s=600).start()
    try:
        final = check_acks(service.url, acks, rng, args.recall_sample)
        retried = [a for row in rounds for a in row.pop("retry") if a.kind == "turn"]
        with httpx.Client(base_url=service.url, timeout=30) as client:
            statuses = [client.post("/v1/turns", json={"identity": ident(a.who), "role": "user", "turn_id": a.turn_id,
                                                       "text": f"Please remember: {a.phrase}."}).status_code
                        for a in retried]
        audit, _ = audit_inbox(settings.inbox_location)
        final.update({
            "retried_turns": len(retried), "retry_non_2xx": sum(s // 100 != 2 for s in statuses),
            "retried_stored_once": all(audit.turn_count[a.turn_id] == 1 for a in retried),
            "missing": len(audit.missing(acks)), "duplicated": len(audit.duplicated(acks)),
            "seqs_contiguous": audit.seqs_contiguous, "inbox_events": audit.events,
        })
    finally:
        service.stop()
    failures = [f"round {r['round']}: {k}={r[k]}" for r in rounds
                for k in ("missing", "duplicated", "duplicate_event_ids", "refused", "dropped_before_kill",
                          "not_read", "not_recalled")
                if r.get(k)] + [f"round {r['round']}: seqs not contiguous" for r in rounds if not r["seqs_contiguous"]]
    failures += [f"round {r['round']}: the service died on its own (exit {r['exit_code']}) before the kill"
                 for r in rounds if r["exit_code"] != -signal.SIGKILL]
    failures += [f"final: {k}={final[k]}" for k in ("missing", "duplicated", "not_read", "not_recalled",
                                                    "retry_non_2xx") if final.get(k)]
    failures += [f"final: {k} false" for k in ("retried_stored_once", "seqs_contiguous") if not final[k]]
    return {"rounds": rounds, "final": final, "acked_total": len(acks), "failures": failures}


def check_acks(url: str, acks: list, rng: random.Random, sample: int) -> dict[str, Any]:
    found = read_back(url, acks, recall_sample=sample, rng=rng)
    return {"checked_acks": len(acks), "not_read": len(found["not_read"]),
            "recalled_sample": min(sample, len(acks)), "not_recalled": len(found["not_recalled"])}


# -- consolidation kills ------------------------------------------------------------------------


def batch(r: int, rng: random.Random) -> list[dict[str, Any]]:
    """New chats for round r: three near-duplicate facts (one cluster to merge), a decision
    and another owner's fact on the same topic (must never merge with Dana's)."""
    topic = rng.choice(["tile cache", "render queue", "search index", "backup window", "deploy train"])
    value = rng.randrange(10, 500)
    fact = lambda title, content: {"type": "fact", "title": title, "content": content, "tags": [topic.split()[0]]}  # noqa: E731
    return [
        dana(f"Round {r}: what is the {topic} limit?", role="user", session=f"r{r}a"),
        dana("Noted. " + block(fact(f"{topic} limit r{r}", f"The {topic} limit is {value} per minute (round {r}).")),
             session=f"r{r}a"),
        dana("Yes. " + block(fact(f"{topic} limit round {r}",
                                  f"The {topic} limit is {value} per minute for round {r}.")),
             session=f"r{r}b"),
        dana("Right. " + block(fact(f"Limit of {topic} r{r}", f"{topic} limit: {value} per minute (round {r}).")),
             session=f"r{r}c"),
        dana("Decided. " + block({"type": "decision", "title": f"Own the {topic} in round {r}",
                                  "content": f"We decided Dana owns the {topic} from round {r}."}), session=f"r{r}c"),
        erin("Borealis too. " + block(fact(f"{topic} limit r{r}",
                                           f"The {topic} limit is {value} per minute (round {r}).")),
             session=f"r{r}e"),
    ]


def consolidation_rounds(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    from assets.run import run_consolidation
    from pipelines.snapshot import SnapshotError, load_snapshot
    from pipelines.warehouse import Warehouse

    rng = random.Random(f"consolidation:{args.seed}")
    crash = make_settings(workdir / "crash", embedder=args.embedder)
    control = make_settings(workdir / "control", embedder=args.embedder)
    first = batch(-1, rng)
    for s in (crash, control):
        ingest(s, first, name="round-first.jsonl")
    started = time.monotonic()
    child = start_child_run(crash)
    out, err = child.communicate(timeout=900)
    typical_s = time.monotonic() - started
    assert child.returncode == 0 and child_summary(out)["status"] == "success", err[-2000:]
    assert run_consolidation(control, instance="ephemeral")["status"] == "success"
    say(f"first consolidation run (child process) took {typical_s:.1f} s")

    rounds = []
    failures: list[str] = []
    for r in range(args.consolidation_rounds):
        rows = batch(r, rng)
        for s in (crash, control):
            ingest(s, rows, name=f"round-{r}.jsonl")
        before = snapshot_state(crash)
        by_hook = r % 2 == 0
        row: dict[str, Any] = {"round": r}
        marker = workdir / f"reached-{r}"
        if by_hook:
            point = rng.choice(HOOK_POINTS)
            row["kill_at"] = f"hook {point}"
            child = start_child_run(crash, LOCI_TEST_HOOK=f"{point}=sleep:300", LOCI_TEST_HOOK_MARKER=str(marker))
            deadline = time.monotonic() + 900
            while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        else:
            delay = rng.uniform(0.2, 1.0) * typical_s
            row["kill_at"] = f"{delay:.2f} s"
            child = start_child_run(crash)
            deadline = time.monotonic() + delay
            while child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        finished_first = child.poll() is not None
        if not finished_first:
            os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=60)
        row["killed"] = child.returncode == -signal.SIGKILL
        row["finished_before_kill"] = finished_first

        after = snapshot_state(crash)
        try:
            current = load_snapshot(crash.snapshots_path)  # CURRENT always loads and verifies
            row["current_loads"] = True
        except SnapshotError as exc:
            current, row["current_loads"] = None, False
            failures.append(f"round {r}: CURRENT does not load after the kill: {exc}")
        row["snapshot"] = ("unchanged" if after == before else
                           "new complete" if current is not None and after["current"] != before["current"] else
                           "CHANGED")
        if row["snapshot"] == "CHANGED":
            failures.append(f"round {r}: published snapshot changed in place")
        try:
            with Warehouse(crash.warehouse_path, read_only=True) as wh:
                row["warehouse_items"] = len(wh.active_items())
        except Exception as exc:  # noqa: BLE001 - any failure to open is what we report
            failures.append(f"round {r}: warehouse does not open after the kill: {exc}")

        recovery = run_consolidation(crash, instance="ephemeral")
        reference = run_consolidation(control, instance="ephemeral")
        row.update({"recovery": recovery["status"], "checks": recovery.get("checks", {}),
                    "recovery_published": recovery.get("snapshot_published"), "control": reference["status"]})
        if recovery["status"] != "success" or set(recovery.get("checks", {}).values()) != {"passed"}:
            failures.append(f"round {r}: next run {recovery['status']} checks {recovery.get('checks')}: "
                            f"{recovery.get('error', '')}")
        rounds.append(row)
        say(f"consolidation round {r}: kill at {row['kill_at']}, killed={row['killed']}, snapshot "
            f"{row['snapshot']}, next run {recovery['status']}")

    shape = lambda items: sorted((i.id, i.tier, i.type, i.content_hash, i.superseded_by) for i in items)  # noqa: E731
    equal = shape(active_items(crash)) == shape(active_items(control))
    if not equal:
        failures.append("final active items differ from the never-interrupted control")
    with Warehouse(crash.warehouse_path, read_only=True) as wh:
        statuses = [run["status"] for run in wh.runs()]
    return {"typical_run_s": round(typical_s, 1), "rounds": rounds, "final_equals_control": equal,
            "run_statuses": {s: statuses.count(s) for s in sorted(set(statuses))}, "failures": failures}


# -- report -------------------------------------------------------------------------------------


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    out: dict[str, Any] = {"bench": "durability", "argv": driver.argv_record(args), "machine": machine_info()}
    started = time.monotonic()
    if args.service_rounds:
        out["service"] = service_rounds(args, workdir, say)
    if args.consolidation_rounds:
        out["consolidation"] = consolidation_rounds(args, workdir, say)
    out["duration_s"] = round(time.monotonic() - started, 1)
    out["failures"] = [*out.get("service", {}).get("failures", []), *out.get("consolidation", {}).get("failures", [])]
    return out


def _print(out: dict[str, Any]) -> None:
    console = driver.console()
    if "service" in out:
        svc = out["service"]
        cols = ("round", "kill_after_s", "acked", "unanswered", "unanswered_landed", "dropped_before_kill", "missing",
                "duplicated", "checked_acks", "not_read", "recalled_sample", "not_recalled", "ready_after_restart_s")
        console.print(driver.table("Service SIGKILL rounds (acks checked after each restart)",
                                   [c.replace("_", " ") for c in cols],
                                   [[str(row.get(c, "-")) for c in cols] for row in svc["rounds"]]))
        console.print(f"final: {json.dumps(svc['final'])}")
    if "consolidation" in out:
        con = out["consolidation"]
        cols = ("round", "kill_at", "killed", "finished_before_kill", "current_loads", "snapshot", "recovery",
                "recovery_published")
        console.print(driver.table(f"Consolidation SIGKILL rounds (uninterrupted run {con['typical_run_s']} s)",
                                   [c.replace("_", " ") for c in cols],
                                   [[str(row.get(c, "-")) for c in cols] for row in con["rounds"]],
                                   left=("kill at", "snapshot", "recovery")))
        console.print(f"final equals control: {con['final_equals_control']}; runs: {con['run_statuses']}")
    console.print(f"failures: {out['failures'] or 'none'}  ({out['duration_s']} s)")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, _print, passed=lambda out: not out["failures"])


if __name__ == "__main__":
    raise SystemExit(main())
