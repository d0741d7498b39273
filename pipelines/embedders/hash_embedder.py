"""The hash embedder: deterministic word features, no model (tests, and a store without
MiniLM)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from pipelines.embedders.protocol import Embedder, check_texts, l2_normalise

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
        batch = check_texts(texts)
        out = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, text in enumerate(batch):
            for feature, weight in self._features(text):
                bucket, sign = self._bucket(feature)
                out[row, bucket] += sign * weight
        return l2_normalise(out)
