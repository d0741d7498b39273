"""Plans that hold for a time (the fourteenth new-user trial), over HTTP: a chat loop lands
Maya's turns and its model's proposals on `/v1/turns` (each with `at`, when it was said,
and `tz`, her zone, America/Sao_Paulo: UTC-3 all year), asks `/v1/recall` with the same
zone, and a real Dagster consolidation (`run_consolidation`) and a snapshot hot-swap run
between her weeks. The model writes what she says as she says it ("next week", "until
Friday"): it is not told the date. Promises checked, after each consolidation:

- Time words are read on the day they were said, in her zone: "I'm in Lisbon from Monday
  to Thursday next week", said on a Sunday at 21:30 (already Monday in UTC), holds from
  that Monday to that Thursday (`valid_from` / `valid_to`), and the block says what
  "Monday", "Thursday", "next Tuesday", "in March" meant the day they were said (broken: no
  window was set from what was said, and the words were shown bare, to be read by the model
  on whatever day it was asked; nor did `/v1/turns` take the speaker's zone).
- A plan that has passed is kept as history, marked ENDED, after what holds now: "where am
  I next week?" answers next week's Porto trip (UPCOMING) before the Lisbon trip that is
  over; "am I on call?" finds last week's duty marked ENDED (broken: both injected as
  current, unmarked, the trip that is over first). Said again for this week in the same
  words, the duty is a memory of its own, current, before last week's (broken once windows
  were set: the consolidation merged the two into one item holding over both weeks, and
  recall showed one copy of the same words, whichever ranked first).
- "Until Friday, send reports to Ana instead of me" ends on Friday: after it, her standing
  "reports go to Maya" is the current answer and Ana's stand-in is marked ENDED; while a
  stand-in holds (invoices to Bruno until tomorrow), both are shown, the stand-in not ended
  (broken: the stand-in superseded the standing rule when said, so after Friday the only
  answer was Ana; and recall's conflict rule kept the newer of the two on recency).
  An MCP agent's `memory_search` says so too: each hit's window and whether it has ENDED
  (broken: hits carried no window at all).
- A move "from <date>" is UPCOMING beside the address that holds until then (both were
  shown before, the move unmarked, as if it held already).
- A recurring schedule ("standup every weekday at 9:30", "gym on Mondays and Thursdays")
  is no date: no window, no ENDED, no "said on" line (kept).
- Every door reads the words in the speaker's zone: the proxy's chat with `X-Loci-Timezone`
  and an MCP agent's `memory_propose` with `tz` (broken: neither passed a zone to capture),
  in a zone whose calendar day is not UTC's when the test runs.
- A zone that is no zone is a 400 naming it, on `/v1/turns` as on `/v1/recall`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from litestar.testing import TestClient

from online.app import create_app
from online.mcp_server import call as mcp_call
from online.proxy import ProxyConfig, create_proxy_app
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import make_settings
from tests.e2e.chat import curated
from tests.e2e.test_trial12_weeks import consolidate
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import block, serve

TZ = "America/Sao_Paulo"
ZONE = ZoneInfo(TZ)
MAYA = {"user_id": "maya", "project_id": "life", "session_id": "chat"}
QUESTIONS = {"where": "where am I next week?", "dentist": "when is the dentist?", "reports": "who gets the reports?",
             "address": "what's my address?", "on call": "am I on call?", "standup": "when is standup?",
             "passport": "when does my passport expire?", "invoices": "who gets the invoices?"}


def fact(title: str, content: str, type_: str = "fact") -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so"}


def last_sunday_before(day: date) -> date:
    return day - timedelta(days=(day.weekday() + 1) % 7)


class Maya:
    """Her days, counted back from today in her zone; the Lisbon trip is told on a Sunday
    evening at least nine days back, so that it is over whatever day the test runs."""

    def __init__(self) -> None:
        self.today = datetime.now(ZONE).date()
        self.sunday = last_sunday_before(self.today - timedelta(days=9))
        self.move = self.today + timedelta(days=3)

    def on(self, day: date, hh: int = 10, mm: int = 0) -> datetime:
        return datetime.combine(day, time(hh, mm), ZONE)


def say(client: TestClient, when: datetime, text: str, proposals: list[dict]) -> list[dict]:
    """Her turn and the model's answer proposing what to keep, as a chat loop lands them."""
    for role, said, at in (("user", text, when), ("assistant", "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps(
            proposals) + "</MEMORY_PROPOSALS_JSON>", when + timedelta(seconds=20))):
        resp = client.post("/v1/turns", json={"identity": MAYA, "role": role, "text": said,
                                              "at": at.isoformat(), "tz": TZ})
        assert resp.status_code == 201, resp.text
    outcomes = resp.json()["proposals"]
    assert [p["action"] for p in outcomes] == ["accept"] * len(proposals), outcomes
    return outcomes


@pytest.fixture(scope="module")
def weeks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Her month before and her last days, each followed by a consolidation; what recall
    answered after each, and the ids of what she said."""
    settings = make_settings(tmp_path_factory.mktemp("plans"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    maya, ids, seen = Maya(), {}, {}

    def land(name: str, when: datetime, text: str, *proposals: dict) -> None:
        for n, outcome in enumerate(say(client, when, text, list(proposals))):
            ids[name if n == 0 else f"{name} {n}"] = outcome["item_id"]

    def look(week: str) -> None:
        seen[week] = {}
        for key, question in QUESTIONS.items():
            resp = client.post("/v1/recall", json={"identity": MAYA, "query": question, "tz": TZ})
            assert resp.status_code == 200, resp.text
            seen[week][key] = resp.json()

    with TestClient(app) as client:
        month_ago = maya.today - timedelta(days=30)
        land("reports to maya", maya.on(month_ago), "Weekly reports go to me, Maya.",
             fact("Report recipient", "Weekly reports go to Maya."))
        land("old address", maya.on(month_ago, 11), "I live at Rua Velha 12, Lisbon.",
             fact("Home address", "Maya lives at Rua Velha 12, Lisbon."))
        land("standup", maya.on(month_ago, 12), "Standup is every weekday at 9:30, and gym on Mondays and Thursdays.",
             fact("Standup", "Standup every weekday at 9:30."), fact("Gym", "Gym on Mondays and Thursdays."))
        land("invoices to maya", maya.on(month_ago, 13), "Invoices go to me too.",
             fact("Invoice recipient", "Invoices go to Maya."))
        land("lisbon", maya.on(maya.sunday, 21, 30), "I'm in Lisbon from Monday to Thursday next week.",
             fact("Lisbon trip", "Maya is in Lisbon from Monday to Thursday next week."))
        land("reports to ana", maya.on(maya.sunday + timedelta(days=2)),
             "Until Friday, send reports to Ana instead of me.",
             fact("Report recipient", "Until Friday, reports go to Ana instead of Maya."))
        land("on call", maya.on(maya.sunday + timedelta(days=3)), "I'm on call this week.",
             fact("On call", "Maya is on call this week."))
        consolidate(client, settings)
        look("week 1")

        yesterday = maya.on(maya.today - timedelta(days=1))
        land("dentist", yesterday, "The dentist is next Tuesday at 3pm. Also my passport expires in March.",
             fact("Dentist", "Dentist appointment next Tuesday at 3pm.", "todo"),
             fact("Passport", "Maya's passport expires in March."))
        land("porto", yesterday + timedelta(hours=1), "Next week I'm in Porto from Tuesday to Friday.",
             fact("Porto trip", "Maya is in Porto from Tuesday to Friday next week."))
        moving = f"{maya.move:%B} {maya.move.day}"
        land("new address", yesterday + timedelta(hours=2), f"My new address from {moving} is Rua Nova 5, Lisbon.",
             fact("Home address", f"From {moving}, Maya's address is Rua Nova 5, Lisbon."))
        land("invoices to bruno", datetime.now(ZONE) - timedelta(hours=1),
             "Until tomorrow, send invoices to Bruno instead of me.",
             fact("Invoice recipient", "Until tomorrow, invoices go to Bruno instead of Maya."))
        # today in her zone, whatever the hour ("this week" said at 23:50 last Sunday is over)
        this_morning = max(datetime.now(ZONE) - timedelta(minutes=30), maya.on(maya.today, 0, 1))
        land("on call again", this_morning, "I'm on call again this week.",
             fact("On call", "Maya is on call this week."))
        consolidate(client, settings)
        look("week 2")
        far = far_zone()
        with FakeOllama() as fake, serve(create_proxy_app(
                settings, service=client.app.state.service, upstream=fake.url,
                config=ProxyConfig(flags_check_interval_s=0))) as url:
            fake.chat_reply = lambda req: "Okay. " + block(fact("Working from home",
                                                                 "Maya works from home until tomorrow."))
            said = {"role": "user", "content": "I'm working from home until tomorrow."}
            resp = httpx.post(f"{url}/v1/chat/completions", timeout=30, headers={
                "X-Loci-User": "maya", "X-Loci-Project": "life", "X-Loci-Timezone": far},
                json={"model": "llama3.2", "messages": [said]})
            assert resp.status_code == 200, resp.text
            (proposed,) = resp.json()["loci"]["proposals"]
            ids["from home"] = proposed["item_id"]
        failed, answer = mcp(client, "memory_propose", {"tz": far, "items": [
            fact("Car", "Maya's car is at the garage until tomorrow.")]})
        assert not failed, answer
        ids["car"] = answer["proposals"][0]["item_id"]
        seen["agent reports"] = mcp(client, "memory_search", {"query": QUESTIONS["reports"], "tz": TZ})
        items = {name: client.get(f"/v1/items/{item_id}", params=MAYA).json()["item"] for name, item_id in ids.items()}
        bad = [client.post(path, json=body | {"identity": MAYA, "tz": "Mars/Olympus"}) for path, body in (
            ("/v1/turns", {"role": "user", "text": "hello"}), ("/v1/recall", {"query": "where am I?"}))]
        yield {"maya": maya, "ids": ids, "seen": seen, "items": items, "bad": bad, "far": far}


def far_zone() -> str:
    """A zone whose calendar day is not UTC's now: 14 hours ahead from 10:00 UTC, else 12 behind."""
    return "Etc/GMT-14" if datetime.now(timezone.utc).hour >= 10 else "Etc/GMT+12"


def mcp(client: TestClient, name: str, args: dict) -> tuple[bool, dict]:
    """An MCP agent's call (the dispatcher behind `loci mcp`), as Maya."""
    result = mcp_call(ToolDispatcher(client.app.state.service), name, args, Identity(**MAYA))
    return bool(result.is_error), json.loads(result.content[0].text)


def entries(answer: dict) -> dict[str, str]:
    """The block's curated entries by memory id: header line and body."""
    block = answer["injection"].split("CONVERSATION EXCERPTS")[0]
    out = {}
    for part in block.split("[MEMORY: ")[1:]:
        out[part.split(" | ", 1)[0]] = part.split("[/MEMORY]")[0]
    return out


def header(entry: str) -> str:
    return entry.split("\n", 1)[0]


def test_time_words_are_read_on_the_day_they_were_said_in_her_zone(weeks) -> None:
    maya, items = weeks["maya"], weeks["items"]
    monday, thursday = maya.sunday + timedelta(days=1), maya.sunday + timedelta(days=4)
    # said at 21:30 on a Sunday in Sao Paulo (Monday 00:30 in UTC): the Monday after, not a week later
    assert items["lisbon"]["valid_from"][:10] == monday.isoformat(), items["lisbon"]
    assert items["lisbon"]["valid_to"][:10] == thursday.isoformat(), items["lisbon"]
    week = maya.sunday + timedelta(days=1)
    assert items["on call"]["valid_from"][:10] == week.isoformat()
    assert items["on call"]["valid_to"][:10] == (week + timedelta(days=6)).isoformat()
    friday = maya.sunday + timedelta(days=5)
    stand_in = items["reports to ana"]
    assert stand_in["valid_from"] is None and stand_in["valid_to"][:10] == friday.isoformat(), stand_in
    said = maya.today - timedelta(days=1)
    tuesday = said + timedelta(days=(1 - said.weekday()) % 7 or 7)
    assert items["dentist"]["valid_to"][:10] == tuesday.isoformat(), items["dentist"]
    march = min((date(y, 3, 15) for y in (said.year - 1, said.year, said.year + 1)), key=lambda d: abs(d - said))
    for week_name in ("week 2",):
        dentist = entries(weeks["seen"][week_name]["dentist"])[weeks["ids"]["dentist"]]
        assert f"(Said on {said:%a} {said.isoformat()}: next Tuesday = Tue {tuesday.isoformat()}.)" in dentist, dentist
        passport = entries(weeks["seen"][week_name]["passport"])[weeks["ids"]["dentist 1"]]
        assert f"March = March {march.year}" in passport and "VALID=" not in header(passport), passport
    lisbon = entries(weeks["seen"]["week 1"]["where"])[weeks["ids"]["lisbon"]]
    assert f"Monday = Mon {monday.isoformat()}; Thursday = Thu {thursday.isoformat()}" in lisbon, lisbon


@pytest.mark.parametrize("week", ["week 1", "week 2"])
def test_a_plan_that_has_passed_is_history_after_what_holds_now(weeks, week: str) -> None:
    ids, seen = weeks["ids"], weeks["seen"][week]
    where = entries(seen["where"])
    assert " | ENDED" in header(where[ids["lisbon"]]), where
    assert "An entry marked ENDED held only until the end of its VALID window" in seen["where"]["injection"]
    if week == "week 2":
        order = curated(seen["where"])
        assert order.index(ids["porto"]) < order.index(ids["lisbon"]), seen["where"]["hits"]
        assert " | UPCOMING" in header(where[ids["porto"]]) and " | ENDED" not in header(where[ids["porto"]])
    on_call = entries(seen["on call"])
    assert " | ENDED" in header(on_call[ids["on call"]]), seen["on call"]["injection"]
    if week == "week 2":  # the same words for this week: its own memory, current, before last week's
        assert curated(seen["on call"])[:2] == [ids["on call again"], ids["on call"]], seen["on call"]["hits"]
        assert " | ENDED" not in header(on_call[ids["on call again"]]), seen["on call"]["injection"]
        assert weeks["items"]["on call again"]["tier"] == "stm" and weeks["items"]["on call"]["superseded_by"] is None


@pytest.mark.parametrize("week", ["week 1", "week 2"])
def test_until_friday_ends_and_the_standing_rule_holds_again(weeks, week: str) -> None:
    ids, seen = weeks["ids"], weeks["seen"][week]
    assert curated(seen["reports"])[:2] == [ids["reports to maya"], ids["reports to ana"]], seen["reports"]["hits"]
    shown = entries(seen["reports"])
    assert " | ENDED" not in header(shown[ids["reports to maya"]])
    assert " | ENDED" in header(shown[ids["reports to ana"]]), shown
    assert weeks["items"]["reports to maya"]["superseded_by"] is None
    hits = {h["id"]: h for h in seen["reports"]["hits"]}
    assert hits[ids["reports to ana"]]["window"] == "ENDED" and hits[ids["reports to maya"]]["window"] == ""
    if week == "week 2":  # a stand-in that still holds: both shown, neither ended
        invoices = entries(seen["invoices"])
        assert {ids["invoices to maya"], ids["invoices to bruno"]} <= set(invoices), seen["invoices"]["injection"]
        assert not any(" | ENDED" in header(e) for e in invoices.values()), invoices
        assert "VALID=.." in header(invoices[ids["invoices to bruno"]])


def test_an_agents_search_says_which_stand_in_has_ended(weeks) -> None:
    failed, found = weeks["seen"]["agent reports"]
    hits = {h["id"]: h for h in found["hits"]}
    assert not failed and {weeks["ids"]["reports to maya"], weeks["ids"]["reports to ana"]} <= set(hits), found
    ended = hits[weeks["ids"]["reports to ana"]]
    assert ended["window"] == "ENDED" and ended["valid_to"] == weeks["items"]["reports to ana"]["valid_to"], ended
    assert "window" not in hits[weeks["ids"]["reports to maya"]]


def test_a_move_from_a_date_is_upcoming_beside_the_address_that_holds_until_then(weeks) -> None:
    ids, address = weeks["ids"], weeks["seen"]["week 2"]["address"]
    shown = entries(address)
    assert {ids["old address"], ids["new address"]} <= set(shown), address["injection"]
    new = header(shown[ids["new address"]])
    assert f"VALID={weeks['maya'].move.isoformat()}.." in new and " | UPCOMING" in new, new
    # it holds until the day before the move, then is history (`capture.takes_over`)
    assert f"VALID=..{(weeks['maya'].move - timedelta(days=1)).isoformat()}" in header(shown[ids["old address"]])


def test_a_recurring_schedule_is_no_date(weeks) -> None:
    ids, items = weeks["ids"], weeks["items"]
    for name in ("standup", "standup 1"):
        assert items[name]["valid_from"] is None and items[name]["valid_to"] is None, items[name]
        assert "said_dates" not in items[name]["metadata"]
    standup = entries(weeks["seen"]["week 2"]["standup"])[ids["standup"]]
    assert "VALID=" not in header(standup) and "(Said on" not in standup, standup


def test_the_proxy_and_an_mcp_agent_read_the_words_in_the_speakers_zone(weeks) -> None:
    here = datetime.now(ZoneInfo(weeks["far"])).date()
    assert here != datetime.now(timezone.utc).date()
    for name in ("from home", "car"):
        item = weeks["items"][name]
        assert item["valid_to"][:10] == (here + timedelta(days=1)).isoformat(), item
        assert item["metadata"]["said_dates"]["on"].endswith(here.isoformat()), item["metadata"]


def test_a_zone_that_is_no_zone_is_refused(weeks) -> None:
    for resp in weeks["bad"]:
        assert resp.status_code == 400 and "Mars/Olympus" in resp.json()["error"], resp.text
