"""Shared scenario fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import serve


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[TestClient, object]]:
    """The real app over a fresh data directory (hash embedder, extractive merger), and its
    settings (to consolidate with); bad input must never have reached the 500 handler."""
    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        yield client, settings
    assert app.state.internal_errors == 0


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[MemoryService]:
    """A memory service over a fresh data directory (hash embedder), for the proxy scenarios."""
    from pipelines.settings import load_settings

    settings = load_settings(None, environ={}, embedder="hash", data_dir=str(tmp_path / "data"))
    svc = MemoryService(settings, check_interval_ms=0)
    yield svc
    svc.close()


@pytest.fixture
def proxy(fake: FakeOllama, memory: MemoryService) -> Iterator[Callable[[], str]]:
    """proxy() -> URL of a running `loci proxy` over `memory`, in front of the fake Ollama
    (`fake`: the module imports it from tests.online.test_proxy)."""
    with ExitStack() as stack:
        yield lambda: stack.enter_context(serve(create_proxy_app(
            memory.settings, service=memory, upstream=fake.url, config=ProxyConfig(flags_check_interval_s=0))))
