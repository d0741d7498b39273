"""A software engineer's trial (the eleventh new-user trial), over HTTP (Litestar's TestClient
against `loci serve`'s app), MCP (the dispatcher behind `loci mcp`, called as the MCP server
calls it) and the command line (`loci import`). Dev works in two repositories (projects
billing-api and webapp) from a coding assistant over MCP: architecture decisions, one of
them reversed ("we moved from Celery to RQ"), a release date that slips, logs full of
secret-looking non-secrets and one real key pasted by accident; asks what was decided and
said; asks the assistant to forget something; imports an old chat. Promises checked:

- Raw turns come back as evidence of what was said, and only what was said: the turn a
  `memory_propose` call lands to carry its proposals ("[memory.propose] 2 item(s) proposed
  through the tool API") is no conversation (broken: every proposal of the agent made one,
  and `memory_search` listed them as evidence beside, and as high as, what Dev said).
- `loci import` of an old chat (chat JSONL, rows with `role` and `text`) imports the chat
  (broken: every row was skipped with "Object contains unknown field `role`", exit 1,
  nothing landed; only `loci ingest` read it, which nothing pointed to). (An export imported
  again reported every item accepted again: `test_capture_ingest` checks it is counted as
  already in the inbox.)
- An agent asked to forget a memory finds how: `memory_update`'s schema lists the values
  of `validation` and says "retracted" forgets, and a wrong value ("deleted") is a tool error
  naming the right one (broken: the patch was an opaque object and the error said only
  "Invalid enum value 'deleted'"); the forgotten entry is not recalled and its card keeps
  the retraction under Dev's name.
- What a question put straight to memory gets back through the proxy ("what did we decide
  about the queue?", searched before the model is called) is labelled as recall labels it:
  curated memories authoritative, raw turns apart as what was said, a turn that only asked
  left out (broken: every hit was a `[MEMORY]` entry under "These facts are authoritative",
  Dev's turn and his earlier question "What was the queue token?" included, on the OpenAI
  API and Ollama's alike).
- Kept, checked on the way: a reversed decision and a slipped date answer with the current
  value; commit SHAs, UUIDs, sha256 digests and localhost URLs are stored while a live
  Stripe key is refused with a reason naming its kind; the other repository's chat stays
  out.
"""

from __future__ import annotations

import json

import ollama
import openai
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.mcp_server import call as mcp_call
from online.mcp_server import tools as mcp_tools
from online.tools import ToolDispatcher
from pipelines.records import Identity
from tests.assets.support import block
from tests.e2e.chat import consolidate, curated_text, page_text, recall, turn
from tests.online.test_proxy import fake, shared_fake, system_text  # noqa: F401 - fixtures

API = {"user_id": "dev", "project_id": "billing-api", "session_id": "mon", "org_id": "default"}
WEB = {"user_id": "dev", "project_id": "webapp", "session_id": "web", "org_id": "default"}
SHA = "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39"
DIGEST = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
UUID = "123e4567-e89b-12d3-a456-426614174000"
STRIPE = "sk_live_51HqLyjWDarjtT1zdp7dcXYZ9a8b7c6d"  # made up, of a live key's shape


def agent(client, who: dict, name: str, args: dict) -> tuple[bool, dict]:
    """An MCP tool call as `loci mcp` makes it for a coding assistant started as `who`."""
    result = mcp_call(ToolDispatcher(client.app.state.service), name, args, Identity(**who))
    return bool(result.is_error), json.loads(result.content[0].text)


def propose(client, who: dict, *items: dict) -> list[dict]:
    failed, body = agent(client, who, "memory_propose", {"items": [
        {"why_store": "engineering", "confidence": 0.9, **item} for item in items]})
    assert not failed, body
    return body["proposals"]


def test_an_agents_proposals_are_answers_not_evidence_and_the_current_values_win(service) -> None:
    """Monday in billing-api: Dev says the flaky test fails on timezones; the agent proposes
    the queue decision, the release date, a deploy note full of look-alikes and (pasted by
    accident) a live Stripe key. In webapp, another flaky test. Tuesday: the queue moved to
    RQ and the release slipped. Dev's questions get the current values; "what did I say about
    the flaky test?" gets Dev's turn, and no carrier turn of the agent's proposals, in
    `memory_search` and in recall, before and after consolidation."""
    client, settings = service
    turn(client, API, "user", "The flaky test is test_invoice_rounding; it fails about 1 in 20 CI runs.")
    monday = propose(
        client, API,
        {"type": "decision", "title": "Task queue", "content": "Background jobs run on Celery with Redis."},
        {"type": "fact", "title": "Release date", "content": "The billing-api release is on Friday, December 4."},
        {"type": "note", "title": "Last deploy", "content": f"Deployed commit {SHA} as image {DIGEST}; "
                                                             f"request {UUID}; db postgres://localhost:5432/billing."},
        {"type": "fact", "title": "Stripe", "content": f"The Stripe live key is {STRIPE}."},
    )
    assert [p["action"] for p in monday] == ["accept", "accept", "accept", "reject"], monday
    assert "stripe key" in " ".join(monday[3]["reasons"]) and "sk_live" not in json.dumps(monday[3])
    turn(client, WEB, "user", "In webapp the flaky test is test_login_redirect; Playwright times out.")
    propose(client, WEB, {"type": "decision", "title": "Test runner", "content": "Webapp tests run on Playwright."})
    tuesday = {**API, "session_id": "tue"}
    turn(client, tuesday, "user", "We moved from Celery to RQ, and the release slipped to Tuesday.")
    moved = propose(
        client, tuesday,
        {"type": "decision", "title": "Task queue", "content": "Background jobs moved from Celery to RQ."},
        {"type": "fact", "title": "Release date", "content": "The billing-api release slipped to Tuesday, December 8."},
    )
    assert [p["supersedes"] for p in moved] == [[monday[0]["item_id"]], [monday[1]["item_id"]]], moved
    asks = {**API, "session_id": "wed"}
    for moment in ("at once", "after consolidation"):
        queue = curated_text(recall(client, asks, "What did we decide about the queue?"))
        assert "RQ" in queue and "run on Celery" not in queue, (moment, queue)
        release = curated_text(recall(client, asks, "When is the release?"))
        assert "December 8" in release and "December 4" not in release, (moment, release)
        assert SHA in curated_text(recall(client, asks, "Which commit did we deploy last?")), moment

        failed, found = agent(client, asks, "memory_search", {"query": "what did I say about the flaky test?"})
        said = [h["content"] for h in found["hits"] if h["type"] == "message"]
        assert not failed and said and "test_invoice_rounding" in said[0], (moment, said)
        assert not any("[memory.propose]" in text for text in said), (moment, said)
        assert "test_login_redirect" not in json.dumps(found), moment  # the other repository's chat
        evidence = recall(client, asks, "What did I say about the flaky test?", mode="hybrid")
        assert "[memory.propose]" not in json.dumps(evidence), (moment, evidence["injection"])
        assert "test_invoice_rounding" in evidence["injection"].split("CONVERSATION EXCERPTS")[1], moment
        if moment == "at once":
            consolidate(client, settings)


def test_loci_import_of_an_old_chat_lands_the_chat(service, tmp_path, monkeypatch) -> None:
    """Dev exported a chat with an older assistant as chat JSONL and runs `loci import` on
    it (the README's "items out / back in" is what a user reaches for). Every row was skipped
    for its `role`, exit 1. A chat file is imported as the chat it is (with a note saying so):
    its turns are evidence of what was said on its day, its proposal is governed and stored."""
    client, settings = service
    said = {"user_id": "dev", "project_id": "billing-api", "session_id": "old-assistant"}
    rows = [
        {**said, "role": "user", "at": "2026-11-18T10:00:00Z",
         "text": "The flaky test test_invoice_rounding fails whenever TZ is not UTC."},
        {**said, "role": "assistant", "at": "2026-11-18T10:00:05Z", "text": "Pin TZ=UTC in conftest. " + block({
            "type": "decision", "title": "Test timezone", "content": "Tests run with TZ pinned to UTC.",
            "why_store": "fixes the flaky test", "confidence": 0.9})},
    ]
    old = tmp_path / "old-chat.jsonl"
    old.write_text("".join(json.dumps(row) + "\n" for row in rows))
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")  # the store's embedder
    result = CliRunner().invoke(cli_app, ["import", str(old), "--data-dir", str(settings.data_dir)])
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert "chat turns" in output and "2 turns landed, 1 accepted" in output, output
    asks = {**API, "session_id": "thu"}
    found = recall(client, asks, "What did I say about the flaky test?")
    assert "TZ pinned to UTC" in curated_text(found), found["injection"]
    excerpts = found["injection"].split("CONVERSATION EXCERPTS")[1]
    assert "| user | 2026-11-18]" in excerpts and "whenever TZ is not UTC" in excerpts, excerpts
    elsewhere = recall(client, {**WEB, "session_id": "w2"}, "flaky test timezone TZ UTC")
    assert not elsewhere["hits"] and not elsewhere["injection"], elsewhere  # another repository


def test_an_agent_asked_to_forget_finds_how_and_the_card_keeps_the_retraction(service) -> None:
    """Dev asks the assistant to forget a note. `memory_update` described `patch` as any
    object: the agent tried "deleted" and got "Invalid enum value 'deleted'". Its schema
    now lists `validation`'s values and says "retracted" forgets; a wrong value's error names
    them. Forgotten, the note is not found, and its card shows the retraction by dev."""
    client, _ = service
    (spec,) = [t for t in mcp_tools() if t.name == "memory_update"]
    patch = spec.input_schema["properties"]["patch"]
    assert "retracted" in patch["properties"]["validation"]["enum"] and "forget" in spec.description.lower()
    (note,) = propose(client, API, {"type": "note", "title": "Standup", "content": "Dev skips the Friday standup."})
    failed, body = agent(client, API, "memory_update", {"id": note["item_id"], "patch": {"validation": "deleted"}})
    assert failed and body["status"] == 400 and "retracted" in body["error"], body
    failed, body = agent(client, API, "memory_update", {"id": note["item_id"], "patch": {"validation": "retracted"}})
    assert not failed, body
    failed, found = agent(client, API, "memory_search", {"query": "Friday standup"})
    assert note["item_id"] not in json.dumps(found), found
    card = page_text(client.get(f"/ui/items/{note['item_id']}", params=API).text)
    assert "validation retracted" in card and "dev memory.update changed validation" in card, card


def test_a_question_put_to_memory_through_the_proxy_gets_turns_as_evidence_not_facts(proxy, fake) -> None:  # noqa: F811
    """Dev's script talks to the proxy with the `openai` client, an editor plugin with the
    `ollama` one. The model stored the queue decision; Dev said the queue moved and asked
    about a CI token. "What did we decide about the queue?" is searched before the model is
    called: the decision is authoritative, Dev's turn that said it comes as a conversation
    excerpt, the earlier question not at all; before, all three were `[MEMORY]` facts."""
    url = proxy()
    headers = {"X-Loci-User": "dev", "X-Loci-Project": "billing-api"}
    script = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=headers)
    fake.chat_reply = lambda req: "Noted. " + block({
        "type": "decision", "title": "Task queue", "content": "Background jobs run on RQ, moved from Celery.",
        "why_store": "architecture decision", "confidence": 0.9})
    script.chat.completions.create(model="m", messages=[{"role": "user", "content": "The queue moved to RQ."}])
    fake.chat_reply = lambda req: "It was redacted."
    script.chat.completions.create(model="m", messages=[{"role": "user", "content": "What was the queue token?"}])
    fake.chat_reply = lambda req: "From memory."
    question = [{"role": "user", "content": "What did we decide about the queue?"}]
    answer = script.chat.completions.create(model="m", messages=question)
    editor = ollama.Client(host=url, headers=headers)
    editor.chat(model="m", messages=question)
    assert answer.model_extra["loci"]["intercepted"], answer.model_extra
    for path in ("/v1/chat/completions", "/api/chat"):
        handed = system_text([body for at, body in fake.requests if at == path][-1])
        facts, said = handed.split("CONVERSATION EXCERPTS")
        assert "Background jobs run on RQ" in facts and "[MEMORY: msg_" not in facts, (path, handed)
        assert "The queue moved to RQ." in said and "queue token" not in handed, (path, handed)
