"""The embedder a configuration names (`build_embedder`, `make_embedder`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.embedders.hash_embedder import HashEmbedder
from pipelines.embedders.minilm import MiniLMEmbedder
from pipelines.embedders.names import MINILM_DEFAULT_PRECISION
from pipelines.embedders.ollama_embedder import OllamaEmbedder
from pipelines.embedders.protocol import Embedder

if TYPE_CHECKING:  # pragma: no cover
    from pipelines.settings import Settings

EMBEDDER_NAMES: tuple[str, ...] = ("minilm", "hash", "ollama")


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
