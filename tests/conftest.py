"""Shared fixtures. Keep this small: the real MiniLM loads once per session (seconds)."""

from __future__ import annotations

import pytest

from pipelines.embedders import HashEmbedder, MiniLMEmbedder


@pytest.fixture(scope="session")
def minilm_embedder() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder(dim=384)
