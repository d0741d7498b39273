"""A household of two over three weeks (the twenty-ninth new-user trial), over HTTP. Maya and
Tom share the household project `home`, each with a user scope of their own, in Lisbon
(Europe/Lisbon). Their own chat loop calls the service directly: `/v1/turns` for every turn
(the model's proposals in a `<MEMORY_PROPOSALS_JSON>` block), `/v1/tools` for
`memory.propose` / `memory.forget` / `memory.review`, `/v1/recall` in inject and catalog
modes, `/v1/items` for the history. Every call is stamped by one simulated clock; the
Dagster consolidation job runs at the end of each week.

What the two expect, each checked below:
- Leo's nut allergy (importance 10) answers every food question before any chatter about
  peanuts, and it survives the weekly consolidations and the merge of its restatements with
  its words intact ("peanuts", "tree nuts", "EpiPen").
- Swim moves (Tuesdays -> Thursdays -> back to Tuesdays): the latest is the answer, the
  older ones history with each version on the record.
- Tom said Lisbon, Maya says Porto: her claim contradicts his and waits for review, and
  recall says a change is pending; "who decided the May trip and when" is answered from the
  block (who, which day).
- Tom's surprise gift for Maya is his alone: no recall mode, item read, conflict list or
  review list shows it to her.
- Maya's "please forget what I told you about my therapist": gone from recall, her turns too.
- Grandma Rosa's birthday comes up in the third week ("whose birthday is coming up?").
- Scope priority: a session's "today swim is cancelled" comes before the household's rule in
  that chat, and nowhere else.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow.parquet as pq
import pytest
from litestar.testing import TestClient

from assets.run import run_consolidation
from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings, shared_instance
from tests.e2e.chat import SimulatedClock, consolidate, curated, curated_text, entry_header

TZ = "Europe/Lisbon"
ZONE = ZoneInfo(TZ)
MAYA = {"user_id": "maya", "project_id": "home", "session_id": "maya-phone"}
TOM = {"user_id": "tom", "project_id": "home", "session_id": "tom-laptop"}


def claim(kind: str, title: str, content: str, **more: Any) -> dict:
    return {"type": kind, "title": title, "content": content, "why_store": "household", "confidence": 0.9, **more}


def day_said(day: date) -> str:
    return f"{day:%B} {day.day}"


def month_gone(day: date) -> tuple[str, str]:
    """A month about five months before `day` (the nearer of its two occurrences is the one
    gone by), and the next one after `day`, as the block names it ("June 2027")."""
    back = (day.replace(day=1) - timedelta(days=140)).replace(day=1)
    return f"{back:%B}", f"{back:%B} {back.year + 1}"


@pytest.fixture(scope="module")
def weeks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("t29"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    today = datetime.now(ZONE).date()
    monday = today - timedelta(days=today.weekday() + 21)  # three weeks ago: every day of them is past
    rosa = monday + timedelta(days=24)  # Grandma Rosa's birthday: in the fourth week
    trip, trip_meant = month_gone(monday + timedelta(days=1))  # the holiday's month, said in week 1
    clock = SimulatedClock(ZONE)
    ids: dict[str, str] = {}
    verdicts: dict[str, dict] = {}
    turns: dict[str, list[str]] = {}
    seen: dict[str, Any] = {"monday": monday, "rosa": rosa, "trip meant": trip_meant}

    with pytest.MonkeyPatch.context() as patch, TestClient(app) as client:
        clock.patch_into(patch)
        patch.setattr("assets.graph._now", lambda: clock.now)

        def post_turn(who: dict, role: str, text: str) -> dict:
            resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": text,
                                                  "at": clock.now.isoformat(), "tz": TZ})
            assert resp.status_code == 201, resp.text
            return resp.json()

        def say(name: str, day: int, hh: int, text: str, *items: dict, who: dict = MAYA) -> None:
            """`who` says `text` on day `day` at `hh`:00 and the model answers, proposing `items`."""
            clock.at(monday + timedelta(days=day), time(hh))
            said = post_turn(who, "user", text)
            reply = "Noted." + ((" <MEMORY_PROPOSALS_JSON>" + json.dumps(list(items)) + "</MEMORY_PROPOSALS_JSON>")
                                if items else "")
            answer = post_turn(who, "assistant", reply)
            turns[name] = [said["turn_id"], answer["turn_id"]]
            for n, outcome in enumerate(answer["proposals"]):
                key = name if n == 0 else f"{name} {n}"
                verdicts[key] = outcome
                if outcome.get("item_id"):
                    ids[key] = outcome["item_id"]

        def tool(who: dict, action: str, args: dict) -> dict:
            resp = client.post("/v1/tools", json={"action": action, "identity": who, "args": args})
            assert resp.status_code == 200, resp.text
            return resp.json()["result"]

        def ask(name: str, day: int, question: str, who: dict = MAYA, mode: str = "inject") -> None:
            clock.at(monday + timedelta(days=day), time(19, 30))
            resp = client.post("/v1/recall", json={"identity": who, "query": question, "tz": TZ, "mode": mode})
            assert resp.status_code == 200, resp.text
            seen[name] = resp.json()

        def consolidate() -> None:
            assert client.app.state.service.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            assert client.post("/v1/admin/reload").status_code == 200

        # Week 1: the household's facts, Tom's private plan, chatter
        say("allergy", 0, 20, "Leo is allergic to peanuts and tree nuts. He carries an EpiPen, any nut is an "
            "emergency.",
            claim("constraint", "Leo's nut allergy", "Leo is severely allergic to peanuts and tree nuts: nothing "
                  "with nuts for him, and his EpiPen goes wherever he goes.", importance=10))
        say("swim tue", 0, 20, "Leo's swimming lessons are on Tuesdays at 5pm at the leisure centre.",
            claim("fact", "Leo's swim lessons", "Leo's swimming lessons are on Tuesdays at 5pm."))
        # Tom's loop proposes through the tool API (`memory.propose`), naming the turn it records
        clock.at(monday + timedelta(days=1), time(21))
        rosa_turn = post_turn(TOM, "user", f"Grandma Rosa's birthday is {day_said(rosa)}, she loves lemon cake.")
        (outcome,) = tool(TOM, "memory.propose", {"turn_ref": rosa_turn["turn_id"], "tz": TZ, "items": [
            claim("fact", "Grandma Rosa's birthday", f"Grandma Rosa's birthday is {day_said(rosa)}; she loves "
                  "lemon cake.")]})["proposals"]
        verdicts["rosa"], ids["rosa"] = outcome, outcome["item_id"]
        say("lisbon", 1, 21, f"We're going to Lisbon in {trip} for the family holiday.",
            claim("decision", "Family holiday", f"The family holiday in {trip} is in Lisbon."), who=TOM)
        say("gift", 2, 22, "I want to surprise Maya with a pottery class voucher for her birthday. Don't tell her!",
            claim("todo", "Surprise gift for Maya", "Tom is getting Maya a pottery class voucher for her "
                  "birthday, a surprise: keep it from Maya.", scope="user"), who=TOM)
        say("chatter peanuts", 3, 18, "lol Sam ate a whole bag of peanuts at the park today, the ducks got the rest")
        say("bedtime", 4, 19, "Leo goes to bed at 8pm on school nights.",
            claim("decision", "Leo's bedtime", "Leo's bedtime is 8pm on school nights."))
        say("tom bedtime", 5, 19, "When it's my night, I let Leo stay up until 8:30pm.",
            claim("preference", "Leo's bedtime on my nights", "On Tom's nights Leo's bedtime is 8:30pm.",
                  scope="user"), who=TOM)
        say("bins", 4, 20, "The bins go out every Wednesday night.",
            claim("fact", "Bin night", "The bins go out every Wednesday night."))
        say("therapist", 4, 21, "I see my therapist, Dr. Almeida, on Fridays at 9am.",
            claim("fact", "My therapist", "Maya sees her therapist Dr. Almeida on Fridays at 9am.", scope="user"))
        consolidate()

        # Week 2: swim moves, Maya says Porto, the allergy restated, a forget
        say("swim thu", 7, 19, "Swim moved to Thursdays at 5pm from this week.",
            claim("fact", "Swim schedule", "Leo's swimming lessons moved to Thursdays at 5pm."))
        say("porto", 8, 20, f"Wait, we said Porto for {trip}, not Lisbon!",
            claim("decision", f"{trip} trip", f"The family trip in {trip} is to Porto, not Lisbon."))
        say("allergy again", 9, 20, "Reminder for everyone: no peanuts or tree nuts for Leo, EpiPen always with him.",
            claim("constraint", "Leo's allergy", "Leo must never eat peanuts or tree nuts; his EpiPen is always "
                  "with him.", importance=10))
        say("allergy plan", 9, 21, "If Leo ever eats nuts: EpiPen in the outer thigh, then call 112.",
            claim("constraint", "Leo's allergy action plan", "If Leo eats nuts: EpiPen into the outer thigh, "
                  "then call 112.", importance=10), who=TOM)
        say("allergy tom", 9, 22, "Leo is allergic to peanuts and tree nuts, his EpiPen goes wherever he goes.",
            claim("constraint", "Leo's nut allergy", "Leo is allergic to peanuts and tree nuts: nothing with "
                  "nuts for him, and his EpiPen goes wherever he goes.", importance=10), who=TOM)
        say("chatter peanut butter", 10, 8, "Tom had peanut butter toast again, he says it's the best breakfast ever",
            who=MAYA)
        today_only = {**MAYA, "session_id": "maya-thursday"}
        say("cancelled", 10, 9, "Today's swim is cancelled, the pool is closed for repairs.",
            claim("fact", "Swim today", "Today Leo's swimming lesson is cancelled: the pool is closed.",
                  scope="session"), who=today_only)
        ask("session swim", 10, "is there swim today?", today_only)
        ask("other session swim", 10, "is there swim today?")
        say("forget ask", 11, 20, "Please forget what I told you about my therapist.")
        seen["forget"] = tool(MAYA, "memory.forget", {"id": ids["therapist"], "turn_ids": turns["forget ask"]})
        ask("trip pending", 12, f"where are we going in {trip}?")
        ask("who decided pending", 12, "when did we decide on the family holiday and who said it?")
        consolidate()

        # Week 3: swim back to Tuesdays, more chatter
        say("swim back", 14, 19, "Actually swim is back to Tuesdays at 5pm.",
            claim("fact", "Swim day", "Leo's swimming lessons are back on Tuesdays at 5pm."))
        seen["approve"] = tool(TOM, "memory.review", {"id": ids["porto"], "decision": "approve",
                                                      "note": "right, Porto it is"})
        slip_due, slip_late = monday + timedelta(days=18), monday + timedelta(days=11)  # Fridays
        say("slip", 14, 20, f"Leo's school trip permission slip is due {slip_due:%A}, {day_said(slip_due)}.",
            claim("fact", "Permission slip", f"Leo's school trip permission slip is due {slip_due:%A}, "
                  f"{day_said(slip_due)}."))
        say("chatter satay", 15, 20, "Tom made peanut satay noodles for himself tonight, Leo had plain pasta")
        say("slip late", 16, 21, f"Oh no, Leo's permission slip was due {day_said(slip_late)}, we're late!",
            claim("fact", "Permission slip deadline", f"Leo's school trip permission slip was due "
                  f"{day_said(slip_late)}."), who=TOM)
        consolidate()

        # The questions, at the end of the third week
        ask("swim", 18, "what day is Leo's swimming?")
        ask("tom swim", 18, "when does Leo have swim lessons?", TOM)
        ask("satay", 18, "can Leo have the chicken satay at the party? it has peanut sauce")
        ask("snacks", 18, "what snacks should I pack for Leo's school trip?", TOM)
        ask("snacks catalog", 18, "what snacks should I pack for Leo's school trip?", TOM, mode="catalog")
        ask("trip", 18, f"where are we going in {trip}?")
        ask("trip tom", 18, f"where are we going in {trip}?", TOM)
        ask("who decided", 18, "when did we decide on the family holiday and who said it?")
        ask("bedtime tom", 18, "what's Leo's bedtime?", TOM)
        ask("gift", 18, "what is Tom planning for my birthday?")
        ask("gift catalog", 18, "what is Tom planning for my birthday?", mode="catalog")
        ask("gift ideas", 18, "any pottery or voucher ideas for my birthday surprise?")
        ask("tom gift", 18, "what am I getting Maya for her birthday?", TOM)
        ask("pottery", 18, "pottery class voucher")
        ask("pottery catalog", 18, "pottery class voucher", mode="catalog")
        ask("almeida", 18, "Dr. Almeida on Fridays")
        ask("who porto", 18, f"who said Porto for the {trip} trip and when?", TOM)
        ask("therapist", 18, "when do I see my therapist?")
        ask("birthdays", 18, "whose birthday is coming up?")
        ask("slip", 17, "when is Leo's permission slip due?")
        ask("todos", 18, "any open todos?")
        ask("me", 18, "what do you know about me?")
        ask("tom said", 18, "what did Tom tell you about my birthday?")
        ask("swim catalog", 18, "what day is Leo's swimming?", mode="catalog")
        for name in list(ids):
            resp = client.get(f"/v1/items/{ids[name]}", params=MAYA)
            seen[f"item maya {name}"] = (resp.status_code, resp.json() if resp.status_code == 200 else resp.text)
        seen["item tom gift"] = client.get(f"/v1/items/{ids['gift']}", params=TOM).status_code
        seen["conflicts maya"] = client.get("/v1/conflicts", params=MAYA).json()
        seen["review maya"] = client.get("/v1/review", params=MAYA).json()
        seen["review tom"] = client.get("/v1/review", params=TOM).json()
    seen["said it"] = sorted(str(f.relative_to(settings.data_dir)) for f in Path(settings.data_dir).rglob("*")
                             if f.is_file() and b"Almeida" in f.read_bytes())
    # a snapshot's tables are compressed: their values are read, not their bytes
    seen["snapshot values"] = sorted(
        str(f.relative_to(settings.data_dir)) for f in Path(settings.data_dir).glob("snapshots/*/*.parquet")
        if "Almeida" in str(pq.read_table(f).to_pylist()))
    yield {"ids": ids, "verdicts": verdicts, "turns": turns, "seen": seen}




ALLERGY = ("allergy", "allergy again", "allergy plan", "allergy tom")
CHATTER = ("lol Sam ate a whole bag of peanuts", "Tom had peanut butter toast", "Tom made peanut satay noodles")


@pytest.mark.parametrize("asked", ["satay", "snacks"])
def test_the_allergy_answers_every_food_question_before_any_chatter(weeks, asked: str) -> None:
    answer, ids = weeks["seen"][asked], weeks["ids"]
    hits = [h["id"] for h in answer["hits"]]
    first_turn = next((n for n, h in enumerate(answer["hits"]) if h["type"] == "message"), len(hits))
    assert {ids[name] for name in ALLERGY} <= set(hits[:first_turn]), answer["hits"]  # curated, before every turn
    assert all(h["type"] == "message" for h in answer["hits"][first_turn:]), answer["hits"]
    block = curated_text(answer)
    assert "peanuts and tree nuts" in block and "EpiPen" in block, answer["injection"]
    assert not any(chatter in block for chatter in CHATTER), block  # chatter only as evidence
    if first_turn < len(hits):
        assert "CONVERSATION EXCERPTS (what was said, not verified; not authoritative)" in answer["injection"]


def test_the_allergy_survives_three_consolidations_word_for_word(weeks) -> None:
    seen, ids = weeks["seen"], weeks["ids"]
    said_as = {
        "allergy": "Leo is severely allergic to peanuts and tree nuts: nothing with nuts for him, and his EpiPen "
                   "goes wherever he goes.",
        "allergy again": "Leo must never eat peanuts or tree nuts; his EpiPen is always with him.",
        "allergy plan": "If Leo eats nuts: EpiPen into the outer thigh, then call 112.",
    }
    for name, content in said_as.items():
        status, body = seen[f"item maya {name}"]
        assert status == 200 and body["item"]["content"] == content, body
        assert body["item"]["importance"] == 10 and body["state"] == "recallable", body
    catalog = [e["id"] for e in seen["snacks catalog"]["catalog"]["memory_catalog"]]
    assert {ids[name] for name in ALLERGY} <= set(catalog), catalog


@pytest.mark.parametrize("asked", ["swim", "tom swim"])
def test_swim_is_back_on_tuesdays_and_thursdays_is_history(weeks, asked: str) -> None:
    answer, ids = weeks["seen"][asked], weeks["ids"]
    shown = curated(answer)
    assert ids["swim back"] in shown and ids["swim thu"] not in shown and ids["swim tue"] not in shown, shown
    assert "Thursdays" not in curated_text(answer), answer["injection"]
    thursday = [h for h in answer["hits"] if h["type"] == "message" and "Thursdays" in h["content"]]
    assert all(h["replaced_by"] == [ids["swim back"]] for h in thursday), thursday  # her words, marked


def test_every_version_of_the_swim_day_is_on_the_record(weeks) -> None:
    seen, ids = weeks["seen"], weeks["ids"]
    for old, new in (("swim tue", "swim thu"), ("swim thu", "swim back")):
        status, body = seen[f"item maya {old}"]
        assert status == 200 and body["replaced_by"] == {"id": ids[new], "how": "superseded"}, body
        assert body["state"] == "superseded" and body["revisions"][0]["actor"] == "maya", body
    _, now = seen["item maya swim back"]
    assert now["item"]["links"] == [{"rel": "supersedes", "to": ids["swim thu"]}], now["item"]


def test_the_session_wish_comes_first_in_its_chat_and_nowhere_else(weeks) -> None:
    ids, seen = weeks["ids"], weeks["seen"]
    here, elsewhere = curated(seen["session swim"]), curated(seen["other session swim"])
    assert here.index(ids["cancelled"]) < here.index(ids["swim thu"]), here  # session > project
    assert ids["cancelled"] not in elsewhere and ids["swim thu"] in elsewhere, elsewhere


def test_the_project_rule_comes_before_a_partners_own_and_both_are_marked(weeks) -> None:
    answer, ids = weeks["seen"]["bedtime tom"], weeks["ids"]
    shown = curated(answer)
    assert shown.index(ids["bedtime"]) < shown.index(ids["tom bedtime"]), shown  # project > user
    assert f"SCOPE=project | CONFLICT={ids['tom bedtime']}" in curated_text(answer), answer["injection"]


def test_porto_against_toms_lisbon_waits_for_review_then_replaces_it(weeks) -> None:
    ids, seen, verdicts = weeks["ids"], weeks["seen"], weeks["verdicts"]
    assert verdicts["porto"]["action"] == "quarantine", verdicts["porto"]
    assert "soft.contradiction" in verdicts["porto"]["rule_ids"] and ids["lisbon"] in verdicts["porto"]["reasons"][0]
    pending = seen["trip pending"]
    assert ids["porto"] not in curated(pending) and ids["lisbon"] in curated(pending), pending["hits"]
    assert "Awaiting review: a claim contradicting this memory by maya" in curated_text(pending)
    assert seen["approve"]["supersedes"] == [ids["lisbon"]], seen["approve"]
    for asked in ("trip", "trip tom"):
        shown = curated(seen[asked])
        assert ids["porto"] in shown and ids["lisbon"] not in shown, shown
    status, lisbon = seen["item maya lisbon"]
    assert status == 200 and lisbon["replaced_by"] == {"id": ids["porto"], "how": "superseded"}, lisbon
    assert lisbon["revisions"][0]["actor"] == "tom", lisbon["revisions"]


def test_who_decided_the_holiday_and_when_is_in_the_block(weeks) -> None:
    ids, seen, monday = weeks["ids"], weeks["seen"], weeks["seen"]["monday"]
    before = entry_header(seen["who decided pending"], ids["lisbon"])
    assert f"by=tom on {monday + timedelta(days=1)}" in before and "PENDING_REVIEW" in before, before
    after = entry_header(seen["who decided"], ids["porto"])
    assert f"by=maya on {monday + timedelta(days=8)} | approved by tom on {monday + timedelta(days=14)}" in after, after


def test_the_holiday_month_said_in_the_autumn_is_the_coming_one(weeks) -> None:
    # broken: "in June" said in November was read as the nearest June, the one gone by, so the
    # block told the model the family holiday was months ago
    meant = weeks["seen"]["trip meant"]
    for asked, name in (("trip pending", "lisbon"), ("trip", "porto")):
        entry = weeks["seen"][asked]["injection"].split(f"[MEMORY: {weeks['ids'][name]}")[1].split("[/MEMORY]")[0]
        assert f"= {meant}.)" in entry, entry


@pytest.mark.parametrize("asked", ["gift", "gift catalog", "gift ideas", "pottery", "pottery catalog", "todos", "me",
                                   "tom said"])
def test_toms_surprise_never_reaches_maya(weeks, asked: str) -> None:
    answer, ids = weeks["seen"][asked], weeks["ids"]
    assert ids["gift"] not in [h["id"] for h in answer["hits"]], answer["hits"]
    assert "pottery" not in json.dumps(answer["hits"]) + (answer["injection"] or "") + json.dumps(answer["catalog"])


def test_toms_surprise_is_his_and_no_list_shows_it_to_maya(weeks) -> None:
    seen, ids = weeks["seen"], weeks["ids"]
    assert ids["gift"] in curated(seen["tom gift"])
    assert seen["item maya gift"][0] == 404 and seen["item tom gift"] == 200
    assert "pottery" not in json.dumps(seen["conflicts maya"]) + json.dumps(seen["review maya"])


@pytest.mark.parametrize("asked", ["therapist", "almeida"])
def test_what_maya_asked_to_forget_is_gone_her_words_too(weeks, asked: str) -> None:
    answer = weeks["seen"][asked]
    assert "therapist" not in json.dumps(answer["hits"]) and "Almeida" not in json.dumps(answer["hits"])
    assert "Almeida" not in (answer["injection"] or "")
    status, tombstone = weeks["seen"]["item maya therapist"]
    assert status == 200 and tombstone["item"]["validation"] == "retracted" and not tombstone["item"]["content"]
    assert len(weeks["seen"]["forget"]["forgot_turns"]) == 2, weeks["seen"]["forget"]
    # only the systems of record keep the words (the inbox, the warehouse's full history)
    # (a store's write-ahead log, not yet checkpointed under load, is that store's file)
    stores = {re.sub(r"(-wal|-shm|-journal|\.wal)$", "", name) for name in weeks["seen"]["said it"]
              if not name.startswith("snapshots/")}
    assert stores == {"inbox.sqlite3", "warehouse.duckdb"}, weeks["seen"]["said it"]


@pytest.mark.xfail(strict=True, reason="known privacy gap: a snapshot's history.parquet publishes a forgotten "
                   "item's revisions with their words (Warehouse.published_history); the service withholds them "
                   "when it reads, but the file holds them. Seen 2026-11-29: the old byte check passed only when "
                   "compression hid the word")
def test_no_published_snapshot_keeps_what_maya_forgot(weeks) -> None:
    assert weeks["seen"]["snapshot values"] == [], weeks["seen"]["snapshot values"]


def test_grandma_rosas_birthday_comes_up_in_the_third_week(weeks) -> None:
    answer, ids, rosa = weeks["seen"]["birthdays"], weeks["ids"], weeks["seen"]["rosa"]
    assert weeks["verdicts"]["rosa"]["action"] == "accept"
    assert ids["rosa"] in curated(answer), answer["hits"]
    assert f"(Next: {rosa.isoformat()}, in " in curated_text(answer), answer["injection"]


def test_toms_other_day_for_the_slip_deadline_is_held_against_mayas(weeks) -> None:
    # broken: Maya's deadline has a window (over after that Friday), Tom's "was due" none, and
    # a claim with a window was set apart from any without one (`records.apart_in_time`, for
    # a stand-in "until Friday"), so his other day for it was accepted unflagged beside hers
    ids, verdicts = weeks["ids"], weeks["verdicts"]
    late = verdicts["slip late"]
    assert late["action"] == "quarantine" and "soft.contradiction" in late["rule_ids"], late
    assert ids["slip"] in late["reasons"][0], late
    answer = weeks["seen"]["slip"]
    assert ids["slip"] in curated(answer) and ids["slip late"] not in curated(answer), answer["hits"]
    assert "PENDING_REVIEW" in entry_header(answer, ids["slip"]), answer["injection"]


def test_a_corrected_allergy_stays_always_on_after_the_consolidation(service) -> None:
    """Maya narrows Leo's allergy (importance 10) in another chat; the model proposes the
    correction without an importance. Tom's question names no allergy: the always-on path
    alone brings it. Broken: shown before the consolidation (in the old claim's place), gone
    after it, when the correction stood alone at the default importance 5."""
    client, settings = service

    def propose(who: dict, said: str, item: dict) -> dict:
        assert client.post("/v1/turns", json={"identity": who, "role": "user", "text": said}).status_code == 201
        text = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"
        resp = client.post("/v1/turns", json={"identity": who, "role": "assistant", "text": text})
        assert resp.status_code == 201, resp.text
        return resp.json()["proposals"][0]

    old = propose(MAYA, "Leo is allergic to peanuts and tree nuts.", claim(
        "constraint", "Leo's nut allergy", "Leo is allergic to peanuts and tree nuts.", importance=10))
    new = propose({**MAYA, "session_id": "allergist"}, "The allergist says it's peanuts only now, tree nuts are fine.",
                  claim("fact", "Leo's allergy update", "Leo is allergic to peanuts only now, no longer to tree nuts."))
    assert new["action"] == "accept" and new["supersedes"] == [old["item_id"]], new
    for _ in range(2):  # from the inbox, then from the consolidated snapshot
        answer = client.post("/v1/recall", json={"identity": TOM, "query": "any ideas for the party food on Saturday?"})
        assert answer.status_code == 200 and curated(answer.json()) == [new["item_id"]], answer.json()["message"]
        consolidate(client, settings)
    assert client.get(f"/v1/items/{new['item_id']}", params=MAYA).json()["item"]["importance"] == 10

