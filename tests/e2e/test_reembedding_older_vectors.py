"""A store whose vectors carry an older name of the configured embedder (MiniLM int8 made in
batches before 2026-11-29, `MINILM_INT8_BATCHED`) is re-embedded by the next consolidation
itself, as a user of the HTTP service sees it:

- Before the run, the service configured "auto" serves the old vectors' snapshot: recall
  answers, `/readyz` names no problem (no `loci reembed` asked of anyone).
- The Dagster run (real materialisation, real DuckDB) embeds every active item with the
  configured embedder and drops the old vectors in the same transaction; its
  `item_embeddings` materialisation says which it replaced (`replaced_vectors`: model ->
  rows), and the next run replaces nothing.
- After the reload, recall answers from the new snapshot what was said before and after.

A stand-in encoder replaces the model (`StandInEncoder`: real pooling code, made-up weights).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dagster as dg
import duckdb
import pytest
from litestar.testing import TestClient

import assets.resources as resources
from assets.run import run_consolidation
from online.app import create_app
from pipelines.consolidate import consolidate_once
from pipelines.embedders import MINILM_INT8_BATCHED, MINILM_NAMES, MiniLMEmbedder
from tests.assets.support import make_settings, shared_instance
from tests.e2e.chat import recall, tool, turn
from tests.pipelines.test_pooled_windows import StandInEncoder

DANA = {"user_id": "dana", "project_id": "atlas", "session_id": "s1"}
INT8 = MINILM_NAMES["int8"]


def replaced_vectors(instance: dg.DagsterInstance) -> dict[str, Any]:
    """The last `item_embeddings` materialisation's metadata, values unwrapped."""
    event = instance.get_latest_materialization_event(dg.AssetKey("item_embeddings"))
    assert event is not None and event.asset_materialization is not None
    return {k: getattr(v, "value", v) for k, v in event.asset_materialization.metadata.items()}


def stored_models(settings) -> dict[str, int]:
    """The warehouse's vectors: model name -> rows."""
    with duckdb.connect(str(settings.warehouse_path), read_only=True) as db:
        return dict(db.execute("SELECT model_name, count(*) FROM embeddings GROUP BY 1").fetchall())


def found(client: TestClient, query: str) -> str:
    return "\n".join(h["content"] for h in recall(client, DANA, query, mode="catalog")["hits"])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    stand_in = StandInEncoder().runner_
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MiniLMEmbedder, "_load_runner", lambda self, precision: stand_in)
        patch.setattr(resources, "_CACHE", {})
        settings = make_settings(tmp_path_factory.mktemp("reembed-older"), embedder="minilm")
        app = create_app(settings, embedder=MiniLMEmbedder(cache_size=0), check_interval_ms=0)
        seen: dict[str, Any] = {}
        with TestClient(app) as client:
            turn(client, DANA, "user", "Caroline went to the LGBTQ support group on Tuesday.")
            tool(client, DANA, "memory.propose", {"items": [{
                "type": "fact", "title": "Caroline's support group",
                "content": "Caroline goes to an LGBTQ support group on Tuesdays."}]})
            # The store as a run before 2026-11-29 left it: int8 vectors made in batches.
            before = MiniLMEmbedder(cache_size=0, precision="int8")
            before.name = MINILM_INT8_BATCHED
            assert client.app.state.service.usage.flush()
            consolidate_once(settings, embedder=before)
            assert client.post("/v1/admin/reload").status_code == 200
            seen["old models"] = stored_models(settings)
            seen["old ready"] = client.get("/readyz").json()
            seen["old found"] = found(client, "support group Caroline")

            turn(client, DANA, "user", "Melanie painted a sunrise over the lake last weekend.")
            assert client.app.state.service.usage.flush()
            seen["run"] = run_consolidation(settings, instance=shared_instance())
            seen["metadata"] = replaced_vectors(shared_instance())
            seen["new models"] = stored_models(settings)
            assert client.post("/v1/admin/reload").status_code == 200
            seen["new ready"] = client.get("/readyz").json()
            seen["new found"] = {q: found(client, q) for q in ("support group Caroline", "Melanie painted sunrise")}
            seen["again"] = run_consolidation(settings, instance=shared_instance())
            seen["again metadata"] = replaced_vectors(shared_instance())
        yield seen


def test_before_the_run_the_old_vectors_are_served(store) -> None:
    assert set(store["old models"]) == {MINILM_INT8_BATCHED}, store["old models"]
    assert store["old ready"]["problems"] == [], store["old ready"]
    assert "support group" in store["old found"], store["old found"]


def test_the_run_re_embeds_every_item_and_its_materialisation_says_what_it_replaced(store) -> None:
    assert store["run"]["status"] == "success", store["run"]
    meta, old = store["metadata"], store["old models"][MINILM_INT8_BATCHED]
    assert meta["replaced_vectors"] == {MINILM_INT8_BATCHED: old}, meta
    assert meta["model"] == INT8 and meta["scope"] == "all items", meta
    assert meta["embedded"] == meta["active_items"] == store["new models"][INT8], (meta, store["new models"])
    assert set(store["new models"]) == {INT8}, store["new models"]  # the old vectors dropped


def test_after_the_reload_recall_answers_from_the_new_vectors(store) -> None:
    assert store["new ready"]["problems"] == [], store["new ready"]
    assert store["new ready"]["snapshot_version"] != store["old ready"]["snapshot_version"]
    assert "support group" in store["new found"]["support group Caroline"], store["new found"]
    assert "sunrise" in store["new found"]["Melanie painted sunrise"], store["new found"]


def test_the_next_run_replaces_nothing(store) -> None:
    assert store["again"]["status"] == "success", store["again"]
    assert store["again metadata"]["replaced_vectors"] == {} and store["again metadata"]["embedded"] == 0, \
        store["again metadata"]
