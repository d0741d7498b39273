"""The reach surfaces as a new user meets them, over real HTTP: the proxy's `/api/chat` and
OpenAI-compatible `/v1/chat/completions` (on loopback, in front of the fake Ollama server),
the MCP tools (the official SDK's client) and the memory browser.

- A model that copies the proposal instruction's template back (`"title": "..."`, a thing
  small models do) stores nothing: a placeholder is no memory, so recall never lists a
  decision "..." as authoritative. Through the API too, content without a word is a 400.
- A chat whose text holds a lone surrogate escape (`"\\ud83d"`, half an emoji cut by a
  client) is answered like Ollama answers it (the character read as U+FFFD), streamed or
  not, on both chat APIs, never a 500; an MCP tool call with one is bad input (a 400 tool
  error), not an internal error with a traceback in the server log.
- A path guessed as REST (`/v1/proposals`, `/v1/search`) is a 404 naming the route meant
  (`memory.propose` through `POST /v1/tools`) and `/schema`, not a bare "Not Found"; a
  route asked with another method says which it takes.
- A tool call a new integrator gets wrong says what to send: a memory's fields beside
  `items`, an unknown field (the fields there are, of the object holding it), a value off a
  fixed list (the list), an action named as its MCP tool (`memory_search`) and the reverse
  over MCP. A request body (`/v1/recall`, `/v1/turns`) gets the same hints.
- The memory API asked of the proxy (`POST /v1/recall` on its port) is a 404 saying
  `loci serve` serves it and where, not the model server's bare 404.
"""

from __future__ import annotations

import html
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.client import Client

from online.mcp_server import build_server
from online.proxy import ProxyConfig, create_proxy_app
from online.proxy.config import PROPOSAL_INSTRUCTION
from pipelines.records import Identity
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import fake, serve, shared_fake  # noqa: F401 - fake and shared_fake are fixtures

HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas", "X-Loci-Session": "s1"}
DANA = Identity(user_id="dana", project_id="atlas", session_id="s1")


def ollama_chat(url: str, body: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """(status, the text the client sees, the `loci` field) of one /api/chat call."""
    resp = httpx.post(f"{url}/api/chat", content=json.dumps(body).encode(), headers={
        **HEADERS, "content-type": "application/json"}, timeout=60)
    if resp.status_code != 200:
        return resp.status_code, resp.text, {}
    lines = [json.loads(line) for line in resp.text.splitlines() if line.strip()]
    return 200, "".join(obj["message"]["content"] for obj in lines), lines[-1].get("loci", {})


def openai_chat(url: str, body: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    resp = httpx.post(f"{url}/v1/chat/completions", content=json.dumps(body).encode(), headers={
        **HEADERS, "content-type": "application/json"}, timeout=60)
    if resp.status_code != 200:
        return resp.status_code, resp.text, {}
    if not body.get("stream"):
        data = resp.json()
        return 200, data["choices"][0]["message"]["content"], data.get("loci", {})
    chunks = [json.loads(line[6:]) for line in resp.text.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    text = "".join((c["choices"][0]["delta"].get("content") or "") for c in chunks if c["choices"])
    return 200, text, chunks[-1].get("loci", {})


CHATS = [(ollama_chat, False), (ollama_chat, True), (openai_chat, False), (openai_chat, True)]


@pytest.mark.parametrize(("chat", "stream"), CHATS)
def test_a_model_copying_the_proposal_template_stores_nothing(proxy, fake, memory, chat, stream) -> None:  # noqa: F811
    fake.chat_reply = lambda req: "Sure, I will remember that. " + PROPOSAL_INSTRUCTION
    url = proxy()
    status, shown, loci = chat(url, {"model": "llama3.2", "stream": stream, "messages": [
        {"role": "user", "content": "The standup moved to 10:00."}]})
    assert status == 200 and "<MEMORY_PROPOSALS_JSON>" not in shown
    assert loci["proposals"] == []
    fake.chat_reply = lambda req: "ok"
    hits = memory.recall("What did we decide?", DANA, mode="catalog", record_usage=False).hits
    assert [h.item.title for h in hits if h.item.type != "message"] == []


def test_a_placeholder_is_no_content_through_the_api_either(memory) -> None:
    from online.tools import ToolDispatcher, ToolError

    tools = ToolDispatcher(memory)
    item = {"type": "decision", "title": "...", "content": "...", "why_store": "..."}
    for action, args in [("memory.propose", {"items": [item]}), ("memory.write", {"item": item})]:
        with pytest.raises(ToolError) as err:
            tools.dispatch(action, args, DANA)
        assert err.value.status == 400 and "holds no word" in err.value.message


@pytest.mark.parametrize(("chat", "stream"), CHATS)
def test_a_lone_surrogate_in_a_chat_is_answered_like_ollama_answers_it(proxy, fake, memory, chat, stream) -> None:  # noqa: F811
    url = proxy()
    status, shown, loci = chat(url, {"model": "llama3.2", "stream": stream, "messages": [
        {"role": "user", "content": "Half an emoji \ud83d: the kiln fires on Fridays."}]})
    assert status == 200, shown
    assert shown == "echo: Half an emoji \ufffd: the kiln fires on Fridays."
    assert loci["turn_ids"]["user"] and "problems" not in loci
    said = [e.payload["text"] for e in memory.inbox.read_after(0, kinds=["turn"]) if e.payload["role"] == "user"]
    assert said == ["Half an emoji \ufffd: the kiln fires on Fridays."]


def test_an_mcp_call_with_a_lone_surrogate_is_bad_input_not_an_internal_error(memory) -> None:
    async def scenario() -> list[dict[str, Any]]:
        async with Client(build_server(memory, DANA)) as mcp:
            out = []
            for name, args in [("memory_search", {"query": "kiln \ud83d"}),
                               ("memory_propose", {"items": [{"content": "The kiln \udfff fires on Fridays."}]})]:
                result = await mcp.call_tool(name, args)
                assert result.is_error
                out.append(json.loads(result.content[0].text))
            return out

    for body in anyio.run(scenario):
        assert body["status"] == 400 and "lone surrogate" in body["error"], body



KILN = {"type": "fact", "title": "Kiln day", "content": "The kiln fires on Fridays.", "scope": "user",
        "why_store": "the user said so"}


def dana_header(encoding: str) -> list[tuple[bytes, bytes]]:
    return [(b"X-Loci-User", "dána".encode(encoding)), (b"X-Loci-Project", b"atlas")]


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1"])
def test_a_non_ascii_id_in_a_proxy_header_is_the_caller_a_body_names_the_same(proxy, fake, memory,  # noqa: F811
                                                                             encoding) -> None:
    """Clients send a header's non-ASCII text as UTF-8 (curl, Go) or Latin-1: either way
    "dána" of the proxy (and of the MCP server, which reads headers the same way) is the
    "dána" of a JSON identity and of the browser's query, not a mojibake tenant ("dÃ¡na")."""
    fake.chat_reply = lambda req: "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([KILN]) + "</MEMORY_PROPOSALS_JSON>"
    resp = httpx.post(f"{proxy()}/api/chat", json={"model": "llama3.2", "stream": False, "messages": [
        {"role": "user", "content": "Remember: the kiln fires on Fridays."}]},
        headers=dana_header(encoding), timeout=60)
    assert resp.status_code == 200, resp.text
    (verdict,) = resp.json()["loci"]["proposals"]
    stored = memory.get_item(verdict["item_id"], Identity(user_id="dána", project_id="atlas"))
    assert stored is not None and stored.scope.user_id == "dána"


def test_a_non_ascii_id_in_a_service_header_is_the_caller_a_body_names_the_same(service) -> None:
    client, _ = service
    encoding = "utf-8"  # (Litestar's TestClient sends every header value as UTF-8)
    who = {"user_id": "dána", "project_id": "atlas"}
    written = client.post("/v1/tools", json={"action": "memory.write", "identity": who, "args": {"item": KILN}})
    item_id = written.json()["result"]["item_id"]
    read = client.get(f"/v1/items/{item_id}", headers=dana_header(encoding))
    assert read.status_code == 200, read.text
    both = client.get(f"/v1/items/{item_id}", params=who, headers=dana_header(encoding))  # query and header agree
    assert both.status_code == 200, both.text


def test_the_browser_leads_from_a_merged_or_superseded_card_to_what_took_its_place(service) -> None:
    """A card's links (a correction `supersedes` X, a merge `derived_from` X) lead to X, which
    left recall: its page names what took its place and links it for the same caller (its
    history: `test_trial4`); every link of the page keeps the caller, as on every page."""
    from pipelines.consolidate import consolidate_once

    client, settings = service
    dana = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "acme"}
    mike = {**dana, "user_id": "mike", "session_id": "s7"}

    def tool(who: dict, action: str, args: dict) -> dict:
        resp = client.post("/v1/tools", json={"action": action, "identity": who, "args": args})
        assert resp.status_code < 300, resp.text
        return resp.json()["result"]

    def write(title: str, content: str) -> str:
        item = {"type": "fact", "title": title, "content": content, "scope": "project", "why_store": "said",
                "confidence": 0.9}
        return tool(dana, "memory.write", {"item": item})["item_id"]

    old = write("Release day", "Releases ship on Tuesday.")
    tool(mike, "memory.update", {"id": old, "patch": {"content": "Releases ship on Wednesday."}})
    new = write("Release cadence", "Releases ship every second Thursday.")
    tool(dana, "memory.link", {"src_id": new, "dst_id": old, "rel": "supersedes"})
    members = [write(title, content) for title, content in [
        ("Edge cache TTL", "The edge cache TTL for map tiles is 300 seconds."),
        ("Tile cache TTL", "The edge cache TTL for map tiles is 300 seconds, per ops."),
        ("Edge cache expiry", "Map tiles leave the edge cache after a TTL of 300 seconds.")]]
    assert consolidate_once(settings)["merge"].merged, "the three agreeing claims must merge for this test"
    assert client.post("/v1/admin/reload").status_code == 200
    query = "user_id=dana&amp;project_id=atlas&amp;session_id=s1&amp;org_id=acme"

    card = client.get(f"/ui/items/{new}", params=dana)
    assert card.status_code == 200 and f'href="/ui/items/{old}?{query}"' in card.text
    page = client.get(f"/ui/items/{old}", params=dana)
    assert page.status_code == 200 and "superseded by" in html.unescape(page.text)
    assert f'href="/ui/items/{new}?{query}"' in page.text and f'href="/ui/?{query}"' in page.text
    answers = {member: client.get(f"/v1/items/{member}", params=dana).json() for member in members}
    gone = {member: got["replaced_by"]["id"] for member, got in answers.items() if got["state"] == "merged"}
    assert gone
    for member, into in gone.items():
        page = client.get(f"/ui/items/{member}", params=dana)
        assert page.status_code == 200 and f'href="/ui/items/{into}?{query}"' in page.text, page.text
    # Someone who may not see it is told nothing more than about an unknown id.
    eve = {"user_id": "eve", "project_id": "borealis", "org_id": "other"}
    page = client.get(f"/ui/items/{old}", params=eve)
    assert page.status_code == 404 and new not in page.text


@pytest.mark.parametrize("path", ["/api/chat", "/v1/chat/completions"])
def test_an_identity_header_sent_twice_with_different_values_is_refused(proxy, fake, memory, path) -> None:  # noqa: F811
    """Which of two `X-Loci-User` values names the caller (a client's own next to one an
    auth proxy in front added) is anyone's guess: a 400, nothing landed; the same value
    twice is one caller."""
    url = proxy()
    body = {"model": "llama3.2", "stream": False,
            "messages": [{"role": "user", "content": "The kiln fires on Fridays."}]}
    resp = httpx.post(f"{url}{path}", json=body, headers=[(b"X-Loci-User", b"mallory"), (b"X-Loci-User", b"dana")])
    assert resp.status_code == 400 and "x-loci-user given twice" in resp.text, resp.text
    assert memory.inbox.read_after(0) == []
    resp = httpx.post(f"{url}{path}", json=body, headers=[(b"X-Loci-User", b"dana"), (b"X-Loci-User", b"dana")])
    assert resp.status_code == 200, resp.text
    assert {e.identity.user_id for e in memory.inbox.read_after(0)} == {"dana"}


def test_a_proposal_drafted_while_thinking_is_not_shown(memory) -> None:
    """A reasoning model (`think`) often drafts its proposal block in its thinking, which
    clients show (Open WebUI, the ollama CLI): the block is removed there too, streamed or
    not, on both chat APIs; what is landed is still the answer's own proposals only."""
    from tests.online.test_proxy import ScriptedUpstream, chunk, done
    from tests.online.test_proxy_openai import ScriptedSSE, sse_chunk

    drafted = ("The user states a schedule. I will add <MEMORY_PROPOSALS_JSON>[{\"type\": \"fact\", \"title\": "
               "\"Kiln\", \"content\": \"The kiln fires on Fridays.\"}]</MEMORY_PROPOSALS_JSON> after answering.")
    pieces = [drafted[i:i + 9] for i in range(0, len(drafted), 9)]
    shown_thinking = "The user states a schedule. I will add after answering."
    ollama_script = [chunk(thinking=p) for p in pieces] + [chunk("Noted."), done()]
    sse_script = "".join([*(sse_chunk({"role": "assistant", "reasoning": p}) for p in pieces),
                          sse_chunk({"role": "assistant", "content": "Noted."}), sse_chunk({}, "stop"),
                          "data: [DONE]\n\n"])
    body = {"model": "llama3.2", "messages": [{"role": "user", "content": "The kiln fires on Fridays."}]}
    with FakeOllama() as whole:
        whole.chat_reply = lambda req: {"role": "assistant", "content": "Noted.", "thinking": drafted}
        upstreams = [ScriptedUpstream(ollama_script), ScriptedSSE(sse_script)]
        with ExitStack() as stack:
            urls = [stack.enter_context(serve(u, lifespan="off")) for u in upstreams]
            proxies = [stack.enter_context(serve(create_proxy_app(
                memory.settings, service=memory, upstream=up, config=ProxyConfig(flags_check_interval_s=0))))
                for up in [*urls, whole.url]]
            # streamed /api/chat
            lines = [json.loads(line) for line in httpx.post(f"{proxies[0]}/api/chat", json=body, headers=HEADERS,
                                                             timeout=60).text.splitlines()]
            assert "".join(o["message"].get("thinking", "") for o in lines) == shown_thinking
            assert "".join(o["message"]["content"] for o in lines) == "Noted."
            # streamed /v1/chat/completions
            text = httpx.post(f"{proxies[1]}/v1/chat/completions", json={**body, "stream": True}, headers=HEADERS,
                              timeout=60).text
            chunks = [json.loads(line[6:]) for line in text.splitlines()
                      if line.startswith("data: ") and line != "data: [DONE]"]
            assert "".join(c["choices"][0]["delta"].get("reasoning") or "" for c in chunks if c["choices"]) \
                == shown_thinking
            # not streamed
            answer = httpx.post(f"{proxies[2]}/api/chat", json={**body, "stream": False}, headers=HEADERS,
                                timeout=60).json()
            assert answer["message"]["thinking"] == shown_thinking and answer["message"]["content"] == "Noted."
    assert not [e for e in memory.inbox.read_after(0) if e.kind == "proposal"]


def test_the_service_refuses_an_identity_header_sent_twice_with_different_values(tmp_path: Path) -> None:
    """`loci serve`'s GET endpoints and pages too (on a real server: Litestar's TestClient
    joins repeated headers itself); they joined the two into one id, "mallory, dana"."""
    from online.app import create_app
    from pipelines.embedders import HashEmbedder
    from tests.assets.support import make_settings

    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with serve(app) as url:
        for path in ("/v1/stats", "/ui/"):
            resp = httpx.get(f"{url}{path}", headers=[(b"X-Loci-User", b"mallory"), (b"X-Loci-User", b"dana")])
            assert resp.status_code == 400 and "x-loci-user given twice" in resp.text, resp.text
            resp = httpx.get(f"{url}{path}", headers=[(b"X-Loci-User", b"dana"), (b"X-Loci-User", b"dana")])
            assert resp.status_code == 200, resp.text
    assert app.state.internal_errors == 0


@pytest.mark.parametrize("chat", [ollama_chat, openai_chat])
def test_a_huge_pasted_message_is_recalled_by_its_start_and_end_only(proxy, fake, memory, chat,  # noqa: F811
                                                                      monkeypatch) -> None:
    """A 300k-character paste (a log with the question after it) is recalled like the API's
    longest question: its start and end, never the whole text (a recall's cost grows with
    its query), and memory about the question still reaches the model."""
    asked: list[int] = []  # the service is shared with the proxy: what its recall is asked
    real = memory.recall

    def recall(query: str, *args: Any, **kw: Any) -> Any:
        asked.append(len(query))
        return real(query, *args, **kw)

    monkeypatch.setattr(memory, "recall", recall)
    url = proxy()
    paste = "INFO worker heartbeat ok\n" * 12_000 + "Why does the kiln fire on Fridays?"
    status, shown, _ = chat(url, {"model": "llama3.2", "stream": False, "messages": [
        {"role": "user", "content": paste}]})
    assert status == 200, shown[:300]
    assert asked and max(asked) <= 2 * (10_000 + 1) + 1, asked  # question and answer, each capped


GUESSED_PATHS = [  # (method, path, what the 404 points to)
    ("POST", "/v1/proposals", "memory.propose"), ("GET", "/v1/search", "memory.search"),
    ("POST", "/v1/forget", "memory.forget"), ("GET", "/v1/memories", "POST /v1/recall"),
    ("POST", "/v1/items", "GET /v1/items/{item_id}"), ("POST", "/v1/chat/completions", "loci proxy")]


def test_a_guessed_path_is_told_the_route_it_meant(service) -> None:
    """An integrator guessing REST paths gets a 404 naming the real route (the memory.*
    actions are one endpoint) and the OpenAPI schema; an unknown id is still its own 404."""
    client, _ = service
    for method, path, points_to in GUESSED_PATHS:
        resp = client.request(method, path, json={} if method == "POST" else None)
        body = resp.json()
        assert resp.status_code == 404 and points_to in body["error"] and "/schema" in body["error"], body
        assert "/v1/tools" in body["error"] or points_to.startswith(("POST", "GET", "loci")), body
        assert "POST /v1/recall" in body["detail"]["routes"] and "memory.propose" in body["detail"]["actions"]
    assert client.get(body["detail"]["schema"]).status_code == 200
    unknown = client.get("/v1/items/mem_nope", params={"user_id": "dana"})
    assert unknown.status_code == 404 and "no route" not in unknown.json()["error"], unknown.text
    wrong = client.get("/v1/recall")  # a route asked with another method: which it takes
    assert wrong.status_code == 405 and "takes POST" in wrong.json()["error"], wrong.text


STANDUP = {"type": "decision", "title": "Standup time", "content": "The daily standup is at 10:00."}
# (action, args, what the 400 says to send instead): a new integrator's first guesses
FIRST_GUESSES = [
    ("memory.propose", STANDUP, '{"items": [{"type"'),  # the memory's fields beside `items`
    ("memory.write", STANDUP, '{"item": {"type"'),
    ("memory.read", {"id": "mem_x"}, "the fields are ids"),
    ("memory.search", {"q": "standup"}, "the fields are query, "),
    ("memory.review", {"id": "mem_x", "decision": "accept"}, "decision is one of approve, reject"),
    ("memory.propose", {"items": [{**STANDUP, "type": "decison"}]}, "type is one of fact, decision, "),
    ("memory.update", {"id": "mem_x", "patch": {"validation": "deleted"}}, '"retracted" forgets it'),
    ("memory_search", {"query": "standup"}, "did you mean 'memory.search'?"),  # MCP's name for it
    ("memory.write", {"item": {**STANDUP, "why": "asked"}}, "the fields are type, title, content, "),  # the item's
]


def test_a_tool_call_a_new_integrator_gets_wrong_says_what_to_send(service) -> None:
    client, _ = service
    for action, args, says in FIRST_GUESSES:
        resp = client.post("/v1/tools", json={"action": action, "identity": {"user_id": "dana"}, "args": args})
        assert resp.status_code == 400 and says in resp.json()["error"], resp.text


def test_the_memory_api_asked_of_the_proxy_says_where_it_is_served(proxy, fake, memory) -> None:  # noqa: F811
    """The proxy serves the chat APIs; the memory API (`POST /v1/recall`, ...) sent to it is
    told that `loci serve` serves it, and where, not the model server's bare 404. The
    model server's own `/v1/...` paths are still forwarded unchanged."""
    url, served_at = proxy(), f"http://{memory.settings.host}:{memory.settings.port}"
    with httpx.Client() as http:
        for method, path in [("POST", "/v1/recall"), ("POST", "/v1/turns"), ("POST", "/v1/tools"),
                             ("GET", "/v1/items/mem_x"), ("GET", "/v1/review"), ("GET", "/v1/stats")]:
            resp = http.request(method, url + path, json={} if method == "POST" else None, headers=HEADERS)
            said = resp.json()["error"]
            assert resp.status_code == 404 and "`loci serve`" in said and served_at in said, said
        for method, path in [("GET", "/v1/models"), ("POST", "/v1/embeddings"), ("GET", "/v1/recallx")]:
            via = http.request(method, url + path, json={} if method == "POST" else None)
            direct = http.request(method, fake.url + path, json={} if method == "POST" else None)
            assert (via.status_code, via.content) == (direct.status_code, direct.content), path
    assert {p for p, _ in fake.requests} == {"/v1/models", "/v1/embeddings", "/v1/recallx"}, fake.requests


# (route, body, what the 400 says to send instead): the same hints as a tool call's args
BODY_GUESSES = [
    ("/v1/recall", {"identity": {"user": "dana"}, "query": "standup"}, "the fields are user_id, project_id, "),
    ("/v1/recall", {"identity": {"user_id": "dana"}, "query": "standup", "mode": "Inject"},
     "mode is one of inject, catalog, hybrid, auto"),
    ("/v1/recall", {"identity": {"user_id": "dana"}, "q": "standup"}, "the fields are identity, query, "),
    ("/v1/turns", {"identity": {"user_id": "dana"}, "role": "human", "text": "hi"}, "role is one of user, assistant"),
]


def test_a_request_body_a_new_integrator_gets_wrong_says_what_to_send(service) -> None:
    client, _ = service
    for route, body, says in BODY_GUESSES:
        resp = client.post(route, json=body)
        assert resp.status_code == 400 and says in resp.json()["error"], resp.text


def test_an_mcp_tool_named_as_the_http_action_says_its_tool_name(memory) -> None:
    async def scenario() -> list[str]:
        async with Client(build_server(memory, DANA)) as mcp:
            said = []
            for name, args in [("memory.search", {"query": "standup"}), ("memory_write", {"item": STANDUP}),
                               ("memory_propose", STANDUP)]:
                result = await mcp.call_tool(name, args)
                assert result.is_error
                said.append(json.loads(result.content[0].text)["error"])
            return said

    dotted, http_only, flat = anyio.run(scenario)
    assert "did you mean 'memory_search'?" in dotted, dotted
    assert "memory.write is served by the HTTP API only" in http_only, http_only
    assert '{"items": [{"type"' in flat, flat


def test_an_item_asked_for_without_naming_the_caller_says_how_to_name_one(service) -> None:
    client, _ = service
    dana = {"user_id": "dana", "project_id": "atlas"}
    item_id = client.post("/v1/tools", json={"action": "memory.write", "identity": dana,
                                             "args": {"item": STANDUP}}).json()["result"]["item_id"]
    for asked in (item_id, "mem_nope"):  # the same words, whether or not it exists
        anonymous = client.get(f"/v1/items/{asked}")
        assert anonymous.status_code == 404 and "X-Loci-User" in anonymous.json()["error"], anonymous.text
    assert client.get(f"/v1/items/{item_id}", params=dana).status_code == 200
    named = client.get("/v1/items/mem_nope", params=dana)
    assert named.status_code == 404 and "X-Loci-User" not in named.json()["error"], named.text
