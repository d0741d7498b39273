"""Scale-out: recall throughput with 1 and 3 service replicas (one PostgreSQL inbox, one
snapshot folder), and what to expect per node.

    loci bench scaleout                       # 10k items, MiniLM, 20 s per replica count
    loci bench scaleout --quick               # 1k items, hash embedder, 6 s per count
    loci bench scaleout --inbox-url postgresql://...   # an existing server (else a local one)

1. `--items` synthetic items embedded and published once to the shared snapshot folder;
2. for each replica count (`--replicas`, default 1 and 3): that many `loci serve` processes
   (bench/replicas.py) on 127.0.0.1, each with a data folder of its own, all on one
   PostgreSQL inbox (a throwaway local server from the Debian binaries unless
   `--inbox-url` is given);
3. `--concurrency` client threads send POST /v1/recall (distinct questions, real
   identities) round-robin over the replicas for `--duration` seconds.

Reported per replica count: recalls/s, p50/p95/p99, errors, and the CPU seconds the replica
processes used (from /proc), hence recalls per CPU-second: the per-core number that does
not depend on how many cores this machine has. Read honestly: every replica AND the client
threads share this machine's cores (2 here), so 3 replicas cannot serve more than those
cores allow; what they show here is that spreading adds no errors and little overhead. The
expected throughput of a node with C cores running C replicas is C x recalls per
CPU-second (docs/deploy.md).
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench import driver
from bench.harness import cpu_seconds, ident
from bench.metrics import machine_info, percentiles
from bench.replicas import ReplicaSet
from bench.synthetic import cached_item_vectors, synthetic_items, synthetic_queries
from pipelines.embedders import make_embedder
from pipelines.settings import Settings
from pipelines.snapshot import build_snapshot

USERS, PROJECTS = 50, 10

def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("scaleout", __doc__, quick="smoke run: 1k items, hash embedder, 6 s per replica count")
    p.add_argument("--items", type=int, default=None, help="snapshot size (default 10000; --quick 1000)")
    p.add_argument("--duration", type=float, default=None, help="seconds of load per replica count (default 20)")
    p.add_argument("--concurrency", type=int, default=6, help="client threads (default 6)")
    p.add_argument("--replicas", type=int, nargs="+", default=[1, 3], help="replica counts to measure (default 1 3)")
    p.add_argument("--embedder", choices=["minilm", "hash"], default=None, help="default minilm; --quick hash")
    p.add_argument("--inbox-url", default=None, help="postgresql://... (default: a throwaway local server)")
    p.add_argument("--shards", type=int, nargs="+", default=[1, 4], help="shard counts to consolidate (default 1 4)")
    p.add_argument("--shard-turns", type=int, default=None,
                   help="turns consolidated per shard layout (default 4000; --quick 600), over 32 orgs")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.shard_turns = args.shard_turns if args.shard_turns is not None else (600 if args.quick else 4000)
    args.items = args.items if args.items is not None else (1000 if args.quick else 10_000)
    args.duration = args.duration if args.duration is not None else (6.0 if args.quick else 20.0)
    args.embedder = args.embedder or ("hash" if args.quick else "minilm")
    if args.items < 1 or args.duration <= 0 or args.concurrency < 1 or min(args.replicas) < 1:
        p.error("--items, --duration, --concurrency and --replicas must be positive")
    return args


def recall_load(urls: list[str], queries: list[tuple[str, Any]], concurrency: int, duration: float,
                seed: int) -> tuple[list[float], list[str], float]:
    """`concurrency` threads, client n sending to urls[n % len(urls)]: (latencies ms, errors, elapsed s)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + duration

    def client(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        mine: list[float] = []
        with httpx.Client(base_url=urls[n % len(urls)], timeout=60.0) as http:
            while time.monotonic() < deadline:
                query, who = rng.choice(queries)
                started = time.perf_counter()
                try:
                    resp = http.post("/v1/recall", json={"identity": ident(who), "query": query})
                    failed = None if resp.status_code == 200 else f"{resp.status_code}: {resp.text[:200]}"
                except httpx.TransportError as exc:
                    failed = f"{type(exc).__name__}: {exc}"
                mine.append(1000 * (time.perf_counter() - started))
                if failed:
                    with lock:
                        errors.append(failed)
        with lock:
            latencies.extend(mine)

    return latencies, errors, run_threads(client, concurrency, duration + 120)


def run_threads(target, n: int, timeout_s: float) -> float:
    """`target(i)` on n threads at once; the seconds until all ended (each waited up to timeout_s)."""
    t0 = time.monotonic()
    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout_s)
    return time.monotonic() - t0


def inbox_appends(inbox_url: str, writers: int, duration: float) -> dict[str, Any]:
    """`writers` threads appending one event per transaction for `duration` seconds: the
    PostgreSQL inbox's append rate (appends serialise on the append lock, so this is about
    one commit flush per append; batching several events per append multiplies it)."""
    from pipelines.inbox import open_inbox
    from pipelines.records import Event, Identity

    latencies: list[float] = []
    lock = threading.Lock()
    deadline = time.monotonic() + duration
    with open_inbox(inbox_url) as inbox:
        def writer(n: int) -> None:
            mine, i = [], 0
            while time.monotonic() < deadline:
                i += 1
                started = time.perf_counter()
                inbox.append([Event(event_id=f"bench-{n}-{i}-{time.time_ns()}", kind="usage",
                                    identity=Identity(user_id=f"u{n}"), payload={"item_ids": [], "n": i})])
                mine.append(1000 * (time.perf_counter() - started))
            with lock:
                latencies.extend(mine)

        elapsed = run_threads(writer, writers, duration + 60)
    return {"writers": writers, "appends": len(latencies), "appends_per_s": round(len(latencies) / elapsed, 1),
            "latency_ms": percentiles(latencies)}


def measure_replicas(args: argparse.Namespace, base: Settings, workdir: Path, queries, say) -> list[dict[str, Any]]:
    rows = []
    for n in args.replicas:
        say(f"{n} replica(s): starting ...")
        with ReplicaSet(base, n, workdir / f"replicas-{n}", ready_timeout_s=600) as replicas:
            for url in replicas.urls:  # first requests load the model and build caches
                with httpx.Client(base_url=url, timeout=120) as warm:
                    for q, who in queries[:5]:
                        warm.post("/v1/recall", json={"identity": ident(who), "query": q}).raise_for_status()
            pids = [r.pid for r in replicas.replicas]
            cpu_before = [cpu_seconds(p) or 0.0 for p in pids]
            say(f"{n} replica(s): {args.concurrency} clients for {args.duration:g} s ...")
            latencies, errors, elapsed = recall_load(replicas.urls, queries, args.concurrency, args.duration,
                                                     args.seed)
            cpu = sum((cpu_seconds(p) or 0.0) - b for p, b in zip(pids, cpu_before))
            load = os.getloadavg()
        rows.append({
            "replicas": n,
            "recalls": len(latencies),
            "recalls_per_s": round(len(latencies) / elapsed, 1),
            "latency_ms": percentiles(latencies),
            "errors": len(errors),
            "error_examples": errors[:5],
            "replica_cpu_s": round(cpu, 2),
            "recalls_per_cpu_s": round(len(latencies) / cpu, 1) if cpu > 0 else None,
            "elapsed_s": round(elapsed, 2),
            "loadavg_1m": round(load[0], 2),
        })
    return rows


ORGS = 32


def shard_turn_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` recent synthetic turns (bench.synthetic) spread over ORGS tenants by user."""
    from datetime import datetime, timedelta, timezone

    from bench.synthetic import synthetic_turns

    start = datetime.now(timezone.utc) - timedelta(days=1)
    rows = list(synthetic_turns(n, seed=seed, users=128, start=start, session_gap=timedelta(seconds=20)))
    users = sorted({row["user_id"] for row in rows})
    org_of = {user: f"org{i % ORGS}" for i, user in enumerate(users)}
    for row in rows:
        row["org_id"] = org_of[row["user_id"]]
    return rows


def measure_shards(args: argparse.Namespace, inbox_url_for, workdir: Path, say) -> list[dict[str, Any]]:
    """Consolidation wall time of the same turns with each shard count (hash embedder,
    extractive merger: this measures the pipeline, not MiniLM or Ollama)."""
    import json

    from assets.run import consolidate_shards, run_consolidation
    from pipelines.inbox import open_inbox
    from pipelines.ingest import ingest_chat_jsonl
    from pipelines.policy import Policy
    from pipelines.shards import shard_of

    rows = shard_turn_rows(args.shard_turns, args.seed)
    out = []
    for n in args.shards:
        folder = workdir / f"shards-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        settings = Settings(data_dir=str(folder / "data"), embedder="hash", merger="extractive", snapshots_keep=1,
                            shards=n, inbox_url=inbox_url_for(f"shards{n}"))
        path = folder / "turns.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        say(f"{n} shard(s): ingesting {len(rows)} turns ...")
        with open_inbox(settings) as inbox:
            ingest_chat_jsonl(path, inbox, Policy(settings))
        say(f"{n} shard(s): consolidating ...")
        started = time.monotonic()
        summaries = consolidate_shards(settings) if n > 1 else {0: run_consolidation(settings, instance="ephemeral")}
        wall = time.monotonic() - started
        turns_per_shard = [sum(1 for r in rows if shard_of(r["org_id"], n) == k) for k in range(n)]
        per_shard = [float(summaries[k].get("duration_s") or 0.0) for k in range(n)]
        out.append({
            "shards": n,
            "turns": len(rows),
            "wall_s": round(wall, 2),
            "per_shard_s": [round(x, 2) for x in per_shard],
            "turns_per_shard": turns_per_shard,
            "status": sorted({str(s.get("status")) for s in summaries.values()}),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        })
    return out


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    from bench.pg_local import LocalPostgres

    server = None
    inbox_url = args.inbox_url
    if inbox_url is None:
        say("starting a throwaway PostgreSQL server (Debian binaries) ...")
        server = LocalPostgres().start()
    try:
        if server is not None:
            inbox_url = server.fresh_database("scaleout")
        base = Settings(embedder=args.embedder, data_dir=str(workdir / "data"), inbox_url=inbox_url,
                        snapshots_dir=str(workdir / "shared" / "snapshots"))
        embedder = make_embedder(base)
        say(f"building {args.items} synthetic items with {embedder.name} ...")
        items = synthetic_items(args.items, seed=args.seed, users=USERS, projects=PROJECTS)
        vectors = cached_item_vectors(args.items, embedder, seed=args.seed, users=USERS, projects=PROJECTS,
                                      progress=say)
        manifest = build_snapshot(base.snapshots_path, items, vectors, embedder_name=embedder.name,
                                  dim=int(vectors.shape[1]), watermark=0)
        queries = synthetic_queries(5000, seed=args.seed, users=USERS, projects=PROJECTS)
        say("inbox appends (1 and 8 writers) ...")
        appends = [inbox_appends(inbox_url, w, min(args.duration, 5.0)) for w in (1, 8)]
        replicas = measure_replicas(args, base, workdir, queries, say)
        fresh = server.fresh_database if server is not None else (lambda _name: inbox_url)
        shards = measure_shards(args, fresh, workdir, say) if args.shards else []
    finally:
        if server is not None:
            server.stop()
    machine = machine_info()
    one = next((r for r in replicas if r["replicas"] == 1), replicas[0])
    per_cpu = one["recalls_per_cpu_s"]
    return {
        "bench": "scaleout",
        "argv": driver.argv_record(args),
        "machine": machine,
        "inbox": "postgresql (local throwaway server)" if server is not None else "postgresql (--inbox-url)",
        "snapshot": {"items": manifest.count, "index_kind": manifest.index_kind, "embedder": embedder.name},
        "replicas": replicas,
        "inbox_appends": appends,
        "shards": shards,
        "note": (f"all replicas, the PostgreSQL server and the {args.concurrency} client threads share this "
                 f"machine's {machine['cpu_count']} cores: more replicas cannot add cores here"),
        "per_node": {
            "recalls_per_cpu_s": per_cpu,
            "formula": "recalls/s per node ~= cores x recalls per CPU-second (one replica per core)",
            "expected_recalls_per_s": {f"{c} cores": round(c * per_cpu) if per_cpu else None for c in (2, 4, 8, 16)},
        },
        "errors": sum(r["errors"] for r in replicas),
        "failed_shard_runs": sum(1 for row in shards for st in row["status"] if st != "success"),
    }


def show(out: dict[str, Any]) -> None:
    console = driver.console()
    snap = out["snapshot"]
    console.print(driver.table(
        f"Recall with N replicas ({snap['items']} items, {snap['index_kind']}, {snap['embedder']}; {out['inbox']})",
        ("replicas", "recalls/s", "p50 ms", "p95 ms", "p99 ms", "errors", "replica CPU s", "recalls/CPU-s",
         "load 1m"),
        [(r["replicas"], r["recalls_per_s"], r["latency_ms"]["p50"], r["latency_ms"]["p95"], r["latency_ms"]["p99"],
          r["errors"], r["replica_cpu_s"], r["recalls_per_cpu_s"], r["loadavg_1m"]) for r in out["replicas"]]))
    console.print(driver.table(
        "PostgreSQL inbox: one event per append (one commit each)",
        ("writers", "appends", "appends/s", "p50 ms", "p99 ms"),
        [(a["writers"], a["appends"], a["appends_per_s"], a["latency_ms"]["p50"], a["latency_ms"]["p99"])
         for a in out["inbox_appends"]]))
    if out["shards"]:
        console.print(driver.table(
            f"Consolidation of {out['shards'][0]['turns']} turns over {ORGS} tenants (hash embedder, extractive "
            "merger; shards run in parallel processes)",
            ("shards", "wall s", "per-shard s (each)", "turns per shard", "status", "load 1m"),
            [(r["shards"], r["wall_s"], " ".join(f"{x:g}" for x in r["per_shard_s"]),
              " ".join(map(str, r["turns_per_shard"])), ",".join(r["status"]), r["loadavg_1m"])
             for r in out["shards"]], left=("per-shard s (each)", "turns per shard", "status")))
    console.print(f"note: {out['note']}")
    node = out["per_node"]
    console.print(f"per node: {node['formula']}; measured {node['recalls_per_cpu_s']} recalls per CPU-second -> "
                  + ", ".join(f"{k}: ~{v}/s" for k, v in node["expected_recalls_per_s"].items()))
    for r in out["replicas"]:
        for example in r["error_examples"]:
            console.print(f"  error ({r['replicas']} replicas): {example}")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, show,
                      passed=lambda out: out["errors"] == 0 and out["failed_shard_runs"] == 0)


if __name__ == "__main__":
    raise SystemExit(main())

