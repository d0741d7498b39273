"""The Ollama proxy as a real server on 127.0.0.1 (uvicorn in a thread), driven with the
official `ollama` client, in front of the Ollama-compatible `FakeOllama`.

What an Ollama user gets by changing one base URL: memory injected before the call,
proposals stripped and landed, recall questions answered from memory, streaming kept (a
proposal block split across chunks never reaches the client), every other endpoint
byte-identical, clear errors when Ollama is down or slow, and nothing landed twice.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import msgspec
import ollama
import pytest
import uvicorn

from online.proxy import ProxyConfig, create_proxy_app
from online.proxy.config import NOTHING_FOUND_NOTE, RESULTS_INSTRUCTION, SUMMARY_INSTRUCTION
from online.proxy.identity import conversation_session
from online.proxy.upstream import UpstreamTimeouts
from online.state import MemoryService
from pipelines.proposals import parse_assistant_output
from pipelines.records import Identity
from pipelines.settings import Settings
from tests.fakes.ollama_server import FakeOllama
from tests.fakes.ports import closed_port_url

WHO = Identity(user_id="dana", project_id="atlas")
HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas"}
MODEL = "llama3.2"
DUCKDB = {"type": "decision", "title": "Warehouse engine", "content": "We use DuckDB for the warehouse.",
          "tags": ["db"]}


def block(*items: dict[str, Any]) -> str:
    return f"<MEMORY_PROPOSALS_JSON>{json.dumps(list(items))}</MEMORY_PROPOSALS_JSON>"


def system_text(req: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in req.get("messages", []) if m["role"] == "system")


_ENTRY = re.compile(r"\[MEMORY: [^\]]*\]\n[^\n]*\n(.*?)\n\[/MEMORY\]", re.S)


def tool_hits(req: dict[str, Any]) -> list[str]:
    return [h["content"] for m in req.get("messages", []) if m["role"] == "tool"
            for h in json.loads(m["content"]).get("hits", [])]


def answer_from_memory(req: dict[str, Any], *, tools_only: bool = False) -> str:
    """A stand-in model that answers only from what memory handed it (READ-ONLY blocks in
    system messages, or memory tool results)."""
    contents = ([] if tools_only else _ENTRY.findall(system_text(req))) + tool_hits(req)
    if contents:
        return "From memory: " + " ".join(contents)
    if "memory holds nothing" in system_text(req):
        return "Memory does not contain that."
    return "I have no idea."


def bound_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


@contextmanager
def serve(app: Any, lifespan: str = "on", sock: socket.socket | None = None) -> Iterator[str]:
    """Run an ASGI app on a real socket (127.0.0.1, free port) in a thread."""
    sock = sock or bound_socket()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan,
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "proxy did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeOllama]:
    with FakeOllama() as f:  # one server for the module: stopping one costs ~0.5 s
        yield f


@pytest.fixture
def fake(shared_fake: FakeOllama) -> FakeOllama:
    """The shared fake, with its script and request log reset for this test."""
    fresh = FakeOllama()
    for name in ("chat_reply", "generate_reply", "delay_s", "fail_status", "stream_chunk_chars"):
        setattr(shared_fake, name, getattr(fresh, name))
    with shared_fake._lock:
        shared_fake.requests.clear()
    return shared_fake


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(embedder="hash", data_dir=str(tmp_path))


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    svc = MemoryService(settings, check_interval_ms=0)
    yield svc
    svc.close()


@pytest.fixture
def proxy(fake: FakeOllama, settings: Settings, service: MemoryService) -> Iterator[Callable[..., str]]:
    """proxy(upstream=None, settings_changes=None, **config) -> base URL of a running proxy in
    front of `fake` (`settings_changes`: Settings fields to change, e.g. timeouts)."""
    with ExitStack() as stack:
        def start(upstream: str | None = None, settings_changes: dict[str, Any] | None = None,
                  **config: Any) -> str:
            app = create_proxy_app(msgspec.structs.replace(settings, **(settings_changes or {})), service=service,
                                   upstream=upstream or fake.url, config=ProxyConfig(**config))
            return stack.enter_context(serve(app))

        yield start


def client(url: str, **headers: str) -> ollama.Client:
    return ollama.Client(host=url, headers={**HEADERS, **headers})


def events(service: MemoryService, kind: str | None = None) -> list[Any]:
    return [e for e in service.inbox.read_after(0) if kind is None or e.kind == kind]


def chats(fake: FakeOllama) -> list[dict[str, Any]]:
    return [body for path, body in fake.requests if path == "/api/chat"]


# -- the four hooks ------------------------------------------------------------------------------


def test_memory_is_injected_read_only_before_the_call(proxy, fake, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    url = proxy()
    fake.chat_reply = lambda req: "It is DuckDB."
    reply = client(url).chat(model=MODEL, stream=False, messages=[
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Which database engine do we use for the warehouse?"}])
    assert reply.message.content == "It is DuckDB."
    sent = chats(fake)[-1]["messages"]
    # The client's system message stays first; memory follows it, the user's turn stays last.
    assert sent[0] == {"role": "system", "content": "You are terse."}
    assert sent[-1]["content"] == "Which database engine do we use for the warehouse?"
    memory = sent[1]["content"]
    assert sent[1]["role"] == "system" and memory.startswith("PERSISTENT MEMORY (READ-ONLY)")
    assert "We use DuckDB for the warehouse." in memory and "| decision | stm |" in memory
    assert any("<MEMORY_PROPOSALS_JSON>" in m["content"] for m in sent if m["role"] == "system")
    assert chats(fake)[-1]["model"] == MODEL


def test_proposals_are_stripped_and_landed_in_the_inbox(proxy, fake, service) -> None:
    url = proxy()
    narrated = 'memory_save(topic="Deploy region", content="We deploy to eu-west-1.", importance=8)'
    fake.chat_reply = lambda req: f"Understood, DuckDB. {block(DUCKDB)}\n{narrated}"
    raw_messages = [{"role": "user", "content": "Let's use DuckDB and deploy to eu-west-1."}]
    raw = httpx.post(f"{url}/api/chat", headers=HEADERS, json={
        "model": MODEL, "stream": False, "messages": raw_messages}).json()
    assert raw["message"]["content"] == "Understood, DuckDB."
    assert raw["done"] is True and raw["eval_count"] == 20  # the upstream's own counters
    titles = {p["title"]: p["action"] for p in raw["loci"]["proposals"]}
    assert titles == {"Warehouse engine": "accept", "Deploy region": "accept"}
    proposals = events(service, "proposal")
    assert sorted(e.payload["proposal"]["title"] for e in proposals) == ["Deploy region", "Warehouse engine"]
    # No X-Loci-Session: the conversation is the session (named by its first user message).
    assert {e.identity for e in proposals} == {Identity(user_id="dana", project_id="atlas",
                                                        session_id=conversation_session(raw_messages, "atlas"))}
    turns = events(service, "turn")
    assert [t.payload["role"] for t in turns] == ["user", "assistant"]
    assert "MEMORY_PROPOSALS_JSON" not in turns[1].payload["text"]
    found = service.recall("Which region do we deploy to?", WHO)
    assert any("eu-west-1" in h.item.content and h.item.type != "message" for h in found.hits)


def test_a_recall_question_is_answered_from_memory_in_the_next_turn(proxy, fake, service) -> None:
    url = proxy()
    c = client(url)
    fake.chat_reply = lambda req: "Good choice. " + block(DUCKDB)
    first = c.chat(model=MODEL, stream=False,
                   messages=[{"role": "user", "content": "For the warehouse we settled on DuckDB."}])
    assert first.message.content == "Good choice."
    fake.chat_reply = answer_from_memory
    history = [{"role": "user", "content": "For the warehouse we settled on DuckDB."},
               {"role": "assistant", "content": first.message.content},
               {"role": "user", "content": "What did we decide about the warehouse engine?"}]
    second = c.chat(model=MODEL, stream=False, messages=history)
    assert "We use DuckDB for the warehouse." in second.message.content
    assert RESULTS_INSTRUCTION in system_text(chats(fake)[-1])
    searches = [e for e in events(service, "audit") if e.payload["action"] == "memory.search"]
    assert searches, "the recall question ran a memory search"


def test_a_recall_question_with_nothing_in_memory_is_not_improvised(proxy, fake, service) -> None:
    url = proxy()
    fake.chat_reply = answer_from_memory
    raw = httpx.post(f"{url}/api/chat", headers=HEADERS, json={
        "model": MODEL, "stream": False,
        "messages": [{"role": "user", "content": "What did we decide about the logo colour?"}]}).json()
    assert raw["message"]["content"] == "Memory does not contain that."
    assert NOTHING_FOUND_NOTE.format(topic=repr("the logo colour")) in system_text(chats(fake)[-1])
    assert raw["loci"]["intercepted"] is True and raw["loci"]["found_in_memory"] is False


@pytest.mark.parametrize("stream", [False, True])
def test_a_memory_search_tool_call_is_answered_and_the_model_re_asked(proxy, fake, service, stream) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    service.settings.flags["memory_tools"] = True
    url = proxy()

    def model(req: dict[str, Any]) -> str | dict[str, Any]:
        if not any(m["role"] == "tool" for m in req["messages"]):
            return {"content": "", "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "warehouse engine"}}}]}
        return answer_from_memory(req, tools_only=True)

    fake.chat_reply = model
    weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                                "parameters": {"type": "object", "properties": {}}}}
    parts = client(url).chat(model=MODEL, stream=stream, tools=[weather],
                             messages=[{"role": "user", "content": "Remind me which engine runs our warehouse"}])
    parts = list(parts) if stream else [parts]
    text = "".join(p.message.content or "" for p in parts)
    assert text == "From memory: We use DuckDB for the warehouse."
    assert not any(p.message.tool_calls for p in parts), "Loci's own tool call never reaches the client"
    first, second = chats(fake)[-2:]
    names = [t["function"]["name"] for t in first["tools"]]
    assert names[0] == "get_weather" and "memory_search" in names and "memory_propose" in names
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_msgs and json.loads(tool_msgs[0]["content"])["found"] is True
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "memory_search"


def test_a_tool_search_that_finds_nothing_tells_the_model_so(proxy, fake, service) -> None:
    service.settings.flags["memory_tools"] = True
    url = proxy()

    def model(req: dict[str, Any]) -> str | dict[str, Any]:
        if not any(m["role"] == "tool" for m in req["messages"]):
            return {"content": "", "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "quarterly budget"}}}]}
        return answer_from_memory(req)

    fake.chat_reply = model
    reply = client(url).chat(model=MODEL, stream=False,
                             messages=[{"role": "user", "content": "How big is the quarterly budget?"}])
    assert reply.message.content == "Memory does not contain that."
    assert "memory holds nothing about 'quarterly budget'" in system_text(chats(fake)[-1])


def test_recall_phrasing_in_the_model_answer_triggers_a_search_and_a_re_ask(proxy, fake, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(
        {"type": "fact", "title": "Deployment region", "content": "Production runs in eu-west-1."}))
    service.settings.flags["context_injection"] = False  # nothing injected up front
    url = proxy()
    fake.chat_reply = lambda req: ("recall deployment region" if len(chats(fake)) == 1
                                   else answer_from_memory(req))
    parts = list(client(url).chat(model=MODEL, stream=True,
                                  messages=[{"role": "user", "content": "Where does prod live?"}]))
    text = "".join(p.message.content or "" for p in parts)
    assert text == "From memory: Production runs in eu-west-1."  # the request is Loci's, not the user's
    assert len(chats(fake)) == 2 and RESULTS_INSTRUCTION in system_text(chats(fake)[-1])
    assert "PERSISTENT MEMORY" not in system_text(chats(fake)[0])  # the flag was honoured


def test_client_tools_and_their_calls_pass_through_untouched(proxy, fake) -> None:
    url = proxy()
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    call = {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    fake.chat_reply = lambda req: {"content": "", "tool_calls": [call]}
    for stream in (False, True):
        body = {"model": MODEL, "stream": stream, "tools": [weather],
                "messages": [{"role": "user", "content": "Weather in Paris?"}]}
        r = httpx.post(f"{url}/api/chat", headers=HEADERS, json=body)
        objs = [json.loads(line) for line in r.text.splitlines()] if stream else [r.json()]
        calls = [c for o in objs for c in o["message"].get("tool_calls", [])]
        assert calls == [call]
        assert chats(fake)[-1]["tools"] == [weather]  # memory tools are off by default


# -- streaming -----------------------------------------------------------------------------------


def test_streaming_never_shows_a_split_proposal_block(proxy, fake, service) -> None:
    url = proxy()
    reply = (f"The warehouse uses DuckDB. {block(DUCKDB)} Ask me anything else. "
             'memory_save(topic="Owner", content="Dana owns the warehouse.")')
    fake.chat_reply = lambda req: reply
    for chunk in range(1, 8):  # the block and the narrated save split every possible way
        fake.stream_chunk_chars = chunk
        parts = list(client(url).chat(model=MODEL, stream=True, messages=[
            {"role": "user", "content": f"Warehouse status? (run {chunk})"}]))
        pieces = [p.message.content or "" for p in parts]
        text = "".join(pieces)
        assert text == parse_assistant_output(reply).visible_text, chunk
        assert text.startswith("The warehouse uses DuckDB.") and text.endswith("Ask me anything else.")
        assert "MEMORY" not in text and "memory_save" not in text and "<" not in text
        assert len([p for p in pieces if p]) > 3, "text arrives in pieces, not all at the end"
        final = parts[-1]
        assert final.done and final.eval_count == 20 and final.done_reason == "stop"
        titles = [e.payload["proposal"]["title"] for e in events(service, "proposal")]
        assert sorted(titles[-2:]) == ["Owner", "Warehouse engine"] and len(titles) == 2 * chunk


def test_streamed_text_before_a_block_arrives_before_the_block_is_complete(proxy, fake) -> None:
    url = proxy()
    fake.stream_chunk_chars = 3
    fake.chat_reply = lambda req: "Hello there, friend. " + block(DUCKDB)
    lines = []
    with httpx.stream("POST", f"{url}/api/chat", headers=HEADERS,
                      json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}) as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        for line in r.iter_lines():
            lines.append(json.loads(line))
    shown = [o["message"]["content"] for o in lines if not o["done"] and o["message"]["content"]]
    assert "".join(shown) + lines[-1]["message"]["content"] == "Hello there, friend."
    assert len(shown) >= 5  # 3-character pieces, passed on one by one
    assert lines[-1]["done"] and "loci" in lines[-1]


def test_generate_gets_memory_too(proxy, fake, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    url = proxy()
    fake.generate_reply = lambda req: "DuckDB. " + block({"type": "note", "title": "Asked", "content": "Dana asked."})
    c = client(url)
    out = c.generate(model=MODEL, prompt="Which engine runs the warehouse?", stream=False)
    assert out.response == "DuckDB."
    prompt = [b for p, b in fake.requests if p == "/api/generate"][-1]["prompt"]
    assert prompt.startswith("PERSISTENT MEMORY (READ-ONLY)") and "We use DuckDB" in prompt
    assert prompt.endswith("Which engine runs the warehouse?")
    streamed = "".join(p.response for p in c.generate(model=MODEL, prompt="And the engine again?", stream=True))
    assert streamed == "DuckDB."
    assert sorted(e.payload["proposal"]["title"] for e in events(service, "proposal")) == [
        "Asked", "Asked", "Warehouse engine"]


def test_structured_output_is_never_rewritten(proxy, fake) -> None:
    url = proxy()
    fake.chat_reply = lambda req: '{"name": "memory.propose", "arguments": {"items": []}}'
    reply = client(url).chat(model=MODEL, stream=False, format="json",
                             messages=[{"role": "user", "content": "Give me JSON"}])
    assert reply.message.content == '{"name": "memory.propose", "arguments": {"items": []}}'
    assert "MEMORY_PROPOSALS_JSON" not in system_text(chats(fake)[-1])


# -- pass-through --------------------------------------------------------------------------------


def test_other_endpoints_are_forwarded_byte_identical(proxy, fake) -> None:
    url = proxy()
    calls = [("GET", "/api/tags", None), ("GET", "/api/version", None), ("GET", "/", None),
             ("POST", "/api/show", {"model": MODEL}), ("POST", "/api/embed", {"model": "e", "input": ["a", "b"]}),
             ("POST", "/api/pull", {"model": MODEL}), ("POST", "/api/pull", {"model": MODEL, "stream": False}),
             ("GET", "/api/nope?x=1", None), ("HEAD", "/", None)]
    with httpx.Client() as http:
        for method, path, body in calls:
            via = http.request(method, url + path, json=body)
            direct = http.request(method, fake.url + path, json=body)
            assert (via.status_code, via.content) == (direct.status_code, direct.content), path
            assert via.headers.get("content-type") == direct.headers.get("content-type"), path
    assert client(url).list().models[0].model == "granite3.2:2b"


def test_enabled_off_is_a_pure_pass_through(proxy, fake, service) -> None:
    service.settings.flags["enabled"] = False
    url = proxy()
    reply = "Sure. " + block(DUCKDB)
    fake.chat_reply = lambda req: reply
    for stream in (False, True):
        body = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hello"}]}
        via = httpx.post(f"{url}/api/chat", headers=HEADERS, json=body)
        assert chats(fake)[-1] == body  # not a byte added to what Ollama sees
        direct = httpx.post(f"{fake.url}/api/chat", json=body)
        assert via.content == direct.content
        objs = [json.loads(line) for line in via.text.splitlines()]
        assert "".join(o["message"]["content"] for o in objs) == reply  # the block included
    assert events(service) == []


# -- outages, retries ----------------------------------------------------------------------------


def test_an_unreachable_upstream_gives_a_clear_error_and_the_proxy_stays_up(proxy, service) -> None:
    url = proxy(upstream=closed_port_url())
    c = client(url)
    for stream in (False, True):
        with pytest.raises(ollama.ResponseError) as err:
            list(c.chat(model=MODEL, stream=True, messages=[{"role": "user", "content": "hi"}])) if stream \
                else c.chat(model=MODEL, stream=False, messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502 and "cannot connect to upstream Ollama" in err.value.error
    tags = httpx.get(f"{url}/api/tags")
    assert tags.status_code == 502 and "error" in tags.json()
    assert events(service) == []  # nothing landed without an answer


def test_a_slow_upstream_times_out_then_the_retry_lands_once(proxy, fake, service) -> None:
    url = proxy(settings_changes={"proxy_first_byte_timeout_s": 0.3})
    c = client(url)
    messages = [{"role": "user", "content": "Summarise the warehouse plan."}]
    fake.chat_reply = lambda req: "Plan: DuckDB. " + block(DUCKDB)
    fake.delay_s = 1.0
    for stream in (False, True):
        with pytest.raises(ollama.ResponseError) as err:
            list(c.chat(model=MODEL, stream=True, messages=messages)) if stream \
                else c.chat(model=MODEL, stream=False, messages=messages)
        assert err.value.status_code == 504 and "first-byte limit (0.3 s)" in err.value.error
    assert events(service) == []
    fake.delay_s = 0
    for _ in range(2):  # the client retries the same request: landed once
        assert c.chat(model=MODEL, stream=False, messages=messages).message.content == "Plan: DuckDB."
    assert "".join(p.message.content for p in c.chat(model=MODEL, stream=True, messages=messages)) == "Plan: DuckDB."
    assert [e.payload["role"] for e in events(service, "turn")] == ["user", "assistant"]
    assert len(events(service, "proposal")) == 1


@pytest.mark.parametrize(("limits", "named"), [
    ({"proxy_between_bytes_timeout_s": 0.2}, "between-bytes limit (0.2 s)"),
    ({"proxy_between_bytes_timeout_s": 5.0, "proxy_total_timeout_s": 0.6}, "total limit (0.6 s)"),
])
def test_a_stream_that_stalls_or_runs_too_long_ends_with_the_limit_named(proxy, fake, service, limits, named) -> None:
    # Each streamed piece arrives 0.4 s after the last: under the first-byte limit, over
    # the between-bytes one in the first case; in the second, every gap is allowed but the
    # whole answer (about 2 s) is not.
    url = proxy(settings_changes=limits)
    fake.chat_reply = lambda req: "The plan is DuckDB for the warehouse."
    fake.stream_chunk_chars, fake.chunk_delay_s = 8, 0.4
    with pytest.raises(ollama.ResponseError) as err:
        list(client(url).chat(model=MODEL, stream=True, messages=[{"role": "user", "content": "The plan?"}]))
    assert "timed out" in err.value.error and named in err.value.error
    assert events(service, "proposal") == []
    fake.chunk_delay_s = 0  # the same request answered in time goes through
    said = "".join(p.message.content for p in client(url).chat(
        model=MODEL, stream=True, messages=[{"role": "user", "content": "The plan?"}]))
    assert said == "The plan is DuckDB for the warehouse."


def test_timeouts_come_from_the_settings_and_nonsense_is_refused(settings, service) -> None:
    changed = msgspec.structs.replace(settings, proxy_first_byte_timeout_s=0, proxy_total_timeout_s=30)
    assert UpstreamTimeouts.from_settings(changed) == UpstreamTimeouts(
        connect_s=10.0, first_byte_s=None, between_bytes_s=600.0, total_s=30)
    with pytest.raises(ValueError, match=">= 0 seconds"):
        create_proxy_app(msgspec.structs.replace(settings, proxy_total_timeout_s=-1), service=service)
    with pytest.raises(ValueError, match="connect_s"):
        UpstreamTimeouts(connect_s=0)


def test_a_proxy_pointed_at_itself_reports_a_loop(settings, service) -> None:
    sock = bound_socket()
    own_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with serve(create_proxy_app(settings, service=service, upstream=own_url), sock=sock) as url:
        for r in (httpx.get(f"{url}/api/tags"),
                  httpx.post(f"{url}/api/chat", json={"model": MODEL, "stream": False,
                                                      "messages": [{"role": "user", "content": "hi"}]})):
            assert r.status_code == 508 and "request loop" in r.json()["error"]
    assert events(service, "turn") == []


def test_upstream_errors_are_passed_through(proxy, fake, service) -> None:
    url = proxy()
    fake.fail_status = 404
    with pytest.raises(ollama.ResponseError) as err:
        client(url).chat(model="missing", stream=False, messages=[{"role": "user", "content": "hi"}])
    assert err.value.status_code == 404 and "fake upstream failure" in err.value.error
    assert events(service) == []


# -- identity, flags, !reset ---------------------------------------------------------------------


def test_identity_headers_decide_whose_memory_is_used(proxy, fake, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    url = proxy()
    fake.chat_reply = lambda req: "ok"
    question = [{"role": "user", "content": "Which engine runs the warehouse?"}]
    client(url, **{"X-Loci-Project": "other", "X-Loci-Session": "s9"}).chat(model=MODEL, stream=False,
                                                                           messages=question)
    assert "DuckDB" not in system_text(chats(fake)[-1])  # another project's memory stays out
    turn = events(service, "turn")[-2]
    assert turn.identity == Identity(user_id="dana", project_id="other", session_id="s9")
    client(url).chat(model=MODEL, stream=False, messages=question)
    assert "DuckDB" in system_text(chats(fake)[-1])
    bad = httpx.post(f"{url}/api/chat", headers={"X-Loci-User": "x" * 300},
                     json={"model": MODEL, "messages": question})
    assert bad.status_code == 400 and "X-Loci-User" in bad.json()["error"].replace("x-loci-user", "X-Loci-User")


def test_post_response_scan_off_strips_but_stores_no_proposal(proxy, fake, service) -> None:
    service.settings.flags["post_response_scan"] = False
    url = proxy()
    fake.chat_reply = lambda req: "Fine. " + block(DUCKDB)
    reply = client(url).chat(model=MODEL, stream=False, messages=[{"role": "user", "content": "DuckDB?"}])
    assert reply.message.content == "Fine."
    assert "MEMORY_PROPOSALS_JSON" not in system_text(chats(fake)[-1])  # not asked for either
    assert events(service, "proposal") == []
    assert [e.payload["text"] for e in events(service, "turn")] == ["DuckDB?", "Fine."]


def test_recall_interception_off_leaves_recall_questions_to_the_model(proxy, fake, service) -> None:
    service.settings.flags["recall_interception"] = False
    url = proxy()
    fake.chat_reply = lambda req: "Let me think."
    client(url).chat(model=MODEL, stream=False,
                     messages=[{"role": "user", "content": "What did we decide about the logo?"}])
    assert "memory holds nothing" not in system_text(chats(fake)[-1])
    assert not [e for e in events(service, "audit") if e.payload["action"] == "memory.search"]


def test_reset_summarises_the_conversation_into_memory_once(proxy, fake, service) -> None:
    url = proxy()
    facts = [{"type": "preference", "title": "Code style", "content": "Dana wants type hints."},
             {"type": "decision", "title": "Warehouse engine", "content": "We use DuckDB."}]
    fake.chat_reply = lambda req: (block(*facts) if system_text(req) == SUMMARY_INSTRUCTION else "ok")
    history = [{"role": "user", "content": "Always use type hints."}, {"role": "assistant", "content": "Sure."},
               {"role": "user", "content": "We go with DuckDB."}, {"role": "assistant", "content": "Noted."},
               {"role": "user", "content": "!reset"}]
    c = client(url)
    first = c.chat(model=MODEL, stream=False, messages=history)
    assert first.message.content.startswith("[memory] Summarized 4 messages → 2 memories saved")
    transcript = chats(fake)[-1]["messages"][-1]["content"]
    assert "user: Always use type hints." in transcript and "!reset" not in transcript
    assert sorted(e.payload["proposal"]["title"] for e in events(service, "proposal")) == [
        "Code style", "Warehouse engine"]
    again = "".join(p.message.content for p in c.chat(model=MODEL, stream=True, messages=history))
    assert again.startswith("[memory] Summarized 4 messages")
    assert len(events(service, "proposal")) == 2  # the same !reset lands nothing twice
    short = c.chat(model=MODEL, stream=False, messages=history[-3:])
    assert short.message.content.startswith("[memory] Nothing summarized")


def test_reset_with_the_flag_off_is_an_ordinary_message(proxy, fake, service) -> None:
    service.settings.flags["reset_summarize"] = False
    url = proxy()
    fake.chat_reply = lambda req: "What should I reset?"
    history = [{"role": "user", "content": f"message {i}"} for i in range(4)] + [{"role": "user", "content": "!reset"}]
    assert client(url).chat(model=MODEL, stream=False, messages=history).message.content == "What should I reset?"
    assert chats(fake)[-1]["messages"][-1]["content"] == "!reset"


# -- upstream behaviours FakeOllama does not script ---------------------------------------------


class ScriptedUpstream:
    """An Ollama stand-in that streams exactly the NDJSON lines a test scripts, one script per
    /api/chat call: tool calls in a non-final chunk (what Ollama >= 0.8 does), thinking
    chunks, an error line mid-stream, a stream cut short."""

    def __init__(self, *scripts: list[dict[str, Any]]) -> None:
        self.scripts = list(scripts)
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(json.loads(body or b"{}"))
        lines = self.scripts.pop(0)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/x-ndjson")]})
        for line in lines:
            await send({"type": "http.response.body", "body": (json.dumps(line) + "\n").encode(),
                        "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def chunk(content: str = "", **message: Any) -> dict[str, Any]:
    return {"model": MODEL, "created_at": "t", "done": False,
            "message": {"role": "assistant", "content": content, **message}}


def done(**counters: Any) -> dict[str, Any]:
    return {"model": MODEL, "created_at": "t", "done": True, "done_reason": "stop",
            "message": {"role": "assistant", "content": ""}, **counters}


def test_tool_calls_in_a_streamed_chunk_and_thinking_are_handled(proxy, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    service.settings.flags["memory_tools"] = True
    search = {"function": {"name": "memory_search", "arguments": {"query": "warehouse engine"}}}
    upstream = ScriptedUpstream(
        [chunk(thinking="Let me look."), chunk(tool_calls=[search]), done(eval_count=5)],
        [chunk("It is "), chunk("DuckDB."), done(eval_count=7)],
    )
    with serve(upstream, lifespan="off") as upstream_url:
        url = proxy(upstream=upstream_url)
        parts = list(client(url).chat(model=MODEL, stream=True,
                                      messages=[{"role": "user", "content": "Which engine runs it?"}]))
    assert [p.message.thinking for p in parts if p.message.thinking] == ["Let me look."]
    assert "".join(p.message.content or "" for p in parts) == "It is DuckDB."
    assert not any(p.message.tool_calls for p in parts)
    assert parts[-1].done and parts[-1].eval_count == 7  # the last round's own counters
    second = upstream.requests[1]["messages"]
    assert second[-2]["tool_calls"] == [search] and second[-1]["role"] == "tool"
    assert "We use DuckDB for the warehouse." in second[-1]["content"]


@pytest.mark.parametrize("script, message", [
    ([chunk("Partial answer."), {"error": "model runner has unexpectedly stopped"}], "unexpectedly stopped"),
    ([chunk("Partial answer.")], "ended without its final object"),
])
def test_a_stream_that_breaks_reports_an_error_and_lands_nothing(proxy, service, script, message) -> None:
    with serve(ScriptedUpstream(script), lifespan="off") as upstream_url:
        url = proxy(upstream=upstream_url)
        seen = []
        with pytest.raises(ollama.ResponseError) as err:
            for part in client(url).chat(model=MODEL, stream=True, messages=[{"role": "user", "content": "hi"}]):
                seen.append(part.message.content)
    assert seen == ["Partial answer."] and message in err.value.error
    assert events(service, "turn") == []


# -- memory tools: limits and what the model may not do ------------------------------------------


def test_tool_rounds_are_bounded(proxy, fake, service) -> None:
    service.settings.flags["memory_tools"] = True
    url = proxy(max_tool_rounds=2)
    fake.chat_reply = lambda req: {"content": "", "tool_calls": [
        {"function": {"name": "memory_search", "arguments": {"query": f"thing {len(req['messages'])}"}}}]}
    reply = client(url).chat(model=MODEL, stream=False, messages=[{"role": "user", "content": "Go."}])
    assert reply.message.content == "The memory lookup did not finish within 2 tool rounds."
    assert len(chats(fake)) == 3 and not reply.message.tool_calls


def test_the_model_proposes_through_the_tool_but_cannot_write(proxy, fake, service) -> None:
    service.settings.flags["memory_tools"] = True
    url = proxy()
    fake.chat_reply = lambda req: {"content": "Done.", "tool_calls": [
        {"function": {"name": "memory_propose", "arguments": {"items": [DUCKDB]}}},
        {"function": {"name": "memory_write", "arguments": {"item": {"content": "forged"}}}}]}
    raw = httpx.post(f"{url}/api/chat", headers=HEADERS, json={
        "model": MODEL, "stream": False, "messages": [{"role": "user", "content": "Use DuckDB."}]}).json()
    assert raw["message"]["content"] == "Done." and "tool_calls" not in raw["message"]
    assert [p["form"] for p in raw["loci"]["proposals"]] == ["tool_call"]
    assert raw["loci"]["ignored_tool_calls"] == ["memory.write: not allowed to the model"]
    assert events(service, "memory.write") == []
    assert [e.payload["proposal"]["title"] for e in events(service, "proposal")] == ["Warehouse engine"]


# -- load and limits -----------------------------------------------------------------------------


def test_concurrent_chats_are_all_answered_and_landed(proxy, fake, service) -> None:
    url = proxy()
    fake.chat_reply = lambda req: "ok: " + req["messages"][-1]["content"]
    results: dict[int, str] = {}

    def ask(i: int) -> None:
        parts = client(url).chat(model=MODEL, stream=bool(i % 2),
                                 messages=[{"role": "user", "content": f"question {i}"}])
        results[i] = "".join(p.message.content for p in parts) if i % 2 else parts.message.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert results == {i: f"ok: question {i}" for i in range(6)}
    assert sorted(e.payload["text"] for e in events(service, "turn") if e.payload["role"] == "user") == [
        f"question {i}" for i in range(6)]


def test_body_limits_apply_to_chat_not_to_uploads(proxy, fake) -> None:
    url = proxy(max_request_bytes=10_000)
    big = {"model": MODEL, "messages": [{"role": "user", "content": "x" * 20_000}]}
    r = httpx.post(f"{url}/api/chat", json=big)
    assert r.status_code == 413 and "error" in r.json()
    blob = b"ab" * 1_500_000  # 3 MB, e.g. `ollama create` uploading a blob
    via = httpx.post(f"{url}/api/blobs/sha256:abc", content=blob)
    assert via.status_code == 404  # what the fake answers for a path it does not know
    assert fake.requests[-1][0] == "/api/blobs/sha256:abc"
    assert len(fake.requests[-1][1]["_raw"]) == len(blob)  # all of it, unlimited
