"""Every HTTP endpoint fuzzed from the service's own OpenAPI schema (schemathesis).

The schema is `/schema/openapi.json` of `create_app(...)`, served by the app itself; cases
are generated from it, schema-valid and schema-invalid, and sent through the full ASGI
stack with the app's lifespan running over a real snapshot and inbox. No answer may be a
5xx or reach the generic error handler, every status code, content type and body must be
the one the schema documents, and schema-invalid input must be refused. A bounded number
of examples per operation here; `bench/fuzz.py` runs thousands.
"""

from __future__ import annotations

import random
from pathlib import Path

import msgspec
import pytest
from litestar import Litestar, get, post

from bench.fuzz import fuzz_app
from bench.harness import publish, tenant_items
from online.app import create_app
from online.schemas import TOOL_ACTIONS
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from pipelines.settings import Settings

pytestmark = pytest.mark.slow  # one of the longest files: scheduled first (tests/conftest.py)

EXAMPLES_PER_OPERATION = 50  # half schema-valid, half schema-invalid


def test_every_endpoint_survives_schema_fuzzing_without_5xx_or_schema_violations(tmp_path: Path) -> None:
    settings = Settings(embedder="hash", data_dir=str(tmp_path / "data"), max_body_bytes=50_000)
    embedder = HashEmbedder(settings.embedder_dim)
    # Items owned by the default identity too, so fuzzed callers ({} identity) get real hits.
    owners = [Identity(), Identity(user_id="ann", project_id="atlas")]
    publish(settings, tenant_items(40, random.Random(3), owners), embedder)
    app = create_app(settings, embedder=embedder, check_interval_ms=0)

    report = fuzz_app(app, max_examples=EXAMPLES_PER_OPERATION // 2)

    routes = {f"{method} {route.path}".replace("{item_id:str}", "{item_id}")
              for route in app.routes for method in getattr(route, "methods", ())
              # /ui: HTML pages for people, not in the API schema (tests/online/test_ui.py)
              if not route.path.startswith(("/schema", "/ui")) and method not in ("HEAD", "OPTIONS")}
    assert set(report.operations) == routes  # every endpoint, and only real ones
    assert report.failures == [], "\n\n".join(
        f"{f['operation']} [{f['mode']}] {f['check']} -> {f['status']}\n{f['message']}" for f in report.failures)
    assert report.errors == []
    assert app.state.internal_errors == 0
    # The generator reached the interesting answers, not only 400s.
    assert report.statuses["POST /v1/recall 200"] > 0 and report.statuses["POST /v1/turns 201"] > 0
    assert report.statuses["POST /v1/tools 200"] > 0 and report.statuses["GET /v1/items/{item_id} 404"] > 0
    assert report.total_cases >= EXAMPLES_PER_OPERATION * 4


def test_documented_tool_actions_are_the_dispatched_ones() -> None:
    # online.schemas.TOOL_ACTIONS documents the enum in the schema; it must not drift.
    assert set(TOOL_ACTIONS) == set(ToolDispatcher(service=None).actions)  # type: ignore[arg-type]


class Echo(msgspec.Struct, forbid_unknown_fields=True):
    n: int


def test_the_fuzzer_catches_5xx_and_schema_violations() -> None:
    """The harness itself can fail: an app with a crash and a lying response schema."""

    @post("/echo", sync_to_thread=False)
    def echo(data: Echo) -> Echo:
        if data.n > 10:
            raise RuntimeError("boom")  # -> 500
        return Echo(n=data.n)

    @get("/count", sync_to_thread=False)
    def count() -> Echo:
        return {"n": "many"}  # type: ignore[return-value]  # violates the documented body

    report = fuzz_app(Litestar([echo, count]), max_examples=30)
    found = {(f["operation"], f["check"]) for f in report.failures}
    assert ("POST /echo", "not_a_server_error") in found
    assert ("GET /count", "response_schema_conformance") in found



FUZZ_TOOLS_AFTER_IMPORTS = """
import json, random, sys, tempfile
from pathlib import Path
for name in sys.argv[1:]:
    __import__(name)  # what a test run before the fuzzer may have imported
from bench.fuzz import fuzz_app
from bench.harness import publish, tenant_items
from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from pipelines.settings import Settings

settings = Settings(embedder="hash", data_dir=str(Path(tempfile.mkdtemp()) / "data"), max_body_bytes=50_000)
embedder = HashEmbedder(settings.embedder_dim)
owners = [Identity(), Identity(user_id="ann", project_id="atlas")]
publish(settings, tenant_items(40, random.Random(3), owners), embedder)
report = fuzz_app(create_app(settings, embedder=embedder, check_interval_ms=0), max_examples=25,
                  only=["POST /v1/tools"])
print(json.dumps(sorted(report.statuses.items())))
"""


def test_derandomized_fuzzing_answers_the_same_whatever_was_imported_before() -> None:
    """Hypothesis draws constants from the local modules imported so far; the fuzzer imports
    every project module first, so a test that ran before it in the same process cannot
    change its cases (before, importing the clustering stage took every POST /v1/tools 200
    away, failing the coverage assertion above)."""
    import json
    import subprocess
    import sys

    def start(*imports: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", FUZZ_TOOLS_AFTER_IMPORTS, *imports], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2])

    def statuses(proc: subprocess.Popen) -> list:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        return json.loads(out.strip().splitlines()[-1])

    # Both fuzzers at once (independent processes): the wall time of one on two cores.
    bare_run, after_imports_run = start(), start("pipelines.consolidate.clusters", "bench.locomo")
    try:
        bare = statuses(bare_run)
        assert sum(count for _, count in bare) == 50
        assert statuses(after_imports_run) == bare
    finally:
        for proc in (bare_run, after_imports_run):
            proc.kill()
            proc.communicate()
