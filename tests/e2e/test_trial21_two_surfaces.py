"""One user, two surfaces, two weeks (the twenty-first new-user trial). Mira lives in Tokyo
and works on the Harbor project (org acme) from a chat app that speaks OpenAI's API (the
official `openai` client against `loci proxy` on loopback, in front of the fake Ollama
server answering as a model would) and from an editor whose agent has Loci's MCP tools (the
official `mcp` SDK client on `online.mcp_server.build_server`, over the same store). The
turns are said on a simulated clock over the two past weeks, some early in Tokyo's morning
when UTC is still on the day before; a consolidation runs at the end of each week and
`loci serve`'s app (browser, items API) and `loci show` read the same data directory.

- In the chat she states her preferences and the message-queue decision; in the editor the
  agent corrects it (RabbitMQ -> NATS). The deploy day is decided in the editor and changed
  in the chat. Asked in each surface "what did we decide about X?": curated memory first,
  the correction first, the old claim never shown as current, turns only as labelled
  evidence; chatter sharing the decisions' words ("the queue at the ramen place", "Thursday
  is pizza day") never outranks them.
- Scope priority: an org rule, Mira's preference, Harbor's convention and, in one editor
  session and one chat, a session instruction, all on indentation; each surface answers in
  the order session > project > user > org, and a session instruction stays in its session.
- Audit: "when did this change and who changed it?": the item's history (`loci show`, the
  items API, its browser card) lists each version with its author and time, on the earlier
  claim's record too, not only the latest.
- The memory browser lists what Mira expects: her preferences and the current decisions,
  not the replaced ones as current.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import openai
import pytest
from litestar.testing import TestClient
from mcp.client.client import Client as MCPClient
from typer.testing import CliRunner

from loci.cli import app as loci_cli
from online.app import create_app
from online.mcp_server import build_server
from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.consolidate import consolidate_once
from pipelines.recall.render import EPISODIC_HEADER
from pipelines.records import Identity
from pipelines.settings import load_settings
from tests.e2e.chat import SimulatedClock, page_text
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

TZ = "Asia/Tokyo"
ZONE = ZoneInfo(TZ)
MIRA = {"user_id": "mira", "project_id": "harbor", "org_id": "acme"}
HEADERS = {"X-Loci-User": "mira", "X-Loci-Project": "harbor", "X-Loci-Org": "acme", "X-Loci-Timezone": TZ}
OLGA = {"user_id": "olga", "project_id": "platform", "session_id": "policy", "org_id": "acme"}
MODEL = "llama3.2"

QUEUE_Q = "what did we decide about the message queue?"
DEPLOY_Q = "what did we decide about the deploy day?"
INDENT_Q = "what indentation should I use?"
LAST_WEEK_Q = "what did we decide last week?"
CHANGED_Q = "when did we change the message queue, and who changed it?"
DB_Q = "what database does Harbor use?"
YESTERDAY_Q = "what did we decide yesterday?"
CHATTER = [  # Wednesday morning's chat: the decisions' words, none of them a decision
    "We decided on sushi for the team lunch, the queue was short for once.",
    "NATS is also what my nephew calls his cat, funny coincidence.",
    "The deploy of my dotfiles to the new laptop went fine.",
    "Thursdays I do yoga, Tuesdays are for climbing.",
    "My landlord sent a message: the rent goes up in the spring.",
    "Postgres conference tickets are sold out already, bummer.",
    "I used to indent my essays with two spaces after a period, old habits.",
    "The rabbit from the office garden is back, someone named it RabbitMQ.",
]
INDENT_EDITED = "Harbor code is indented with 4 spaces, like the rest of acme."


def claim(kind: str, title: str, content: str, scope: str | None = None) -> dict[str, Any]:
    item = {"type": kind, "title": title, "content": content, "why_store": "Mira said so", "confidence": 0.9}
    return item if scope is None else {**item, "scope": scope}


QUEUE_OLD = claim("decision", "Harbor message queue", "Harbor uses RabbitMQ as its message queue.")
QUEUE_NEW = claim("decision", "Harbor message queue",
                  "Harbor moved from RabbitMQ to NATS JetStream as its message queue.")
DEPLOY_OLD = claim("decision", "Harbor deploy day", "Harbor deploys to production on Thursdays.")
DEPLOY_NEW = claim("decision", "Harbor deploy day", "Harbor deploys to production on Tuesdays, not Thursdays.")
STYLE = claim("preference", "Answer style", "Mira prefers short answers with the code first.", "user")
INDENT_USER = claim("preference", "Indentation", "Mira prefers tabs for indentation.", "user")
INDENT_ORG = claim("constraint", "Indentation", "Acme code is indented with 4 spaces.", "org")
INDENT_PROJECT = claim("constraint", "Harbor indentation", "Harbor code is indented with 2 spaces.", "project")
INDENT_SESSION = claim("constraint", "Indentation in this session",
                       "In this session, indent with 8 spaces (the legacy parser module).", "session")
DB_OLD = claim("decision", "Harbor database", "Harbor stores its data in PostgreSQL 15.")
DB_NEW = claim("decision", "Harbor database version", "Harbor moved its data from PostgreSQL 15 to PostgreSQL 16.")
INDENT_CHAT = claim("constraint", "Indentation in this chat", "In this chat, indent with 3 spaces.", "session")



@dataclass
class Fortnight:
    monday: date  # the first Monday, on Mira's calendar
    ids: dict[str, str] = field(default_factory=dict)  # a claim's content -> its stored id
    said_at: dict[str, datetime] = field(default_factory=dict)  # a claim's content -> when (UTC)
    chat: dict[str, str] = field(default_factory=dict)  # a chat question -> the system text the model got
    catalog: dict[str, dict[str, Any]] = field(default_factory=dict)  # a chat question -> the `loci` field
    mcp: dict[str, dict[str, Any]] = field(default_factory=dict)  # an editor question -> memory_search's body
    supersedes: dict[str, list[str]] = field(default_factory=dict)  # a claim's content -> what it replaced
    show: dict[str, str] = field(default_factory=dict)  # an id -> `loci show`'s output
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # an id -> GET /v1/items/{id}
    cards: dict[str, str] = field(default_factory=dict)  # an id -> its browser card's text
    pages: dict[str, str] = field(default_factory=dict)  # a browser page -> its text
    edited_at: datetime | None = None  # when the agent edited Harbor's convention in place
    read_before: dict[str, Any] = field(default_factory=dict)  # memory_read of what the correction replaced


@pytest.fixture(scope="module")
def fortnight(shared_fake, tmp_path_factory) -> Iterator[Fortnight]:  # noqa: F811
    today = datetime.now(ZONE).date()
    monday = today - timedelta(days=today.weekday() + 14)  # two weeks ago: every day of both is past
    record = Fortnight(monday)
    settings = load_settings(None, environ={}, embedder="hash",
                             data_dir=str(tmp_path_factory.mktemp("t21") / "data"))
    memory = MemoryService(settings, check_interval_ms=0)
    clock = SimulatedClock(ZONE)
    replies: dict[str, Any] = {}

    def model(req: dict[str, Any]) -> Any:
        last = next(m["content"] for m in reversed(req["messages"]) if m["role"] == "user")
        return replies.get(last, "Ha, sounds good!")

    def landed(proposals: list[dict[str, Any]], items: list[dict[str, Any]]) -> None:
        assert [p["action"] for p in proposals] == ["accept"] * len(items), proposals
        for p, item in zip(proposals, items, strict=True):
            record.ids[item["content"]] = p["item_id"]
            record.said_at[item["content"]] = clock.now
            record.supersedes[item["content"]] = p.get("supersedes", [])

    def consolidate() -> None:
        assert memory.usage.flush()
        consolidate_once(settings)
        memory.reload()

    with pytest.MonkeyPatch.context() as patch:
        clock.patch_into(patch)
        shared_fake.chat_reply = model
        proxy = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                                 config=ProxyConfig(flags_check_interval_s=0))
        with serve(proxy) as url:
            chat_app = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=HEADERS)

            def chat(day: int, at: time, lines: list[tuple[str, str | None, list[dict[str, Any]]]],
                     ask: bool = False, stream: bool = False, tool_call: bool = False) -> None:
                """One chat on day `day` (0 = the first Monday): each user line, the model's
                reply (proposing `items` in a block, or with `tool_call` a memory_propose call);
                the system text kept when `ask`; answers streamed when `stream`."""
                clock.at(monday + timedelta(days=day), at)
                history: list[dict[str, str]] = []
                for said, reply, items in lines:
                    if reply is not None and tool_call and items:
                        replies[said] = {"role": "assistant", "content": reply, "tool_calls": [
                            {"function": {"name": "memory_propose", "arguments": {"items": items}}}]}
                    elif reply is not None:
                        replies[said] = reply + (" " + block(*items) if items else "")
                    history.append({"role": "user", "content": said})
                    if stream:
                        chunks = list(chat_app.chat.completions.create(model=MODEL, messages=history, stream=True))
                        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
                        assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices), chunks
                        loci = chunks[-1].model_extra["loci"]
                    else:
                        answer = chat_app.chat.completions.create(model=MODEL, messages=history)
                        assert not answer.choices[0].message.tool_calls, answer  # Loci's call, not the client's
                        text, loci = answer.choices[0].message.content or "", answer.model_extra["loci"]
                    history.append({"role": "assistant", "content": text})
                    if items:
                        landed(loci["proposals"], items)
                    if ask:
                        record.chat[said] = system_text(shared_fake.requests[-1][1])
                        record.catalog[said] = loci

            def editor(day: int, at: time, session: str,
                       calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
                """One editor session: the agent's MCP calls, each answered without error."""
                clock.at(monday + timedelta(days=day), at)
                who = Identity(**MIRA, session_id=session)

                async def run() -> list[dict[str, Any]]:
                    out = []
                    async with MCPClient(build_server(memory, who)) as agent:
                        for name, args in calls:
                            result = await agent.call_tool(name, args)
                            body = json.loads(result.content[0].text)
                            assert not result.is_error, (name, body)
                            out.append(body)
                    return out

                bodies = anyio.run(run)
                for (name, args), body in zip(calls, bodies, strict=True):
                    if name == "memory_propose":
                        landed(body["proposals"], args["items"])
                    if name == "memory_search":
                        record.mcp[f"{session}: {args['query']}"] = body
                return bodies

            def propose(*items: dict[str, Any]) -> tuple[str, dict[str, Any]]:
                return "memory_propose", {"items": list(items)}

            def search(query: str) -> tuple[str, dict[str, Any]]:
                return "memory_search", {"query": query, "tz": TZ}

            # Week 1, Monday, 08:40 in Tokyo (Sunday 23:40 UTC): the chat app.
            chat(0, time(8, 20), [("Harbor keeps its data in PostgreSQL 15 for now.", "OK.", [DB_OLD])])
            chat(0, time(8, 40), [
                ("Morning! The queue at the ramen place was insane, forty minutes.", "Worth it, hopefully!", []),
                ("Keep answers short and show the code first, please. And tabs, always tabs.",
                 "Got it.", [STYLE, INDENT_USER]),
                ("For Harbor we'll use RabbitMQ as the message queue.", "Good choice.", [QUEUE_OLD]),
                ("The rabbit in our office garden escaped again, the whole team chased it.", "Ha!", []),
            ])
            # The org's rule, written by Olga for all of acme (HTTP, as a script would).
            clock.at(monday + timedelta(days=1), time(10, 0))
            with TestClient(create_app(settings, service=memory)) as api:
                resp = api.post("/v1/tools", json={"action": "memory.write", "identity": OLGA,
                                                   "args": {"item": INDENT_ORG}})
                assert resp.status_code == 200 and resp.json()["result"]["verdict"]["action"] == "accept", resp.text
                record.ids[INDENT_ORG["content"]] = resp.json()["result"]["item_id"]
            # Tuesday afternoon, the editor: Harbor's convention; Thursday late, the deploy day.
            editor(1, time(15, 0), "ide-w1-tue", [propose(INDENT_PROJECT)])
            editor(3, time(23, 30), "ide-w1-thu", [propose(DEPLOY_OLD)])
            chat(4, time(12, 0), [
                ("Thursday is pizza day at the office, best day of the week.", "Enjoy!", []),
                ("My deploy of the blog went fine by the way, the queue of comments is huge.", "Nice.", []),
            ])
            consolidate()
            # Week 2, Monday 07:40 in Tokyo (Sunday 22:40 UTC: UTC's "last week" is the one
            # before), the chat: what was decided last week? Then the agent corrects the queue.
            chat(7, time(7, 40), [(LAST_WEEK_Q, None, [])], ask=True)
            record.chat[LAST_WEEK_Q + "#chat"] = record.chat.pop(LAST_WEEK_Q)
            editor(7, time(7, 50), "ide-w2-mon", [search(LAST_WEEK_Q), propose(QUEUE_NEW), search(QUEUE_Q)])
            # Tuesday, the chat: the deploy day moves.
            chat(8, time(9, 0), [  # streamed, the model proposing with a tool call
                ("Change of plan: Harbor deploys move to Tuesdays, Thursdays are too busy.", "Noted.", [DEPLOY_NEW]),
                ("The RabbitMQ workshop next month sounds fun though.", "It does!", []),
            ], stream=True, tool_call=True)
            chat(8, time(9, 10), [(DEPLOY_Q, None, [])], ask=True)  # a new chat, before any consolidation
            record.chat[DEPLOY_Q + "#at once"] = record.chat.pop(DEPLOY_Q)
            # Tuesday 09:20 in Tokyo (00:20 UTC, Tuesday there too): yesterday is Monday, when
            # the queue was corrected in Tokyo (07:50), not UTC's Monday (it was Sunday there).
            editor(8, time(9, 20), "ide-w2-tue", [search(YESTERDAY_Q)])
            chat(8, time(9, 25), [(YESTERDAY_Q, None, [])], ask=True)
            # Wednesday: chatter in the morning; the database moves (the editor, another title).
            chat(9, time(8, 0), [(line, "Ha, nice.", []) for line in CHATTER])
            editor(9, time(9, 30), "ide-w2-wed", [propose(DB_NEW)])
            # Wednesday: a session instruction in one editor session and in one chat.
            editor(9, time(11, 0), "ide-w2-legacy", [propose(INDENT_SESSION), search(INDENT_Q)])
            chat(9, time(14, 0), [
                ("For this chat only, indent with 3 spaces.", "Sure.", [INDENT_CHAT]),
                (INDENT_Q, None, []),
            ], ask=True)
            record.chat[INDENT_Q + "#chat"] = record.chat.pop(INDENT_Q)
            consolidate()
            # Thursday: Mira asks in both surfaces.
            chat(10, time(9, 30), [
                (QUEUE_Q, None, []),
                (DEPLOY_Q, None, []),
                (INDENT_Q, None, []),
                ("What do I prefer?", None, []),
                (CHANGED_Q, None, []),
                (DB_Q, None, []),
            ], ask=True)
            editor(10, time(10, 0), "ide-w2-thu", [search(QUEUE_Q), search(DEPLOY_Q), search(INDENT_Q),
                                                   search(CHANGED_Q), search(DB_Q)])
            # Another project of Mira's: Harbor's convention and session wishes stay in Harbor.
            lighthouse = {**HEADERS, "X-Loci-Project": "lighthouse"}
            other = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=lighthouse)
            other.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": INDENT_Q}])
            record.chat[INDENT_Q + "#lighthouse"] = system_text(shared_fake.requests[-1][1])
            # Thursday, back in the legacy-parser session (a new connection, after consolidation).
            editor(10, time(10, 3), "ide-w2-legacy", [search(INDENT_Q + " (again)")])
            # "When did the queue change, and what was it before?" The agent reads the current
            # decision, then the id its `supersedes` link names.
            (current,) = editor(10, time(10, 5), "ide-w2-thu", [
                ("memory_read", {"ids": [record.ids[QUEUE_NEW["content"]]]})])[0]["items"]
            before = [link["to"] for link in current["links"] if link["rel"] == "supersedes"]
            record.read_before = editor(10, time(10, 6), "ide-w2-thu", [("memory_read", {"ids": before})])[0]
            # Friday: the agent edits Harbor's convention in place (memory_update), then asks.
            editor(11, time(16, 0), "ide-w2-fri", [
                ("memory_update", {"id": record.ids[INDENT_PROJECT["content"]], "patch": {"content": INDENT_EDITED}}),
                search(INDENT_Q)])
            record.edited_at = clock.now
            # The audit questions and the browser, after all this.
            with TestClient(create_app(settings, service=memory)) as api:
                params = {**MIRA, "session_id": "ide-w2-thu"}
                for content in (QUEUE_OLD, QUEUE_NEW, DEPLOY_OLD, DEPLOY_NEW, INDENT_PROJECT):
                    item_id = record.ids[content["content"]]
                    resp = api.get(f"/v1/items/{item_id}", params=params)
                    assert resp.status_code == 200, resp.text
                    record.items[item_id] = resp.json()
                    resp = api.get(f"/ui/items/{item_id}", params=params)
                    assert resp.status_code == 200, resp.text
                    record.cards[item_id] = page_text(resp.text)
                for name, path in (("home", "/ui/"), ("palace", "/ui/palace")):
                    resp = api.get(path, params=params)
                    assert resp.status_code == 200, resp.text
                    record.pages[name] = page_text(resp.text)
                record.pages["shelves"] = ""
                for path in shelves(api, params):
                    resp = api.get("/ui/palace", params={**params, "path": path})
                    record.pages["shelves"] += page_text(resp.text) + "\n"
    memory.close()
    for content in (QUEUE_OLD, QUEUE_NEW, DEPLOY_OLD, DEPLOY_NEW, INDENT_PROJECT):
        item_id = record.ids[content["content"]]
        result = CliRunner().invoke(loci_cli, ["show", item_id, "--data-dir", str(settings.data_dir)])
        assert result.exit_code == 0, result.output
        record.show[item_id] = result.output
    yield record


def shelves(api: TestClient, params: dict[str, str]) -> list[str]:
    """Every shelf path of the palace the caller sees (domain/room/shelf)."""
    out: list[str] = []

    def walk(path: str, depth: int) -> None:
        listed = api.post("/v1/tools", json={"action": "memory.palace.list", "identity": params,
                                             "args": {"path": path}}).json()["result"]
        for child in listed["children"]:
            name = f"{path}/{child}".strip("/")
            if depth == 2:
                out.append(name)
            else:
                walk(name, depth + 1)

    walk("", 0)
    return out


def parts(sent: str) -> tuple[str, str]:
    curated, _, turns = sent.partition(EPISODIC_HEADER)
    return curated, turns


def memory_ids(text: str) -> list[str]:
    return re.findall(r"\[MEMORY: (\S+) ", text)


# -- what did we decide? ---------------------------------------------------------------------


@pytest.mark.parametrize(("question", "new", "old"), [(QUEUE_Q, QUEUE_NEW, QUEUE_OLD),
                                                        (DEPLOY_Q, DEPLOY_NEW, DEPLOY_OLD)])
def test_the_correction_is_first_in_the_chat_and_the_old_claim_is_not_current(fortnight, question, new, old) -> None:
    sent = fortnight.chat[question]
    curated, turns = parts(sent)
    assert memory_ids(curated)[:1] == [fortnight.ids[new["content"]]], sent
    assert fortnight.ids[old["content"]] not in curated, sent  # superseded: not handed over as current
    assert old["content"] not in curated, sent
    assert "[MEMORY:" not in turns, sent  # turns only as excerpts


@pytest.mark.parametrize(("question", "new", "old"), [(QUEUE_Q, QUEUE_NEW, QUEUE_OLD),
                                                        (DEPLOY_Q, DEPLOY_NEW, DEPLOY_OLD)])
def test_the_correction_is_first_in_the_editor_and_the_old_claim_is_not_current(fortnight, question, new, old) -> None:
    hits = fortnight.mcp[f"ide-w2-thu: {question}"]["hits"]
    assert hits and hits[0]["id"] == fortnight.ids[new["content"]], hits
    assert fortnight.ids[old["content"]] not in [h["id"] for h in hits], hits
    kinds = [h["type"] == "message" for h in hits]
    assert kinds == sorted(kinds), hits  # curated before every turn


def test_each_correction_names_what_it_replaced_across_surfaces(fortnight) -> None:
    ids = fortnight.ids
    assert fortnight.supersedes[QUEUE_NEW["content"]] == [ids[QUEUE_OLD["content"]]]  # chat -> editor
    assert fortnight.supersedes[DEPLOY_NEW["content"]] == [ids[DEPLOY_OLD["content"]]]  # editor -> chat


def test_chatter_sharing_the_words_never_outranks_the_decision(fortnight) -> None:
    for question in (QUEUE_Q, DEPLOY_Q):
        curated, turns = parts(fortnight.chat[question])
        for chatter in ("ramen", "rabbit in our office", "pizza day", "queue of comments", "workshop"):
            assert chatter not in curated, (question, curated)


# -- scope priority ----------------------------------------------------------------------------


@pytest.mark.parametrize("asked", [INDENT_Q, INDENT_Q + " (again)"])
def test_the_editor_session_instruction_outranks_project_user_and_org(fortnight, asked) -> None:
    """At once, and two days later in the same session after a consolidation."""
    ids = fortnight.ids
    hits = [h["id"] for h in fortnight.mcp[f"ide-w2-legacy: {asked}"]["hits"] if h["type"] != "message"]
    order = [ids[c["content"]] for c in (INDENT_SESSION, INDENT_PROJECT, INDENT_USER, INDENT_ORG)]
    assert [h for h in hits if h in order] == order, hits
    assert ids[INDENT_CHAT["content"]] not in hits  # the chat's instruction stays in the chat


def test_the_chat_session_instruction_outranks_project_user_and_org(fortnight) -> None:
    ids = fortnight.ids
    sent = fortnight.chat[INDENT_Q + "#chat"]
    shown = memory_ids(parts(sent)[0])
    order = [ids[c["content"]] for c in (INDENT_CHAT, INDENT_PROJECT, INDENT_USER, INDENT_ORG)]
    assert [h for h in shown if h in order] == order, sent
    assert ids[INDENT_SESSION["content"]] not in shown  # the editor session's stays there


def test_without_a_session_instruction_the_project_convention_comes_first_on_both_surfaces(fortnight) -> None:
    ids = fortnight.ids
    order = [ids[c["content"]] for c in (INDENT_PROJECT, INDENT_USER, INDENT_ORG)]
    sessions = {ids[INDENT_SESSION["content"]], ids[INDENT_CHAT["content"]]}
    shown = memory_ids(parts(fortnight.chat[INDENT_Q])[0])
    assert [h for h in shown if h in order] == order and not sessions & set(shown), shown
    hits = [h["id"] for h in fortnight.mcp[f"ide-w2-thu: {INDENT_Q}"]["hits"] if h["type"] != "message"]
    assert [h for h in hits if h in order] == order and not sessions & set(hits), hits


# -- audit -------------------------------------------------------------------------------------


def test_loci_show_of_the_correction_tells_when_it_changed_and_who_changed_it(fortnight) -> None:
    for new, old in ((QUEUE_NEW, QUEUE_OLD), (DEPLOY_NEW, DEPLOY_OLD)):
        shown = fortnight.show[fortnight.ids[new["content"]]]
        assert "mira" in shown, shown
        # Both versions with their day: the correction's and the claim it replaced.
        for content in (new, old):
            day = fortnight.said_at[content["content"]].astimezone(timezone.utc).date().isoformat()
            assert day in shown, (content["title"], day, shown)
        assert old["content"] in shown or fortnight.ids[old["content"]] in shown, shown


def test_the_items_api_keeps_every_version_with_author_and_time(fortnight) -> None:
    for new, old in ((QUEUE_NEW, QUEUE_OLD), (DEPLOY_NEW, DEPLOY_OLD)):
        old_id, new_id = fortnight.ids[old["content"]], fortnight.ids[new["content"]]
        earlier = fortnight.items[old_id]
        assert earlier["item"]["content"] == old["content"], earlier  # not collapsed into the latest
        assert earlier.get("replaced_by") == new_id or earlier["item"].get("superseded_by") == new_id, earlier
        later = fortnight.items[new_id]
        assert later["item"]["content"] == new["content"]
        for body, content in ((earlier, old), (later, new)):
            day = fortnight.said_at[content["content"]].date().isoformat()  # UTC, as stored
            stamps = [e for e in body["history"] + body["events"] if "mira" in json.dumps(e) and day in json.dumps(e)]
            assert stamps, (day, body)


def test_the_browser_card_of_the_correction_shows_the_earlier_version(fortnight) -> None:
    for new, old in ((QUEUE_NEW, QUEUE_OLD), (DEPLOY_NEW, DEPLOY_OLD)):
        card = fortnight.cards[fortnight.ids[new["content"]]]
        assert "mira" in card, card
        assert fortnight.ids[old["content"]] in card, card  # a way to the earlier version
        earlier = fortnight.cards[fortnight.ids[old["content"]]]
        assert old["content"] in earlier and fortnight.ids[new["content"]] in earlier, earlier


# -- the browser ---------------------------------------------------------------------------------


def test_the_browser_lists_the_preferences_and_current_decisions(fortnight) -> None:
    """The palace's shelves list each current memory once (by title, type, tier, scope) and
    none that a correction replaced: one "Harbor message queue", one "Harbor deploy day", the
    database under its new title only; the preferences on Mira's own shelf."""
    listed = fortnight.pages["shelves"]
    for row in ("Answer style preference", "Indentation preference", "Harbor message queue decision",
                "Harbor deploy day decision", "Harbor database version decision", "Harbor indentation constraint"):
        assert listed.count(row) == 1, (row, listed)
    assert "Harbor database decision" not in listed, listed  # replaced under its old title
    # Harbor's convention as the agent's edit left it (not consolidated yet) heads its card;
    # the text before the edit only in its history below.
    card = fortnight.cards[fortnight.ids[INDENT_PROJECT["content"]]]
    assert card.index(INDENT_EDITED) < card.index("2 spaces"), card


# -- pushing harder --------------------------------------------------------------------------------


@pytest.mark.parametrize("question", [QUEUE_Q, DEPLOY_Q])
def test_the_turn_stating_the_replaced_decision_is_not_evidence_on_either_surface(fortnight, question) -> None:
    _, turns = parts(fortnight.chat[question])
    found = json.dumps(fortnight.mcp[f"ide-w2-thu: {question}"])
    loci = json.dumps(fortnight.catalog[question])
    for old in ("use RabbitMQ as the message queue", "deploys to production on Thursdays"):
        assert old not in turns and old not in found and old not in loci, (question, turns, found, loci)


def test_what_do_i_prefer_lists_both_preferences_in_the_chat(fortnight) -> None:
    curated, _ = parts(fortnight.chat["What do I prefer?"])
    assert STYLE["content"] in curated and INDENT_USER["content"] in curated, curated
    assert "Harbor deploys" not in curated and "message queue" not in curated, curated


def test_last_week_is_mira_s_week_in_tokyo_on_both_surfaces(fortnight) -> None:
    """Asked early on Monday in Tokyo (still Sunday in UTC), "last week" is the week just
    ended on Mira's calendar: its decisions, RabbitMQ and Thursdays, as they stood then."""
    curated, _ = parts(fortnight.chat[LAST_WEEK_Q + "#chat"])
    hits = [h for h in fortnight.mcp[f"ide-w2-mon: {LAST_WEEK_Q}"]["hits"] if h["type"] != "message"]
    for decided in (QUEUE_OLD, DEPLOY_OLD):
        assert decided["content"] in curated, curated
        assert decided["content"] in [h["content"] for h in hits], hits


def test_right_after_the_correction_the_editor_answers_with_it(fortnight) -> None:
    hits = fortnight.mcp[f"ide-w2-mon: {QUEUE_Q}"]["hits"]
    assert hits and hits[0]["id"] == fortnight.ids[QUEUE_NEW["content"]], hits
    assert fortnight.ids[QUEUE_OLD["content"]] not in [h["id"] for h in hits], hits


def test_an_edit_in_place_is_current_and_keeps_the_version_before_it(fortnight) -> None:
    """The agent's memory_update of Harbor's convention: recall answers the new text, and the
    item's history (items API, `loci show`, browser card) keeps the old text beside the new,
    with Mira and the time of each."""
    item_id = fortnight.ids[INDENT_PROJECT["content"]]
    hits = fortnight.mcp[f"ide-w2-fri: {INDENT_Q}"]["hits"]
    assert [h["content"] for h in hits if h["id"] == item_id] == [INDENT_EDITED], hits
    body = fortnight.items[item_id]
    assert body["item"]["content"] == INDENT_EDITED
    told = json.dumps(body)
    assert INDENT_PROJECT["content"] in told, told  # the version before the edit
    edited_day = fortnight.edited_at.date().isoformat()
    assert any(e.get("kind") == "memory.update" and "mira" in json.dumps(e) and edited_day in json.dumps(e)
               for e in body["history"]), body["history"]
    shown = fortnight.show[item_id]
    assert "2 spaces" in shown and "4 spaces" in shown, shown
    card = fortnight.cards[item_id]
    assert "2 spaces" in card and "4 spaces" in card, card


def test_when_it_changed_and_who_is_answered_from_the_block_on_mira_s_calendar(fortnight) -> None:
    """The correction was made on Monday 07:50 in Tokyo (Sunday in UTC): the block says Mira
    made it on Monday, the 16th on her calendar, and the editor's hit is the correction."""
    new_id = fortnight.ids[QUEUE_NEW["content"]]
    sent = fortnight.chat[CHANGED_Q]
    curated, _ = parts(sent)
    assert memory_ids(curated)[:1] == [new_id], sent
    header = curated.split(f"[MEMORY: {new_id}")[1].split("\n", 1)[0]
    said = fortnight.said_at[QUEUE_NEW["content"]].astimezone(ZONE).date().isoformat()
    assert f"by=mira on {said}" in header, (said, header)
    assert QUEUE_OLD["content"] not in curated, curated
    hits = fortnight.mcp[f"ide-w2-thu: {CHANGED_Q}"]["hits"]
    assert hits and hits[0]["id"] == new_id, hits


def test_a_wish_for_one_chat_stays_in_that_chat_as_evidence_too(fortnight) -> None:
    """"For this chat only, indent with 3 spaces." is neither a claim nor a turn in the next
    chat or in the editor."""
    _, turns = parts(fortnight.chat[INDENT_Q])
    found = json.dumps(fortnight.mcp[f"ide-w2-thu: {INDENT_Q}"])
    assert "3 spaces" not in turns and "3 spaces" not in found, (turns, found)


def test_the_editor_agent_can_tell_what_the_decision_was_before_and_who_said_it_when(fortnight) -> None:
    """Over MCP there is no history endpoint: memory_read of the id a correction replaced
    names the correction and gives the replaced claim as last stored (what it said, whose
    it is, when it was stated), not only a bare "missing"."""
    old_id, new_id = fortnight.ids[QUEUE_OLD["content"]], fortnight.ids[QUEUE_NEW["content"]]
    body = fortnight.read_before
    assert body["superseded_by"] == {old_id: new_id}, body
    (before,) = body["replaced"]
    assert before["id"] == old_id and before["content"] == QUEUE_OLD["content"], before
    assert before["scope"]["user_id"] == "mira" and before["superseded_by"] == new_id, before
    said = fortnight.said_at[QUEUE_OLD["content"]].date().isoformat()
    assert before["created_at"].startswith(said), (said, before["created_at"])


def test_in_another_project_her_preference_comes_before_the_org_rule_and_harbor_is_out(fortnight) -> None:
    ids = fortnight.ids
    shown = memory_ids(parts(fortnight.chat[INDENT_Q + "#lighthouse"])[0])
    assert [i for i in shown if i in (ids[INDENT_USER["content"]], ids[INDENT_ORG["content"]])] == [
        ids[INDENT_USER["content"]], ids[INDENT_ORG["content"]]], shown
    harbor = {ids[c["content"]] for c in (INDENT_PROJECT, INDENT_SESSION, INDENT_CHAT)}
    assert not harbor & set(shown), shown


def test_a_correction_under_another_title_answers_first_on_both_surfaces(fortnight) -> None:
    new_id, old_id = fortnight.ids[DB_NEW["content"]], fortnight.ids[DB_OLD["content"]]
    curated, _ = parts(fortnight.chat[DB_Q])
    assert memory_ids(curated)[:1] == [new_id], curated
    hits = fortnight.mcp[f"ide-w2-thu: {DB_Q}"]["hits"]
    assert hits and hits[0]["id"] == new_id, hits
    if old_id in curated:  # kept beside it only as what it corrected, never as current
        assert curated.index(new_id) < curated.index(old_id), curated


@pytest.mark.parametrize("question", [QUEUE_Q, DEPLOY_Q, DB_Q, INDENT_Q])
def test_wednesdays_chatter_never_comes_before_a_claim(fortnight, question) -> None:
    curated, _ = parts(fortnight.chat[question])
    assert not any(line in curated for line in CHATTER), curated
    hits = fortnight.mcp[f"ide-w2-thu: {question}"]["hits"]
    kinds = [h["type"] == "message" for h in hits]
    assert kinds == sorted(kinds), hits



def test_yesterday_is_tokyo_s_monday_on_both_surfaces(fortnight) -> None:
    new_id, old_id = fortnight.ids[QUEUE_NEW["content"]], fortnight.ids[QUEUE_OLD["content"]]
    found = [h for h in fortnight.mcp[f"ide-w2-tue: {YESTERDAY_Q}"]["hits"] if h["type"] != "message"]
    hits = [h["id"] for h in found]
    assert hits[:1] == [new_id] and old_id not in hits, hits
    assert "rank_said_when" in found[0]["components"], found[0]  # found as said on her Monday
    curated, _ = parts(fortnight.chat[YESTERDAY_Q])
    assert memory_ids(curated)[:1] == [new_id] and old_id not in curated, curated


def test_right_after_the_chat_corrected_the_deploy_day_a_new_chat_answers_with_it(fortnight) -> None:
    curated, _ = parts(fortnight.chat[DEPLOY_Q + "#at once"])
    assert memory_ids(curated)[:1] == [fortnight.ids[DEPLOY_NEW["content"]]], curated
    assert DEPLOY_OLD["content"] not in curated, curated
