"""LoCoMo recall benchmark: evidence recall@k of Loci's recall, against BM25 and dense-only
baselines, with ablations.

    python -m bench.locomo --data locomo.json --json out.json [--workdir DIR]

What it does, on any LoCoMo-format file:

1. **Ingest** with the product importer `pipelines.ingest.ingest_locomo` into a fresh inbox
   (each conversation = one user, user_id = sample_id; each turn a chat turn whose turn_ref
   is its dia_id and whose time is the session date).
2. **Consolidate** with the real pipeline (`assets.run.run_consolidation`: the Dagster job,
   in process), which embeds with MiniLM and publishes the FAISS snapshot.
3. **Recall** through `online.state.MemoryService.recall` (the code path of
   `POST /v1/recall`), mode catalog, for every question within its conversation's scope:
   Identity(user_id=sample_id, project_id="locomo", session_id="qa") — a session that is
   not in the conversation. No LLM at query time.
4. **Score** turn-level and session-level evidence recall@k (see `metrics.py`).
5. **Baselines** on the same data and harness: plain BM25 over turns (bm25s) and
   dense-only exact cosine over the turns' MiniLM vectors (the snapshot's vectors).
6. **Ablations**: the same recall with one `RecallOptions` switch off at a time.
7. Optional **prototypes** (`--prototypes`): candidate improvements built inside this
   harness (not product code) to measure what they would add.

Question embeddings are computed once, one question a call as the service embeds them,
before the timed recall loop (MiniLM's query cache then serves them); that time is reported
as `query_embed_s`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import driver
from bench.message_vectors import VECTOR_VARIANTS
from bench.metrics import (
    CATEGORY_NAMES,
    Conversation,
    RecallAccumulator,
    machine_info,
    normalise_dia_id,
    percentiles,
)

PROJECT_ID = "locomo"
QA_SESSION = "qa"  # a session id no conversation uses: recall sees user-scoped memory only
TARGET_RECALL_AT_10 = 0.75
# The dev conversations recall was tuned on; every other conversation is held out (on any
# other LoCoMo file all of them are), so the held-out numbers are ones nobody tuned on.
DEV_TUNE = ("conv-26", "conv-30", "conv-41")
SPLITS = ("tune", "held_out")
STM_AGING_DAYS = 36_500.0  # effectively no aging (see _settings)
RankedFn = Callable[[Conversation, int, str], list[list[str]]]


# -- setup ------------------------------------------------------------------------------------


def _settings(workdir: Path, merger: str, precision: str | None = None, composed: bool | None = None,
              pooled: bool | None = None):
    from pipelines.settings import Settings

    # LoCoMo's turns are dated 2022-2023: with the default 30-day STM aging the lifecycle
    # stage would archive every raw turn before the questions are asked. The questions are
    # asked "right after" the conversation, so aging is switched off for this benchmark.
    return Settings(data_dir=str(workdir / "data"), embedder="minilm", merger=merger,
                    snapshots_keep=2, stm_aging_days=STM_AGING_DAYS,
                    **driver.vector_settings(precision, composed, pooled))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def ingest(data: Path, settings) -> tuple[dict[str, Any], float]:
    from pipelines.inbox import open_inbox
    from pipelines.ingest import ingest_locomo
    from pipelines.policy import Policy

    Path(settings.data_dir).mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with open_inbox(settings) as inbox:
        report = ingest_locomo(data, inbox, Policy(settings), project_id=PROJECT_ID)
    return report.as_dict(), time.perf_counter() - started


def consolidate(settings) -> tuple[dict[str, Any], float]:
    from assets.run import run_consolidation

    started = time.perf_counter()
    summary = run_consolidation(settings, instance="ephemeral")
    elapsed = time.perf_counter() - started
    if summary.get("status") != "success":
        raise RuntimeError(f"consolidation failed: {summary.get('error')}")
    return summary, elapsed


def identity_for(conv: Conversation):
    from pipelines.records import Identity

    return Identity(user_id=conv.sample_id, project_id=PROJECT_ID, session_id=QA_SESSION)


# -- rankers ------------------------------------------------------------------------------------


class SystemRanker:
    """Loci recall over the served view; `options=None` is the service path itself."""

    def __init__(self, service, view, k: int, options=None):
        self.service, self.view, self.k, self.options = service, view, k, options
        self.latencies_ms: list[float] = []
        self.foreign_hits = 0  # hits whose turns are not in the asking conversation (scope leak)
        self.hits_without_turns = 0

    def __call__(self, conv: Conversation, qi: int, question: str) -> list[list[str]]:
        ident = identity_for(conv)
        started = time.perf_counter()
        if self.options is None:
            result = self.service.recall(question, ident, mode="catalog", k=self.k,
                                         record_usage=False, view=self.view)
        else:
            result = self.service.engine.recall(question, ident, self.view.corpora, mode="catalog",
                                                k=self.k, options=self.options)
        self.latencies_ms.append((time.perf_counter() - started) * 1e3)
        ranked = []
        own = conv.turn_ids
        for hit in result.hits:
            refs = list(hit.item.provenance.turn_refs)
            norm = [normalise_dia_id(r) for r in refs]
            if not refs:
                self.hits_without_turns += 1
            if any(n is not None and n not in own for n in norm) or hit.item.scope.user_id != conv.sample_id:
                self.foreign_hits += 1
            ranked.append(refs)
        return ranked


def turn_text(turn) -> str:
    """A turn as the importer stores it (caption appended)."""
    return f"{turn.text} [shares a photo: {turn.caption}]" if turn.caption else turn.text


class BM25Ranker:
    """Plain BM25 (bm25s defaults: Lucene, k1=1.5, b=0.75, English stopwords) over one
    conversation's turns, document = "speaker: text [caption]"."""

    def __init__(self, conversations: Sequence[Conversation]):
        import bm25s

        self._bm25s = bm25s
        self.index: dict[str, tuple[Any, list[str]]] = {}
        for conv in conversations:
            docs = [f"{t.speaker}: {turn_text(t)}" for t in conv.turns]
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize(docs, stopwords="en", show_progress=False), show_progress=False)
            self.index[conv.sample_id] = (retriever, [t.dia_id for t in conv.turns])

    def __call__(self, conv: Conversation, qi: int, question: str, k: int = 50) -> list[list[str]]:
        retriever, ids = self.index[conv.sample_id]
        tokens = self._bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        k = min(k, len(ids))
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        return [[ids[int(d)]] for d, s in zip(docs[0], scores[0]) if s > 0]


class DenseRanker:
    """Exact cosine between the question's MiniLM vector and each turn's MiniLM vector."""

    def __init__(self, conversations: Sequence[Conversation], turn_vectors: dict[tuple[str, str], np.ndarray],
                 embedder):
        self.embedder = embedder
        self.mats: dict[str, tuple[np.ndarray, list[str]]] = {}
        for conv in conversations:
            ids = [t.dia_id for t in conv.turns if (conv.sample_id, t.dia_id) in turn_vectors]
            mat = np.stack([turn_vectors[(conv.sample_id, i)] for i in ids]) if ids else np.zeros((0, 1))
            self.mats[conv.sample_id] = (mat.astype(np.float32), ids)

    def __call__(self, conv: Conversation, qi: int, question: str, k: int = 50) -> list[list[str]]:
        mat, ids = self.mats[conv.sample_id]
        if not ids:
            return []
        q = self.embedder.embed([question])[0]
        sims = mat @ q
        order = np.argsort(-sims, kind="stable")[:k]
        return [[ids[int(i)]] for i in order]


def evaluate(conversations: Sequence[Conversation], ranker: RankedFn, ks: Sequence[int],
             *, keep_per_question: bool = False) -> RecallAccumulator:
    acc = RecallAccumulator(ks=tuple(ks))
    for conv in conversations:
        for q in conv.questions:
            if not q.evidence:
                acc.add(q.category, q.evidence, [])
                continue
            ranked = ranker(conv, q.index, q.question)
            acc.add(q.category, q.evidence, ranked,
                    key=f"{conv.sample_id}#{q.index}" if keep_per_question else None)
    return acc


def evaluate_splits(conversations: Sequence[Conversation], ranker: RankedFn, ks: Sequence[int],
                    tune: Collection[str], *, keep_per_question: bool = False) -> dict[str, RecallAccumulator]:
    """`evaluate` per split: "tune" (conversations in `tune`), "held_out" (the others) and
    "all" (both); each question is ranked once."""
    parts = {"tune": [c for c in conversations if c.sample_id in tune],
             "held_out": [c for c in conversations if c.sample_id not in tune]}
    accs = {name: evaluate(convs, ranker, ks, keep_per_question=keep_per_question)
            for name, convs in parts.items()}
    merged = RecallAccumulator(ks=tuple(ks))
    for acc in accs.values():
        merged.merge(acc)
    return {**accs, "all": merged}


# -- ablations ----------------------------------------------------------------------------------

# What each switch removes (RecallOptions field -> meaning). Only fields the engine has are used.
ABLATION_SWITCHES = {
    "dense": "dense (MiniLM) candidate channel",
    "lexical": "lexical (BM25) candidate channel",
    "labels": "tag/entity exact-match channel",
    "qstar": "Q* agenda search over the support set",
    "scope_priority": "scope priority boost (session > project > user > org)",
    "summaries": "summary pull-in and covered-message demotion",
    "recency": "recency boost",
    "conflicts": "conflict partner pull-in and resolution",
}


# Rows beyond one switch off: name -> (RecallOptions overrides, what the row changes).
ABLATION_VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "dense_channel_only": ({"lexical": False, "labels": False, "qstar": False},
                           "only the dense channel (no lexical, labels, Q*)"),
    "lexical_channel_only": ({"dense": False, "labels": False, "qstar": False},
                             "only the lexical channel (no dense, labels, Q*)"),
    # Ideas measured for multi-hop / open-domain questions, off in the product (see README).
    "with_speaker_link": ({"w_speaker": 0.2}, "ADDS: turns by a speaker the question names x1.2"),
    "with_speakers_in_vector": ({"dense_without_speakers": False},
                                "the names of speakers the question names kept in the query vector"),
    "with_session_support": ({"w_session": 0.5, "session_top": 1},
                             "ADDS: sessions first: turns x(1 + 0.5 * session strength)"),
    "with_session_spread": ({"spread_decay": 0.8, "spread_after": 5},
                            "ADDS: after 5 turns, x0.8 per turn already picked from the session"),
    "with_prf": ({"prf_docs": 3}, "ADDS: pseudo-relevance feedback from the top 3 (8 words, vector)"),
    "no_several_feedback": ({"prf_several_docs": 0},
                            "the feedback words (top 5, lexical only) of questions that ask for several things"),
    "no_when_lift": ({"w_when": 0.0}, "the lift of turns that state a time for questions that ask when"),
    "no_date_lift": ({"w_date": 0.0}, "the date-aware lift of turns said around a date the question names"),
    "no_rerank": ({"rerank_pool": 0}, "the linear re-ordering of the first 60 raw turns (stated, session, speaker)"),
    "no_rerank_spread": ({"rerank_session_penalty": 0.0},
                         "the session spread of the first 10 for questions that ask for several things so far"),
    "with_stated": ({"w_stated": 0.2, "stated_half": 40.0},
                    "ADDS: turns that state more x(1 + 0.2 n / (n + 40)), n = words not in questions"),
}
# Rows that rebuild the served corpora with one MemoryCorpus setting changed (same items,
# vectors and index): name -> (MemoryCorpus keyword overrides, what the row changes).
CORPUS_ABLATIONS: dict[str, tuple[dict[str, Any], str]] = {
    "no_stemming": ({"stemming": False}, "BM25 compares surface words, not Snowball stems"),
}
ABLATION_ROWS: tuple[str, ...] = (*(f"no_{name}" for name in ABLATION_SWITCHES), *ABLATION_VARIANTS,
                                  *CORPUS_ABLATIONS)


def ablation_rows() -> dict[str, tuple[Any, str]]:
    """Every ablation row the engine supports: name -> (RecallOptions, what it changes)."""
    import msgspec

    from pipelines.recall import RecallOptions

    fields = {f.name for f in msgspec.structs.fields(RecallOptions)}
    out = {f"no_{name}": (RecallOptions(**{name: False}), removes)
           for name, removes in ABLATION_SWITCHES.items() if name in fields}
    out.update({name: (RecallOptions(**over), what) for name, (over, what) in ABLATION_VARIANTS.items()
                if set(over) <= fields})
    return out


def ablation_options() -> dict[str, Any]:
    """name -> RecallOptions of every ablation row."""
    return {name: opts for name, (opts, _) in ablation_rows().items()}


# -- prototypes (harness-only experiments) ----------------------------------------------------------
#
# Candidate product changes, built here so their effect can be measured before anyone changes
# product code. Each variant rewrites the *retrieval text* of message items (what BM25 indexes
# and MiniLM embeds), never their provenance: an item still stands for exactly its own turn.
# Neighbours are found the general way (same user and session, ordered by inbox sequence), the
# date is the turn's own time. Nothing here looks at questions or answers.

# name -> (previous turns, next turns, add the date, description)
VARIANTS: dict[str, tuple[int, int, bool, str]] = {
    "ctx_prev": (1, 0, False, "message text + the previous turn of its session ('in reply to <speaker>: ...')"),
    "ctx_prev_next": (1, 1, False, "message text + previous and next turn of its session"),
    "date": (0, 0, True, "message text + the turn's date ('said on 8 May 2023')"),
    "ctx_prev_next_date": (1, 1, True, "previous and next turn + date"),
    "ctx_prev2_next_date": (2, 1, True, "two previous turns, the next turn + date"),
    "ctx_prev2_next2_date": (2, 2, True, "two previous turns, the next two turns + date"),
    "ctx_prev3_next_date": (3, 1, True, "three previous turns, the next turn + date"),
}


PROTOTYPES: tuple[str, ...] = (*VARIANTS, *VECTOR_VARIANTS)


def without_context(item: Any) -> Any:
    """The item as it was before message items carried a retrieval context."""
    import msgspec

    from pipelines.message_context import CONTEXT_KEY

    if CONTEXT_KEY not in item.metadata:
        return item
    meta = {k: v for k, v in item.metadata.items() if k != CONTEXT_KEY}
    return msgspec.structs.replace(item, metadata=meta)


def variant_items(name: str, items: Sequence[Any]) -> list[Any]:
    """The message items with the variant's retrieval text as content (other items unchanged)."""
    import msgspec

    from pipelines.message_context import said_on

    if name not in VARIANTS:
        raise ValueError(f"unknown prototype {name!r}; known: {', '.join(VARIANTS)}")
    prev_n, next_n, dated, _ = VARIANTS[name]
    sessions: dict[tuple[str, str], list[Any]] = {}
    for it in items:
        if it.type == "message":
            key = (it.scope.user_id, str(it.metadata.get("session_id", "")))
            sessions.setdefault(key, []).append(it)
    out = {it.id: without_context(it) for it in items}
    for turns in sessions.values():
        turns.sort(key=lambda it: (int(it.metadata.get("inbox_seq") or 0), it.created_at, it.id))
        for i, it in enumerate(turns):
            parts = [it.content]
            before = [f"{t.title}: {t.content}" for t in turns[max(0, i - prev_n):i]]
            after = [f"{t.title}: {t.content}" for t in turns[i + 1:i + 1 + next_n]]
            if before:
                parts.append("(in reply to " + " / ".join(before) + ")")
            if after:
                parts.append("(answered by " + " / ".join(after) + ")")
            if dated and said_on(it.created_at):
                parts.append(f"(said on {said_on(it.created_at)})")
            out[it.id] = msgspec.structs.replace(out[it.id], content="\n".join(parts))
    return [out[it.id] for it in items]


class DiskEmbeddingCache:
    """MiniLM vectors keyed by sha256 of the text, kept in one .npz in the workdir."""

    def __init__(self, path: Path, embedder):
        self.path, self.embedder = path, embedder
        self.store: dict[str, np.ndarray] = {}
        if path.is_file():
            with np.load(path) as data:
                self.store = {k: data[k] for k in data.files}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in texts]
        todo = [i for i, k in enumerate(keys) if k not in self.store]
        if todo:
            vecs = self.embedder.embed([texts[i] for i in todo])
            for i, v in zip(todo, vecs):
                self.store[keys[i]] = np.asarray(v, dtype=np.float32)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.stem + ".tmp.npz")
            np.savez(tmp, **self.store)
            tmp.replace(self.path)
        if not keys:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([self.store[k] for k in keys])


def run_variant(name: str, service, view, conversations: Sequence[Conversation], ks: Sequence[int],
                k_max: int, cache: DiskEmbeddingCache, tune: Collection[str] = DEV_TUNE) -> dict[str, Any]:
    """Recall (unchanged engine, default options) over the variant corpus: a text variant
    (`VARIANTS`) or a message-vector one (`bench.message_vectors`)."""
    from pipelines.message_context import embedding_text
    from pipelines.recall import MemoryCorpus

    base = view.snap.loaded
    started = time.perf_counter()
    if name in VECTOR_VARIANTS:
        items = list(base.items)
        vectors, what = VECTOR_VARIANTS[name][0](items, cache.embed, cache.embedder), VECTOR_VARIANTS[name][1]
    else:
        items = variant_items(name, base.items)
        vectors, what = cache.embed([embedding_text(it) for it in items]), VARIANTS[name][3]
    t_embed = time.perf_counter() - started
    corpus = MemoryCorpus(items, vectors, source="snapshot").warm()

    class _View:
        corpora = [corpus]

    block = measured(conversations, SystemRanker(service, _View(), k_max, options=_default_options()), ks, tune)
    block["describes"] = what
    block["embed_s"] = round(t_embed, 2)
    return block


def _default_options():
    from pipelines.recall import RecallOptions

    return RecallOptions()


# -- output -------------------------------------------------------------------------------------


def _headline(acc_summary: dict[str, Any], k: str = "10") -> float | None:
    return acc_summary["turn_recall"][k]["overall_1_4"]


def _print(result: dict[str, Any], ks: Sequence[int]) -> None:
    console = driver.console()
    rows = [("Loci recall", result)] + [(f"baseline: {n}", b) for n, b in result["baselines"].items()]
    cats = ("1", "2", "3", "4", "5")
    for metric in ("turn_recall", "session_recall"):
        console.print(driver.table(
            f"LoCoMo {metric.replace('_', '-')}@k (categories 1-4 headline)",
            ("system", *(f"@{k} 1-4" for k in ks), *(f"@10 c{cat}" for cat in cats)),
            [(name, *(_fmt(block[metric][str(k)]["overall_1_4"]) for k in ks),
              *(_fmt(block[metric].get("10", {}).get(c)) for c in cats)) for name, block in rows]))
    console.print(driver.table(
        "Tune vs held-out conversations: turn recall@10",
        ("system", "split", "questions 1-4", "@10 1-4", *(f"@10 c{cat}" for cat in cats[:4])),
        [(name, split, str(block["splits"][split]["questions"]),
          _fmt(block["splits"][split]["turn_recall"]["10"]["overall_1_4"]),
          *(_fmt(block["splits"][split]["turn_recall"]["10"].get(c)) for c in cats[:4]))
         for name, block in rows + [(f"ablation: {n}", b) for n, b in result.get("ablations", {}).items()]
         for split in SPLITS if "splits" in block]))
    base = _headline(result)
    if result.get("ablations"):
        console.print(driver.table(
            "Ablations: turn recall@10, categories 1-4", ("row", "recall@10", "change", "what it removes / adds"),
            [(name, _fmt(_headline(block)), _fmt_delta(_headline(block), base), block.get("removes", ""))
             for name, block in result["ablations"].items()], left=("what it removes / adds",)))
    if result.get("prototypes"):
        console.print(driver.table(
            "Prototypes (harness-only): turn recall@10, categories 1-4",
            ("variant", "recall@5", "recall@10", "recall@20", "change@10", "what changes"),
            [(name, *(_fmt(block["turn_recall"][k]["overall_1_4"]) for k in ("5", "10", "20")),
              _fmt_delta(block["turn_recall"]["10"]["overall_1_4"], base), block.get("describes", ""))
             for name, block in result["prototypes"].items()], left=("what changes",)))
    t = result["timings_s"]
    lat = result["recall_latency_ms"]
    console.print(f"questions scored: {result['counts']['scored']['overall_1_4']} (cat 1-4) + "
                  f"{result['counts']['scored'].get('5', 0)} (cat 5); skipped without evidence: "
                  f"{result['counts']['scored']['skipped_no_evidence']}; snapshot items: "
                  f"{result['counts']['snapshot_items']}; foreign hits (scope leaks): "
                  f"{result['checks']['foreign_hits']}")
    console.print(f"ingest {t['ingest']:.1f}s, consolidate {t['consolidate']:.1f}s, query embed "
                  f"{t['query_embed']:.1f}s, recall p50 {lat['p50']} ms p95 {lat['p95']} ms; "
                  f"target recall@10 >= {TARGET_RECALL_AT_10}: "
                  f"{'MET' if result['target']['met'] else 'NOT MET'} ({_fmt(_headline(result))})")


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def _fmt_delta(v: float | None, base: float | None) -> str:
    return "-" if v is None or base is None else f"{v - base:+.3f}"


def _block(accs: dict[str, RecallAccumulator]) -> dict[str, Any]:
    """All questions' recall, and per split (tune / held_out) the same summary."""
    return {**accs["all"].summary(),
            "splits": {name: {**accs[name].summary(), "questions": accs[name].counts()["overall_1_4"]}
                       for name in SPLITS}}


def measured(conversations: Sequence[Conversation], ranker: RankedFn, ks: Sequence[int],
             tune: Collection[str]) -> dict[str, Any]:
    """The result block of one ranker: recall overall and per split."""
    return _block(evaluate_splits(conversations, ranker, ks, tune))


# -- main ---------------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("locomo", __doc__, quick="smoke run: first conversation, no ablations, no prototypes")
    p.add_argument("--data", type=Path, default=None,
                   help=f"LoCoMo-format JSON file (default: {driver.LOCOMO_FILE} in ${driver.DATA_ENV} "
                        f"or ./{driver.DEFAULT_DATA_DIR})")
    p.add_argument("--ks", default="5,10,20", help="comma-separated k values (default 5,10,20)")
    p.add_argument("--conversations", default=None,
                   help="only these conversations: a number N (the first N) or comma-separated sample ids")
    p.add_argument("--tune", default=",".join(DEV_TUNE),
                   help="comma-separated sample ids recall was tuned on, reported as the 'tune' split; "
                        f"every other conversation is 'held_out' (default {','.join(DEV_TUNE)}; '' = none)")
    p.add_argument("--reuse", action="store_true",
                   help="with --workdir: reuse its published snapshot, skip ingest and consolidation "
                        "(for query-time experiments; the data must be the same)")
    p.add_argument("--ablations", default="",
                   help="comma-separated ablation rows to run (default all): " + ", ".join(ABLATION_ROWS))
    p.add_argument("--no-baselines", action="store_true")
    p.add_argument("--no-ablations", action="store_true")
    p.add_argument("--prototypes", default="",
                   help="comma-separated harness-only variants to measure, or 'all': " + ", ".join(PROTOTYPES))
    p.add_argument("--merger", default="extractive", choices=("extractive", "ollama"),
                   help="cluster merger for consolidation (LoCoMo turns are never merged; default extractive)")
    driver.add_vector_options(p)
    p.add_argument("--per-question", type=Path, default=None,
                   help="also write per-question recall of the full system (JSON lines) here")
    args = p.parse_args(argv)
    try:
        args.ks = sorted({int(k) for k in args.ks.split(",") if k.strip()})
    except ValueError:
        p.error(f"--ks must be comma-separated integers, got {args.ks!r}")
    if not args.ks or min(args.ks) < 1:
        p.error("--ks values must be >= 1")
    if 10 not in args.ks:
        args.ks = sorted({*args.ks, 10})  # the headline
    wanted = [v.strip() for v in args.prototypes.split(",") if v.strip()]
    unknown = [v for v in wanted if v not in PROTOTYPES and v != "all"]
    if unknown:
        p.error(f"unknown prototypes {unknown}; known: {', '.join(PROTOTYPES)}")
    args.tune = frozenset(t.strip() for t in args.tune.split(",") if t.strip())
    args.ablations = [a.strip() for a in args.ablations.split(",") if a.strip()]
    unknown = [a for a in args.ablations if a not in ABLATION_ROWS]
    if unknown:
        p.error(f"unknown ablations {unknown}; known: {', '.join(ABLATION_ROWS)}")
    if args.reuse and args.workdir is None:
        p.error("--reuse needs --workdir (the folder holding the snapshot to reuse)")
    if args.conversations is not None:
        text = args.conversations.strip()
        args.conversations = int(text) if text.isdigit() else [c.strip() for c in text.split(",") if c.strip()]
        if not args.conversations:
            p.error("--conversations must be a positive number or sample ids")
    if args.quick:
        args.conversations = args.conversations or 1
        args.no_ablations = True
        args.prototypes = ""
    return args


def run(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    """Re-runs with the same `--workdir` reuse its inbox, warehouse and snapshot (ingestion
    and embedding are idempotent)."""
    machine_before = machine_info()
    data, data_path, conversations = _select_data(args, workdir)
    ks = args.ks
    k_max = max(ks)
    settings = _settings(workdir, args.merger, args.precision, args.composed, args.pooled)

    if args.reuse and (settings.snapshots_path / "CURRENT").exists():
        ingest_report, t_ingest = {"reused": str(workdir)}, 0.0
        summary, t_consolidate = {"status": "reused"}, 0.0
    else:
        ingest_report, t_ingest = ingest(data_path, settings)
        summary, t_consolidate = consolidate(settings)
    embedder, service, view, snap, t_load = _start_service(settings)
    t_qembed = _embed_questions(embedder, conversations, service, view)

    started = time.perf_counter()
    system = SystemRanker(service, view, k_max)
    accs = evaluate_splits(conversations, system, ks, args.tune, keep_per_question=args.per_question is not None)
    acc = accs["all"]
    t_recall = time.perf_counter() - started
    result: dict[str, Any] = {
        "benchmark": "locomo",
        "data": str(data),
        "data_sha256": _sha256_file(data),
        **_block(accs),
        "baselines": {},
        "ablations": {},
        "prototypes": {},
    }

    timings = {"ingest": t_ingest, "consolidate": t_consolidate, "service_load": t_load,
               "query_embed": t_qembed, "recall_all_questions": t_recall}
    if not args.no_baselines:
        result["baselines"], baseline_timings = _run_baselines(conversations, snap, workdir, embedder, ks,
                                                               args.tune)
        timings.update(baseline_timings)
    if not args.no_ablations:
        result["ablations"], timings["ablations"] = _run_ablations(conversations, service, view, ks, k_max,
                                                                   args.tune, args.ablations)
    variants = [v for v in args.prototypes.split(",") if v.strip()]
    if variants:
        result["prototypes"], timings["prototypes"] = _run_prototypes(
            variants, service, view, conversations, ks, k_max, DiskEmbeddingCache(
                workdir / "prototype-embeddings.npz", embedder), args.tune)

    result.update({
        "counts": _counts(conversations, acc, snap, view),
        "checks": {"foreign_hits": system.foreign_hits, "hits_without_turns": system.hits_without_turns},
        "recall_latency_ms": percentiles(system.latencies_ms),
        "timings_s": {k_: round(v, 3) for k_, v in timings.items()},
        "ingest": ingest_report,
        "consolidation": summary,
        "snapshot": {"version": snap.version, "index_kind": snap.manifest.index_kind,
                     "embedder": snap.manifest.embedder},
        "config": {**_config(ks, k_max, args.merger),
                   "message_context_composed": settings.message_context_composed,
                   "message_context_pooled": settings.message_context_pooled,
                   "tune_conversations": sorted(c.sample_id for c in conversations if c.sample_id in args.tune),
                   "held_out_conversations": sorted(c.sample_id for c in conversations
                                                    if c.sample_id not in args.tune)},
        "target": _target(result),
        "machine": {**machine_before, "loadavg_after": machine_info()["loadavg_1_5_15"]},
    })
    if args.per_question is not None:
        args.per_question.parent.mkdir(parents=True, exist_ok=True)
        args.per_question.write_text("\n".join(json.dumps(r) for r in acc.per_question) + "\n")
    service.close()
    return result


def _select_data(args: argparse.Namespace, workdir: Path) -> tuple[Path, Path, list[Conversation]]:
    """The LoCoMo file, the file to ingest and its conversations. With `--conversations N`
    the first N are written to a subset file, so ingestion sees only what is scored."""
    data, conversations = driver.locomo_data(args.data)
    if not args.conversations:
        return data, data, conversations
    if isinstance(args.conversations, int):
        keep = [c.sample_id for c in conversations[: args.conversations]]
    else:
        known = {c.sample_id for c in conversations}
        missing = [c for c in args.conversations if c not in known]
        if missing:
            raise driver.BenchDataError(f"--conversations: {missing} not in {data}; it has {sorted(known)}")
        keep = list(args.conversations)
    data_path = workdir / "subset.json"
    samples = json.loads(data.read_text(encoding="utf-8"))
    subset = [s for i, (s, c) in enumerate(zip(samples, conversations)) if c.sample_id in keep]
    data_path.write_text(json.dumps(subset), encoding="utf-8")
    return data, data_path, [c for c in conversations if c.sample_id in keep]


def _start_service(settings):
    """The service over the published snapshot: (embedder, service, view, snapshot, seconds)."""
    from online.state import MemoryService
    from pipelines.embedders import MiniLMEmbedder

    started = time.perf_counter()
    embedder = MiniLMEmbedder(cache_size=100_000, int8_online=settings.minilm_int8_online,
                              precision=settings.minilm_precision)
    service = MemoryService(settings, embedder=embedder)
    view = service.reload()
    t_load = time.perf_counter() - started
    snap = view.snap.loaded
    if snap is None:
        raise RuntimeError(f"no snapshot was published: {service.problems(view)}")
    return embedder, service, view, snap, t_load


def _embed_questions(embedder, conversations: Sequence[Conversation], service=None, view=None) -> float:
    """Embed what each recall will embed (with `service`: `query_vector_text`, the question
    without the speakers it names), so the timed recall finds it in the query cache;
    returns the seconds it took. One text a call, as the service embeds a question: the
    int8 model quantizes activations per call, and batches of 8 questions gave other
    vectors (LoCoMo recall@10 0.835 against 0.831 one at a time, held out 0.824 / 0.818;
    2026-11-28)."""
    texts = [service.engine.query_vector_text(q.question, identity_for(c), view.corpora) if service else q.question
             for c in conversations for q in c.questions]
    started = time.perf_counter()
    for text in dict.fromkeys(texts):
        embedder.embed_online([text])
    return time.perf_counter() - started


def _run_baselines(conversations: Sequence[Conversation], snap, workdir: Path, embedder,
                   ks: Sequence[int], tune: Collection[str]) -> tuple[dict[str, Any], dict[str, float]]:
    """BM25 and dense-only recall on the same questions: (blocks, seconds per baseline)."""
    turn_vectors = _plain_turn_vectors(snap, workdir, embedder)
    baselines: dict[str, Any] = {}
    timings: dict[str, float] = {}
    started = time.perf_counter()
    baselines["bm25"] = measured(conversations, BM25Ranker(conversations), ks, tune)
    timings["baseline_bm25"] = time.perf_counter() - started
    started = time.perf_counter()
    baselines["dense"] = measured(conversations, DenseRanker(conversations, turn_vectors, embedder), ks, tune)
    timings["baseline_dense"] = time.perf_counter() - started
    baselines["bm25"]["describes"] = "bm25s over 'speaker: text [caption]' per conversation"
    baselines["dense"]["describes"] = "exact cosine, MiniLM, each turn embedded alone"
    return baselines, timings


def _plain_turn_vectors(snap, workdir: Path, embedder) -> dict[tuple[str, str], np.ndarray]:
    """(user_id, canonical dia_id) -> the vector of the turn's text alone. The dense
    baseline embeds each turn alone (the product's vectors carry the message's retrieval
    context, which is part of what is being compared)."""
    from pipelines.message_context import embedding_text

    turns = [it for it in snap.items if it.type == "message" and it.provenance.turn_refs]
    plain = DiskEmbeddingCache(workdir / "prototype-embeddings.npz", embedder).embed(
        [embedding_text(without_context(it)) for it in turns])
    turn_vectors = {}
    for item, vec in zip(turns, plain):
        norm = normalise_dia_id(item.provenance.turn_refs[0])
        if norm:
            turn_vectors[(item.scope.user_id, norm)] = vec
    return turn_vectors


def _run_ablations(conversations: Sequence[Conversation], service, view, ks: Sequence[int],
                   k_max: int, tune: Collection[str], only: Collection[str] = ()) -> tuple[dict[str, Any], float]:
    """The system with one recall switch off at a time (`only`: just these): (blocks, seconds)."""
    started = time.perf_counter()
    ablations = {}
    for name, (opts, what) in ablation_rows().items():
        if only and name not in only:
            continue
        block = measured(conversations, SystemRanker(service, view, k_max, opts), ks, tune)
        block["removes"] = what
        ablations[name] = block
    for name, (overrides, what) in CORPUS_ABLATIONS.items():
        if only and name not in only:
            continue
        rebuilt = _RebuiltView(view, overrides)
        block = measured(conversations, SystemRanker(service, rebuilt, k_max, _default_options()), ks, tune)
        block["removes"] = what
        ablations[name] = block
    return ablations, time.perf_counter() - started


class _RebuiltView:
    """The served corpora rebuilt with some MemoryCorpus settings changed."""

    def __init__(self, view, overrides: dict[str, Any]):
        from pipelines.recall import MemoryCorpus

        self.corpora = [MemoryCorpus(c.items, c.vectors, c.index, source=c.source, exact_rows=c.exact_rows,
                                     **overrides).warm()
                        for c in view.corpora]


def _run_prototypes(variants: list[str], service, view, conversations: Sequence[Conversation],
                    ks: Sequence[int], k_max: int, cache: DiskEmbeddingCache,
                    tune: Collection[str]) -> tuple[dict[str, Any], float]:
    """The harness-only variants (`all` for every one): (blocks, seconds)."""
    if variants == ["all"]:
        variants = list(PROTOTYPES)
    started = time.perf_counter()
    prototypes = {name: run_variant(name, service, view, conversations, ks, k_max, cache, tune) for name in variants}
    return prototypes, time.perf_counter() - started


def _counts(conversations: Sequence[Conversation], acc: RecallAccumulator, snap, view) -> dict[str, Any]:
    return {
        "conversations": len(conversations),
        "turns": sum(len(c.turns) for c in conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "scored": acc.counts(),
        "snapshot_items": len(snap.items),
        "snapshot_types": dict(sorted({t: sum(1 for i in snap.items if i.type == t)
                                       for t in {i.type for i in snap.items}}.items())),
        "delta_items": len(view.delta.items),
    }


def _config(ks: Sequence[int], k_max: int, merger: str) -> dict[str, Any]:
    return {"ks": ks, "mode": "catalog", "recall_k": k_max, "identity":
            {"project_id": PROJECT_ID, "session_id": QA_SESSION, "user_id": "<sample_id>"},
            "merger": merger, "llm_at_query_time": False,
            "stm_aging_days": STM_AGING_DAYS,
            "categories": CATEGORY_NAMES}


def _target(result: dict[str, Any]) -> dict[str, Any]:
    headline = _headline(result)
    return {"metric": "turn_recall@10 overall_1_4", "threshold": TARGET_RECALL_AT_10,
            "value": headline, "met": (headline or 0) >= TARGET_RECALL_AT_10}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    return driver.run(args, run, lambda out: _print(out, args.ks))


if __name__ == "__main__":
    raise SystemExit(main())
