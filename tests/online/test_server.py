"""`online.server.serve` (what `loci serve` runs): a real uvicorn process on 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from online.balance import WINDOW_S
from pipelines.settings import Settings
from tests.fakes.ports import free_port

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

ROOT = Path(__file__).resolve().parents[2]


def start(tmp_path: Path, workers: int = 1) -> tuple[subprocess.Popen, str]:
    port = free_port()
    code = (
        "from online.server import serve; from pipelines.settings import Settings; "
        f"serve(Settings(embedder='hash', data_dir={str(tmp_path)!r}, port={port}), log_level='warning', "
        f"workers={workers})"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else "server exited"
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "server did not become ready"
        time.sleep(0.1)


def test_serve_answers_health_and_recall_over_http(tmp_path: Path) -> None:
    proc, base = start(tmp_path)
    try:
        ident = {"user_id": "dana", "project_id": "atlas"}
        body = httpx.post(f"{base}/v1/recall", json={"identity": ident, "query": "anything"}).json()
        assert body["found"] is False and "No memory found" in body["message"]
        assert httpx.get(f"{base}/schema").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert proc.returncode in (0, -15)


def answering_pids(base: str, connections: int, rounds: int = 2) -> list[int]:
    """The worker pid behind each of `connections` keep-alive connections all opened before
    the first request, as concurrent chat loops open them, after `rounds` requests each (a
    connection a busier worker closes is opened again, as HTTP clients do)."""
    host, port = base.removeprefix("http://").split(":")
    opened = [http.client.HTTPConnection(host, int(port), timeout=30) for _ in range(connections)]
    for conn in opened:
        conn.connect()
    pids = [0] * connections
    try:
        for _ in range(rounds):
            for n, conn in enumerate(opened):
                conn.request("GET", "/healthz")
                pids[n] = json.loads(conn.getresponse().read())["pid"]
    finally:
        for conn in opened:
            conn.close()
    return pids


def test_two_workers_share_one_port_and_see_each_others_writes(tmp_path: Path) -> None:
    """`loci serve --workers 2`: two processes answer on one port, each serving part of the
    keep-alive connections opened at once (one shared accept queue gave them all to whichever
    worker woke first); a turn written through one is recalled through whichever worker
    answers next (the shared inbox)."""
    from bench.harness import ServiceProcess

    service = ServiceProcess(Settings(embedder="hash", data_dir=str(tmp_path)), workers=2).start()
    try:
        workers = set(service.serving_pids())
        assert len(workers) == 2
        assert set(answering_pids(service.url, connections=16)) == workers
        # Four chat loops' keep-alive connections end two on each worker, however the
        # kernel's hash placed them at first (all four on one: one time in eight). First
        # the sixteen above leave the workers' counts of recent clients.
        time.sleep(WINDOW_S + 1.5)
        assert sorted(Counter(answering_pids(service.url, connections=4, rounds=60)).values()) == [2, 2]
        ident = {"user_id": "dana", "project_id": "atlas"}
        with httpx.Client(base_url=service.url, timeout=30) as client:
            for n in range(6):
                text = f"The tile cache for region {n} is pinned on edge node kestrel-{n}."
                r = client.post("/v1/turns", json={"identity": ident, "role": "user", "text": text})
                assert r.status_code == 201, r.text
                # Fresh connections: the kernel spreads them over both workers.
                found = httpx.post(f"{service.url}/v1/recall", json={"identity": ident, "query": f"kestrel-{n}"},
                                   timeout=30).json()
                assert any(f"kestrel-{n}" in hit.get("content", "") + hit.get("title", "")
                           for hit in found["hits"]), found
    finally:
        assert service.stop() in (0, -15)


def test_a_replica_with_a_shared_inbox_and_its_own_snapshot_folder_is_warned(tmp_path: Path) -> None:
    """`loci serve --inbox-url postgresql://...` without --snapshots-dir reads snapshots from
    its own data folder, where a consolidation on another machine never publishes."""
    from online.server import replica_warnings
    from pipelines.settings import load_settings

    def settings(**kw):
        return load_settings(config_file=tmp_path / "absent.toml", environ={}, data_dir=str(tmp_path / "d"), **kw)

    (warning,) = replica_warnings(settings(inbox_url="postgresql://loci:secret@db/loci"))
    assert "snapshots_dir 'snapshots' is relative" in warning and "secret" not in warning
    assert replica_warnings(settings(inbox_url="postgresql://db/loci", snapshots_dir=str(tmp_path / "s"))) == []
    assert replica_warnings(settings()) == []  # one machine: the inbox file and snapshots side by side
