"""What every embedder is (`Embedder`), the error when one cannot run
(`EmbedderUnavailable`), and what all of them share: unit rows, the content hash stored
beside a vector, and idempotent embedding (`embed_missing`, as in simonw/llm: only items
whose content hash differs from the stored one are embedded again)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

import numpy as np

from pipelines.records import sha256_text


class EmbedderUnavailable(Exception):
    """The configured embedding backend cannot be reached or loaded."""

    def __init__(self, backend: str, problem: str, hint: str = "") -> None:
        self.backend = backend
        self.problem = problem
        self.hint = hint
        message = f"embedder {backend!r} unavailable: {problem}"
        if hint:
            message += f" (hint: {hint})"
        super().__init__(message)


class Embedder(Protocol):
    """What every embedder offers. Not runtime-checkable on purpose: isinstance() would read
    `dim`, which for Ollama may mean a network call. Embedders subclass it to inherit
    `embed_online`."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for what is stored (warehouse, snapshots): float32, rows L2-normalised."""
        ...

    def embed_online(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for the service's own path (recall questions, items not consolidated
        yet), in the same space as `embed`. An embedder may answer it with a faster model
        (MiniLM: an int8 copy); by default it is `embed`."""
        return self.embed(texts)

    @property
    def online_name(self) -> str:
        """The model `embed_online` runs (vectors shared between processes are keyed by it)."""
        return self.name

    @property
    def stored_names(self) -> tuple[str, ...]:
        """The names stored vectors made by this configuration may carry (`for_store` picks
        one per store), or that it still serves until a store is re-embedded: a snapshot
        built with any of them is served."""
        return (self.name,)

    def for_store(self, stored: Collection[str]) -> "Embedder":
        """The embedder whose vectors a store keeps, given the model names it holds
        vectors of (`()`: a new store, or one being re-embedded). By default this one."""
        return self


def check_texts(texts: Sequence[str]) -> list[str]:
    """A bare string is a classic bug (it would embed each character): refuse it."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("embed() takes a sequence of strings, not a single string; wrap it: [text]")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"embed() texts[{i}] is {type(t).__name__}, expected str")
    return out


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, float32. All-zero rows stay zero (nothing to scale)."""
    mat = np.asarray(vectors, dtype=np.float32)
    if mat.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {mat.shape}")
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    return np.ascontiguousarray(mat / np.maximum(norms, np.float32(1e-12)), dtype=np.float32)


def content_hash_for_embedding(text: str) -> str:
    """Hash of exactly what gets embedded. Stored next to the vector; the same text gives
    the same hash, so unchanged items are not embedded again. (Stored vectors are also
    keyed by embedder name: a different embedder means re-embedding everything.)"""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    return sha256_text(text)


def embed_missing(
    texts_by_id: Mapping[str, str],
    hashes_by_id: Mapping[str, str],
    stored: Mapping[str, str],
    embedder: Embedder,
) -> dict[str, np.ndarray]:
    """Embed only the ids whose content hash differs from the stored one.

    texts_by_id: id -> text to embed; hashes_by_id: id -> current content hash (an id
    missing here gets `content_hash_for_embedding(text)`); stored: id -> hash of the text
    its stored vector was made from. Returns id -> float32 vector (dim,) for the ids that
    were (re-)embedded, in the order of texts_by_id, with one batched embed call.
    """
    todo: list[str] = []
    for item_id, text in texts_by_id.items():
        current = hashes_by_id.get(item_id) or content_hash_for_embedding(text)
        if stored.get(item_id) != current:
            todo.append(item_id)
    if not todo:
        return {}
    vectors = embedder.embed([texts_by_id[i] for i in todo])
    if vectors.shape[0] != len(todo):
        raise ValueError(f"embedder {embedder.name} returned {vectors.shape[0]} rows for {len(todo)} texts")
    return {item_id: vectors[row] for row, item_id in enumerate(todo)}
