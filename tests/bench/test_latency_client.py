"""The latency benchmark's lean HTTP client against the real service on loopback."""

from __future__ import annotations

import msgspec
import pytest

from bench.latency import LoopbackClient, _body, _turn_body
from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import make_settings
from tests.online.test_proxy import serve

WHO = Identity(user_id="u1", project_id="p1", session_id="s1")


@pytest.fixture
def url(tmp_path):
    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with serve(app) as base:
        yield base


def test_the_client_writes_and_recalls_over_one_kept_alive_connection(url: str) -> None:
    with LoopbackClient(url) as client:
        status, raw = client.post("/v1/turns", _turn_body(3, WHO))
        assert status == 201, raw
        conn = client._conn
        status, raw = client.post("/v1/recall", _body("which slot did the staging deploy move to?", WHO))
        assert status == 200 and client._conn is conn  # the same connection, kept alive
        hits = msgspec.json.decode(raw)["hits"]
        assert any("slot 3 on rack 3" in h["content"] for h in hits), hits
        status, raw = client.post("/v1/recall", b'{"query": 1}')  # bad input: the status, not an exception
        assert status == 400 and b"query" in raw


def test_a_closed_connection_is_reopened_for_the_next_request(url: str) -> None:
    with LoopbackClient(url) as client:
        assert client.post("/v1/turns", _turn_body(1, WHO))[0] == 201
        client._conn.sock.close()  # the server or the network dropped it
        with pytest.raises(OSError):
            client.post("/v1/turns", _turn_body(2, WHO))
        assert client._conn is None
        assert client.post("/v1/turns", _turn_body(2, WHO))[0] == 201


def test_the_throughput_run_reports_each_workers_cpu_busiest_first() -> None:
    from bench.latency import cpu_shares

    # One worker took every connection (the other idled), a third started during the run.
    assert cpu_shares({11: 5.0, 12: 3.0}, {11: 5.05, 12: 12.5, 13: 0.4}) == [9.5, 0.4, 0.05]
