"""The integration loop (capture, govern, consolidate, recall), end to end on real parts (SQLite inbox, FAISS
snapshot, Litestar over HTTP semantics), with a scripted fake LLM:

1. the LLM proposes memory -> the governor accepts or rejects -> accepted items are
   recalled in the next turn (injection block and catalog);
2. a recall request triggers the memory.search flow (from the user's phrasing and from a
   model tool call) and the answer contains nothing that is not in memory; when memory
   holds nothing, the answer says so instead of the model's improvisation;
3. the same loop through the HTTP API, with the write and the recall on two app
   instances ("workers") sharing one inbox, and after consolidation publishes a snapshot.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.middleware import MemoryMiddleware
from online.state import MemoryService, embedding_text
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from pipelines.settings import Settings
from pipelines.snapshot import build_snapshot

DANA = Identity(user_id="dana", project_id="atlas", session_id="monday")
DANA_LATER = Identity(user_id="dana", project_id="atlas", session_id="tuesday")
SECRET = "AKIAIOSFODNN7EXAMPLE"
HALLUCINATION = "I am fairly sure it is 99 ms."
MEMORY_ENTRY = re.compile(r"\[MEMORY: [^\]]*\]\n[^\n]*\n(.*?)\n\[/MEMORY\]", re.S)


class FakeModel:
    """A deterministic stand-in for the chat model.

    - "Remember: X" -> acknowledges and proposes X (plus, carelessly, a credential);
    - "Use your tools ..." -> calls memory.search;
    - tool results or a READ-ONLY memory block in context -> answers by quoting them;
    - anything else -> improvises (a hallucination the middleware must never let through
      when the user asked for recall).
    """

    def __init__(self) -> None:
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str | dict:
        self.calls.append(messages)
        last_user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        tool_hits = [h for m in messages if m["role"] == "tool" for h in json.loads(m["content"]).get("hits", [])]
        if tool_hits:
            return " ".join(h["content"] for h in tool_hits)
        if last_user.startswith("Remember:"):
            fact = last_user.removeprefix("Remember:").strip()
            block = json.dumps([
                {"type": "decision", "title": "Tile latency budget", "content": fact, "tags": ["latency"]},
                {"type": "fact", "title": "Deploy credential", "content": f"deploy with key {SECRET}"},
            ])
            return f"Noted. <MEMORY_PROPOSALS_JSON>{block}</MEMORY_PROPOSALS_JSON>"
        if last_user.startswith("Use your tools"):
            topic = last_user.split(":", 1)[1].strip()
            return {"message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call-1", "function": {"name": "memory_search", "arguments": json.dumps({"query": topic})}}]}}
        memory = "\n".join(m["content"] for m in messages if m["role"] == "system")
        quoted = MEMORY_ENTRY.findall(memory)
        if quoted:
            return " ".join(q.strip() for q in quoted)
        return HALLUCINATION


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(embedder="hash", data_dir=str(tmp_path))


@pytest.fixture
def service(settings: Settings):
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    yield svc
    svc.close()


def stored_contents(service: MemoryService, who: Identity) -> list[str]:
    return [it.content for it in service.view().visible_items(who)]  # raw turns are memory too


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


def test_propose_govern_store_then_recall_next_turn(service: MemoryService) -> None:
    model = FakeModel()
    mw = MemoryMiddleware(service, model)

    # 1. The model proposes; the governor accepts the decision and rejects the credential.
    first = mw.chat([{"role": "user", "content": "Remember: the tile latency budget is 40 ms at p95."}], DANA)
    assert first.text == "Noted."
    verdicts = {p.title: p.action for p in first.proposals}
    assert verdicts["Tile latency budget"] == "accept" and list(verdicts.values()).count("reject") == 1
    accepted = next(p.item_id for p in first.proposals if p.action == "accept")

    # 2. Next turn, another session of the same project: the item is injected and catalogued.
    second = mw.chat([{"role": "user", "content": "Which latency budget applies to map tiles?"}], DANA_LATER)
    assert accepted in second.injected_ids
    assert "the tile latency budget is 40 ms at p95." in second.text
    assert HALLUCINATION not in second.text
    assert accepted in [e["id"] for e in second.catalog["memory_catalog"]]
    # The rejected credential is nowhere: not injected, not stored, not in the inbox.
    assert all(SECRET not in json.dumps(call) for call in model.calls)
    assert SECRET not in json.dumps([e.payload for e in service.inbox.read_after(0)])


def test_recall_requests_answer_only_from_memory(service: MemoryService) -> None:
    model = FakeModel()
    mw = MemoryMiddleware(service, model)
    mw.chat([{"role": "user", "content": "Remember: the tile latency budget is 40 ms at p95."}], DANA)

    # Recall phrasing from the user: memory.search runs before the model speaks.
    asked = mw.chat([{"role": "user", "content": "What do we know about the tile latency budget?"}], DANA_LATER)
    assert asked.intercepted and asked.tool_rounds[0].action == "memory.search" and asked.found_in_memory
    memory = stored_contents(service, DANA_LATER)
    assert sentences(asked.text) and all(any(s in m for m in memory) for s in sentences(asked.text))

    # A memory.search tool call from the model: run, then the model is re-asked with results.
    tooled = mw.chat([{"role": "user", "content": "Use your tools to answer: tile latency budget"}], DANA_LATER)
    assert [r.origin for r in tooled.tool_rounds] == ["model-tool-call"] and tooled.llm_calls == 2
    memory = stored_contents(service, DANA_LATER)
    assert sentences(tooled.text) and all(any(s in m for m in memory) for s in sentences(tooled.text))

    # Nothing in memory: the answer says so; the model's improvisation never reaches the user.
    for question in ("What do we know about the zebra migration?",
                     "Use your tools to answer: zebra migration routes"):
        miss = mw.chat([{"role": "user", "content": question}], DANA_LATER)
        assert miss.found_in_memory is False and "nothing in memory" in miss.text
        assert HALLUCINATION not in miss.text and "99" not in miss.text

    # Another tenant asking the same question gets nothing from Dana's project.
    stranger = Identity(user_id="eve", project_id="borealis", session_id="x")
    other = mw.chat([{"role": "user", "content": "What do we know about the tile latency budget?"}], stranger)
    assert other.found_in_memory is False and "40 ms" not in other.text


def test_http_loop_across_two_workers_and_a_published_snapshot(settings: Settings) -> None:
    ident = {"user_id": "dana", "project_id": "atlas", "session_id": "monday", "org_id": "default"}
    worker_a = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    worker_b = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(worker_a) as a, TestClient(worker_b) as b:
        assert b.post("/v1/recall", json={"identity": ident, "query": "tile latency budget"}).json()["found"] is False
        reply = FakeModel()([{"role": "user", "content": "Remember: the tile latency budget is 40 ms at p95."}])
        captured = a.post("/v1/turns", json={"identity": ident, "role": "assistant", "text": reply}).json()
        accepted = [p["item_id"] for p in captured["proposals"] if p["action"] == "accept"]
        assert captured["visible_text"] == "Noted." and len(accepted) == 1

        # The other worker recalls it on its next request, from the shared inbox.
        recalled = b.post("/v1/recall", json={"identity": ident, "query": "which latency budget for tiles?"}).json()
        assert recalled["found"] and recalled["hits"][0]["id"] == accepted[0]
        assert recalled["hits"][0]["source"] == "delta" and "40 ms at p95" in recalled["injection"]
        search = b.post("/v1/tools", json={"action": "memory.search", "identity": ident,
                                           "args": {"query": "tile latency budget"}}).json()
        assert search["result"]["hits"][0]["id"] == accepted[0]

        # Consolidation publishes a snapshot holding the item: both workers swap to it and
        # serve it from the snapshot now (the delta drops it), with no gap in between.
        service = worker_b.state.service
        view = service.view()
        item = view.delta.items[accepted[0]]
        emb = HashEmbedder(settings.embedder_dim)
        manifest = build_snapshot(settings.snapshots_path, [item], np.asarray(emb.embed([embedding_text(item)])),
                                  embedder_name=emb.name, dim=emb.dim, watermark=service.inbox.max_seq())
        for client in (a, b):
            deadline = time.monotonic() + 10  # each worker loads it in the background
            while True:
                body = client.post("/v1/recall", json={"identity": ident, "query": "tile latency budget"}).json()
                assert body["found"]  # served all along: from the delta, then from the snapshot
                if body["snapshot_version"] == manifest.version or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            assert body["snapshot_version"] == manifest.version
            assert body["hits"][0]["id"] == accepted[0] and body["hits"][0]["source"] == "snapshot"
    assert worker_a.state.internal_errors == 0 and worker_b.state.internal_errors == 0
