"""`online.server.serve` (what `loci serve` runs): a real uvicorn process on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_health_and_recall_over_http(tmp_path: Path) -> None:
    port = free_port()
    code = (
        "from online.server import serve; from pipelines.settings import Settings; "
        f"serve(Settings(embedder='hash', data_dir={str(tmp_path)!r}, port={port}), log_level='warning')"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else "server exited"
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "server did not become ready"
            time.sleep(0.1)
        ident = {"user_id": "dana", "project_id": "atlas"}
        body = httpx.post(f"{base}/v1/recall", json={"identity": ident, "query": "anything"}).json()
        assert body["found"] is False and "No memory found" in body["message"]
        assert httpx.get(f"{base}/schema").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert proc.returncode in (0, -15)
