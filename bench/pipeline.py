"""Consolidation throughput, incremental cost, HDBSCAN timing and storage footprint.

    python -m bench.pipeline --turns 1000,10000,100000 --json out.json

1. **End-to-end consolidation** for 1k / 10k / 100k synthetic chat turns spread over 100
   users (`synthetic.synthetic_turns`; ~15% of assistant turns carry a memory proposal):
   the turns are ingested with `pipelines.ingest.ingest_chat_jsonl` (the `loci ingest`
   path, timed apart), then `assets.run.run_consolidation` runs the Dagster job in process.
   Per-asset time comes from the run's step starts (progress callback timestamps; the
   in-process executor runs steps one after another), plus turns/second.
2. **Incremental run**: 1k new turns on top of the largest store, consolidated again; its
   cost should follow the new turns, not the store (compared with 1k turns on an empty store).
3. **HDBSCAN** (`pipelines.clustering.cluster_vectors`) on 1k / 10k / 50k STM vectors of one
   partition (MiniLM vectors of synthetic items from the shared cache; target 10k <= 10 s).
4. **Footprint**: warehouse and inbox size on disk, per 100k turns.
5. **LoCoMo import** (`--locomo [FILE]`, the default with `--embedder minilm`): the
   conversations of a LoCoMo-format file landed with `pipelines.ingest.ingest_locomo` (the
   `loci ingest --format locomo` path), then the whole job, with each stage's seconds and
   share of the run: where a user's first `loci consolidate` spends its time.

The embedder for the throughput runs is `--embedder` (default `hash`: MiniLM on 2 cores
would spend the whole run embedding 100k turns; the output says which was used). The merger
is the extractive one (no LLM is assumed to be reachable; `--merger ollama` to use Granite).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from bench import driver
from bench.metrics import machine_info
from bench.synthetic import cached_item_vectors, default_cache_dir, synthetic_turns

TARGET_HDBSCAN_10K_S = 10.0
TARGET_LOCOMO_TURNS_PER_S = 150.0  # end-to-end consolidation of a LoCoMo import with MiniLM
TARGET_INCREMENTAL_RATIO = 2.0  # +1k turns on a 100k store vs 1k turns on an empty store
USERS = 100


class StepClock:
    """Per-stage seconds from `run_consolidation(progress=...)`: each stage reports one line
    when it completes, `<stage> <count> <unit> <seconds> s` (`assets.run.stage_line`, the
    step's own duration from Dagster). What the stages do not account for (Dagster's start-up
    and bookkeeping, the asset checks) is the rest of the wall time, `other`."""

    _LINE = re.compile(r"^([A-Za-z_][\w.]*)\s+.*?(\d+(?:\.\d+)?) s$")

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.ends: list[tuple[str, float]] = []
        self.seconds: dict[str, float] = {}
        self.messages: list[str] = []

    def __call__(self, msg: str) -> None:
        now = time.perf_counter()
        self.messages.append(msg)
        if (m := self._LINE.match(msg.strip())) and m.group(1) not in self.seconds:
            self.seconds[m.group(1)] = float(m.group(2))
            self.ends.append((m.group(1), now))

    def durations(self, wall_s: float | None = None) -> dict[str, float]:
        out = {step: round(secs, 3) for step, secs in self.seconds.items()}
        if wall_s is not None:
            out["other"] = round(max(0.0, wall_s - sum(self.seconds.values())), 3)
        return out


def stage_cpu(step_cpu_s: dict[str, float], total_cpu_s: float) -> dict[str, float]:
    """Per-stage CPU seconds from the run summary's `step_cpu_s` (every step, checks
    included): each stage's own, the asset checks together (`checks`), and what no step
    accounts for (`other`: Dagster's start-up and bookkeeping)."""
    from assets.run import STAGE_COUNTS

    out = {step: round(secs, 3) for step, secs in step_cpu_s.items() if step in STAGE_COUNTS}
    out["checks"] = round(sum(secs for step, secs in step_cpu_s.items() if step not in STAGE_COUNTS), 3)
    out["other"] = round(max(0.0, total_cpu_s - sum(step_cpu_s.values())), 3)
    return out


def _settings(data_dir: Path, args: argparse.Namespace):
    from pipelines.settings import Settings

    return Settings(data_dir=str(data_dir), embedder=args.embedder, merger=args.merger,
                    snapshots_keep=1,
                    **driver.vector_settings(getattr(args, "precision", None), getattr(args, "composed", None),
                                             getattr(args, "pooled", None)))


def write_turns(path: Path, n: int, seed: int) -> Path:
    """Turns of the last day or two (recent: the lifecycle's 30-day STM aging would archive
    old raw turns and shrink the store being measured)."""
    start = datetime.now(timezone.utc) - timedelta(days=2)
    with path.open("w", encoding="utf-8") as fh:
        for row in synthetic_turns(n, seed=seed, users=USERS, start=start, session_gap=timedelta(seconds=20)):
            fh.write(json.dumps(row) + "\n")
    return path


def ingest(settings, path: Path) -> tuple[dict[str, Any], float]:
    from pipelines.inbox import open_inbox
    from pipelines.ingest import ingest_chat_jsonl
    from pipelines.policy import Policy

    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open_inbox(settings) as inbox:
        report = ingest_chat_jsonl(path, inbox, Policy(settings))
    return report.as_dict(), time.perf_counter() - started


def consolidate(settings) -> dict[str, Any]:
    from assets.run import run_consolidation

    clock = StepClock()
    cpu0 = time.process_time()
    summary = run_consolidation(settings, progress=clock, instance="ephemeral")
    end = time.perf_counter()
    cpu_s = time.process_time() - cpu0
    if summary.get("status") != "success":
        raise RuntimeError(f"consolidation failed: {summary.get('error')}")
    steps = clock.durations(end - clock.t0)
    # CPU seconds of the whole process (every thread): far less sensitive than wall time
    # to the other work on a shared machine.
    return {"wall_s": round(end - clock.t0, 3), "cpu_s": round(cpu_s, 3), "steps_s": steps,
            "steps_cpu_s": stage_cpu(summary.get("step_cpu_s") or {}, cpu_s),
            "after_last_step_s": round(end - (clock.ends[-1][1] if clock.ends else clock.t0), 3),
            "summary": summary}


def file_bytes(path: Path) -> int:
    """A file's size plus its SQLite/DuckDB side files (-wal, .wal, -shm)."""
    total = 0
    for p in [path, *path.parent.glob(path.name + "*")]:
        if p.is_file() and (p == path or p.name[len(path.name):] in ("-wal", "-shm", ".wal")):
            total += p.stat().st_size
    return total


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def throughput_run(n: int, workdir: Path, args: argparse.Namespace, say) -> dict[str, Any]:
    data_dir = workdir / f"turns-{n}"
    settings = _settings(data_dir, args)
    data_dir.mkdir(parents=True, exist_ok=True)
    say(f"== {n} turns: generating")
    path = write_turns(workdir / f"turns-{n}.jsonl", n, args.seed)
    say(f"== {n} turns: ingesting")
    ing, t_ing = ingest(settings, path)
    say(f"== {n} turns: consolidating")
    run = consolidate(settings)
    out = {
        "turns": n,
        "ingest_s": round(t_ing, 3),
        "ingest_turns_per_s": round(n / t_ing, 1) if t_ing else None,
        "ingest": {k: v for k, v in ing.items() if k != "bad_rows"},
        "consolidate_s": run["wall_s"],
        "consolidate_cpu_s": run["cpu_s"],
        "consolidate_turns_per_s": round(n / run["wall_s"], 1) if run["wall_s"] else None,
        "steps_s": run["steps_s"],
        "summary": run["summary"],
        "warehouse_bytes": file_bytes(settings.warehouse_path),
        "inbox_bytes": file_bytes(settings.inbox_path),
        "snapshot_bytes": dir_bytes(settings.snapshots_path),
    }
    out["warehouse_bytes_per_100k_turns"] = round(out["warehouse_bytes"] * 100_000 / n)
    out["inbox_bytes_per_100k_turns"] = round(out["inbox_bytes"] * 100_000 / n)
    out["_settings"] = settings
    return out


def incremental_run(base_dir: Path, store_turns: int, new_turns: int, workdir: Path, args: argparse.Namespace,
                    say, *, label: str = "inc") -> dict[str, Any]:
    """`new_turns` turns on a fresh copy of the consolidated store in `base_dir` (the store
    itself is left as it is, so every round starts from the same state), consolidated again."""
    data_dir = workdir / label
    if data_dir.exists():
        shutil.rmtree(data_dir)
    shutil.copytree(base_dir, data_dir)
    settings = _settings(data_dir, args)
    say(f"== incremental ({label}): {new_turns} new turns on top of {store_turns}")
    path = write_turns(workdir / f"turns-inc-{new_turns}.jsonl", new_turns, args.seed + 1000)
    ing, t_ing = ingest(settings, path)
    run = consolidate(settings)
    out = {
        "store_turns": store_turns, "new_turns": new_turns, "ingest_s": round(t_ing, 3),
        "consolidate_s": run["wall_s"], "consolidate_cpu_s": run["cpu_s"], "steps_s": run["steps_s"],
        "summary": run["summary"], "warehouse_bytes": file_bytes(settings.warehouse_path),
        "loadavg": list(os.getloadavg()),
    }
    shutil.rmtree(data_dir, ignore_errors=True)
    return out


def incremental_rounds(base_dir: Path, store_turns: int, args: argparse.Namespace, workdir: Path, say,
                       empty_first: dict[str, Any] | None, *, warm: bool = True) -> dict[str, Any]:
    """`args.rounds` incremental runs, each next to a run of the same turns on an empty store
    (the machine's load moves between rounds; a ratio compares runs of one round). The
    medians are the result; every round is kept."""
    rounds = []
    if not warm:
        # Nothing consolidated in this process yet: one untimed run first, so the first
        # round's incremental run does not alone pay the imports and first-call costs.
        throughput_run(args.incremental, workdir / "warm-up", args, say)
        shutil.rmtree(workdir / "warm-up", ignore_errors=True)
    for r in range(args.rounds):
        inc = incremental_run(base_dir, store_turns, args.incremental, workdir, args, say, label=f"inc-{r}")
        if r == 0 and empty_first is not None:
            empty = empty_first
        else:
            empty = throughput_run(args.incremental, workdir / f"ref-{r}", args, say)
            empty.pop("_settings", None)
            shutil.rmtree(workdir / f"ref-{r}", ignore_errors=True)
        rounds.append({**inc, "empty_store_same_turns_s": empty["consolidate_s"],
                       "empty_store_cpu_s": empty.get("consolidate_cpu_s"),
                       "empty_store_steps_s": empty["steps_s"],
                       "ratio_vs_empty_store": round(inc["consolidate_s"] / empty["consolidate_s"], 2)
                       if empty["consolidate_s"] else None,
                       "cpu_ratio_vs_empty_store": round(inc["consolidate_cpu_s"] / empty["consolidate_cpu_s"], 2)
                       if empty.get("consolidate_cpu_s") else None})
    med = rounds[sorted(range(len(rounds)), key=lambda i: rounds[i]["consolidate_s"])[len(rounds) // 2]]
    ratios = sorted(r["ratio_vs_empty_store"] for r in rounds if r["ratio_vs_empty_store"] is not None)
    cpu_ratios = sorted(r["cpu_ratio_vs_empty_store"] for r in rounds if r["cpu_ratio_vs_empty_store"] is not None)
    return {**med, "rounds": rounds,
            "empty_store_same_turns_s": statistics.median(r["empty_store_same_turns_s"] for r in rounds),
            "ratio_vs_empty_store": statistics.median(ratios) if ratios else None,
            "cpu_ratio_vs_empty_store": statistics.median(cpu_ratios) if cpu_ratios else None,
            "target_ratio": TARGET_INCREMENTAL_RATIO}


def _landed_turns(data_dir: Path, args: argparse.Namespace) -> int:
    from pipelines.warehouse import Warehouse

    with Warehouse(_settings(data_dir, args).warehouse_path, read_only=True) as wh:
        return int(wh.query("SELECT count(*) FROM chat_turns")[0][0])


def locomo_run(path: Path, workdir: Path, args: argparse.Namespace, say) -> dict[str, Any]:
    """A LoCoMo-format import consolidated end to end, with the per-stage breakdown."""
    from pipelines.inbox import Inbox
    from pipelines.ingest import ingest_locomo
    from pipelines.policy import Policy

    settings = _settings(workdir / "locomo", args)
    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    say(f"== LoCoMo import {path}: ingesting")
    started = time.perf_counter()
    with Inbox(settings.inbox_path) as inbox:
        report = ingest_locomo(path, inbox, Policy(settings))
    t_ing = time.perf_counter() - started
    turns = int(report.as_dict().get("turns", 0))
    say(f"== LoCoMo import: consolidating {turns} turns with {args.embedder}")
    run = consolidate(settings)
    wall = run["wall_s"]
    return {
        "file": str(path), "turns": turns, "ingest_s": round(t_ing, 3),
        "consolidate_s": wall, "consolidate_turns_per_s": round(turns / wall, 1) if wall else None,
        # CPU seconds of the whole process: what to compare on a shared machine
        "consolidate_cpu_s": run["cpu_s"],
        "turns_per_cpu_s": round(turns / run["cpu_s"], 1) if run["cpu_s"] else None,
        "steps_s": run["steps_s"],
        "steps_share": {k: round(v / wall, 3) for k, v in run["steps_s"].items()} if wall else {},
        "steps_cpu_s": run["steps_cpu_s"],
        "after_last_step_s": run["after_last_step_s"],
        "target_turns_per_s": TARGET_LOCOMO_TURNS_PER_S,
        "summary": run["summary"],
    }


def hdbscan_timing(sizes: Sequence[int], args: argparse.Namespace, say) -> dict[str, Any]:
    from pipelines.clustering import cluster_vectors
    from pipelines.embedders import HashEmbedder, MiniLMEmbedder

    emb = (MiniLMEmbedder(cache_size=0, precision="float32")  # cached synthetic vectors stay valid
           if args.cluster_vectors == "minilm" else HashEmbedder(384))
    out: dict[str, Any] = {"vectors": f"{emb.name} embeddings of synthetic items (one partition)"}
    vecs_all = cached_item_vectors(max(sizes), emb, seed=args.seed, cache_dir=args.cache_dir, progress=say)
    for n in sizes:
        say(f"== HDBSCAN on {n} vectors")
        started = time.perf_counter()
        labels = cluster_vectors(vecs_all[:n], min_cluster_size=2)
        elapsed = time.perf_counter() - started
        clusters = int(labels.max() + 1) if len(labels) else 0
        out[str(n)] = {"seconds": round(elapsed, 3), "clusters": clusters,
                       "noise_fraction": round(float(np.mean(labels < 0)), 4)}
    if "10000" in out:
        out["target_10k_s"] = TARGET_HDBSCAN_10K_S
        out["target_met"] = out["10000"]["seconds"] <= TARGET_HDBSCAN_10K_S
    return out


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("pipeline", __doc__, quick="smoke run: 500,2000 turns, 200 incremental, HDBSCAN 1000,5000")
    p.add_argument("--turns", default=None,
                   help="turn counts for the synthetic end-to-end runs (default 1000,10000,100000; "
                        "none with --embedder minilm)")
    p.add_argument("--incremental", type=int, default=None,
                   help="new turns for the incremental run (default 1000; 0: skip)")
    p.add_argument("--rounds", type=int, default=1,
                   help="incremental rounds, each on a fresh copy of the store next to an empty-store run (median)")
    p.add_argument("--store", type=Path, default=None, metavar="DIR",
                   help="an already consolidated data dir to run the incremental rounds on (instead of the "
                        "largest --turns store; its size is read from the warehouse)")
    p.add_argument("--hdbscan", default=None, help="STM item counts to cluster (default 1000,10000,50000; '' to skip)")
    p.add_argument("--locomo", nargs="?", type=Path, const=Path(""), default=None, metavar="FILE",
                   help="also consolidate a LoCoMo-format import (default file: locomo_dev.json in "
                        "$LOCI_BENCH_DATA); the default run with --embedder minilm")
    p.add_argument("--embedder", default="hash", choices=("hash", "minilm"),
                   help="embedder for the consolidation runs (default hash: MiniLM is too slow for 100k on 2 cores)")
    p.add_argument("--data", type=Path, default=None, help="the LoCoMo-format file (implies --locomo)")
    driver.add_vector_options(p)
    p.add_argument("--cluster-vectors", default="minilm", choices=("minilm", "hash"),
                   help="vectors for the HDBSCAN timing (default MiniLM, cached)")
    p.add_argument("--merger", default="extractive", choices=("extractive", "ollama"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-dir", type=Path, default=None, help=f"embedding cache (default {default_cache_dir()})")
    args = p.parse_args(argv)
    # MiniLM on 100k synthetic turns would measure nothing but the model: with it, the
    # default is the LoCoMo import alone (each part can still be asked for).
    minilm_only = args.embedder == "minilm"
    if args.turns is None:
        args.turns = "" if minilm_only else "1000,10000,100000"
    if args.incremental is None:
        args.incremental = 0 if minilm_only else 1000
    if args.hdbscan is None:
        args.hdbscan = "" if minilm_only else "1000,10000,50000"
    if args.data is not None:
        args.locomo = args.data
    if args.locomo is None and minilm_only:
        args.locomo = Path("")
    if args.quick:
        args.turns, args.incremental, args.hdbscan = "500,2000", min(args.incremental, 200), "1000,5000"
    try:
        args.turns = [int(x) for x in str(args.turns).split(",") if x.strip()]
        args.hdbscan = [int(x) for x in str(args.hdbscan).split(",") if x.strip()]
    except ValueError:
        p.error("--turns and --hdbscan take comma-separated integers")
    if any(x < 1 for x in [*args.turns, *args.hdbscan]) or args.incremental < 0 or args.rounds < 1:
        p.error("sizes must be positive")
    return args


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmark": "pipeline", "machine": machine_info(), "runs": {}}
    if args.locomo is not None:
        path, _ = driver.locomo_data(args.locomo if str(args.locomo) else None)
        out["locomo"] = locomo_run(path, workdir, args, say)
    largest = None
    for n in sorted(args.turns):
        res = throughput_run(n, workdir, args, say)
        if largest is not None:
            largest.pop("_settings", None)
        largest = res
        out["runs"][str(n)] = res
    if args.incremental and (largest is not None or args.store is not None):
        if args.store is not None:
            base_dir, store_turns = args.store, _landed_turns(args.store, args)
        else:
            base_dir, store_turns = Path(largest["_settings"].data_dir), largest["turns"]
        small = out["runs"].get(str(args.incremental))
        inc = incremental_rounds(base_dir, store_turns, args, workdir, say, small, warm=bool(out["runs"]))
        if largest is not None:
            inc["full_store_run_s"] = largest["consolidate_s"]
        out["incremental"] = inc
    for res in out["runs"].values():
        res.pop("_settings", None)
    if args.hdbscan:
        out["hdbscan"] = hdbscan_timing(args.hdbscan, args, say)
    big = out["runs"].get(str(max(args.turns))) if args.turns else None
    if big:
        out["footprint"] = {
            "turns": big["turns"],
            "warehouse_mb_per_100k_turns": round(big["warehouse_bytes_per_100k_turns"] / 1e6, 1),
            "inbox_mb_per_100k_turns": round(big["inbox_bytes_per_100k_turns"] / 1e6, 1),
            "snapshot_mb": round(big["snapshot_bytes"] / 1e6, 1),
        }
    out["config"] = {"users": USERS, "embedder": args.embedder, "merger": args.merger, "seed": args.seed,
                     "minilm_precision": _settings(workdir, args).minilm_precision,
                     "message_context_composed": _settings(workdir, args).message_context_composed,
                     "message_context_pooled": _settings(workdir, args).message_context_pooled,
                     "note": ("hash embedder for throughput runs (MiniLM infeasible for 100k turns on 2 cores)"
                              if args.embedder == "hash" else "MiniLM embedder")}
    out["machine"]["loadavg_after"] = machine_info()["loadavg_1_5_15"]
    return out


def _print(out: dict[str, Any]) -> None:
    console = driver.console()
    if "locomo" in out:
        lo = out["locomo"]
        cpu = lo.get("steps_cpu_s", {})
        total_cpu = lo["consolidate_cpu_s"]
        per_1k = 1000.0 / lo["turns"] if lo["turns"] else 0.0
        rows = [(step, lo["steps_s"].get(step, 0.0), f"{100 * lo['steps_share'].get(step, 0):.1f}%",
                 cpu.get(step, 0.0), f"{100 * cpu.get(step, 0.0) / total_cpu:.1f}%" if total_cpu else "",
                 round(cpu.get(step, 0.0) * per_1k, 2))
                for step in dict.fromkeys([*lo["steps_s"], *cpu])]
        rows.append(("total", lo["consolidate_s"], "100%", total_cpu, "100%", round(total_cpu * per_1k, 2)))
        console.print(driver.table(
            f"LoCoMo import: {lo['turns']} turns, embedder {out['config']['embedder']} "
            f"({out['config']['minilm_precision']}): "
            f"{lo['consolidate_turns_per_s']} turns/s (target {lo['target_turns_per_s']:g}), "
            f"{lo['consolidate_cpu_s']:.1f} CPU s ({lo['turns_per_cpu_s']} turns per CPU s); "
            f"ingest {lo['ingest_s']:.1f}s",
            ("stage (other: Dagster start-up, checks)", "seconds", "share", "CPU s", "CPU share",
             "CPU s per 1k turns"), rows))
    steps = list(dict.fromkeys(s for r in [*out["runs"].values(), *out.get("incremental", {}).get("rounds", [])]
                               for s in r["steps_s"]))  # run order
    runs = list(out["runs"].values())
    if "incremental" in out:
        inc = out["incremental"]
        runs.append({**inc, "turns": f"+{inc['new_turns']} on {inc['store_turns']}"})
    rows = []
    for r in runs:
        cs = r["consolidate_s"]
        tps = r.get("consolidate_turns_per_s") or (round(r["new_turns"] / cs, 1) if "new_turns" in r else None)
        rows.append((str(r["turns"]), float(r["ingest_s"]), float(cs), str(tps),
                     *(float(r["steps_s"].get(s, 0)) for s in steps), r["warehouse_bytes"] / 1e6))
    title = f"Consolidation (embedder {out['config']['embedder']}, merger {out['config']['merger']})"
    if rows:
        console.print(driver.table(title, ("turns", "ingest s", "consolidate s", "turns/s", *steps, "warehouse MB"),
                                   rows))
    if "incremental" in out:
        inc = out["incremental"]
        rounds = inc["rounds"]
        console.print(driver.table(
            f"Incremental: +{inc['new_turns']} turns on a {inc['store_turns']}-turn store vs the same turns on an "
            f"empty store ({len(rounds)} rounds; target ratio <= {inc['target_ratio']:g})",
            ("round", "incremental s", "empty store s", "ratio", "CPU s (inc / empty)", "CPU ratio", "load 1 min",
             *steps),
            [(str(i + 1), r["consolidate_s"], r["empty_store_same_turns_s"], str(r["ratio_vs_empty_store"]),
              f"{r['consolidate_cpu_s']:.1f} / {r['empty_store_cpu_s'] or 0:.1f}", str(r["cpu_ratio_vs_empty_store"]),
              f"{r['loadavg'][0]:.1f}", *(float(r["steps_s"].get(s, 0)) for s in steps))
             for i, r in enumerate(rounds)]))
        console.print(f"incremental median: {inc['consolidate_s']:.1f}s, ratio median x{inc['ratio_vs_empty_store']}, "
                      f"CPU ratio median x{inc['cpu_ratio_vs_empty_store']}"
                      + (f"; the full store's first run took {inc['full_store_run_s']:.1f}s"
                         if "full_store_run_s" in inc else ""))
    if "hdbscan" in out:
        h = out["hdbscan"]
        console.print("HDBSCAN (" + h["vectors"] + "): " + ", ".join(
            f"{k}: {v['seconds']:.2f}s ({v['clusters']} clusters)" for k, v in h.items() if isinstance(v, dict)))
    if "footprint" in out:
        console.print(f"footprint: {out['footprint']}")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, _print)


if __name__ == "__main__":
    raise SystemExit(main())
