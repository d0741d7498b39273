"""A solo developer's working week through the Ollama proxy (the nineteenth new-user trial):
the official `ollama` client talks to `loci proxy` on loopback in front of the fake Ollama
server, which answers as a model would (chatter, proposal blocks after a decision or a
wish, memory_search then memory_forget when asked to forget); a consolidation runs between
the days. Sam lives in Los Angeles (`X-Loci-Timezone`); the turns are said on a simulated
clock (Monday to Friday of a past week, some late in the evening, when UTC is already on
the next day). Mostly chatter (weather, lunch, jokes, venting, some of it in the words of
later questions); in between: the billing database (Postgres 16), tabs, the API freeze
date, a dentist appointment; Wednesday evening billing moves to Postgres 17 and the
dentist appointment is forgotten; Thursday and Friday Sam asks. What the model is handed
(the system messages the fake server receives) is checked as a demanding user would:

- Curated memories come before raw turns, and turns only in the excerpts part, labelled as
  what was said (kept).
- Chatter sharing the question's words never outranks the decision (kept).
- The corrected decision: Postgres 17 first; the old claim is not handed over, and Postgres
  16, where it shows at all, only after it and marked as said earlier (kept).
- The forgotten appointment is absent from every later block and catalog (kept).
- Dates are on Sam's calendar (broken three ways): a turn's date in the block and its
  catalog title were UTC's (a Monday-evening turn dated Tuesday), so was a curated
  header's day when the question was put to memory ("what do you know about my
  preferences?": the proxy's own search block had no zone), and "the API freeze deadline
  is Friday December 11" said in November got the note "Friday = " the coming Friday (a weekday naming the
  date after it was read as a day of its own).
- Forgetting left its own traces (trial 20): the request ("Please forget my dentist
  appointment, that's private.") and the model's "Done, it's forgotten." were listed for
  "anything about my dentist?", at once and after consolidation: no detail, but proof an
  appointment existed (broken).
- "What do you know about my preferences?" listed Sam's venting beside the preference (a
  question about Sam, not about a kind of memory), and its search block the joke said in
  the same chat (trial 20, broken).
- Put to memory itself, the question got the model's chatter ("Good choice.", "Tabs it
  is.") as excerpts, found only through its neighbours: an injected recall leaves such a
  turn out (broken).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import ollama
import pytest

from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.consolidate import consolidate_once
from pipelines.recall.render import EPISODIC_HEADER, FOOTER, SAID_EARLIER
from pipelines.settings import load_settings
from tests.e2e.chat import SimulatedClock
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

ZONE = ZoneInfo("America/Los_Angeles")
HEADERS = {"X-Loci-User": "sam", "X-Loci-Project": "shop", "X-Loci-Timezone": "America/Los_Angeles"}
MODEL = "llama3.2"


def decision(title: str, content: str, kind: str = "decision") -> dict[str, Any]:
    return {"type": kind, "title": title, "content": content, "tags": [], "why_store": "the user said so"}


@dataclass
class Week:
    """What the week left: per question, the system text the model got and the `loci` field;
    the day each thing was said; the stored ids of the proposals."""

    monday: date
    freeze: date
    asked: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    blocks_after_forgetting: list[str] = field(default_factory=list)
    said_on: dict[str, date] = field(default_factory=dict)  # each turn's text -> Sam's day it was said
    ids: dict[str, str] = field(default_factory=dict)
    superseded: list[str] = field(default_factory=list)  # what the proposals' verdicts said they replaced



@pytest.fixture(scope="module")
def week(shared_fake, tmp_path_factory) -> Iterator[Week]:  # noqa: F811
    today = datetime.now(ZONE).date()
    monday = today - timedelta(days=today.weekday() + 7)  # last week's: every day of it is past
    freeze = monday + timedelta(days=11)  # the Friday after
    freeze_said = f"{freeze:%A} {freeze:%B} {freeze.day}"
    record = Week(monday, freeze)
    settings = load_settings(None, environ={}, embedder="hash", data_dir=str(tmp_path_factory.mktemp("t19") / "data"))
    settings.flags["memory_tools"] = True  # the model may forget for the user (memory_forget)
    memory = MemoryService(settings, check_interval_ms=0)
    clock = SimulatedClock(ZONE)
    replies: dict[str, Any] = {}
    forgotten = False  # whether the dentist appointment was forgotten yet

    def model(req: dict[str, Any]) -> Any:
        """A stand-in model: scripted per user message; chatter otherwise."""
        last = next(m["content"] for m in reversed(req["messages"]) if m["role"] == "user")
        reply = replies.get(last, "Ha, fair enough!")
        return reply(req) if callable(reply) else reply

    def forget_dentist(req: dict[str, Any]) -> Any:
        told = [json.loads(m["content"]) for m in req["messages"] if m["role"] == "tool"]
        if not told:
            return {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "dentist appointment"}}}]}
        if len(told) == 1:
            (hit,) = [h for h in told[0]["hits"] if h["type"] != "message"]
            return {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "memory_forget", "arguments": {"id": hit["id"]}}}]}
        return "Done, it's forgotten."

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("pipelines.capture.utcnow", clock)
        shared_fake.chat_reply = model
        app = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                               config=ProxyConfig(flags_check_interval_s=0))
        with serve(app) as url:
            answered: list[dict[str, Any]] = []  # each answer's JSON as it came, `loci` field included

            def keep(response: httpx.Response) -> None:
                response.read()
                answered.append(response.json())

            client = ollama.Client(host=url, headers=HEADERS, event_hooks={"response": [keep]})

            def chat(day: int, clock_at: time, lines: list[tuple[str, Any]], ask: str | None = None) -> None:
                """One conversation on day `day` (0 = Monday) starting at `clock_at`; the
                system text of each message named in `ask` (all, with "*") is kept."""
                clock.at(monday + timedelta(days=day), clock_at)
                history: list[dict[str, str]] = []
                nonlocal forgotten
                for said, reply in lines:
                    if reply is not None:
                        replies[said] = reply
                    history.append({"role": "user", "content": said})
                    answer = client.chat(model=MODEL, messages=history)
                    history.append({"role": "assistant", "content": answer.message.content or ""})
                    for text in (said, answer.message.content):
                        record.said_on.setdefault(text, monday + timedelta(days=day))
                    sent = system_text(shared_fake.requests[-1][1])
                    loci = answered[-1]["loci"]
                    for p in loci.get("proposals", []):
                        assert p["action"] == "accept", p
                        record.ids[p["title"]] = p["item_id"]
                        record.superseded += p["supersedes"]
                    if ask in ("*", said):
                        record.asked[said] = (sent, loci)
                    if forgotten:
                        record.blocks_after_forgetting.append(sent + json.dumps(loci))
                    forgotten = forgotten or said.startswith("Please forget")

            def consolidate() -> None:
                assert memory.usage.flush()
                consolidate_once(settings)
                memory.reload()

            # Monday
            chat(0, time(9, 5), [
                ("Morning! Rain again in LA, can you believe it", "Stay dry! Want a joke to cheer up?"),
                ("Sure, tell me a joke about databases", "A SQL query walks into a bar and asks two tables: "
                                                        "may I join you?"),
                ("Lunch was a burrito from the truck, best one this month", "Sounds great."),
            ])
            chat(0, time(20, 45), [  # 04:45 UTC on Tuesday
                ("We'll use Postgres 16 for the billing service.",
                 "Good choice. " + block(decision("Billing service database",
                                                  "The billing service uses Postgres 16."))),
                ("Also, I prefer tabs for indentation in all my code.",
                 "Tabs it is. " + block(decision("Indentation", "Sam prefers tabs for indentation.",
                                                 "preference"))),
            ])
            consolidate()
            # Tuesday
            chat(1, time(10, 0), [
                ("Sunny today finally. Picked up tacos before the billing sync, best pick of the day",
                 "Tacos are always the right pick."),
                (f"Deadline for the API freeze is {freeze_said}.",
                 "Noted. " + block(decision("API freeze deadline",
                                            f"The API freeze deadline is {freeze_said}.", "fact"))),
                ("Ugh, the API freeze has me stressed, I need a vacation", "Hang in there!"),
                ("I have a dentist appointment Thursday at 3pm, dreading it.",
                 "Good luck! " + block(decision("Dentist appointment",
                                                "Sam has a dentist appointment on Thursday at 3pm.", "fact"))),
            ])
            consolidate()
            # Wednesday: the billing database changes, the appointment is forgotten
            chat(2, time(21, 30), [  # 05:30 UTC on Thursday
                ("Change of plan: billing goes on Postgres 17, not 16.",
                 "Got it. " + block(decision("Billing service database", "The billing service uses Postgres 17."))),
                ("Please forget my dentist appointment, that's private.", forget_dentist),
            ])
            chat(2, time(21, 40), [(ASKED_AT_ONCE, None)], ask=ASKED_AT_ONCE)  # a new chat, not consolidated yet
            consolidate()
            # Thursday
            chat(3, time(9, 30), [
                ("Traffic was awful this morning, I'm so done with flaky tests too", "That sounds rough."),
                (SAID_AGAIN, "Sounds like a plan."),
                ("what database did we pick for billing?", None),
            ], ask="*")
            consolidate()
            # Friday
            chat(4, time(11, 0), [
                ("Tell me a joke, it's Friday", "Why do programmers prefer dark mode? Light attracts bugs."),
                ("when is the API freeze?", None),
                ("what do you know about my preferences?", None),
                ("Do you remember anything about my dentist?", None),
                ("What do I prefer?", None),
            ], ask="*")
        yield record
    memory.close()


def parts(sent: str) -> tuple[str, str]:
    """(the curated part of a memory block, its excerpts part)."""
    curated, _, turns = sent.partition(EPISODIC_HEADER)
    return curated, turns


def entries(text: str) -> list[str]:
    return re.findall(r"\[(?:MEMORY|TURN): [^\n]*\n.*?\[/(?:MEMORY|TURN)\]", text, re.S)


ASKED_AT_ONCE = "Is there anything left about my dentist?"
SAID_AGAIN = "My dentist's office called, I'll look for a new dentist closer to home."
FORGET_REQUEST = ("Please forget my dentist appointment, that's private.", "Done, it's forgotten.")
QUESTIONS = ["what database did we pick for billing?", "when is the API freeze?",
             "what do you know about my preferences?", "What do I prefer?"]


@pytest.mark.parametrize("question", QUESTIONS)
def test_curated_memories_come_first_and_turns_only_as_labelled_excerpts(week, question) -> None:
    sent, _ = week.asked[question]
    curated, turns = parts(sent)
    assert "[MEMORY:" in curated and FOOTER in curated, sent
    assert "[TURN:" not in curated and "[MEMORY:" not in turns, sent  # each in its own part


def test_the_corrected_decision_answers_and_chatter_does_not_outrank_it(week) -> None:
    sent, loci = week.asked["what database did we pick for billing?"]
    curated, turns = parts(sent)
    first = entries(curated)[0]
    assert "The billing service uses Postgres 17." in first, sent
    assert week.ids["Billing service database"] in first
    # Postgres 16 only after 17, and only where marked as replaced or said earlier.
    for entry in entries(sent):
        if "Postgres 16" in entry and "Postgres 17" not in entry:
            assert sent.index(entry) > sent.index(first) and SAID_EARLIER.split(",")[0] in entry, sent
    assert "The billing service uses Postgres 16." not in sent, sent
    (old,) = week.superseded  # Wednesday's correction replaced Monday's decision, and nothing else
    assert old not in sent and old not in json.dumps(loci)


def test_the_freeze_date_and_preferences_are_answered_from_curated_memory(week) -> None:
    sent, _ = week.asked["when is the API freeze?"]
    freeze = f"{week.freeze:%A} {week.freeze:%B} {week.freeze.day}"
    entry = entries(parts(sent)[0])[0]
    assert f"The API freeze deadline is {freeze}." in entry, sent
    # Its words name the day: no note under it reads "Friday" as another one.
    assert set(re.findall(r"\d{4}-\d\d-\d\d", entry.split("\n", 1)[1])) <= {week.freeze.isoformat()}, entry
    for question in ("what do you know about my preferences?", "What do I prefer?"):
        sent, _ = week.asked[question]
        assert "Sam prefers tabs for indentation." in entries(parts(sent)[0])[0], (question, sent)


def test_chatter_that_says_nothing_asked_is_not_handed_over_as_evidence(week) -> None:
    """Put to memory itself, "what do you know about my preferences?" got the model's
    chatter as excerpts ("Good choice.", "Tabs it is.": found through their neighbours, none
    of their words asked, no listing's answer), which an injected recall never shows."""
    sent, _ = week.asked["what do you know about my preferences?"]
    turns = [t.split("\n")[1] for t in entries(parts(sent)[1])]
    assert "Also, I prefer tabs for indentation in all my code." in turns, sent
    assert not {"Good choice.", "Tabs it is."} & set(turns), turns


def test_the_forgotten_appointment_is_absent_from_everything_the_model_got_afterwards(week) -> None:
    dentist = week.ids["Dentist appointment"]
    assert len(week.blocks_after_forgetting) >= 6
    for sent in week.blocks_after_forgetting:
        assert "3pm" not in sent and dentist not in sent, sent
    sent, loci = week.asked["Do you remember anything about my dentist?"]
    assert "3pm" not in sent and dentist not in json.dumps(loci), sent


def test_a_memorys_header_dates_it_on_the_users_calendar(week) -> None:
    wednesday, monday = week.monday + timedelta(days=2), week.monday
    for question in ("what database did we pick for billing?",):  # the injected path
        sent, _ = week.asked[question]
        header = entries(parts(sent)[0])[0].split("\n")[0]
        assert f"by=sam on {wednesday.isoformat()}" in header, header
    sent, _ = week.asked["what do you know about my preferences?"]  # the proxy's search block
    header = entries(parts(sent)[0])[0].split("\n")[0]
    assert f"by=sam on {monday.isoformat()}" in header, header


def test_turns_are_dated_on_the_users_calendar(week) -> None:
    """Both paths: injected ("what database ...", "when is ...") and searched ("what do you
    know about my preferences?"); Monday's 20:45 and Wednesday's 21:30 are the next day in UTC."""
    shown = 0
    for question in QUESTIONS:
        sent, _ = week.asked[question]
        for turn in entries(parts(sent)[1]):
            header, text = turn.split("\n")[:2]
            assert header.endswith(f"| {week.said_on[text].isoformat()}]"), (text, header)
            shown += 1
    assert shown >= 3


def test_the_catalog_titles_turns_with_the_users_day(week) -> None:
    """The `loci` field's catalog titles a turn `<speaker> on <date>: <gist>`: Sam's date."""
    titled = 0
    for _sent, loci in week.asked.values():
        for entry in loci["catalog"]["memory_catalog"]:
            if entry["type"] == "message":
                day, gist = re.fullmatch(r"\w+ on (\S+): (.*)", entry["title"], re.S).groups()
                (said,) = {d for text, d in week.said_on.items() if text.startswith(gist.rstrip("…"))}
                assert day == said.isoformat(), entry
                titled += 1
    assert titled >= 10



@pytest.mark.parametrize("question", ["Do you remember anything about my dentist?", ASKED_AT_ONCE])
def test_the_request_to_forget_and_its_answer_are_forgotten_with_the_appointment(week, question) -> None:
    """The turn that asked to forget and the model's answer of that round showed that an
    appointment existed ("anything about my dentist?" listed both), at once and after
    consolidation: they are forgotten with it (kept in the inbox's history). A turn said
    later about the dentist is not: it is what Sam says now, on purpose, and names nothing
    forgotten (as a turn restating a forgotten claim after the forgetting is kept)."""
    sent, loci = week.asked[question]
    for said in FORGET_REQUEST:
        assert said not in sent and said not in json.dumps(loci), (question, sent)
    for sent in week.blocks_after_forgetting:
        assert not any(said in sent for said in FORGET_REQUEST), sent
    if question != ASKED_AT_ONCE:  # said the day after
        sent, loci = week.asked[question]
        assert SAID_AGAIN in sent or SAID_AGAIN in json.dumps(loci), sent


def test_a_question_naming_a_kind_of_memory_lists_that_kind_as_the_verb_does(week) -> None:
    """"What do you know about my preferences?" (searched as "my preferences") was read as a
    question about Sam, so whatever Sam said was listed beside the tabs preference ("Traffic
    was awful ...", "Ugh, the API freeze has me stressed ..."); "What do I prefer?" listed the
    preference alone. Naming the type asks for it as the verb does (trial 20); and the
    search block left out no turn of the conversation itself (the Friday joke "Why do
    programmers prefer dark mode?", said in this chat: the model has it), as an injected
    recall does."""
    def turns(question: str) -> set[str]:
        return {t.split("\n")[1] for t in entries(parts(week.asked[question][0])[1])}
    assert turns("what do you know about my preferences?") <= turns("What do I prefer?"), \
        turns("what do you know about my preferences?")
