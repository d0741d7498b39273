"""What the e2e scenarios do between turns, in one place: run a consolidation the way the
scheduled job does and have the service load what it published, and read a browser page's
text as a person does, and the chat loop's calls (turn, tool, recall)."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

from litestar.testing import TestClient

from pipelines.consolidate import consolidate_once


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
