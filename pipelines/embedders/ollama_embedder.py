"""The Ollama embedder: vectors from an Ollama server (/api/embed)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from pipelines.embedders.protocol import Embedder, EmbedderUnavailable, check_texts, l2_normalise


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
        batch = check_texts(texts)
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
