"""Stage 3: vectors for new or changed items; `reembed_all` after an embedder change."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipelines.consolidate.common import (
    EMBED_BATCH,
    ConsolidationError,
    EmbedderChanged,
    Hook,
    call_hook,
    last_successful_run,
)
from pipelines.consolidate.forgetting_sweep import sweep_forgetting
from pipelines.consolidate.lock import WarehouseLock
from pipelines.message_context import (
    ContextWindow,
    embedding_hash,
    item_vectors,
    item_windows,
    recontextualise,
    recorded_turns,
    vector_recipe,
)
from pipelines.records import MemoryItem, utcnow
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse

log = logging.getLogger("loci.consolidate")


@dataclass
class EmbedReport:
    model: str
    dim: int
    embedded: int = 0
    current: int = 0
    checked_at: str = ""  # every item written before this has a current vector
    since: str | None = None  # where this run's hash comparison started (None: every item)
    replaced: dict[str, int] = field(default_factory=dict)  # older names' vectors dropped: model -> rows


def store_embedder(embedder: Any, warehouse: Warehouse | None) -> Any:
    """The embedder whose vectors `warehouse` keeps (`Embedder.for_store`: MiniLM "auto"
    is int8 in a new store and float32 in one that holds float32 vectors); None: the
    embedder of a new store, which `loci reembed` makes of an existing one."""
    stored = {m for m, _ in warehouse.stored_embedding_models()} if warehouse is not None else set()
    follow = getattr(embedder, "for_store", None)
    return follow(stored) if follow is not None else embedder


def older_names(stored: Collection[str], embedder: Any) -> list[str]:
    """Which of the `stored` model names are older names of the configured embedder's
    vectors: names it still serves (`Embedder.stored_names`) but no longer stores (MiniLM
    int8 vectors made in batches, `MINILM_INT8_BATCHED`). The embedding stage replaces
    their vectors itself (`embed_items`), no `loci reembed` asked."""
    serves = set(getattr(embedder, "stored_names", (embedder.name,))) - {embedder.name}
    return sorted(set(stored) & serves)


def stored_models(warehouse: Warehouse) -> set[str]:
    """The model names the warehouse holds vectors of."""
    return {m for m, _ in warehouse.stored_embedding_models()}


def ensure_same_embedder(warehouse: Warehouse, embedder: Any) -> None:
    """Raise EmbedderChanged when the warehouse holds vectors but none of the configured
    embedder's, and some of another model's (switching models needs an explicit `loci
    reembed`); vectors under an older name of the same embedder (`older_names`) are not a
    change: the run replaces them."""
    stored = warehouse.stored_embedding_models()
    names = {m for m, _ in stored}
    if stored and embedder.name not in names and names - set(older_names(names, embedder)):
        raise EmbedderChanged(embedder.name, stored)


def replaces_everything(stored: Collection[str], embedder: Any) -> bool:
    """Whether the `stored` model names are all older names of the embedder's
    (`older_names`): the stage then embeds every active item."""
    return bool(stored) and set(stored) <= set(older_names(stored, embedder))


def embed_batched(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    parts = [embedder.embed(list(texts[i : i + EMBED_BATCH])) for i in range(0, len(texts), EMBED_BATCH)]
    if not parts:
        return np.zeros((0, int(embedder.dim)), dtype=np.float32)
    out = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
    if out.shape[0] != len(texts):
        raise ConsolidationError(f"embedder {embedder.name} returned {out.shape[0]} rows for {len(texts)} texts")
    return out


def _neighbour(items: Sequence[MemoryItem], warehouse: Warehouse | None) -> Callable[[str], MemoryItem | None]:
    """Finds a message's neighbouring turns among `items`, else in `warehouse`."""
    by_id = {i.id: i for i in items}
    wanted = sorted({n for i in items for n in recorded_turns(i)} - set(by_id))
    if wanted and warehouse is not None:
        by_id.update((i.id, i) for i in warehouse.get_items(wanted))
    return by_id.get


def vectors_for(items: Sequence[MemoryItem], embedder: Any, warehouse: Warehouse | None = None) -> np.ndarray:
    """Stored-space vectors of `items` (`message_context.item_vectors`): a message's
    neighbouring turns are found among `items`, else in `warehouse`."""
    vectors = item_vectors(items, lambda texts: embed_batched(embedder, texts), _neighbour(items, warehouse),
                           pool=getattr(embedder, "pool_windows", None))
    return vectors if len(items) else np.zeros((0, int(embedder.dim)), dtype=np.float32)


def _stale_items(warehouse: Warehouse, embedder: Any, since: str | None) -> list[MemoryItem]:
    return warehouse.get_items(warehouse.stale_embedding_ids(embedder.name, written_since=since))


def prefetch_item_vectors(warehouse: Warehouse, embedder: Any, *, since: str | None = None) -> int:
    """Start the model on the windows `embed_items` (same `since`) will read, on threads of
    the embedder's own (`prefetch_windows`; an embedder without it: nothing), and return
    the number of windows. Called when governance has committed: the policy check and
    Dagster's step changes then run beside the model instead of before it (ONNX Runtime
    releases the GIL), and `embed_items` takes the result if nothing changed in between
    (the same windows, so the same vectors). Nothing starts when the stored
    vectors are another embedder's (`embed_items` fails on them)."""
    prefetch = getattr(embedder, "prefetch_windows", None)
    if prefetch is None:
        return 0
    try:
        ensure_same_embedder(warehouse, embedder)
    except EmbedderChanged:
        return 0
    if replaces_everything(stored_models(warehouse), embedder):
        since = None  # as `embed_items`
    todo = _stale_items(warehouse, embedder, since)
    windows = item_windows(todo, _neighbour(todo, warehouse))
    if windows:
        prefetch(windows)
    return len(windows)


def embedding_check_since(warehouse: Warehouse, model_name: str, recipe: str | None = None) -> str | None:
    """Where the stale-vector check may start: the moment the last successful run's
    embedding stage checked, when it embedded with the same model and vector recipe
    (`vector_recipe`, default: an embedder without token states)
    (every item written before then got its current vector; a vector goes stale only when
    its item is revised). None for another model or recipe, or no such run: every item."""
    run = last_successful_run(warehouse)
    if run is None:
        return None
    counts = run.get("counts") or {}
    recipe = vector_recipe(None) if recipe is None else recipe
    if (counts.get("item_embeddings.model") != model_name
            or counts.get("item_embeddings.recipe") != recipe):
        return None
    mark = counts.get("item_embeddings.checked_at")
    return str(mark) if mark else None


def embed_items(
    warehouse: Warehouse, embedder: Any, *, hook: Hook | None = None, check_model: bool = True,
    since: str | None = None,
) -> EmbedReport:
    """Embed the active items whose content changed since their stored vector (or that
    have none) with `embedder`; one transaction for the batch. `since`
    (`embedding_check_since`): compare content only for items written at or after it.
    Vectors under an older name of the embedder (`older_names`) are dropped in that
    transaction, every active item embedded first when they are all the store holds
    (`report.replaced` says which); the service keeps serving its snapshot until the run
    publishes one of the new vectors."""
    if check_model:
        ensure_same_embedder(warehouse, embedder)
    checked_at = utcnow()
    stored = stored_models(warehouse)
    older = older_names(stored, embedder)
    if replaces_everything(stored, embedder):
        since = None
        log.info("the store holds vectors of %s, older names of %s: re-embedding every active item",
                 ", ".join(older), embedder.name)
    todo = _stale_items(warehouse, embedder, since)
    active = warehouse.count_items()
    replaced: dict[str, int] = {}
    if not todo:
        if older:
            with warehouse.transaction():
                replaced = warehouse.drop_embeddings(older)
        dims = [d for m, d in warehouse.stored_embedding_models() if m == embedder.name]
        return EmbedReport(model=embedder.name, dim=dims[0] if dims else 0, current=active,
                           checked_at=checked_at, since=since, replaced=replaced)
    vectors = vectors_for(todo, embedder, warehouse)
    dim = int(vectors.shape[1])
    with warehouse.transaction():
        warehouse.put_embeddings(
            [(i.id, embedding_hash(i), v) for i, v in zip(todo, vectors)], model_name=embedder.name, dim=dim
        )
        replaced = warehouse.drop_embeddings(older)
        call_hook(hook, "embed:before_commit")
    if replaced:
        log.info("re-embedded %d items with %s, replacing %s", len(todo), embedder.name,
                 ", ".join(f"{n} vectors of {m}" for m, n in replaced.items()))
    return EmbedReport(model=embedder.name, dim=dim, embedded=len(todo), current=active,
                       checked_at=checked_at, since=since, replaced=replaced)


def reembed_all(settings: Settings, *, embedder: Any = None,
                progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """`loci reembed`: embed every active item with the configured embedder (after the
    embedder was changed), every stored session's messages first read again with the
    configured `message_context_*` (`recontextualise`: after a change of the message-vector
    scheme every message's vector is made the new way, the change a revision with reason
    `message_context`, as a run's), after the one-off forgetting sweep if it is pending
    (`sweep_forgetting`: what the sessions leave out). Other models' vectors are dropped in
    the transaction that stores the new ones (never a store without vectors). Takes the
    warehouse lock like a run. The next consolidation run publishes a snapshot built with
    the new vectors; the service serves its last snapshot until then."""
    from pipelines.embedders import make_embedder

    embedder = store_embedder(embedder or make_embedder(settings), None)
    say = progress or (lambda _msg: None)
    with WarehouseLock(settings.warehouse_path) as lock:
        with Warehouse(settings.warehouse_path) as warehouse:
            previous = warehouse.stored_embedding_models()
            schemes = warehouse.vector_schemes()
            swept = sweep_forgetting(warehouse)  # before the sessions are read again: what they leave out
            items = warehouse.active_items()
            changed = recontextualise(items, ContextWindow.of(settings))
            if changed:
                say(f"reading {len(changed)} messages again with the configured context")
                with warehouse.transaction():
                    warehouse.update_items({i: {"metadata": m} for i, m in changed.items()},
                                           reason="message_context", touch=False,
                                           current={i.id: i for i in items})
                items = warehouse.active_items()
            say(f"re-embedding {len(items)} active items with {embedder.name}")
            vectors = vectors_for(items, embedder, warehouse)
            dim = int(vectors.shape[1]) if len(items) else int(embedder.dim)
            with warehouse.transaction():
                written = warehouse.put_embeddings(
                    [(i.id, embedding_hash(i), v) for i, v in zip(items, vectors)],
                    model_name=embedder.name, dim=dim,
                )
                dropped = warehouse.drop_embeddings([m for m, _ in previous if m != embedder.name])
    return {
        "model": embedder.name,
        "dim": dim,
        "embedded": written,
        "message_vectors": ContextWindow.of(settings).vectors or "",
        "previous_message_vectors": schemes,
        "messages_read_again": len(changed),
        "forgetting_swept": swept,
        "previous_models": [f"{m} ({d})" for m, d in previous],
        "dropped_vectors": dropped,
        "lock_wait_s": round(lock.waited_s, 3),
        "next": "run `loci consolidate` to publish a snapshot built with these vectors",
    }
