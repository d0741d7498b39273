"""The proxy's OpenAI-compatible chat API (`POST /v1/chat/completions`), driven with the
official `openai` client (base_url = the proxy's /v1) in front of `FakeOllama`, which
answers as Ollama's own OpenAI-compatible endpoint does.

The same four hooks as /api/chat, streamed (server-sent events) and not: memory injected
before the call, proposals (a block, a `memory.propose` tool call) governed, landed and
kept from the client, the model's recall requests answered by a re-ask and never shown, and
the pre-return catalog under `loci`, which the client parses past. Bad requests get an
OpenAI-style 400; with `enabled` off the proxy is a plain pass-through.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from online.proxy.config import RESULTS_INSTRUCTION, SUMMARY_INSTRUCTION
from pipelines.proposals import parse_assistant_output
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import (  # noqa: F401 - fixtures
    DUCKDB,
    HEADERS,
    MODEL,
    WHO,
    answer_from_memory,
    block,
    events,
    fake,
    proxy,
    serve,
    service,
    settings,
    shared_fake,
)

PATH = "/v1/chat/completions"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.fixture(autouse=True)
def whole_tool_calls(fake: FakeOllama) -> None:
    fake.tool_call_pieces = False  # the shared fake's default, whatever a test changed


def client(url: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="ollama", max_retries=0,
                         default_headers={**HEADERS, **headers})


def completions(fake: FakeOllama) -> list[dict[str, Any]]:
    return [body for path, body in fake.requests if path == PATH]


def system_text(req: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in req["messages"] if m["role"] == "system")


def ask(url: str, messages: list[dict[str, Any]], *, stream: bool, **kwargs: Any) -> tuple[str, list[Any], Any]:
    """(the text the client shows, the tool calls it got, the completion or last chunk)."""
    out = client(url).chat.completions.create(model=MODEL, messages=messages, stream=stream, **kwargs)
    if not stream:
        msg = out.choices[0].message
        return msg.content or "", list(msg.tool_calls or []), out
    chunks = list(out)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or []]
    return text, calls, chunks


def finish_reason(out: Any) -> str:
    """The finish reason of a completion, or of the last chunk that has a choice."""
    choices = out.choices if not isinstance(out, list) else [c for c in out if c.choices][-1].choices
    return choices[0].finish_reason


# -- the four hooks ------------------------------------------------------------------------------


def test_memory_is_injected_and_the_catalog_rides_along(proxy, fake, service) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    url = proxy()
    fake.chat_reply = lambda req: "It is DuckDB."
    question = [{"type": "text", "text": "Which database engine do we use for the warehouse?"}]
    text, calls, completion = ask(url, [{"role": "developer", "content": "You are terse."},
                                        {"role": "user", "content": question}], stream=False)
    assert text == "It is DuckDB." and calls == []
    assert completion.choices[0].finish_reason == "stop" and completion.usage.total_tokens == 30
    sent = completions(fake)[-1]["messages"]
    # The client's leading developer message stays first, memory follows, the question last.
    assert sent[0] == {"role": "developer", "content": "You are terse."} and sent[-1]["content"] == question
    assert sent[1]["role"] == "system" and sent[1]["content"].startswith("PERSISTENT MEMORY (READ-ONLY)")
    assert "We use DuckDB for the warehouse." in sent[1]["content"]
    loci = completion.model_extra["loci"]  # the client keeps the catalog aside, parses the rest
    assert loci["injected_ids"] and loci["turn_ids"]["user"]
    assert [e.payload["text"] for e in events(service, "turn")][-2:] == [question[0]["text"], "It is DuckDB."]


@pytest.mark.parametrize("stream", [False, True])
def test_a_proposal_block_is_landed_and_never_shown(proxy, fake, service, stream) -> None:
    url = proxy()
    reply = (f"The warehouse uses DuckDB. {block(DUCKDB)} Anything else? "
             'memory_save(topic="Owner", content="Dana owns the warehouse.")')
    fake.chat_reply = lambda req: reply
    for size in (2, 5, 11) if stream else (None,):  # the block split every which way
        fake.stream_chunk_chars = size or 7
        text, _, out = ask(url, [{"role": "user", "content": f"Warehouse status? ({size})"}], stream=stream,
                           **({"stream_options": {"include_usage": True}} if stream else {}))
        assert text == parse_assistant_output(reply).visible_text
        assert "MEMORY" not in text and "memory_save" not in text
        last = out[-1] if stream else out
        assert last.model_extra["loci"]["proposals"]
        if stream:  # the usage chunk comes last, with the catalog; the one before finishes
            assert last.choices == [] and last.usage.total_tokens == 30
            assert out[-2].choices[0].finish_reason == "stop"
            assert len([c for c in out if c.choices and c.choices[0].delta.content]) > 3
    titles = [e.payload["proposal"]["title"] for e in events(service, "proposal")]
    assert sorted(set(titles)) == ["Owner", "Warehouse engine"] and len(titles) == (6 if stream else 2)


@pytest.mark.parametrize(("stream", "pieces"), [(False, False), (True, False), (True, True)])
def test_a_memory_propose_tool_call_is_governed_and_removed(proxy, fake, service, stream, pieces) -> None:
    url = proxy()
    fake.tool_call_pieces = pieces  # OpenAI sends a call's arguments over several chunks
    fake.stream_chunk_chars = 9
    fake.chat_reply = lambda req: {"content": "Noted.", "tool_calls": [
        {"function": {"name": "memory_propose", "arguments": {"items": [DUCKDB]}}},
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
    text, calls, out = ask(url, [{"role": "user", "content": "We use DuckDB. Weather in Paris?"}],
                           stream=stream, tools=[WEATHER])
    assert text == "Noted."
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [("get_weather",
                                                                                     {"city": "Paris"})]
    assert calls[0].id.startswith("call_") and (not stream or calls[0].index == 0)
    assert finish_reason(out) == "tool_calls"
    assert [p["form"] for p in (out[-1] if stream else out).model_extra["loci"]["proposals"]] == ["tool_call"]
    assert [e.payload["proposal"]["title"] for e in events(service, "proposal")] == ["Warehouse engine"]

    fake.chat_reply = lambda req: {"content": "Noted.", "tool_calls": [
        {"function": {"name": "memory_propose", "arguments": {"items": [DUCKDB]}}}]}
    text, calls, out = ask(url, [{"role": "user", "content": "We use DuckDB."}], stream=stream)
    assert (text, calls, finish_reason(out)) == ("Noted.", [], "stop")  # all of it was Loci's


def test_the_clients_stream_helper_assembles_what_the_proxy_sends(proxy, fake, service) -> None:
    url = proxy()
    fake.tool_call_pieces, fake.stream_chunk_chars = True, 5
    fake.chat_reply = lambda req: {"content": "Checking. " + block(DUCKDB), "tool_calls": [
        {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"function": {"name": "memory_propose", "arguments": {"items": [DUCKDB]}}}]}
    with client(url).chat.completions.stream(model=MODEL, tools=[WEATHER], stream_options={"include_usage": True},
                                             messages=[{"role": "user", "content": "Weather?"}]) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.message.content.strip() == "Checking." and choice.finish_reason == "tool_calls"
    assert [(c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [
        ("get_weather", '{"city": "Paris"}')]
    assert final.usage.total_tokens == 30
    assert sorted(e.payload["proposal"]["title"] for e in events(service, "proposal")) == [
        "Warehouse engine", "Warehouse engine"]  # the block and the tool call, each governed


@pytest.mark.parametrize("stream", [False, True])
def test_a_recall_request_is_answered_by_a_re_ask_and_never_shown(proxy, fake, service, stream) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(
        {"type": "fact", "title": "Deployment region", "content": "Production runs in eu-west-1."}))
    service.settings.flags["context_injection"] = False  # nothing injected up front
    url = proxy()
    fake.stream_chunk_chars = 4
    fake.chat_reply = lambda req: ("recall deployment region" if len(completions(fake)) == 1
                                   else answer_from_memory(req))
    text, _, out = ask(url, [{"role": "user", "content": "Where does prod live?"}], stream=stream)
    assert text == "From memory: Production runs in eu-west-1."
    assert len(completions(fake)) == 2 and RESULTS_INSTRUCTION in system_text(completions(fake)[-1])
    assert (out[-1] if stream else out).model_extra["loci"]["intercepted"] is True
    said = [e.payload["text"] for e in events(service, "turn") if e.payload["role"] == "assistant"]
    assert said[-1] == text


@pytest.mark.parametrize(("stream", "pieces"), [(False, False), (True, True)])
def test_a_memory_search_tool_call_is_answered_with_ids_paired(proxy, fake, service, stream, pieces) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    service.settings.flags["memory_tools"] = True
    url = proxy()
    fake.tool_call_pieces = pieces

    def model(req: dict[str, Any]) -> str | dict[str, Any]:
        if not any(m["role"] == "tool" for m in req["messages"]):
            return {"content": "", "tool_calls": [
                {"id": "call_s1", "function": {"name": "memory_search", "arguments": {"query": "warehouse engine"}}}]}
        return answer_from_memory(req, tools_only=True)

    fake.chat_reply = model
    text, calls, _ = ask(url, [{"role": "user", "content": "Remind me which engine runs our warehouse"}],
                         stream=stream, tools=[WEATHER])
    assert text == "From memory: We use DuckDB for the warehouse." and calls == []
    first, second = completions(fake)[-2:]
    assert [t["function"]["name"] for t in first["tools"]][:2] == ["get_weather", "memory_search"]
    asked, answered = second["messages"][-2:]
    assert asked["role"] == "assistant" and asked["tool_calls"][0]["id"] == "call_s1"
    assert json.loads(asked["tool_calls"][0]["function"]["arguments"]) == {"query": "warehouse engine"}
    assert answered["role"] == "tool" and answered["tool_call_id"] == "call_s1"
    assert json.loads(answered["content"])["found"] is True


def test_structured_output_is_never_rewritten(proxy, fake) -> None:
    url = proxy()
    fake.chat_reply = lambda req: '{"note": "<MEMORY_PROPOSALS_JSON>[]</MEMORY_PROPOSALS_JSON>"}'
    text, _, _ = ask(url, [{"role": "user", "content": "JSON please"}], stream=False,
                     response_format={"type": "json_object"})
    assert text == '{"note": "<MEMORY_PROPOSALS_JSON>[]</MEMORY_PROPOSALS_JSON>"}'
    assert "MEMORY_PROPOSALS_JSON" not in system_text(completions(fake)[-1])


def test_reset_summarises_the_conversation_into_memory(proxy, fake, service) -> None:
    url = proxy()
    facts = [{"type": "preference", "title": "Code style", "content": "Dana wants type hints."}]
    fake.chat_reply = lambda req: (block(*facts) if system_text(req) == SUMMARY_INSTRUCTION else "ok")
    history = [{"role": "user", "content": [{"type": "text", "text": "Always use type hints."}]},
               {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Thanks."},
               {"role": "assistant", "content": "Welcome."}, {"role": "user", "content": "!reset"}]
    text, _, completion = ask(url, history, stream=False)
    assert text.startswith("[memory] Summarized 4 messages → 1 memories saved")
    assert completion.model_extra["loci"]["reset"]["accept"] == 1
    summary_call = [b for p, b in fake.requests if p == "/api/chat"][-1]
    assert "user: Always use type hints." in summary_call["messages"][-1]["content"]
    again, _, chunks = ask(url, history, stream=True)
    assert again == text and finish_reason(chunks) == "stop" and "reset" in chunks[-1].model_extra["loci"]
    assert [e.payload["proposal"]["title"] for e in events(service, "proposal")] == ["Code style"]  # once
    assert completions(fake) == []  # the model never saw "!reset" as a message


# -- flags, errors ------------------------------------------------------------------------------


def test_enabled_off_is_a_pure_pass_through(proxy, fake, service) -> None:
    service.settings.flags["enabled"] = False
    url = proxy()
    reply = "Sure. " + block(DUCKDB)
    fake.chat_reply = lambda req: reply
    for stream in (False, True):
        body = {"model": MODEL, "stream": stream, "messages": [{"role": "user", "content": "hello"}]}
        via = httpx.post(f"{url}{PATH}", headers=HEADERS, json=body)
        assert completions(fake)[-1] == body  # not a byte added to what Ollama sees
        assert via.content == httpx.post(f"{fake.url}{PATH}", json=body).content
    assert ask(url, [{"role": "user", "content": "hello"}], stream=True)[0] == reply  # the block included
    assert events(service) == []


@pytest.mark.parametrize(("body", "message"), [
    (b"{not json", "must be a JSON object"),
    (b"[1, 2]", "must be a JSON object"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(), "'model' is required"),
    (json.dumps({"model": MODEL, "messages": []}).encode(), "'messages' must be a non-empty array"),
    (json.dumps({"model": MODEL, "messages": ["hi"]}).encode(), "messages[0] must be an object"),
    (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": 5}]}).encode(), "messages[0].content"),
    (json.dumps({"model": MODEL, "stream": "yes", "messages": [{"role": "user", "content": "hi"}]}).encode(),
     "'stream' must be a boolean"),
    (json.dumps({"model": MODEL, "tools": {}, "messages": [{"role": "user", "content": "hi"}]}).encode(),
     "'tools' must be an array"),
])
def test_a_malformed_request_gets_an_openai_style_400(proxy, fake, service, body, message) -> None:
    url = proxy()
    r = httpx.post(f"{url}{PATH}", headers={**HEADERS, "content-type": "application/json"}, content=body)
    assert r.status_code == 400
    error = r.json()["error"]
    assert message in error["message"] and error["type"] == "invalid_request_error"
    assert completions(fake) == [] and events(service) == []


def test_errors_reach_the_openai_client_as_its_own_exceptions(proxy, fake, service) -> None:
    url = proxy(max_request_bytes=10_000)
    with pytest.raises(openai.BadRequestError, match="(?i)x-loci-user must be"):
        client(url, **{"X-Loci-User": "x" * 300}).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.APIStatusError) as too_big:
        client(url).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x" * 20_000}])
    assert too_big.value.status_code == 413 and too_big.value.body["type"] == "invalid_request_error"
    fake.fail_status = 404
    for stream in (False, True):
        with pytest.raises(openai.NotFoundError, match="fake upstream failure"):
            ask(url, [{"role": "user", "content": "hi"}], stream=stream)
    fake.fail_status = None
    down = proxy(upstream="http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(openai.APIStatusError) as err:
        ask(down, [{"role": "user", "content": "hi"}], stream=False)
    assert err.value.status_code == 502 and "cannot connect" in err.value.message
    assert events(service) == []


# -- upstream streams FakeOllama does not script --------------------------------------------------


class ScriptedSSE:
    """An upstream that streams exactly the server-sent events a test scripts (raw text),
    one script per call."""

    def __init__(self, *scripts: str) -> None:
        self.scripts = list(scripts)
        self.requests: list[dict[str, Any]] = []

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.requests.append(json.loads(body or b"{}"))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": self.scripts.pop(0).encode(), "more_body": False})


def sse_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    obj = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": MODEL,
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return f"data: {json.dumps(obj)}\n\n"


def test_reasoning_comments_and_interleaved_tool_call_pieces(proxy, service) -> None:
    service.settings.flags["memory_tools"] = True
    service.capture(WHO, "assistant", "Noted. " + block(DUCKDB))
    first = "".join([
        ": keep-alive\n\n",  # an SSE comment
        sse_chunk({"role": "assistant", "reasoning": "Let me look."}),
        sse_chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                   "function": {"name": "memory_search", "arguments": '{"query": '}}]}),
        sse_chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                   "function": {"name": "get_weather", "arguments": '{"city"'}}]}),
        sse_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"warehouse engine"}'}}]}),
        sse_chunk({"tool_calls": [{"index": 1, "function": {"arguments": ': "Paris"}'}}]}),
        sse_chunk({}, "tool_calls"), "data: [DONE]\n\n"])
    upstream = ScriptedSSE(first)
    with serve(upstream, lifespan="off") as upstream_url:
        url = proxy(upstream=upstream_url)
        text, calls, chunks = ask(url, [{"role": "user", "content": "Engine? And the weather?"}],
                                  stream=True, tools=[WEATHER])
    assert [c.choices[0].delta.model_extra.get("reasoning") for c in chunks if c.choices][0] == "Let me look."
    # A client tool call next to Loci's: the client's own loop comes first, Loci's call is dropped.
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("call_b", "get_weather", '{"city": "Paris"}')]
    assert finish_reason(chunks) == "tool_calls" and len(upstream.requests) == 1


@pytest.mark.parametrize(("script", "message"), [
    (sse_chunk({"content": "Partial answer."}) + 'data: {"error": {"message": "model runner stopped"}}\n\n',
     "model runner stopped"),
    (sse_chunk({"content": "Partial answer."}), "ended without its final object"),
    (sse_chunk({"content": "Partial answer."}) + "data: {oops\n\n", "not JSON"),
])
def test_a_stream_that_breaks_raises_in_the_client_and_lands_nothing(proxy, service, script, message) -> None:
    with serve(ScriptedSSE(script), lifespan="off") as upstream_url:
        url = proxy(upstream=upstream_url)
        seen = []
        with pytest.raises(openai.APIError, match=message):
            for chunk in client(url).chat.completions.create(
                    model=MODEL, stream=True, messages=[{"role": "user", "content": "hi"}]):
                seen.append(chunk.choices[0].delta.content)
    assert seen == ["Partial answer."]
    assert events(service, "turn") == []
