"""Mixed load against one real service process with a 10k-item snapshot.

    python -m bench.load --items 10000 --duration 60 --concurrency 4 --json out.json
    python -m bench.load --quick            # smoke: 1k items, 10 s, hash embedder

1. `--items` synthetic items (`synthetic.py`: many users/projects, realistic lengths and
   tags) embedded with `--embedder` (MiniLM by default; vectors cached on disk) and
   published with `pipelines.snapshot.build_snapshot`;
2. the service (`online.server.serve`: uvicorn, one process) in a subprocess on 127.0.0.1
   over that snapshot;
3. `--concurrency` clients (httpx, one thread each) for `--duration` seconds sending a mix
   of POST /v1/recall (distinct questions, real identities), POST /v1/turns (user and
   assistant turns, some with proposal blocks) and POST /v1/tools (memory.search,
   memory.write, memory.read of ids written earlier);
4. the service's RSS sampled every `--rss-every` seconds.

Reports throughput, p50/p95/p99 per request kind and overall, errors (transport errors and
non-2xx answers), latency in the first and last tenth of the run (the delta of fresh writes
grows during the run), RSS start/end/max and the service's /v1/stats at the end. Targets:
zero errors and recall p99 under 100 ms at 10k items. Clients share the 2 cores with the
service, so the numbers include client overhead; the load average is recorded.
"""

from __future__ import annotations

import argparse
import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench import driver
from bench.harness import ServiceProcess, ident
from bench.metrics import machine_info, percentiles
from bench.synthetic import cached_item_vectors, synthetic_items, synthetic_queries, synthetic_turns
from pipelines.embedders import make_embedder
from pipelines.records import Identity
from pipelines.settings import Settings
from pipelines.snapshot import build_snapshot

TARGET_RECALL_P99_MS = 100.0
# Request mix (weights): reads dominate a chat loop, every turn is a write.
MIX = {"recall": 45, "turn": 25, "memory.search": 12, "memory.write": 10, "memory.read": 8}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("load", __doc__, quick="smoke run: 1k items, 10 s, hash embedder")
    p.add_argument("--items", type=int, default=None, help="snapshot size (default 10000; --quick 1000)")
    p.add_argument("--duration", type=float, default=None, help="seconds of load (default 60; --quick 10)")
    p.add_argument("--concurrency", type=int, default=4, help="client threads (default 4)")
    p.add_argument("--embedder", choices=["minilm", "hash"], default=None,
                   help="embedder of snapshot and service (default minilm; --quick hash)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rss-every", type=float, default=0.5, help="RSS sampling period in seconds")
    args = p.parse_args(argv)
    args.items = args.items if args.items is not None else (1000 if args.quick else 10_000)
    args.duration = args.duration if args.duration is not None else (10.0 if args.quick else 60.0)
    args.embedder = args.embedder or ("hash" if args.quick else "minilm")
    if args.items < 1 or args.duration <= 0 or args.concurrency < 1:
        p.error("--items, --duration and --concurrency must be positive")
    return args


# -- the load ---------------------------------------------------------------------------------


class Client(threading.Thread):
    """One client: draws a request kind from MIX, sends it, records latency and outcome."""

    def __init__(self, n: int, url: str, args: argparse.Namespace, queries, turns, deadline: float,
                 written: list[tuple[Any, str]], lock: threading.Lock):
        super().__init__(name=f"client-{n}", daemon=True)
        self.rng = random.Random(args.seed * 1000 + n)
        self.url, self.queries, self.turns, self.deadline = url, queries, turns, deadline
        self.written, self.lock = written, lock
        self.samples: list[tuple[float, str, float, int]] = []  # (t, kind, ms, status or -1)
        self.errors: Counter = Counter()
        self.error_examples: list[str] = []

    def run(self) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        with httpx.Client(base_url=self.url, timeout=30.0) as client:
            while time.monotonic() < self.deadline:
                kind = self.rng.choices(kinds, weights)[0]
                path, body, who = self.request(kind)
                started = time.perf_counter()
                try:
                    resp = client.post(path, json=body)
                    status = resp.status_code
                except httpx.TransportError as exc:
                    status, resp = -1, None
                    self.note(kind, f"{type(exc).__name__}: {exc}")
                ms = 1000 * (time.perf_counter() - started)
                self.samples.append((time.monotonic(), kind, ms, status))
                if resp is not None and status // 100 != 2:
                    self.note(kind, f"{status}: {resp.text[:200]}")
                elif resp is not None and kind == "memory.write":
                    with self.lock:
                        self.written.append((who, resp.json()["result"]["item_id"]))

    def note(self, kind: str, what: str) -> None:
        self.errors[kind] += 1
        if len(self.error_examples) < 5:
            self.error_examples.append(f"{kind}: {what}")

    def request(self, kind: str) -> tuple[str, dict[str, Any], Any]:
        query, who = self.rng.choice(self.queries)
        if kind == "recall":
            return "/v1/recall", {"identity": ident(who), "query": query}, who
        if kind == "turn":
            row = self.rng.choice(self.turns)
            who = Identity(user_id=row["user_id"], project_id=row["project_id"], session_id=row["session_id"])
            return "/v1/turns", {"identity": ident(who), "role": row["role"], "text": row["text"],
                                 "turn_id": f"load-{uuid.uuid4().hex}"}, who
        if kind == "memory.search":
            return "/v1/tools", {"action": "memory.search", "identity": ident(who), "args": {"query": query}}, who
        if kind == "memory.write":
            return "/v1/tools", {"action": "memory.write", "identity": ident(who), "args": {"item": {
                "type": "fact", "title": f"Load note {uuid.uuid4().hex[:8]}",
                "content": f"Noted while answering: {query}", "confidence": 0.8}}}, who
        with self.lock:
            mine = [i for w, i in self.written[-200:] if w == who]
        ids = mine[-5:] or [f"mem_{uuid.uuid4().hex[:20]}"]
        return "/v1/tools", {"action": "memory.read", "identity": ident(who), "args": {"ids": ids}}, who


def sample_rss(service: ServiceProcess, every_s: float, stop: threading.Event, out: list) -> None:
    t0 = time.monotonic()
    while not stop.is_set():
        rss = service.rss_kb()
        if rss is not None:
            out.append((round(time.monotonic() - t0, 2), rss))
        stop.wait(every_s)


def summarise(samples: list[tuple[float, str, float, int]], t0: float, duration: float) -> dict[str, Any]:
    by_kind: dict[str, list[float]] = defaultdict(list)
    errors: Counter = Counter()
    for _, kind, ms, status in samples:
        by_kind[kind].append(ms)
        if status // 100 != 2:
            errors[kind] += 1
    out = {kind: {**percentiles(v), "rps": round(len(v) / duration, 1), "errors": errors[kind]}
           for kind, v in sorted(by_kind.items())}
    every = [ms for _, _, ms, _ in samples]
    out["all"] = {**percentiles(every), "rps": round(len(every) / duration, 1), "errors": sum(errors.values())}
    tenth = duration / 10
    first = [ms for t, k, ms, _ in samples if k == "recall" and t - t0 <= tenth]
    last = [ms for t, k, ms, _ in samples if k == "recall" and t - t0 >= duration - tenth]
    out["recall_first_tenth"] = percentiles(first)
    out["recall_last_tenth"] = percentiles(last)
    return out


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    settings = Settings(embedder=args.embedder, data_dir=str(workdir / "data"))
    embedder = make_embedder(settings)
    users, projects = 50, 10
    say(f"building {args.items} synthetic items with {embedder.name} ...")
    started = time.monotonic()
    items = synthetic_items(args.items, seed=args.seed, users=users, projects=projects)
    vectors = cached_item_vectors(args.items, embedder, seed=args.seed, users=users, projects=projects,
                                  progress=say)
    manifest = build_snapshot(settings.snapshots_path, items, vectors, embedder_name=embedder.name,
                              dim=int(vectors.shape[1]), watermark=0)
    build_s = time.monotonic() - started
    queries = synthetic_queries(5000, seed=args.seed, users=users, projects=projects)
    turns = list(synthetic_turns(2000, seed=args.seed, users=users, projects=projects))

    say(f"starting the service on {manifest.count} items ({manifest.index_kind}) ...")
    started = time.monotonic()
    service = ServiceProcess(settings, ready_timeout_s=600).start()
    ready_s = time.monotonic() - started
    rss: list[tuple[float, int]] = []
    stop = threading.Event()
    try:
        with httpx.Client(base_url=service.url, timeout=60) as warm:  # first requests build caches
            for q, who in queries[:5]:
                warm.post("/v1/recall", json={"identity": ident(who), "query": q}).raise_for_status()
        sampler = threading.Thread(target=sample_rss, args=(service, args.rss_every, stop, rss), daemon=True)
        sampler.start()
        say(f"load: {args.concurrency} clients for {args.duration:g} s ...")
        written: list = []
        lock = threading.Lock()
        t0 = time.monotonic()
        clients = [Client(n, service.url, args, queries, turns, t0 + args.duration, written, lock)
                   for n in range(args.concurrency)]
        for c in clients:
            c.start()
        for c in clients:
            c.join(args.duration + 120)
        elapsed = time.monotonic() - t0
        stop.set()
        sampler.join(5)
        stats = httpx.get(f"{service.url}/v1/stats", timeout=30).json()
        alive = service.proc is not None and service.proc.poll() is None
    finally:
        stop.set()
        service.stop()

    samples = [s for c in clients for s in c.samples]
    rss_kb = [v for _, v in rss]
    latency = summarise(samples, t0, elapsed)
    out: dict[str, Any] = {
        "bench": "load",
        "argv": driver.argv_record(args),
        "machine": machine_info(),
        "snapshot": {"items": manifest.count, "index_kind": manifest.index_kind, "embedder": embedder.name,
                     "build_s": round(build_s, 1)},
        "service_ready_s": round(ready_s, 2),
        "duration_s": round(elapsed, 2),
        "requests": len(samples),
        "latency_ms": latency,
        "errors": sum(sum(c.errors.values()) for c in clients),
        "error_examples": [e for c in clients for e in c.error_examples][:10],
        "rss_mb": {
            "start": round(rss_kb[0] / 1024, 1) if rss_kb else None,
            "end": round(rss_kb[-1] / 1024, 1) if rss_kb else None,
            "max": round(max(rss_kb) / 1024, 1) if rss_kb else None,
            "samples": len(rss_kb),
            "series": [(t, round(v / 1024, 1)) for t, v in rss[:: max(1, len(rss) // 60)]],
        },
        "service_alive_at_end": alive,
        "service_stats_at_end": {k: stats.get(k) for k in ("snapshot_version", "snapshot_items", "delta_items",
                                                             "last_seq", "problems")},
    }
    recall = latency.get("recall", {})
    out["targets"] = {
        "zero_errors": out["errors"] == 0,
        "recall_p99_under_100ms": recall.get("p99") is not None and recall["p99"] < TARGET_RECALL_P99_MS,
    }
    return out


def _print(out: dict[str, Any]) -> None:
    snap = out["snapshot"]
    console = driver.console()
    console.print(driver.table(
        f"Load: {snap['items']} items ({snap['index_kind']}, {snap['embedder']}), "
        f"{out['argv']['concurrency']} clients, {out['duration_s']} s",
        ("request", "n", "rps", "p50 ms", "p95 ms", "p99 ms", "max ms", "errors"),
        [(kind, row["n"], f"{row['rps']:g}", row["p50"], row["p95"], row["p99"], row["max"], row["errors"])
         for kind, row in out["latency_ms"].items() if "rps" in row]))
    first, last = out["latency_ms"]["recall_first_tenth"], out["latency_ms"]["recall_last_tenth"]
    rss = out["rss_mb"]
    console.print(f"recall p50/p99 first tenth {driver.fmt(first['p50'])}/{driver.fmt(first['p99'])} ms, last tenth "
                  f"{driver.fmt(last['p50'])}/{driver.fmt(last['p99'])} ms")
    console.print(f"RSS MB start {rss['start']} end {rss['end']} max {rss['max']}; delta items at end "
                  f"{out['service_stats_at_end']['delta_items']}; errors {out['errors']}")
    for example in out["error_examples"]:
        console.print(f"  error: {example}")
    console.print(f"targets: {out['targets']}  (load average {out['machine']['loadavg_1_5_15']})")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, _print)


if __name__ == "__main__":
    raise SystemExit(main())
