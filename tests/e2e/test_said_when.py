"""A chat loop asks about the past the way people do: "what did we decide yesterday?",
"what did I tell you last week?". Recall reads those words against the time of asking and
finds what was said then, whatever it was about; a loop that captures a conversation after
the fact says when each turn was said (`at` on /v1/turns)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from tests.e2e.chat import on_their_yesterday_not_utcs, recall, tool

DAN = {"user_id": "dan", "project_id": "shop", "session_id": "s1"}


def said(client, days_ago: float, role: str, text: str) -> dict:
    at = (datetime.now(timezone.utc) - timedelta(days=days_ago)).isoformat()
    resp = client.post("/v1/turns", json={"identity": DAN, "role": role, "text": text, "at": at})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_what_was_said_yesterday_is_found_by_the_day_it_was_said(service) -> None:
    client, _ = service
    said(client, 9, "user", "We settled on Stripe for the card payments, after comparing three providers.")
    said(client, 9, "user", "The storefront theme stays dark blue with orange buttons.")
    said(client, 5, "user", "Shipping to Canada starts in January, rates from the carrier table.")
    said(client, 1, "user", "OK, final call: the launch sale runs 20% off for the first week.")
    said(client, 1, "user", "And the newsletter goes out every second Thursday.")
    said(client, 0, "user", "Morning! Coffee first, then the inventory count.")
    decision = {"type": "decision", "title": "Launch sale", "content": "The launch sale is 20% off for the first week."}
    old = {"type": "decision", "title": "Payment provider", "content": "Card payments go through Stripe."}
    said(client, 9, "assistant", "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([old]) + "</MEMORY_PROPOSALS_JSON>")
    said(client, 1, "assistant", "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([decision]) + "</MEMORY_PROPOSALS_JSON>")

    hits = recall(client, DAN, "What did we decide yesterday?", mode="catalog")["hits"]
    assert hits[0]["title"] == "Launch sale", hits  # the curated decision of that day first
    top = " ".join(h["content"] for h in hits[:3])
    assert "launch sale" in top and "newsletter" in top, [h["content"] for h in hits]
    assert "Payment provider" not in [h["title"] for h in hits[:3]]  # an older decision after that day's
    assert "20% off" in recall(client, DAN, "What did we decide yesterday?")["injection"]

    hits = recall(client, DAN, "What did we talk about today?", mode="catalog")["hits"]
    assert "inventory count" in hits[0]["content"], [h["content"] for h in hits]

    hits = recall(client, DAN, "What did I tell you about payments last week?", mode="catalog")["hits"]
    assert "Stripe" in hits[0]["content"], [h["content"] for h in hits]


def test_a_turn_said_in_the_future_or_at_no_time_is_refused(service) -> None:
    client, _ = service
    ahead = (datetime.now(timezone.utc) + timedelta(days=2)).isoformat()
    for at, wanted in ((ahead, "future"), ("last tuesday", "at")):
        resp = client.post("/v1/turns", json={"identity": DAN, "role": "user", "text": "hello", "at": at})
        assert resp.status_code == 400 and wanted in resp.json()["error"], resp.text
    said(client, 3, "user", "naive times are UTC")  # aware, three days back: accepted
    naive = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(tzinfo=None).isoformat()
    resp = client.post("/v1/turns", json={"identity": DAN, "role": "user", "text": "an hour ago", "at": naive})
    assert resp.status_code == 201, resp.text


def test_yesterday_is_the_askers_yesterday_in_their_time_zone(service) -> None:
    client, _ = service
    tokyo = ZoneInfo("Asia/Tokyo")  # UTC+9 all year: the test is the same in every season
    who = {"user_id": "kenji", "project_id": "shop", "session_id": "s1"}
    at = on_their_yesterday_not_utcs(tokyo)
    resp = client.post("/v1/turns", json={"identity": who, "role": "user", "at": at.isoformat(),
                                          "text": "We moved the warehouse pickup to Wednesdays."})
    assert resp.status_code == 201, resp.text

    def hits(tz: str | None) -> list[dict]:
        body = {"identity": who, "query": "What did we talk about yesterday?", "mode": "catalog"}
        resp = client.post("/v1/recall", json=body | ({"tz": tz} if tz else {}))
        assert resp.status_code == 200, resp.text
        return resp.json()["hits"]

    in_tokyo = hits("Asia/Tokyo")
    assert "warehouse pickup" in in_tokyo[0]["content"] and in_tokyo[0]["components"]["date"] > 0, in_tokyo
    assert not any(h["components"].get("date") for h in hits(None))  # on UTC's calendar it was not yesterday

    resp = client.post("/v1/recall", json={"identity": who, "query": "yesterday?", "tz": "Mars/Olympus"})
    assert resp.status_code == 400 and "Mars/Olympus" in resp.json()["error"], resp.text
    resp = client.post("/v1/tools", json={"identity": who, "action": "memory.search",
                                          "args": {"query": "what did we talk about yesterday?", "tz": "Asia/Tokyo"}})
    assert resp.status_code == 200 and "warehouse pickup" in resp.json()["result"]["hits"][0]["content"], resp.text
    resp = client.post("/v1/tools", json={"identity": who, "action": "memory.search",
                                          "args": {"query": "yesterday?", "tz": "America"}})
    assert resp.status_code == 400 and "time zone" in resp.json()["error"], resp.text  # a folder of zones


def test_who_decided_and_when_is_dated_on_the_askers_calendar(service) -> None:
    """The block's `by=... on <day>` answers "who decided this, and when?" in the asker's zone
    (`tz`), as their "yesterday" is read: UTC's day was shown to everyone. Kiritimati (UTC+14)
    and Baker Island (UTC-12) are 26 hours apart, so their days always differ, and at least
    one differs from UTC's whatever the hour the test runs."""
    client, _ = service
    tool(client, DAN, "memory.write", {"item": {"type": "decision", "title": "Launch sale",
                                                "content": "The launch sale is 20% off for the first week."}})
    for zone in ("Pacific/Kiritimati", "Etc/GMT+12"):
        resp = client.post("/v1/recall", json={"identity": DAN, "query": "What did we decide about the launch sale?",
                                               "tz": zone})
        assert resp.status_code == 200, resp.text
        today = datetime.now(ZoneInfo(zone)).date().isoformat()
        assert f"| by=dan on {today}]" in resp.json()["injection"], (zone, resp.json()["injection"])
