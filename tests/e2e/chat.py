"""What the e2e scenarios do between turns, in one place: run a consolidation the way the
scheduled job does and have the service load what it published, and read a browser page's
text as a person does, and the chat loop's calls (turn, tool, recall); one user's chat in
their zone over a fresh app (`zoned_chat`), and what a recall answer shows."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from litestar.testing import TestClient
from mcp.client.client import Client as MCPClient

from online.app import create_app
from online.mcp_server import build_server
from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder
from pipelines.recall.engine import parse_now
from pipelines.records import Identity
from tests.assets.support import block, make_settings


def consolidate(client: TestClient, settings) -> None:
    """Flush the recalls' usage events (they go into this run), consolidate, reload the snapshot."""
    assert client.app.state.service.usage.flush()
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200


def page_text(page: str) -> str:
    """A page's text as a reader sees it: no tags, one space between words."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


# One chat loop's calls over HTTP, each asserting the status a well-formed call gets.
def turn(client, who: dict, role: str, text: str) -> dict:
    resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": text})
    assert resp.status_code == 201, resp.text
    return resp.json()


def proposal_verdict(client, who: dict, item: dict) -> dict:
    """An assistant turn proposing `item` (the chat loop's block) and the one verdict it got."""
    (verdict,) = turn(client, who, "assistant", "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item])
                      + "</MEMORY_PROPOSALS_JSON>")["proposals"]
    return verdict


def team_fact(client, who: dict, said: str, title: str) -> dict:
    """`who` says `said` and the assistant proposes it as a project fact under `title`;
    returns the proposal's outcome, whatever the policy decided."""
    turn(client, who, "user", said + ".")
    answer = turn(client, who, "assistant", "Noted. " + block({
        "type": "fact", "title": title, "content": said + ".", "why_store": "team", "confidence": 0.9,
        "scope": "project"}))
    (outcome,) = answer["proposals"]
    return outcome


def said_with_proposal(client, who: dict, when: datetime, text: str, item: dict, tz: str) -> dict:
    """The user says `text` at `when` (in zone `tz`) and the assistant, 20 s later, proposes
    `item`; returns the proposal's outcome, asserted accepted."""
    reply = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"
    for role, said, at in (("user", text, when), ("assistant", reply, when + timedelta(seconds=20))):
        resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": said,
                                              "at": at.isoformat(), "tz": tz})
        assert resp.status_code == 201, resp.text
    (outcome,) = resp.json()["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome


def tool(client, who: dict, action: str, args: dict) -> dict:
    resp = client.post("/v1/tools", json={"action": action, "identity": who, "args": args})
    assert resp.status_code < 300, resp.text
    return resp.json()["result"]


def recall(client, who: dict, query: str, mode: str = "inject") -> dict:
    resp = client.post("/v1/recall", json={"identity": who, "query": query, "mode": mode})
    assert resp.status_code == 200, resp.text
    return resp.json()


def on_their_yesterday_not_utcs(zone: ZoneInfo) -> datetime:
    """A time on the asker's yesterday in `zone` (hours ahead of UTC) whose UTC day is not
    UTC's yesterday, whatever the hour the test runs: 00:30 there when both calendars share
    today, else 23:30."""
    now = datetime.now(timezone.utc)
    local_yesterday = now.astimezone(zone).date() - timedelta(days=1)
    clock = time(0, 30) if now.astimezone(zone).date() == now.date() else time(23, 30)
    when = datetime.combine(local_yesterday, clock, zone)
    assert when.astimezone(timezone.utc).date() != now.date() - timedelta(days=1)
    return when


class ZonedChat:
    """One user's chat in zone `tz` over a running app: turns said at a time with the chat
    model's proposal, tool calls, items read back and recalls asked in that zone. `ids`: the
    stored item of each named proposal; `yesterday`: 10:00 on the user's yesterday."""

    def __init__(self, client: TestClient, settings, who: dict, tz: str) -> None:
        self.client, self.settings, self.who, self.tz = client, settings, who, tz
        self.today = datetime.now(ZoneInfo(tz)).date()
        self.yesterday = datetime.combine(self.today - timedelta(days=1), time(10), ZoneInfo(tz))
        self.ids: dict[str, str] = {}

    def say(self, name: str, when: datetime, text: str, item: dict) -> dict:
        outcome = said_with_proposal(self.client, self.who, when, text, item, self.tz)
        self.ids[name] = outcome["item_id"]
        return outcome

    def tool(self, action: str, args: dict) -> dict:
        resp = self.client.post("/v1/tools", json={"action": action, "identity": self.who, "args": args})
        assert resp.status_code == 200, resp.text
        return resp.json()["result"]

    def item(self, item_id: str) -> dict:
        resp = self.client.get(f"/v1/items/{item_id}", params=self.who)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def recall(self, query: str) -> dict:
        resp = self.client.post("/v1/recall", json={"identity": self.who, "query": query, "tz": self.tz})
        assert resp.status_code == 200, resp.text
        return resp.json()


@contextmanager
def zoned_chat(tmp_path_factory: pytest.TempPathFactory, name: str, who: dict, tz: str) -> Iterator[ZonedChat]:
    """A fresh app (hash embedder) in a temporary directory named `name`, and `who`'s chat in it."""
    settings = make_settings(tmp_path_factory.mktemp(name))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        yield ZonedChat(client, settings, who, tz)


def curated(answer: dict) -> list[str]:
    """The ids of a recall answer's curated hits (not turns), in its order."""
    return [h["id"] for h in answer["hits"] if h["type"] != "message"]


def curated_text(answer: dict) -> str:
    """The curated part of a recall answer's injected block, as the chat model reads it: the
    text before the conversation excerpts ("" when nothing is injected)."""
    return (answer["injection"] or "").split("CONVERSATION EXCERPTS")[0]


def entry_header(answer: dict, item_id: str) -> str:
    """The header line of `item_id`'s entry in the recall block."""
    return answer["injection"].split(f"[MEMORY: {item_id}")[1].split("\n", 1)[0]


def back_to_schema(data_dir: str, version: int, pending: str) -> None:
    """Put a store back at schema `version` as the code before the next migration left it:
    the later migrations unrecorded and their one-off mark (`ingest_state` key `pending`) gone,
    so the next consolidation upgrades it as it would a user's old store."""
    import duckdb

    con = duckdb.connect(f"{data_dir}/warehouse.duckdb")
    try:
        con.execute("DELETE FROM schema_version WHERE version > ?", [version])
        con.execute("DELETE FROM ingest_state WHERE key = ?", [pending])
    finally:
        con.close()


class SimulatedClock:
    """The simulated clock a scenario stamps every write with (patched where `utcnow` is
    read): `at` sets a day and time on the user's calendar, each reading a little later."""

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        self.now = datetime.now(timezone.utc)

    def at(self, day: date, clock: time) -> None:
        self.now = datetime.combine(day, clock, self.zone).astimezone(timezone.utc)

    def __call__(self) -> str:
        self.now += timedelta(seconds=30)  # each turn a little later than the one before
        return self.now.isoformat(timespec="microseconds")

    def patch_into(self, patch: pytest.MonkeyPatch) -> None:
        """Stamp every write with this clock (where `utcnow` is read) and answer recall at
        its time too ("last week" is the week before it), unless a request names `now`."""
        for where in ("pipelines.capture", "online.tools.writes", "online.tools.edits", "pipelines.inbox"):
            patch.setattr(f"{where}.utcnow", self)
        patch.setattr("pipelines.recall.engine.parse_now",
                      lambda now: parse_now(now) if now is not None else self.now.timestamp())


async def mcp_calls(service: Any, who: dict[str, str], calls: list[tuple[str, Any]]) -> list[tuple[bool, Any]]:
    """One editor session through the official MCP SDK client on `online.mcp_server`: each
    call's (is_error, JSON body)."""
    out = []
    async with MCPClient(build_server(service, Identity(**who))) as agent:
        for name, args in calls:
            result = await agent.call_tool(name, args)
            out.append((bool(result.is_error), json.loads(result.content[0].text)))
    return out


def mcp(service: Any, who: dict[str, str], *calls: tuple[str, Any]) -> list[tuple[bool, Any]]:
    """`mcp_calls` from synchronous test code."""
    return anyio.run(mcp_calls, service, who, list(calls))
