"""A household assistant over a year (the twenty-fourth new-user trial), over HTTP. Ana lives
in New York (America/New_York: 4-5 hours behind UTC, so her late evenings are UTC's next
day); she and her partner Ben share the household project `home`, each with a user scope of
their own. A chat loop lands their turns and its model's proposals on `/v1/turns` (each with
`at` and `tz`), writes with `/v1/tools`, asks `/v1/recall` in her zone, and an editor's agent
searches over MCP (`memory_search`); a real Dagster consolidation (`run_consolidation`) runs
between the seasons. Every write and question is stamped by one simulated clock.

- Birthdays and anniversaries come round every year: in February "what's coming up next
  month?" and "whose birthday is soon?" list Mom's birthday (said the spring before, its
  day corrected in the summer: the corrected day only), in May "what's coming up next
  month?" lists the June anniversary, which did not age out over the summer unasked.
- "What do you know about me?": what Ana said of herself, in her user scope or in the
  household's; not Ben's private plans (a surprise party for her), nor what Ben said of himself.
- The kids' bedtime, corrected under another title in the summer, answers "what's the kids'
  bedtime?" as the current rule, the old one history, chatter sharing its words below it.
- MCP `memory_search` answers like `/v1/recall`: curated memories first, raw turns labelled
  as evidence, her questions and "ok thanks" never listed.
- The memory browser shows the times of a card in the viewer's zone (`tz`), and `loci show`
  lists each version of the corrected rule with its author.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from litestar.testing import TestClient
from mcp.client.client import Client as MCPClient
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as loci_cli
from online.app import create_app
from online.mcp_server import build_server
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import make_settings, shared_instance
from tests.e2e.chat import SimulatedClock, curated, curated_text, page_text

TZ = "America/New_York"
ZONE = ZoneInfo(TZ)
ANA = {"user_id": "ana", "project_id": "home", "session_id": "kitchen"}
BEN = {"user_id": "ben", "project_id": "home", "session_id": "garage"}

COMING = "what's coming up next month?"
SOON = "whose birthday is soon?"
ME = "what do you know about me?"
BEDTIME = "what's the kids' bedtime?"


def fact(title: str, content: str, type_: str = "fact", **more: Any) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "said so", **more}


def the_year() -> int:
    """The year the story starts: its spring, the next February and May are all past."""
    today = datetime.now(ZONE).date()
    return today.year - 1 if today >= date(today.year, 6, 20) else today.year - 2


@pytest.fixture(scope="module")
def year(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("t24"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    y = the_year()
    clock = SimulatedClock(ZONE)
    ids: dict[str, str] = {}
    seen: dict[str, Any] = {}

    with pytest.MonkeyPatch.context() as patch, TestClient(app) as client:
        clock.patch_into(patch)
        patch.setattr("assets.graph._now", lambda: clock.now)

        def say(name: str, day: date, hh: int, text: str, *items: dict, who: dict = ANA) -> None:
            clock.at(day, time(hh))
            reply = "Noted." + ((" <MEMORY_PROPOSALS_JSON>" + json.dumps(list(items)) + "</MEMORY_PROPOSALS_JSON>")
                                if items else "")
            for role, said in (("user", text), ("assistant", reply)):
                at = clock.now
                resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": said,
                                                      "at": at.isoformat(), "tz": TZ})
                assert resp.status_code == 201, resp.text
            for n, outcome in enumerate(resp.json()["proposals"]):
                assert outcome["action"] == "accept", (name, outcome)
                ids[name if n == 0 else f"{name} {n}"] = outcome["item_id"]

        def write(name: str, day: date, item: dict, who: dict) -> None:
            clock.at(day, time(21))
            resp = client.post("/v1/tools", json={"action": "memory.write", "identity": who,
                                                  "args": {"tz": TZ, "item": item}})
            assert resp.status_code == 200, resp.text
            ids[name] = resp.json()["result"]["item_id"]

        def ask(name: str, day: date, question: str, who: dict = ANA) -> None:
            clock.at(day, time(19, 30))
            resp = client.post("/v1/recall", json={"identity": who, "query": question, "tz": TZ})
            assert resp.status_code == 200, resp.text
            seen[name] = resp.json()

        def consolidate() -> None:
            assert client.app.state.service.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            assert client.post("/v1/admin/reload").status_code == 200

        # Spring: who they are, the household's rules, chatter
        spring = date(y, 3, 16)
        say("mom", spring, 20, "My mom's birthday is March 3, we just missed it! She loves orchids.",
            fact("Mom's birthday", "Ana's mom's birthday is March 3; she loves orchids."))
        say("anniversary", spring, 20, "Our wedding anniversary is June 14.",
            fact("Wedding anniversary", "Ana and Ben's wedding anniversary is June 14.", importance=2))
        say("lactose", spring, 21, "I'm lactose intolerant, so no milk in recipes for me.",
            fact("Lactose", "Ana is lactose intolerant.", scope="user"))
        say("nurse", spring + timedelta(days=1), 8, "I work night shifts as a nurse, so I sleep until 2pm.",
            fact("Ana's work", "Ana works night shifts as a nurse and sleeps until 2pm."))
        say("bedtime", spring + timedelta(days=1), 20, "We decided the kids go to bed at 8pm on school nights.",
            fact("Kids' bedtime", "The kids' bedtime is 8pm on school nights.", "decision"))
        say("ok", spring + timedelta(days=1), 20, "ok thanks")
        say("ben bday", spring + timedelta(days=2), 9, "My birthday is October 12, remind Ana.",
            fact("Ben's birthday", "Ben's birthday is October 12."), who=BEN)
        say("peonies", spring + timedelta(days=2), 9, "Ana's favourite flowers are peonies, good to know for May.",
            fact("Ana's flowers", "Ana's favourite flowers are peonies."), who=BEN)
        write("party", spring + timedelta(days=2), fact(
            "Surprise party", "Ben is planning a surprise party for Ana's 40th; don't tell Ana.",
            "todo", scope="user"), BEN)
        say("chatter", spring + timedelta(days=3), 22,
            "lol the kids' bedtime story took an hour tonight, the cat wanted to hear the end too")
        say("asked", spring + timedelta(days=4), 7, "what time is the kids' bedtime again?")
        consolidate()
        # Summer: the bedtime rule changes (another title), a consolidation
        summer = date(y, 6, 22)
        say("bedtime late", summer, 21, "Now that it's summer, the kids' bedtime moved to 8:30pm.",
            fact("Bedtime rule", "The kids' bedtime is 8:30pm now.", "decision"))
        say("mom fixed", summer + timedelta(days=2), 20, "Oops, my mom's birthday is actually March 4, not March 3.",
            fact("Mom's birthday", "Ana's mom's birthday is March 4."))
        say("asked again", summer + timedelta(days=5), 19, "what did we decide about bedtime?")
        say("ok again", summer + timedelta(days=5), 19, "ok thanks")
        consolidate()
        ask("soon sept", date(y, 9, 25), SOON)  # Ben's comes first in the autumn
        # The next February and May: what comes round again
        february, may = date(y + 1, 2, 10), date(y + 1, 5, 20)
        ask("coming feb", february, COMING)
        ask("soon feb", february, SOON)
        ask("me", february, ME)
        ask("ben me", february, ME, BEN)
        ask("bedtime", february, BEDTIME)
        ask("coming may", may, COMING)
        ask("soon a year on", february.replace(year=y + 2), SOON)  # and every year after

        async def agent() -> dict[str, Any]:
            async with MCPClient(build_server(client.app.state.service, Identity(**ANA))) as mcp:
                out = {}
                for q in (BEDTIME, "what did we decide about bedtime?", "bedtime"):
                    result = await mcp.call_tool("memory_search", {"query": q, "tz": TZ})
                    assert not result.is_error, result
                    out[q] = json.loads(result.content[0].text)
                return out

        seen["mcps"] = anyio.run(agent)
        card = client.get(f"/ui/items/{ids['bedtime late']}", params={**ANA, "tz": TZ})
        seen["card"] = page_text(card.text)
        seen["card links"] = re.findall(r'href="(/ui/[^"]*)"', card.text)
        seen["bad tz"] = client.get(f"/ui/items/{ids['bedtime late']}",
                                    params={**ANA, "tz": "Mars/Olympus"}).status_code
        seen["card utc"] = page_text(client.get(f"/ui/items/{ids['bedtime late']}", params=ANA).text)
        old_card = client.get(f"/ui/items/{ids['bedtime']}", params={**ANA, "tz": TZ})
        seen["old card"] = page_text(old_card.text)
    for name in ("bedtime", "bedtime late"):
        shown = CliRunner().invoke(loci_cli, ["show", ids[name], "--tz", TZ, "--data-dir", str(settings.data_dir)])
        seen[f"show {name}"] = shown.output if shown.exit_code == 0 else f"exit {shown.exit_code}: {shown.output}"
    yield {"ids": ids, "seen": seen, "y": y}


def test_in_february_next_month_lists_moms_march_birthday(year) -> None:
    # broken: nothing was injected, "next month" shares no word with the birthday
    answer, ids = year["seen"]["coming feb"], year["ids"]
    assert curated(answer)[:1] == [ids["mom fixed"]], answer["hits"]  # the corrected day
    assert "March 4" in curated_text(answer) and "March 3" not in curated_text(answer), answer["injection"]
    assert ids["mom"] not in curated(answer)
    assert ids["ben bday"] not in curated(answer) and ids["anniversary"] not in curated(answer)


@pytest.mark.parametrize(("asked", "whose"), [
    ("soon feb", "mom fixed"), ("soon a year on", "mom fixed"), ("soon sept", "ben bday")])
def test_whose_birthday_is_soon_is_the_next_one(year, asked: str, whose: str) -> None:
    # broken: "March 3" bounded no window, so only the word "birthday" found it, Ben's
    # October birthday first in February
    answer, ids = year["seen"][asked], year["ids"]
    assert curated(answer)[:1] == [ids[whose]], answer["hits"]


def test_in_may_next_month_lists_the_june_anniversary(year) -> None:
    # broken: proposed at importance 2 and not asked about all summer, the anniversary aged
    # out of short-term memory a month after it was said (archived, "aged")
    answer, ids = year["seen"]["coming may"], year["ids"]
    assert curated(answer)[:1] == [ids["anniversary"]], answer["hits"]
    assert ids["mom"] not in curated(answer) and ids["mom fixed"] not in curated(answer)


def test_what_is_known_about_her_includes_what_she_said_of_herself_in_the_household(year) -> None:
    # broken: only her user scope was listed ("Ana is lactose intolerant"), not what the
    # household holds of her, which she said (her night shifts) or Ben did (her flowers)
    answer, ids = year["seen"]["me"], year["ids"]
    assert {ids["lactose"], ids["nurse"], ids["peonies"]} <= set(curated(answer)), answer["hits"]
    shown = answer["injection"] or ""
    assert "surprise party" not in shown and ids["party"] not in curated(answer)
    assert ids["ben bday"] not in curated(answer)
    ben = year["seen"]["ben me"]
    assert ids["lactose"] not in curated(ben) and ids["nurse"] not in curated(ben), ben["hits"]
    assert ids["peonies"] not in curated(ben)  # he wrote it, of her


def test_the_corrected_bedtime_is_current_and_the_chatter_below_it(year) -> None:
    answer, ids = year["seen"]["bedtime"], year["ids"]
    assert curated(answer)[:1] == [ids["bedtime late"]], answer["hits"]
    assert "8pm" not in curated_text(answer), answer["injection"]
    assert answer["hits"][0]["type"] != "message"


@pytest.mark.parametrize("query", [BEDTIME, "what did we decide about bedtime?", "bedtime"])
def test_mcp_search_lists_memories_first_and_no_questions_or_filler(year, query: str) -> None:
    # broken: her questions ("what did we decide about bedtime?") and "ok thanks" were listed
    # among the "memories" found, a turn above the decision
    body, ids = year["seen"]["mcps"][query], year["ids"]
    hits = body["hits"]
    assert hits[0]["id"] == ids["bedtime late"], hits
    assert ids["bedtime"] not in [h["id"] for h in hits]  # the rule it replaced is history
    said = [h["content"] for h in hits if h["type"] == "message"]
    assert not any(text.endswith("?") or text == "ok thanks" for text in said), said
    first_turn = next((n for n, h in enumerate(hits) if h["type"] == "message"), len(hits))
    assert all(h["type"] == "message" for h in hits[first_turn:]), hits  # curated first, then evidence
    assert all(h["evidence"].startswith("what was said, not verified") for h in hits[first_turn:]), hits
    assert body["message"].startswith("Found 1 memory"), body["message"]


def test_the_browser_shows_times_in_the_viewers_zone(year) -> None:
    # broken: every time on the card was UTC's, Ana's Sunday evening shown as Monday 01:00
    card, utc, y = year["seen"]["card"], year["seen"]["card utc"], year["y"]
    # said a little after 21:00 on June 22 in New York: after 01:00 on June 23 in UTC
    learned = re.search(r"learned / updated (\S+ \S+) / (\S+ \S+)", card)
    assert learned and learned.group(1).startswith(f"{y}-06-22 21:0"), card
    assert re.search(rf"\b{y}-06-22 21:0\d:\d\d ana turn assistant", card), card  # the inbox, her clock
    assert f"{y}-06-23 01:0" not in card and "times in America/New_York" in card
    assert re.search(rf"\b{y}-06-23 01:0\d:\d\d ana turn assistant", utc), utc  # no zone asked: the setting's, UTC
    assert year["seen"]["card links"] and all("tz=America%2FNew_York" in link for link in year["seen"]["card links"])
    assert year["seen"]["bad tz"] == 400



def test_who_changed_the_bedtime_and_when_on_her_clock(year) -> None:
    # broken: `loci show` gave every time in UTC only, Ana's 21:00 change as the next day's 01:00
    ids, y, seen = year["ids"], year["y"], year["seen"]
    now = seen["show bedtime late"]
    assert "history (time America/New_York, actor" in now, now
    assert re.search(rf"{y}-06-22 21:0\d:\d\d  ana ", now), now  # the correction, by Ana, on her clock
    earlier = now.split("replaced earlier versions")[1]
    assert ids["bedtime"] in earlier and "8pm on school nights" in earlier, now  # what it said before
    assert re.search(rf"{y}-03-17 20:0\d:\d\d  ana ", earlier), earlier
    assert f"superseded by {ids['bedtime late']}" in seen["show bedtime"], seen["show bedtime"]
    old_card = seen["old card"]  # the browser's card of the rule it replaced says so, on her clock
    assert "superseded by" in old_card and ids["bedtime late"] in old_card, old_card
    assert re.search(rf"\b{y}-03-17 20:0\d:\d\d ana ", old_card), old_card
