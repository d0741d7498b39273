"""Recall: scope-filtered hybrid retrieval over snapshot + delta, Q* agenda search, the
read-only injection block and catalog, and recall-intent detection.

    corpus = MemoryCorpus(items, vectors, index, source="snapshot").warm()
    delta = MemoryCorpus(fresh_items, fresh_vectors, source="delta")
    engine = RecallEngine(settings, embedder)
    result = engine.recall("what did we decide about the inbox?", identity, [corpus, delta])
    result.injection  # PERSISTENT MEMORY (READ-ONLY) block, within inject_budget_tokens
"""

from .conflicts import find_conflicts
from .corpus import CorpusError, MemoryCorpus
from .engine import Hit, RecallEngine, RecallError, RecallOptions, RecallQuery, RecallResult
from .intents import (
    PalaceGetArgs,
    PalaceListArgs,
    ReadArgs,
    RecallIntent,
    SearchArgs,
    ToolCallError,
    ToolRequest,
    detect_recall_intent,
    parse_memory_tool_call,
)
from .lexical import LexicalIndex, query_terms, tokenize
from .qstar import (
    DocRef,
    DocSource,
    Evidence,
    NoDocs,
    QNode,
    QStarConfig,
    QStarError,
    QStarResult,
    QStarSearch,
    question_entities,
)
from .query import RecallFilters
from .render import estimate_tokens

__all__ = [
    "CorpusError", "MemoryCorpus", "find_conflicts",
    "Hit", "RecallEngine", "RecallError", "RecallFilters", "RecallOptions", "RecallQuery",
    "RecallResult",
    "PalaceGetArgs", "PalaceListArgs", "ReadArgs", "RecallIntent", "SearchArgs",
    "ToolCallError", "ToolRequest", "detect_recall_intent", "parse_memory_tool_call",
    "LexicalIndex", "query_terms", "tokenize",
    "DocRef", "DocSource", "Evidence", "NoDocs", "QNode", "QStarConfig", "QStarError",
    "QStarResult", "QStarSearch", "question_entities",
    "estimate_tokens",
]
