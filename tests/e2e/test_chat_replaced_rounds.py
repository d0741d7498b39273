"""What a user replaces in a chat is not remembered as something said, whichever proxy process
sees the change: Lea chats through `loci proxy` (the official `ollama` and `openai` clients,
the fake Ollama upstream on loopback) and

- edits her latest message after the proxy restarted (broken: the edit was only noticed by
  the process that had landed the old words; after a restart they stayed recallable);
- edits an earlier message, her client resending the rest of the history after it (broken:
  only the latest message's edit was seen, the old words came back);
- regenerates an answer that got her wrong (broken: the discarded answer and the memory it
  proposed stayed recallable as "what the assistant said").

In each case the replaced words are never handed to the model again, in that chat or a new one,
and their retraction is `memory.forget`'s, audited with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import ollama
import openai
import pytest

from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from online.tools.dispatcher import ToolDispatcher
from pipelines.consolidate import consolidate_once
from pipelines.materialize import message_item_id
from pipelines.settings import Settings
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import (  # noqa: F401 - fake and shared_fake are fixtures
    answer_from_memory,
    block,
    fake,
    serve,
    shared_fake,
    system_text,
)

HEADERS = {"X-Loci-User": "lea", "X-Loci-Project": "atlas"}
MODEL = "llama3.2"
HELLO = "Hi, I'm planning the billing migration this quarter."
OLD, NEW = "For the billing service we settled on Postgres 16.", "For the billing service we settled on CockroachDB."
DEADLINE = "The migration deadline is the end of March."
ASK_DB = "Which database did we settle on for the billing service?"


class Proxies:
    """Proxies in front of one data directory: `start()` one (a new process's service and
    app), `restart()` closes every running one first."""

    def __init__(self, fake: FakeOllama, data_dir: Path) -> None:
        self.fake, self.data_dir, self.stack = fake, data_dir, ExitStack()
        self.service: MemoryService | None = None

    def start(self) -> str:
        svc = MemoryService(Settings(embedder="hash", data_dir=str(self.data_dir)), check_interval_ms=0)
        self.stack.callback(svc.close)
        self.service = svc
        app = create_proxy_app(svc.settings, service=svc, upstream=self.fake.url, config=ProxyConfig())
        return self.stack.enter_context(serve(app))

    def restart(self) -> str:
        self.stack.close()
        self.stack = ExitStack()
        return self.start()


@pytest.fixture
def proxies(fake: FakeOllama, tmp_path: Path) -> Iterator[Proxies]:
    p = Proxies(fake, tmp_path / "data")
    yield p
    p.stack.close()


def noted_or_from_memory(req: dict[str, Any]) -> str:
    last = next(m["content"] for m in reversed(req["messages"]) if m["role"] == "user")
    return answer_from_memory(req) if last.endswith("?") else "Noted."


def sent_system(fake: FakeOllama, path: str) -> str:
    return system_text([b for p, b in fake.requests if p == path][-1])


def retraction_reasons(service: MemoryService) -> list[str]:
    """Why each replaced round was retracted, once per round (each forget of it says why)."""
    said = dict.fromkeys(e.payload["reason"] for e in service.inbox.read_after(0, kinds=["memory.update"])
                         if e.payload.get("reason"))
    return [why.split(":")[0] for why in said]


def exchange(*texts: str) -> list[dict[str, str]]:
    return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]


def test_an_edit_after_the_proxy_restarted_retracts_the_words_it_replaced(proxies: Proxies, fake: FakeOllama) -> None:
    fake.chat_reply = noted_or_from_memory
    url = proxies.start()
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    for n in (1, 3):
        list(chat.create(model=MODEL, messages=exchange(HELLO, "Noted.", OLD)[:n], stream=True))

    url = proxies.restart()  # the edit reaches a new process
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    edited = chat.create(model=MODEL, messages=exchange(HELLO, "Noted.", NEW))
    assert "Postgres 16" not in sent_system(fake, "/v1/chat/completions")
    assert len(edited.model_extra["loci"]["edited_away"]) == 2  # her words and the answer to them

    chat.create(model=MODEL, messages=exchange(HELLO, "Noted.", NEW, "Noted.", ASK_DB))
    assert "Postgres 16" not in sent_system(fake, "/v1/chat/completions")  # nor asked later
    assert retraction_reasons(proxies.service) == ["edited by the user"]


def test_an_earlier_message_edited_in_a_resent_history_is_retracted(proxies: Proxies, fake: FakeOllama) -> None:
    fake.chat_reply = noted_or_from_memory
    lea = ollama.Client(host=proxies.start(), headers=HEADERS)
    for n in (1, 3, 5):
        lea.chat(model=MODEL, messages=exchange(HELLO, "Noted.", OLD, "Noted.", DEADLINE)[:n])

    # Her client lets her fix the second message in place and sends the history on with it.
    history = exchange(HELLO, "Noted.", NEW, "Noted.", DEADLINE, "Noted.", ASK_DB)
    reply = lea.chat(model=MODEL, messages=history)
    assert "Postgres 16" not in sent_system(fake, "/api/chat") + reply.message.content
    lea.chat(model=MODEL, messages=[*history, {"role": "assistant", "content": reply.message.content},
                                    {"role": "user", "content": "Remind me, which database was it?"}])
    assert "Postgres 16" not in sent_system(fake, "/api/chat")  # nor asked later
    landed = [e.payload["text"] for e in proxies.service.inbox.read_after(0, kinds=["turn"])]
    assert NEW in landed  # what the message says now is hers
    assert retraction_reasons(proxies.service) == ["edited by the user"]


WRONG = {"type": "fact", "title": "Conference trip", "content": "Lea is flying to Porto next week.", "tags": ["travel"]}
RIGHT = {"type": "fact", "title": "Conference trip", "content": "Lea is flying to Lisbon next week for the conference.",
         "tags": ["travel"]}


def test_a_regenerated_answer_retracts_the_one_discarded_and_what_it_proposed(proxies: Proxies,
                                                                             fake: FakeOllama) -> None:
    chat = openai.OpenAI(base_url=f"{proxies.start()}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    said = exchange("I'm flying to Lisbon next week for the conference.")
    fake.chat_reply = lambda req: "Noted: you are flying to Porto next week. " + block(WRONG)
    first = chat.create(model=MODEL, messages=said)
    assert first.model_extra["loci"]["proposals"][0]["action"] == "accept"
    fake.chat_reply = lambda req: "Noted: Lisbon, next week, for the conference. " + block(RIGHT)
    again = chat.create(model=MODEL, messages=said)  # she regenerates: the first answer is discarded
    assert len(again.model_extra["loci"]["regenerated_away"]) == 2  # the answer and its memory

    fake.chat_reply = answer_from_memory
    reply = chat.create(model=MODEL, messages=exchange("Where am I flying next week?"))  # a new chat
    assert "Lisbon" in reply.choices[0].message.content
    assert "Porto" not in sent_system(fake, "/v1/chat/completions")
    assert retraction_reasons(proxies.service) == ["regenerated by the user"]


def test_a_retried_request_answered_alike_keeps_its_answer(proxies: Proxies, fake: FakeOllama) -> None:
    lea: Callable[..., Any] = ollama.Client(host=proxies.start(), headers=HEADERS).chat
    fake.chat_reply = lambda req: "Noted: Lisbon, next week. " + block(RIGHT)
    for _ in range(2):  # a client retry given the same answer: nothing discarded, landed once
        assert lea(model=MODEL, messages=exchange("I'm flying to Lisbon next week.")).message.content \
            == "Noted: Lisbon, next week."
    turns = [e.payload["role"] for e in proxies.service.inbox.read_after(0, kinds=["turn"])]
    assert turns == ["user", "assistant"] and retraction_reasons(proxies.service) == []


def test_the_request_that_regenerates_never_sees_the_answer_it_replaces(proxies: Proxies, fake: FakeOllama) -> None:
    """Broken before: the discarded answer was retracted only once the new one landed, so the
    regeneration's own recall handed the model "Lea is flying to Porto" to answer with."""
    chat = openai.OpenAI(base_url=f"{proxies.start()}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    said = exchange("I'm flying to Lisbon next week for the conference, where am I flying?")
    fake.chat_reply = lambda req: "Noted: you are flying to Porto next week. " + block(WRONG)
    chat.create(model=MODEL, messages=said)
    fake.chat_reply = lambda req: "Noted: Lisbon, next week, for the conference. " + block(RIGHT)
    again = chat.create(model=MODEL, messages=said)  # she regenerates
    assert "Porto" not in sent_system(fake, "/v1/chat/completions")
    assert len(again.model_extra["loci"]["regenerated_away"]) == 2


def test_an_edited_first_message_of_a_named_chat_is_retracted(proxies: Proxies, fake: FakeOllama) -> None:
    """Open WebUI names the chat (`X-OpenWebUI-Chat-Id`): the place of its first message is that
    chat's alone, so an edit of it retracts the words it replaced (broken: a first message was
    never read as an edit). Without a chat id a new chat opening otherwise cannot be told from
    it: nothing is retracted."""
    fake.chat_reply = noted_or_from_memory
    url = proxies.start()
    lea = ollama.Client(host=url, headers={**HEADERS, "X-OpenWebUI-Chat-Id": "c-41"})
    lea.chat(model=MODEL, messages=exchange(OLD))
    edited = httpx.post(f"{url}/api/chat", headers={**HEADERS, "X-OpenWebUI-Chat-Id": "c-41"}, timeout=60,
                        json={"model": MODEL, "stream": False, "messages": exchange(NEW)}).json()
    assert len(edited["loci"]["edited_away"]) == 2  # her words and the answer to them
    lea.chat(model=MODEL, messages=exchange(NEW, "Noted.", ASK_DB))
    assert "Postgres 16" not in sent_system(fake, "/api/chat")
    assert retraction_reasons(proxies.service) == ["edited by the user"]

    other = ollama.Client(host=url, headers={**HEADERS, "X-Loci-Session": "s-9"})  # a session, not a chat
    other.chat(model=MODEL, messages=exchange(DEADLINE))
    again = httpx.post(f"{url}/api/chat", headers={**HEADERS, "X-Loci-Session": "s-9"}, timeout=60,
                       json={"model": MODEL, "stream": False, "messages": exchange(HELLO)}).json()
    assert "edited_away" not in again["loci"]


def live_user_turns(service: MemoryService) -> list[str]:
    view = service.view()
    return [e.payload["text"] for e in service.inbox.read_after(0, kinds=["turn"]) if e.payload["role"] == "user"
            and view.get(message_item_id(e.payload["turn_id"])).validation != "retracted"]


def test_her_words_stay_when_an_answer_restating_them_is_regenerated(proxies: Proxies, fake: FakeOllama) -> None:
    """She regenerates an answer for its tone; it had proposed her words as a memory. Broken
    before: retracting that memory hid the turn that said it, her own (`forgetting.turns_saying`,
    the rule of a user's forget). A regeneration withdraws the proposal (`ForgetArgs.withdraw`)."""
    lea = ollama.Client(host=proxies.start(), headers=HEADERS)
    said = exchange("I'm flying to Lisbon next week for the conference.")
    for reply in ("Noted: Lisbon!!! ", "Noted: Lisbon, next week. "):
        fake.chat_reply = lambda req, reply=reply: reply + block(RIGHT)
        lea.chat(model=MODEL, messages=said)
    assert live_user_turns(proxies.service) == [said[0]["content"]]
    consolidate_once(proxies.service.settings)  # consolidation applies the same forgetting rule
    proxies.restart()
    assert live_user_turns(proxies.service) == [said[0]["content"]]
    withdrawn = [e.payload["item_id"] for e in proxies.service.inbox.read_after(0, kinds=["memory.update"])
                 if e.payload.get("withdrawn")]
    assert withdrawn and all(proxies.service.view().get(i).validation == "retracted" for i in withdrawn)


def with_sources(prompt: str) -> str:
    """The latest message as Open WebUI sends it with a file attached (its RAG template): the
    chat keeps, and later resends, only her words."""
    return ("### Task:\nRespond to the user query using the provided context.\n<context>\n"
            "<source id=\"1\">billing-notes.md: the billing service runs on Postgres 16 since May.</source>\n"
            f"</context>\n\n<user_query>\n{prompt}\n</user_query>")


def test_a_client_that_wrapped_her_message_in_sources_did_not_edit_it(proxies: Proxies, fake: FakeOllama) -> None:
    """Broken before: the resent history held her words without the sources the client had put
    around them, which read as an edit: the turn, its answer and the memory it proposed were
    retracted. Her words inside what was landed are the same message."""
    url = proxies.start()
    lea = ollama.Client(host=url, headers=HEADERS)
    fake.chat_reply = lambda req: "Postgres 16, since May. " + block(RIGHT)
    first = lea.chat(model=MODEL, messages=exchange(HELLO, "Noted.", with_sources(ASK_DB)))
    fake.chat_reply = noted_or_from_memory
    later = httpx.post(f"{url}/api/chat", headers=HEADERS, timeout=60, json={
        "model": MODEL, "stream": False,
        "messages": exchange(HELLO, "Noted.", ASK_DB, first.message.content, "Thanks, noted.")}).json()
    assert "edited_away" not in later["loci"] and retraction_reasons(proxies.service) == []


def test_an_earlier_message_cut_short_by_her_is_still_an_edit(proxies: Proxies, fake: FakeOllama) -> None:
    """Her words with their end taken away are hers to take away: an edit."""
    fake.chat_reply = noted_or_from_memory
    lea = ollama.Client(host=proxies.start(), headers=HEADERS)
    said = "For the billing service we settled on Postgres 16, and Redis for the queue."
    for n in (1, 3):
        lea.chat(model=MODEL, messages=exchange(HELLO, "Noted.", said)[:n])
    lea.chat(model=MODEL, messages=exchange(HELLO, "Noted.", said.split(",")[0] + ".", "Noted.", DEADLINE))
    assert retraction_reasons(proxies.service) == ["edited by the user"]


def test_going_back_to_the_earlier_answer_brings_back_what_it_said(proxies: Proxies, fake: FakeOllama) -> None:
    """She regenerates, dislikes the new answer (Porto) and switches back to the first one
    (Lisbon), going on from it. Broken before: the chosen answer stayed retracted and the
    one she turned away from stood, so "Porto" was handed to the model. Now the answers since
    are retracted and the chosen one's words and memory land again."""
    url = proxies.start()
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    said = exchange("I'm flying to Lisbon next week for the conference.")
    fake.chat_reply = lambda req: "Noted: Lisbon, next week, for the conference. " + block(RIGHT)
    first = chat.create(model=MODEL, messages=said).choices[0].message.content
    fake.chat_reply = lambda req: "Noted: you are flying to Porto next week. " + block(WRONG)
    chat.create(model=MODEL, messages=said)  # regenerated: the first answer is retracted
    fake.chat_reply = answer_from_memory
    back = chat.create(model=MODEL, messages=[*said, {"role": "assistant", "content": first},
                                               {"role": "user", "content": "Where am I flying next week?"}])
    assert "Porto" not in sent_system(fake, "/v1/chat/completions")
    assert len(back.model_extra["loci"]["regenerated_away"]) == 2  # the answer she turned away from, its memory
    fake.chat_reply = answer_from_memory
    reply = chat.create(model=MODEL, messages=exchange("Where am I flying next week?"))  # a new chat
    assert "Lisbon" in reply.choices[0].message.content
    assert retraction_reasons(proxies.service) == ["regenerated by the user", "not chosen by the user"]


def test_an_answer_she_forgot_is_not_brought_back_by_her_history(proxies: Proxies, fake: FakeOllama) -> None:
    """Only an answer a regeneration discarded comes back: one she had forgotten stays so."""
    chat = openai.OpenAI(base_url=f"{proxies.start()}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    said = exchange("I'm flying to Lisbon next week for the conference.")
    fake.chat_reply = lambda req: "Noted: Lisbon, next week, for the conference. " + block(RIGHT)
    first = chat.create(model=MODEL, messages=said)
    (turn,) = [e for e in proxies.service.inbox.read_after(0, kinds=["turn"]) if e.payload["role"] == "assistant"]
    ToolDispatcher(proxies.service).dispatch("memory.forget", {"id": message_item_id(turn.payload["turn_id"])},
                                             turn.identity)
    fake.chat_reply = lambda req: "Noted: you are flying to Porto next week. " + block(WRONG)
    chat.create(model=MODEL, messages=said)  # regenerated
    fake.chat_reply = answer_from_memory
    back = chat.create(model=MODEL, messages=[*said, {"role": "assistant", "content": first.choices[0].message.content},
                                               {"role": "user", "content": "Where am I flying next week?"}])
    assert "regenerated_away" not in back.model_extra["loci"]


def test_her_words_in_a_client_template_land_as_her_turn(proxies: Proxies, fake: FakeOllama) -> None:
    """Open WebUI wraps her latest message in its RAG template, sources around it. Broken
    before: the whole template landed as her turn, the sources' text as something she said.
    Her turn is her words inside the template; the sources stay out of it."""
    lea = ollama.Client(host=proxies.start(), headers=HEADERS)
    fake.chat_reply = lambda req: "Postgres 16, since May."
    lea.chat(model=MODEL, messages=exchange(HELLO, "Noted.", with_sources(ASK_DB)))
    assert "billing-notes.md" in str(fake.requests[-1][1]["messages"])  # the model had the sources
    assert live_user_turns(proxies.service) == [ASK_DB]  # HELLO was never landed: only the latest is
