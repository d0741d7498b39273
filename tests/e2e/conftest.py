"""Shared scenario fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[TestClient, object]]:
    """The real app over a fresh data directory (hash embedder, extractive merger), and its
    settings (to consolidate with); bad input must never have reached the 500 handler."""
    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        yield client, settings
    assert app.state.internal_errors == 0
