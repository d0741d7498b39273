"""The Granite merge path with the official `ollama` client against the fake Ollama server:
a well-formed answer is used; malformed JSON, a timeout and a refused connection fall back
to the extractive merge and say so in the merged item's metadata."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from assets.resources import resources_from_settings
from assets.run import run_consolidation
from pipelines import consolidate as stages
from pipelines.embedders import HashEmbedder
from pipelines.inbox import Inbox
from pipelines.policy import Policy
from pipelines.warehouse import Warehouse
from tests.assets.support import BATCH_1, ingest, make_settings, shared_instance
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.ports import closed_port_url

MODEL = "granite3.2:2b"
MERGED = {
    "title": "Map tile latency budget",
    "content": "Map tiles must render within 50 ms at p95.",
    "type": "fact",
    "tags": ["latency"],
    "entities": ["tile server"],
}


def test_well_formed_granite_answer_is_used(tmp_path):
    with FakeOllama() as fake:
        fake.chat_reply = lambda req: json.dumps(MERGED)
        settings = make_settings(tmp_path, merger="ollama", ollama_host=fake.url)
        ingest(settings, BATCH_1)
        summary = run_consolidation(settings, instance=shared_instance())
        chats = [body for path, body in fake.requests if path == "/api/chat"]
    assert summary["status"] == "success" and set(summary["checks"].values()) == {"passed"}
    assert (summary["merged"], summary["merged_llm"], summary["merged_fallback"]) == (1, 1, 0)
    assert len(chats) == 1 and chats[0]["model"] == MODEL
    assert chats[0]["format"]["required"]  # structured output: a JSON schema was sent
    assert "tile latency budget" in chats[0]["messages"][-1]["content"].lower()  # the cluster
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        (merged,) = wh.active_items(tier="mtm", types=["fact"])
    assert (merged.title, merged.content) == (MERGED["title"], MERGED["content"])
    assert merged.metadata["merger"] == MODEL and merged.metadata["fallback_reason"] is None
    assert merged.provenance.is_present() and len(merged.metadata["merged_from"]) >= 2


def prepared(tmp_path, **overrides):
    """Landed, governed, embedded and clustered (stage functions, no Dagster)."""
    settings = make_settings(tmp_path, **overrides)
    ingest(settings, BATCH_1)
    embedder = HashEmbedder(384)
    with Warehouse(settings.warehouse_path) as wh, Inbox(settings.inbox_path) as inbox:
        stages.land_events(inbox, wh)
        stages.govern_items(inbox, wh, Policy(settings), settings=settings)
        stages.embed_items(wh, embedder)
        clusters = stages.cluster_stm(wh, embedder.name, settings).clusters
    assert clusters
    return settings, clusters, embedder


@pytest.mark.parametrize(
    "scenario, expected_reason",
    [("malformed", "invalid JSON"), ("timeout", "timeout"), ("refused", "unreachable")],
)
def test_bad_or_missing_granite_falls_back_and_says_why(tmp_path, scenario, expected_reason):
    with FakeOllama() as fake:
        fake.chat_reply = lambda req: '{"title": "half an object", "content": '
        url = closed_port_url() if scenario == "refused" else fake.url
        if scenario == "timeout":
            fake.chat_reply = lambda req: json.dumps(MERGED)
            fake.delay_s = 2.0
        settings, clusters, embedder = prepared(tmp_path, merger="ollama", ollama_host=url, merge_timeout_s=0.5)
        merger = resources_from_settings(settings)["merger"].get()  # what the asset uses
        with Warehouse(settings.warehouse_path) as wh:
            report = stages.merge_clusters(wh, clusters, merger, Policy(settings), embedder,
                                           settings=settings, now=datetime.now(timezone.utc))
            merged = wh.get_items(report.new_ids)
        asked = [p for p, _ in fake.requests if p == "/api/chat"]
    assert report.merged == len(clusters) == report.by_fallback and report.by_llm == 0
    assert all(expected_reason in reason for reason in report.fallback_reasons)
    for item in merged:
        assert item.metadata["merger"] == "extractive-fallback"
        assert expected_reason in item.metadata["fallback_reason"]
        assert item.tier == "mtm" and "50 ms" in item.content  # the extractive merge kept the fact
    if scenario == "malformed":
        assert len(asked) == 2 * len(clusters)  # one retry per cluster, then the fallback
    if scenario == "refused":
        assert asked == []
