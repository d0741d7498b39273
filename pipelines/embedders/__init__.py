"""Text embedders behind one protocol: hash (tests), MiniLM (offline default), Ollama.

Every embedder returns float32 arrays of shape (n, dim) with L2-normalised rows, so inner
product equals cosine similarity and FAISS `IndexFlatIP` / HNSW-IP can be used directly.
An embedder that cannot be reached or loaded raises `EmbedderUnavailable` (backend name and
a hint), never a bare library error.

Modules, one job each: `protocol` (the `Embedder` protocol and what all embedders share,
`embed_missing` included), `hash_embedder`, `names` (the names stored MiniLM vectors carry),
`encoders` (MiniLM's ONNX float32/int8 models and the torch bf16 one), `batching` (how a
call's inputs are run: each alone, several at once; `CpuMeter`), `minilm` (the MiniLM
embedder), `ollama_embedder`, `factory` (the embedder a configuration names). What others
import is re-exported here.
"""

from pipelines.embedders.batching import PREFETCH_CPU, CpuMeter, MiniLMRunner
from pipelines.embedders.encoders import (
    ONNX_PRECISIONS,
    bf16_native,
    minilm_model_dir,
    minilm_onnx_path,
    model_cache_dir,
)
from pipelines.embedders.factory import EMBEDDER_NAMES, build_embedder, make_embedder
from pipelines.embedders.hash_embedder import HashEmbedder
from pipelines.embedders.minilm import BF16_MIN_TEXTS, MiniLMEmbedder
from pipelines.embedders.names import (
    MINILM_DEFAULT_PRECISION,
    MINILM_INT8_BATCHED,
    MINILM_NAME,
    MINILM_NAMES,
    MINILM_PRECISIONS,
)
from pipelines.embedders.ollama_embedder import OllamaEmbedder
from pipelines.embedders.protocol import (
    Embedder,
    EmbedderUnavailable,
    content_hash_for_embedding,
    embed_missing,
    l2_normalise,
)

__all__ = [
    "BF16_MIN_TEXTS", "EMBEDDER_NAMES", "MINILM_DEFAULT_PRECISION", "MINILM_INT8_BATCHED", "MINILM_NAME",
    "MINILM_NAMES", "MINILM_PRECISIONS", "ONNX_PRECISIONS", "PREFETCH_CPU", "CpuMeter", "Embedder",
    "EmbedderUnavailable", "HashEmbedder", "MiniLMEmbedder", "MiniLMRunner", "OllamaEmbedder", "bf16_native",
    "build_embedder", "content_hash_for_embedding", "embed_missing", "l2_normalise", "make_embedder",
    "minilm_model_dir", "minilm_onnx_path", "model_cache_dir",
]
