"""A freelancer's two clients, two weeks (the twenty-sixth new-user trial). Ana, in Berlin,
works for Acme (project `acme`) and Birch (project `birch`). She talks to Acme's work through
a chat app speaking OpenAI's API (the official `openai` client against `loci proxy` on
loopback, in front of the fake Ollama server answering as a model would) and to Birch's
through an Ollama client that streams (`/api/chat`, NDJSON read line by line). The turns are
said on a simulated clock over the two past weeks; the Dagster consolidation job runs twice
in between; `loci serve`'s app (items API, recall, tools), `loci show` and `loci export`
read the same data directory afterwards.

What a demanding freelancer expects, each checked below:
- One client's rates, deadlines and invoicing never answer in the other's project (block,
  catalog, tag filter, tool search, an id) (kept). A wish for one Acme chat ("sign as 'Ana
  for Acme'") reached a Birch chat that opened with the same "Hi!" (broken, fixed: the
  proxy's session of a chat without a session header now names its project).
- "What did I promise Acme?": the moved deadline (Wednesday -> Friday) first, the old one
  never handed over; so at once, before a consolidation (kept). "What's due this week?"
  lists Birch's demo but not Acme's moved deadline, whose "Friday, November 20" bounded no
  window though "Friday" alone does (broken, fixed in pipelines/validity.py).
- The corrected fee (4000 -> 4500) answers Birch's question (kept).
- The keys pasted by mistake are refused as memories and stored nowhere: not in the inbox,
  the warehouse, the snapshot, an export, a recall block or the `loci` catalog (kept); the
  turn kept "[REDACTED][REDACTED]" for one key, counted twice (broken, fixed in capture).
- "Why do you think the deadline is Friday?": the block names who said it and when, with
  her words as evidence; the items API and `loci show` list each change with who, when and
  the inbox event, on the replaced claim's record too (kept); `loci show` did not say why a
  claim was stored and showed consolidation's usage counts under Ana's supersede (fixed).
- Streamed answers (OpenAI SSE, Ollama NDJSON) arrive whole, minus only the proposal block
  (kept).
- Bad requests get a 4xx with a message, never a 500; a body that is not JSON sent to
  `/api/chat` was forwarded and answered 502 when the upstream choked on it (fixed: 400).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import openai
import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as loci_cli
from online.app import create_app
from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.proposals import parse_assistant_output
from pipelines.recall.render import EPISODIC_HEADER
from pipelines.settings import load_settings
from tests.e2e.chat import SimulatedClock
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

TZ = "Europe/Berlin"
ZONE = ZoneInfo(TZ)
MODEL = "granite3.2:2b"
ANA = {"X-Loci-User": "ana", "X-Loci-Timezone": TZ}
ACME = {**ANA, "X-Loci-Project": "acme"}
BIRCH = {**ANA, "X-Loci-Project": "birch"}
KEY = "sk_live_51HqLyjWDarjtT1zdp7dcXfE0cq9Qm3Zr"  # a Stripe-shaped live key, pasted by mistake
TOKEN = "ghp_8fK2mQx7LpR4vT9wZ3nB6cY1dH5jS0aE2gU4"  # a GitHub token, pasted in Acme's chat


def claim(kind: str, title: str, content: str, *tags: str) -> dict[str, Any]:
    return {"type": kind, "title": title, "content": content, "tags": list(tags),
            "why_store": "the client agreed it with Ana", "confidence": 0.9}


def day_said(day: date) -> str:
    return f"{day:%A}, {day:%B} {day.day}"


@dataclass
class Fortnight:
    monday: date  # the first Monday, on Ana's calendar
    ids: dict[str, str] = field(default_factory=dict)  # a claim's title#n -> its stored id
    supersedes: dict[str, list[str]] = field(default_factory=dict)  # id -> what its verdict replaced
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)  # a claim's title#n -> its verdict
    said_at: dict[str, datetime] = field(default_factory=dict)  # id -> when (UTC)
    asked: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # project: question -> (system, loci)
    shown: dict[str, str] = field(default_factory=dict)  # each chat line -> the text the client showed
    replies: dict[str, str] = field(default_factory=dict)  # each chat line -> what the model wrote
    http: dict[str, Any] = field(default_factory=dict)  # named API answers
    show: dict[str, str] = field(default_factory=dict)  # id -> `loci show`'s output
    export: str = field(default="", repr=False)
    stored_bytes: dict[str, bytes] = field(default_factory=dict, repr=False)  # every file of the data dir


@pytest.fixture(scope="module")
def fortnight(shared_fake, tmp_path_factory) -> Iterator[Fortnight]:  # noqa: F811
    today = datetime.now(ZONE).date()
    monday = today - timedelta(days=today.weekday() + 14)  # two weeks ago: every day of both is past
    record = Fortnight(monday)
    wed2, thu2, fri2 = (monday + timedelta(days=n) for n in (9, 10, 11))
    settings = load_settings(None, environ={}, embedder="hash", merger="extractive",
                             data_dir=str(tmp_path_factory.mktemp("t26") / "data"))
    memory = MemoryService(settings, check_interval_ms=0)
    clock = SimulatedClock(ZONE)
    scripted: dict[str, Any] = {}

    def model(req: dict[str, Any]) -> Any:
        last = next(m["content"] for m in reversed(req["messages"]) if m["role"] == "user")
        return scripted.get(last, "Sure, happy to help with that.")

    def landed(name: str, loci: dict[str, Any], count: int) -> None:
        proposals = loci.get("proposals", [])
        assert len(proposals) == count, loci
        for n, p in enumerate(proposals):
            key = f"{name}#{n}" if count > 1 else name
            record.verdicts[key] = p
            if p["action"] == "accept":
                if key in record.ids:  # a second claim under one title: the first is the old one
                    record.ids[f"{key}#old"] = record.ids[key]
                record.ids[key] = p["item_id"]
                record.supersedes[p["item_id"]] = p.get("supersedes", [])
                record.said_at[p["item_id"]] = clock.now

    def consolidate() -> None:
        assert memory.usage.flush()
        summary = run_consolidation(settings, instance="ephemeral")
        assert summary["status"] == "success", summary
        memory.reload()

    with pytest.MonkeyPatch.context() as patch:
        clock.patch_into(patch)
        shared_fake.chat_reply = model
        shared_fake.stream_chunk_chars = 7
        proxy = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                                 config=ProxyConfig(flags_check_interval_s=0))
        with serve(proxy) as url:
            acme_app = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=ACME)

            def acme(day: int, at: time, lines: list[tuple[str, Any]], *, stream: bool = False,
                     ask: bool = False) -> None:
                """A chat about Acme's work in the OpenAI chat app: each line and the model's
                reply (a text, or (text, [claims]) proposed in a block after it)."""
                clock.at(monday + timedelta(days=day), at)
                history: list[dict[str, str]] = []
                for said, reply in lines:
                    items = script(said, reply)
                    history.append({"role": "user", "content": said})
                    if stream:
                        chunks = list(acme_app.chat.completions.create(model=MODEL, messages=history, stream=True))
                        pieces = [c.choices[0].delta.content for c in chunks if c.choices]
                        pieces = [p for p in pieces if p]
                        assert len(pieces) > 1 and chunks[-1].model_extra.get("loci") is not None, chunks
                        text = "".join(pieces)
                        loci = chunks[-1].model_extra["loci"]
                    else:
                        answer = acme_app.chat.completions.create(model=MODEL, messages=history)
                        text, loci = answer.choices[0].message.content or "", answer.model_extra["loci"]
                    after(said, text, loci, items, "acme", ask)
                    history.append({"role": "assistant", "content": text})

            def birch(day: int, at: time, lines: list[tuple[str, Any]], *, ask: bool = False) -> None:
                """A chat about Birch's work in the Ollama client, streamed line by line."""
                clock.at(monday + timedelta(days=day), at)
                history: list[dict[str, str]] = []
                for said, reply in lines:
                    items = script(said, reply)
                    history.append({"role": "user", "content": said})
                    pieces, loci = [], {}
                    with httpx.stream("POST", f"{url}/api/chat", headers=BIRCH, timeout=30,
                                      json={"model": MODEL, "messages": history, "stream": True}) as resp:
                        assert resp.status_code == 200, resp.read()
                        for line in resp.iter_lines():
                            if line.strip():
                                chunk = json.loads(line)
                                pieces.append(chunk["message"]["content"])
                                loci = chunk.get("loci", loci)
                    assert chunk["done"] and len(pieces) > 2, pieces  # it streamed, and ended
                    text = "".join(pieces)
                    after(said, text, loci, items, "birch", ask)
                    history.append({"role": "assistant", "content": text})

            def script(said: str, reply: Any) -> list[dict[str, Any]]:
                text, items = reply if isinstance(reply, tuple) else (reply, [])
                if reply is not None:
                    scripted[said] = text + (" " + block(*items) if items else "")
                    record.replies[said] = scripted[said]
                return items

            def after(said: str, text: str, loci: dict[str, Any], items: list[dict[str, Any]],
                      project: str, ask: bool) -> None:
                record.shown[said] = text
                if items:
                    landed(items[0]["title"], loci, len(items))
                if ask:
                    record.asked[f"{project}: {said}"] = (system_text(shared_fake.requests[-1][1]), loci)

            # Week 1, Monday: Acme's terms (OpenAI chat app), then Birch's (Ollama client).
            acme(0, time(9, 0), [
                ("New client Acme: they pay me 95 euros an hour, invoiced monthly.",
                 ("Noted, 95 an hour for Acme.", [claim("fact", "Acme hourly rate",
                                                        "Acme pays Ana 95 EUR per hour, invoiced monthly.",
                                                        "rates", "acme")])),
                (f"I promised Acme the checkout redesign by {day_said(wed2)}.",
                 ("Got it.", [claim("decision", "Acme checkout deadline",
                                    f"Promised to Acme: the checkout redesign is due {day_said(wed2)}.",
                                    "deadline", "acme")])),
                ("Acme's office dog chewed through a cable during the call, total deadline chaos, ha.",
                 "Ha, poor dog!"),
            ])
            birch(0, time(14, 0), [
                ("Birch is paying a flat 4000 euros for the mobile app MVP.",
                 ("Nice, noted.", [claim("fact", "Birch fee",
                                         "Birch pays a flat fee of 4000 EUR for the mobile app MVP.",
                                         "rates", "birch")])),
                (f"Birch wants the MVP demo on {day_said(thu2)}.",
                 ("OK, noted.", [claim("decision", "Birch MVP demo",
                                       f"Promised to Birch: the MVP demo is due {day_said(thu2)}.",
                                       "deadline", "birch")])),
            ])
            # Tuesday: the key pasted by mistake; the model, naively, repeats it and proposes it.
            birch(1, time(10, 0), [
                (f"Why does this fail? curl -H 'Authorization: Bearer {KEY}' https://api.birch.example/v2/builds",
                 (f"The header looks right ({KEY}); maybe the URL is wrong.",
                  [claim("fact", "Birch staging API key", f"Birch's staging API key is {KEY}.", "birch")])),
            ])
            # Wednesday: Acme's invoicing (streamed), and chatter in the deadlines' words.
            acme(2, time(16, 0), [
                ("Acme invoices go to billing@acme.example, always with PO number 4471.",
                 ("Noted: invoices to billing, with the PO number.", [claim("fact", "Acme invoicing",
                                   "Acme invoices go to billing@acme.example with PO number 4471.",
                                   "billing", "acme")])),
                ("Deadlines everywhere this week, and the coffee at Acme is terrible.", "Hang in there!"),
                (f"Can you check why git push fails with this? git remote set-url origin "
                 f"https://{TOKEN}@github.com/acme/checkout.git", "The remote URL looks fine, check the branch."),
                ("Never mind, it was a typo in the branch name.", "Glad it's sorted."),
            ], stream=True)
            # Thursday: a wish for one Acme chat, which opens as many chats do.
            acme(3, time(9, 0), [
                ("Hi!", "Hi Ana, what are we working on?"),
                ("For this chat, answer in bullet points and sign as 'Ana for Acme'.",
                 ("Sure.", [{**claim("preference", "Answer style in this chat",
                                     "In this chat, answer in bullet points and sign as 'Ana for Acme'."),
                             "scope": "session"}])),
            ])
            consolidate()
            # Week 2, Monday: Acme moves its deadline; Birch's fee is corrected.
            acme(7, time(9, 0), [
                (f"Acme called: the checkout redesign deadline moved to {day_said(fri2)}.",
                 ("Updated: Friday it is, two more days.", [claim("decision", "Acme checkout deadline",
                                     f"Promised to Acme: the checkout redesign deadline moved to {day_said(fri2)}.",
                                     "deadline", "acme")])),
            ], stream=True)
            birch(7, time(11, 0), [
                ("Correction: Birch's fee is 4500 euros, not 4000, they added the tablet layout.",
                 ("Corrected.", [claim("fact", "Birch fee",
                                       "Birch pays a flat fee of 4500 EUR for the mobile app MVP, tablet layout "
                                       "included.", "rates", "birch")])),
                ("My cat walked across the keyboard during the Birch demo rehearsal.", "Classic cat."),
            ])
            # Asked at once, in new chats, before any consolidation (the service's delta).
            acme(7, time(9, 10), [(AT_ONCE["acme"], None)], ask=True)
            birch(7, time(11, 10), [(AT_ONCE["birch"], None)], ask=True)
            consolidate()
            # Week 2, Tuesday: Ana asks, in each project.
            acme(8, time(9, 0), [(q, None) for q in ACME_QUESTIONS], ask=True)
            birch(8, time(9, 30), [(q, None) for q in BIRCH_QUESTIONS], ask=True)
            birch(8, time(9, 45), [("Hi!", "Hi Ana, what are we working on?"), (HI_THEN, None)], ask=True)  # as Acme's
            # Bad requests to the proxy: an OpenAI-style 400, an Ollama-style 400.
            record.http["proxy no messages"] = httpx.post(f"{url}/v1/chat/completions", headers=ACME,
                                                          json={"model": MODEL})
            record.http["proxy blank project"] = httpx.post(  # an unset env var in the client's config
                f"{url}/v1/chat/completions", headers={**ACME, "X-Loci-Project": ""},
                json={"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
            record.http["proxy bad json"] = httpx.post(f"{url}/api/chat", headers=BIRCH, content=b"{not json")
            record.http["proxy bad zone"] = httpx.post(
                f"{url}/api/chat", headers={**BIRCH, "X-Loci-Timezone": "Mars/Olympus"},
                json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]})
            # The audit, the tag filter and bad requests through `loci serve`'s API.
            clock.at(monday + timedelta(days=8), time(10, 0))
            acme_who = {"user_id": "ana", "project_id": "acme"}
            with TestClient(create_app(settings, service=memory)) as api:
                for name in ("Acme checkout deadline#old", "Acme checkout deadline", "Birch fee"):
                    item_id = record.ids[name]
                    params = {"user_id": "ana", "project_id": "birch" if "Birch" in name else "acme"}
                    record.http[f"item {name}"] = api.get(f"/v1/items/{item_id}", params=params)
                record.http["item from birch"] = api.get(f"/v1/items/{record.ids['Acme hourly rate']}",
                                                         params={"user_id": "ana", "project_id": "birch"})
                record.http["rates tag in acme"] = api.post("/v1/recall", json={
                    "identity": acme_who, "query": "what are my rates?", "tags": ["rates"], "tz": TZ})
                record.http["rates tag search in birch"] = api.post("/v1/tools", json={
                    "action": "memory.search", "identity": {"user_id": "ana", "project_id": "birch"},
                    "args": {"query": "fee", "tags": ["rates"]}})
                record.http["search acme from birch"] = api.post("/v1/tools", json={
                    "action": "memory.search", "identity": {"user_id": "ana", "project_id": "birch"},
                    "args": {"query": "Acme checkout deadline and hourly rate"}})
                record.http["recall bad query"] = api.post("/v1/recall", json={"identity": acme_who, "query": 5})
                record.http["recall bad zone"] = api.post("/v1/recall", json={
                    "identity": acme_who, "query": "what's due?", "tz": "Mars/Olympus"})
                record.http["recall empty project"] = api.post("/v1/recall", json={
                    "identity": {"user_id": "ana", "project_id": ""}, "query": "rates"})
                record.http["unknown item"] = api.get("/v1/items/does-not-exist", params=acme_who)
                record.http["unknown action"] = api.post("/v1/tools", json={
                    "action": "memory.explode", "identity": acme_who, "args": {}})
                record.http["turn in the future"] = api.post("/v1/turns", json={
                    "identity": acme_who, "role": "user", "text": "hello",
                    "at": (datetime.now(ZONE) + timedelta(days=3)).isoformat()})
    memory.close()
    runner = CliRunner()
    for name in ("Acme checkout deadline#old", "Acme checkout deadline"):
        result = runner.invoke(loci_cli, ["show", record.ids[name], "--tz", TZ, "--data-dir", str(settings.data_dir)])
        assert result.exit_code == 0, result.output
        record.show[name] = result.output
    exported = Path(settings.data_dir).parent / "export.jsonl"
    result = runner.invoke(loci_cli, ["export", "--format", "jsonl", "--out", str(exported),
                                      "--data-dir", str(settings.data_dir)])
    assert result.exit_code == 0, result.output
    record.export = exported.read_text()
    for path in Path(settings.data_dir).rglob("*"):
        if path.is_file():
            record.stored_bytes[str(path)] = path.read_bytes()
    yield record


ACME_QUESTIONS = ["What did I promise Acme?", "What's due this week?", "What's my hourly rate?",
                  "Why do you think the checkout deadline is Friday?"]
BIRCH_QUESTIONS = ["What's due this week?", "How much is Birch paying me?", "What was that Birch API key again?",
                   "What did I promise Acme?"]


HI_THEN = "How should you answer me?"
AT_ONCE = {"acme": "When is the Acme checkout redesign due now?", "birch": "How much is Birch paying me now?"}


def entries(text: str) -> list[str]:
    return re.findall(r"\[(?:MEMORY|TURN): [^\n]*\n.*?\[/(?:MEMORY|TURN)\]", text, re.S)


def curated(sent: str) -> list[str]:
    return entries(sent.partition(EPISODIC_HEADER)[0])


# -- one client's facts never answer in the other's project --------------------------------------

ACME_WORDS = ("Acme", "95 EUR", "4471", "checkout")
BIRCH_WORDS = ("Birch", "4000", "4500", "MVP")


@pytest.mark.parametrize("question", ACME_QUESTIONS)
def test_birchs_facts_never_reach_an_acme_chat(fortnight, question) -> None:
    sent, loci = fortnight.asked[f"acme: {question}"]
    for word in BIRCH_WORDS:
        assert word not in sent and word not in json.dumps(loci), (question, word, sent)


@pytest.mark.parametrize("question", BIRCH_QUESTIONS)
def test_acmes_facts_never_reach_a_birch_chat(fortnight, question) -> None:
    sent, loci = fortnight.asked[f"birch: {question}"]
    for word in ACME_WORDS:
        assert word not in sent and word not in json.dumps(loci), (question, word, sent)


def test_a_wish_for_one_acme_chat_stays_out_of_a_birch_chat_opening_alike(fortnight) -> None:
    """A chat with no session header is its conversation, named by its first message: every
    chat opening with "Hi!" was one session, whatever the project, so Acme's chat wish
    ("sign as 'Ana for Acme'") was handed to a Birch chat four days later (fixed: the
    derived session names the project too)."""
    assert fortnight.ids["Answer style in this chat"]
    sent, loci = fortnight.asked[f"birch: {HI_THEN}"]
    assert "Ana for Acme" not in sent and "Ana for Acme" not in json.dumps(loci), sent


def test_a_tag_filter_a_tool_search_and_an_id_stay_in_their_project(fortnight) -> None:
    rates = fortnight.http["rates tag in acme"]
    assert rates.status_code == 200, rates.text
    hits = rates.json()["hits"]
    assert [h["id"] for h in hits if h["type"] != "message"] == [fortnight.ids["Acme hourly rate"]], hits
    search = fortnight.http["search acme from birch"]
    assert search.status_code == 200, search.text
    assert not any(word in search.text for word in ("95 EUR", "4471", "checkout redesign")), search.text
    # An Acme item read by id from Birch's project: a project item is not Birch's to see.
    assert fortnight.http["item from birch"].status_code == 404


# -- curated first; the moved deadline and the corrected fee are current -------------------------


def test_what_did_i_promise_acme_answers_with_the_moved_deadline_first(fortnight) -> None:
    sent, _ = fortnight.asked["acme: What did I promise Acme?"]
    first = curated(sent)[0]
    assert fortnight.ids["Acme checkout deadline"] in first and "moved to" in first, sent
    assert fortnight.ids["Acme checkout deadline#old"] not in sent, sent
    fri = fortnight.monday + timedelta(days=11)
    assert day_said(fri) in first


def test_whats_due_this_week_lists_the_clients_deadline_said_in_its_words(fortnight) -> None:
    sent, _ = fortnight.asked["birch: What's due this week?"]
    assert curated(sent) and fortnight.ids["Birch MVP demo"] in curated(sent)[0], sent


def test_whats_due_this_week_lists_a_moved_deadline_that_falls_in_it(fortnight) -> None:
    sent, _ = fortnight.asked["acme: What's due this week?"]
    assert curated(sent) and fortnight.ids["Acme checkout deadline"] in curated(sent)[0], sent
    assert fortnight.ids["Acme checkout deadline#old"] not in sent, sent


def test_the_corrected_fee_answers_and_the_old_one_is_not_current(fortnight) -> None:
    sent, _ = fortnight.asked["birch: How much is Birch paying me?"]
    first = curated(sent)[0]
    assert "4500 EUR" in first, sent
    assert "fee of 4000 EUR" not in sent, sent
    (old,) = fortnight.supersedes[fortnight.ids["Birch fee"]]
    assert old == fortnight.ids["Birch fee#old"]


@pytest.mark.parametrize("project", ["acme", "birch"])
def test_a_change_answers_at_once_before_any_consolidation(fortnight, project) -> None:
    sent, _ = fortnight.asked[f"{project}: {AT_ONCE[project]}"]
    name = {"acme": "Acme checkout deadline", "birch": "Birch fee"}[project]
    assert fortnight.ids[name] in curated(sent)[0], sent
    assert fortnight.ids[f"{name}#old"] not in sent, sent
    for word in {"acme": BIRCH_WORDS, "birch": ACME_WORDS}[project]:
        assert word not in sent, (word, sent)


def test_a_tag_search_lists_the_clients_current_fee_only(fortnight) -> None:
    resp = fortnight.http["rates tag search in birch"]
    assert resp.status_code == 200, resp.text
    hits = [h for h in resp.json()["result"]["hits"] if h["type"] != "message"]
    assert [h["id"] for h in hits] == [fortnight.ids["Birch fee"]], hits


def test_why_friday_is_answered_with_who_said_it_and_when(fortnight) -> None:
    """"Why do you think the checkout deadline is Friday?": the model gets the Friday claim
    first, its header naming Ana and the day she said it, and Ana's own words of that day
    as evidence; the Wednesday claim it replaced is not handed over as current."""
    sent, _ = fortnight.asked["acme: Why do you think the checkout deadline is Friday?"]
    first = curated(sent)[0]
    moved_on = (fortnight.monday + timedelta(days=7)).isoformat()
    assert fortnight.ids["Acme checkout deadline"] in first and f"by=ana on {moved_on}" in first, sent
    turns = entries(sent.partition(EPISODIC_HEADER)[2])
    assert any("Acme called: the checkout redesign deadline moved to" in t and moved_on in t for t in turns), sent
    assert "due " + day_said(fortnight.monday + timedelta(days=9)) not in sent, sent


def test_the_rate_question_gets_the_rate_before_chatter(fortnight) -> None:
    sent, _ = fortnight.asked["acme: What's my hourly rate?"]
    assert "95 EUR per hour" in curated(sent)[0], sent


# -- the key pasted by mistake --------------------------------------------------------------------


def test_the_pasted_key_is_refused_as_a_memory(fortnight) -> None:
    verdict = fortnight.verdicts["Birch staging API key"]
    assert verdict["action"] == "reject", verdict
    assert KEY not in json.dumps(verdict)


@pytest.mark.parametrize("secret", [KEY, TOKEN])
def test_a_pasted_key_is_stored_nowhere(fortnight, secret) -> None:
    """Not in any file of the data directory (inbox, warehouse, snapshots), nor the export;
    no piece of it either (its last 12 characters). The token's chat went on after it was
    pasted, so the client sent it again with every later line of that chat."""
    for piece in (secret, secret[-12:]):
        for path, data in fortnight.stored_bytes.items():
            assert piece.encode() not in data, path
        assert piece not in fortnight.export


def test_the_turn_that_pasted_the_key_keeps_one_mark_in_its_place(fortnight) -> None:
    """The turn itself is kept (what was said), the key masked: one credential, one mark
    (two rules found the Stripe key, whole and by its prefix: it read "[REDACTED][REDACTED]")."""
    rows = [json.loads(line) for line in fortnight.export.splitlines()]
    (pasted,) = [r for r in rows if r["type"] == "message" and r["content"].startswith("Why does this fail?")]
    assert pasted["content"] == ("Why does this fail? curl -H 'Authorization: Bearer [REDACTED]' "
                                 "https://api.birch.example/v2/builds"), pasted["content"]


@pytest.mark.parametrize("secret", [KEY, TOKEN])
def test_a_pasted_key_is_never_handed_back(fortnight, secret) -> None:
    for (question, (sent, loci)) in fortnight.asked.items():
        assert secret[-12:] not in sent and secret[-12:] not in json.dumps(loci), question


# -- streaming intact -----------------------------------------------------------------------------


def test_streamed_answers_arrive_whole_minus_the_proposal_block(fortnight) -> None:
    for said, reply in fortnight.replies.items():
        expected = parse_assistant_output(reply).visible_text
        assert fortnight.shown[said] == expected, (said, fortnight.shown[said], expected)


# -- the audit: why Friday? ------------------------------------------------------------------------


def test_the_deadlines_history_says_who_when_and_why(fortnight) -> None:
    """The items API: the current deadline's record names the claim it replaced, and the old
    one's says it was superseded by it; each change a person made (the claim stated, the old
    one superseded) carries who, the inbox event and when it was asked (the simulated day);
    the rest is consolidation's own (no actor: promotion, palace)."""
    new = fortnight.http["item Acme checkout deadline"]
    old = fortnight.http["item Acme checkout deadline#old"]
    assert new.status_code == 200 and old.status_code == 200, (new.text, old.text)
    new, old = new.json(), old.json()
    new_id, old_id = fortnight.ids["Acme checkout deadline"], fortnight.ids["Acme checkout deadline#old"]
    assert {"rel": "supersedes", "to": old_id} in new["item"]["links"], new["item"]
    assert old["state"] == "superseded" and old["replaced_by"] == {"id": new_id, "how": "superseded"}, old
    assert new["item"]["metadata"]["why_store"] == "the client agreed it with Ana"
    moved_on = (fortnight.monday + timedelta(days=7)).isoformat()
    (created,) = [r for r in new["revisions"] if r["reason"] == "create"]
    (superseded,) = [r for r in old["revisions"] if r["reason"] == "superseded"]
    for rev in (created, superseded):
        assert rev["actor"] == "ana" and rev["inbox_seq"] == new["item"]["metadata"]["inbox_seq"], rev
        assert rev["requested_at"].startswith(moved_on), rev
    for body in (new, old):  # what Ana did is hers; the rest (promotion, palace) consolidation's
        for rev in body["revisions"]:
            assert rev["actor"] == ("ana" if rev["reason"] in ("create", "superseded") else None), rev


def test_loci_show_tells_the_story_of_the_deadline(fortnight) -> None:
    """`loci show`: who stated it, when (Ana's clock), why it was stored, and the Wednesday
    claim it replaced; the old record's supersede line is Ana's change, without the
    consolidation's usage bookkeeping folded into that revision (it read as Ana's)."""
    shown = fortnight.show["Acme checkout deadline"]
    wed, fri = (day_said(fortnight.monday + timedelta(days=n)) for n in (9, 11))
    moved_on = (fortnight.monday + timedelta(days=7)).isoformat()
    assert fri in shown and wed in shown, shown  # the current text and the one it replaced
    (create,) = [line for line in shown.splitlines() if " create " in line]
    assert create.split()[0] == moved_on and " ana " in create and "why: 'the client agreed it with Ana'" in create
    old = fortnight.show["Acme checkout deadline#old"]
    (supersede,) = [line for line in old.splitlines() if " supersede " in line]
    assert supersede.split()[0] == moved_on and " ana " in supersede, old
    assert fortnight.ids["Acme checkout deadline"] in supersede and "usage_count" not in supersede, supersede


def test_the_export_holds_both_clients_current_terms_and_not_the_replaced_ones(fortnight) -> None:
    rows = {row["id"]: row for row in map(json.loads, fortnight.export.splitlines())}
    for name in ("Acme hourly rate", "Acme checkout deadline", "Birch fee", "Birch MVP demo", "Acme invoicing"):
        assert rows[fortnight.ids[name]]["content"], name
    for name in ("Acme checkout deadline#old", "Birch fee#old"):
        assert fortnight.ids[name] not in rows, name
    assert rows[fortnight.ids["Acme hourly rate"]]["scope"]["project_id"] == "acme"
    assert rows[fortnight.ids["Birch fee"]]["scope"]["project_id"] == "birch"


# -- bad requests ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "status"), [
    ("proxy no messages", 400), ("proxy blank project", 400), ("proxy bad json", 400), ("proxy bad zone", 400),
    ("recall bad query", 400), ("recall bad zone", 400), ("recall empty project", 400), ("unknown item", 404),
    ("unknown action", 400), ("turn in the future", 400)])
def test_bad_requests_get_a_4xx_with_a_message(fortnight, name, status) -> None:
    resp = fortnight.http[name]
    assert resp.status_code == status, (name, resp.status_code, resp.text)
    body = resp.json()
    message = body.get("error") or body.get("detail")
    if isinstance(message, dict):
        message = message.get("message")
    assert isinstance(message, str) and len(message) > 10, body


