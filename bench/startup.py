"""How long a replica's worker takes to be ready on a published snapshot, part by part.

    loci bench startup --sizes 100000 --json out.json

For each size: synthetic items (`synthetic.py`) published as a snapshot (`bench.latency.build`),
then, in this process, the steps a worker takes before `/readyz` says ready, each timed in
CPU seconds (`time.process_time`: on a shared machine wall time mostly measures the others):
loading the version (`load_latest_good`: checksums, Parquet, FAISS), building the corpus, and
each part of `MemoryCorpus.warm` (BM25, claim table, ...); then the same load with the warm
state read from the warm cache (`online.warm_cache`) a first worker wrote, as every later
worker and replica does. The load average is recorded beside the numbers.
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import driver
from bench.metrics import machine_info


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("startup", __doc__, quick="smoke run: 2000 items")
    p.add_argument("--sizes", default="100000", help="active item counts (comma-separated)")
    p.add_argument("--index", default="hnsw", choices=("flat", "hnsw"), help="the snapshot's index type")
    p.add_argument("--item-embedder", default="hash", choices=("minilm", "hash"),
                   help="item vectors (hash: fast; the warm parts do not depend on the model)")
    p.add_argument("--minilm-max-items", type=int, default=200_000)
    p.add_argument("--cache-dir", type=Path, default=None, help="MiniLM vector cache (bench.synthetic)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    args.sizes = [2000] if args.quick else [int(s) for s in str(args.sizes).split(",") if s.strip()]
    return args


def _timed(parts: dict[str, float], name: str, fn):
    started = time.process_time()
    out = fn()
    parts[name] = round(time.process_time() - started, 3)
    return out


def measure_size(settings, embedder_name: str) -> dict[str, Any]:
    from online.warm_cache import WarmCache
    from pipelines.recall.corpus import MemoryCorpus
    from pipelines.snapshot import load_latest_good

    root = settings.snapshots_path
    cache = WarmCache(root)
    shutil.rmtree(cache.folder, ignore_errors=True)
    cold: dict[str, float] = {}
    loaded, problems = _timed(cold, "load", lambda: load_latest_good(root, expected_embedder=embedder_name))
    if loaded is None:
        raise RuntimeError(f"snapshot not loadable: {problems}")

    def corpus() -> MemoryCorpus:
        return MemoryCorpus(loaded.items, loaded.vectors, loaded.index, source="snapshot",
                            exact_rows=loaded.exact_rows)

    built = _timed(cold, "corpus", corpus)
    for name, part in built.warm_parts().items():
        _timed(cold, f"warm.{name}", part)
    _timed(cold, "cache.write", lambda: cache._write(built, loaded.version, cache.path(loaded.version)))
    cached: dict[str, float] = {}
    again, _ = _timed(cached, "load", lambda: load_latest_good(root, expected_embedder=embedder_name))
    fresh = _timed(cached, "corpus", lambda: MemoryCorpus(again.items, again.vectors, again.index,
                                                          source="snapshot", exact_rows=again.exact_rows))
    _, how = _timed(cached, "warm (cache read)", lambda: cache.warmed(fresh, again.version))
    if how != "read":
        raise RuntimeError("the warm cache was not read back")
    cache_bytes = cache.path(loaded.version).stat().st_size
    return {
        "first_worker_cpu_s": {**cold, "total": round(sum(v for k, v in cold.items()), 3)},
        "later_worker_cpu_s": {**cached, "total": round(sum(cached.values()), 3)},
        "warm_cache_mb": round(cache_bytes / 1e6, 1),
    }


def run(args: argparse.Namespace, workdir: Path, say) -> dict[str, Any]:
    from bench.latency import build, item_vectors
    from bench.synthetic import synthetic_items
    from pipelines.embedders import MiniLMEmbedder

    out: dict[str, Any] = {"benchmark": "startup", "sizes": {}, "machine": machine_info()}
    for n in args.sizes:
        say(f"== {n} items: building the snapshot")
        items = synthetic_items(n, seed=args.seed)
        vectors, note = item_vectors(n, args, say)
        settings, snap = build(n, args.index, items, vectors, workdir)
        del items, vectors
        say(f"== {n} items: loading and warming (CPU seconds per part)")
        block = measure_size(settings, MiniLMEmbedder.name)
        block.update(snapshot=snap, item_vectors=note["item_vectors"],
                     loadavg_1_5_15=machine_info()["loadavg_1_5_15"])
        out["sizes"][str(n)] = block
    out["config"] = driver.argv_record(args)
    return out


def _print(out: dict[str, Any]) -> None:
    for n, block in out["sizes"].items():
        first, later = block["first_worker_cpu_s"], block["later_worker_cpu_s"]
        print(f"\n{n} items ({block['snapshot']['index_kind']}), load average {block['loadavg_1_5_15']}:")
        print(f"  {'step':24s} {'first worker':>13s} {'later workers':>14s}  (CPU s)")
        for name in dict.fromkeys([*first, *later]):
            print(f"  {name:24s} {first.get(name, ''):>13} {later.get(name, ''):>14}")
        print(f"  warm cache file: {block['warm_cache_mb']} MB")


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, _print)


if __name__ == "__main__":
    raise SystemExit(main())
