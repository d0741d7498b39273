"""A chat UI in front of the Ollama proxy (the twenty-eighth new-user trial): Lea points
Open WebUI's Ollama connection at `loci proxy`, which runs in front of the fake Ollama
server on loopback, and chats the way such a UI talks to Ollama, over httpx as it does:
her chat streams; after each answer the UI sends its background tasks through the same
`/api/chat` and `/api/generate` (a title, tags, follow-up questions, each with the chat
history quoted in one templated user message, `stream: false`, JSON asked for in words or
with `format`); she regenerates an answer, edits an earlier message, switches model
mid-chat, and the UI probes `/api/tags`, `/api/show`, `/api/version`. One consolidation
runs before she asks in a new chat. Checked as a demanding user would:

- A background task is never what Lea said: no task prompt is landed as her turn, recalled,
  listed in a catalog or exported, and no memory is injected into it (broken: every task
  prompt landed as a user turn, got the READ-ONLY block and was recalled).
- A regenerated answer does not land her message twice (kept).
- An edited message lands as another turn; asked later, the new words come first (kept).
  The words it replaced (and the answer to them) are retracted as edited by the user before
  the edit's own recall: never handed to the model again (broken: they came back as an
  unmarked excerpt with the edit itself and in every later recall).
- Probes pass through byte-identical; her chat still streams; her facts are captured and
  recalled (kept).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.consolidate import consolidate_once
from pipelines.item_report import export_items
from pipelines.materialize import message_item_id
from pipelines.settings import load_settings
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

USER = {"X-OpenWebUI-User-Id": "lea"}
MODEL, OTHER_MODEL = "llama3.2", "qwen2.5"
PENICILLIN = "I'm allergic to penicillin, so keep that in mind if I ask about medicine."
BILLING_OLD = "For the billing service we settled on Postgres 16."
BILLING_NEW = "For the billing service we settled on CockroachDB."
ALLERGY_Q, BILLING_Q = "What am I allergic to?", "What did we settle on for the billing service?"
ALLERGY = {"type": "fact", "title": "Penicillin allergy", "content": "Lea is allergic to penicillin.",
           "tags": ["health"], "why_store": "the user said so"}


def transcript(history: list[dict[str, str]]) -> str:
    """The chat history as Open WebUI quotes it into a task prompt ({{MESSAGES:END:n}})."""
    return "\n".join(f"{m['role'].upper()}: {m['content']}" for m in history)


def title_prompt(history: list[dict[str, str]]) -> str:
    return ("### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
            "### Guidelines:\n- The title should clearly represent the main theme or subject of the "
            "conversation.\n- Write the title in the chat's primary language.\n### Output:\n"
            'JSON format: { "title": "your concise title here" }\n### Chat History:\n<chat_history>\n'
            f"{transcript(history[-2:])}\n</chat_history>")


def old_title_prompt(history: list[dict[str, str]]) -> str:
    """Open WebUI's title template before it asked for JSON: no JSON named, `stream: false`."""
    return ("Create a concise, 3-5 word title with an emoji as a title for the chat history, in the given "
            "language. RESPOND ONLY WITH THE TITLE TEXT.\n\nChat History:\n<chat_history>\n"
            f"{transcript(history[-2:])}\n</chat_history>")


def tags_prompt(history: list[dict[str, str]]) -> str:
    return ("### Task:\nGenerate 1-3 broad tags categorizing the main themes of the chat history, along "
            "with 1-3 more specific subtopic tags.\n### Output:\n"
            'JSON format: { "tags": ["tag1", "tag2", "tag3"] }\n### Chat History:\n<chat_history>\n'
            f"{transcript(history[-6:])}\n</chat_history>")


def follow_ups_prompt(history: list[dict[str, str]]) -> str:
    return ("### Task:\nSuggest 3-5 relevant follow-up questions or prompts that the user might naturally "
            "ask next in this conversation as a **user**, based on the chat history.\n### Output:\n"
            'JSON format: { "follow_ups": ["Question 1?", "Question 2?", "Question 3?"] }\n'
            f"### Chat History:\n<chat_history>\n{transcript(history[-6:])}\n</chat_history>")


TASK_MARKS = ("### Task", "Generate a concise", "Generate 1-3 broad tags", "Suggest 3-5", "chat_history",
              "follow_ups", "Penicillin and billing")


def task_free(text: str) -> bool:
    return not any(mark in text for mark in TASK_MARKS)


@dataclass
class Trial:
    memory: MemoryService
    settings: Any
    url: str
    fake: Any
    task_requests: list[dict[str, Any]] = field(default_factory=list)  # what upstream got for each task
    task_answers: list[dict[str, Any]] = field(default_factory=list)  # what the UI got back
    streamed_pieces: list[int] = field(default_factory=list)  # NDJSON lines per streamed answer
    probes: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)  # path -> (via proxy, direct)
    regenerated: dict[str, Any] = field(default_factory=dict)
    asked: dict[str, Any] = field(default_factory=dict)
    edit_sent: str = ""  # the system text the model got with the edited message


ANSWERS = itertools.count()  # a regenerated answer differs from the first


def model_reply(req: dict[str, Any]) -> Any:
    """The stand-in model: JSON for a task, a proposal after a fact, chatter otherwise."""
    last = next((m["content"] for m in reversed(req.get("messages", [])) if m["role"] == "user"), "")
    last = last or req.get("prompt", "")
    if last.startswith("Create a concise"):
        return "💊 Penicillin and billing"
    if "### Task" in last:
        if "title" in last.split("### Output")[0]:
            return '{"title": "💊 Penicillin and billing"}'
        if "tags" in last.split("### Output")[0]:
            return '{"tags": ["Health", "Engineering"]}'
        return '{"follow_ups": ["What antibiotics are safe for me?", "Why CockroachDB?"]}'
    if last == PENICILLIN:
        return f"Got it ({next(ANSWERS)}), I'll keep that in mind. " + block(ALLERGY)
    if "allergic" in last:
        memo = system_text(req)
        return "You are allergic to penicillin." if "penicillin" in memo else "I don't know."
    return f"Sure ({req.get('model')})."


@pytest.fixture(scope="module")
def trial(shared_fake, tmp_path_factory) -> Iterator[Trial]:  # noqa: F811
    settings = load_settings(None, environ={}, embedder="hash", data_dir=str(tmp_path_factory.mktemp("t28") / "data"))
    memory = MemoryService(settings, check_interval_ms=0)
    shared_fake.chat_reply = model_reply
    shared_fake.generate_reply = model_reply
    shared_fake.stream_chunk_chars = 8
    app = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                           config=ProxyConfig(flags_check_interval_s=0))
    with serve(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        t = Trial(memory, settings, url, shared_fake)
        chat_id = {"X-OpenWebUI-Chat-Id": "chat-1", **USER}

        def say(history: list[dict[str, str]], model: str = MODEL) -> str:
            """Her message, streamed as the UI streams it; the answer's text."""
            text, lines = "", 0
            with http.stream("POST", "/api/chat", headers=chat_id,
                             json={"model": model, "messages": history}) as resp:
                assert resp.status_code == 200
                for line in resp.iter_lines():
                    if line.strip():
                        lines += 1
                        text += json.loads(line).get("message", {}).get("content", "")
            t.streamed_pieces.append(lines)
            return text

        def tasks(history: list[dict[str, str]]) -> None:
            """The UI's background tasks after an answer, as Open WebUI sends them."""
            n = len(t.fake.requests)
            for path, body in (
                    ("/api/chat", {"messages": [{"role": "user", "content": title_prompt(history)}]}),
                    ("/api/chat", {"messages": [{"role": "user", "content": old_title_prompt(history)}]}),
                    ("/api/chat", {"messages": [{"role": "user", "content": tags_prompt(history)}],
                                   "format": "json"}),
                    ("/api/generate", {"prompt": follow_ups_prompt(history), "format": "json"})):
                resp = http.post(path, headers=chat_id, json={"model": MODEL, "stream": False, **body})
                assert resp.status_code == 200, resp.text
                t.task_answers.append(resp.json())
            t.task_requests += [b for _, b in t.fake.requests[n:]]

        history = [{"role": "user", "content": PENICILLIN}]
        first = say(history)
        # Regenerate: the same message again, the first answer dropped.
        t.regenerated["events_before"] = len(memory.inbox.read_after(0))
        again = say(history)
        t.regenerated["events_after"] = memory.inbox.read_after(0)[t.regenerated["events_before"]:]
        t.regenerated["answers"] = (first, again)
        history.append({"role": "assistant", "content": again})
        tasks(history)
        history.append({"role": "user", "content": BILLING_OLD})
        history.append({"role": "assistant", "content": say(history)})
        tasks(history)
        # She edits that message: the same chat, the history up to it, the new words.
        history[2:] = [{"role": "user", "content": BILLING_NEW}]
        n = len(t.fake.requests)
        history.append({"role": "assistant", "content": say(history)})
        t.edit_sent = system_text(t.fake.requests[n][1])
        tasks(history)
        # Another model for the next message of the same chat.
        history.append({"role": "user", "content": "Thanks, that's all for today."})
        history.append({"role": "assistant", "content": say(history, OTHER_MODEL)})
        tasks(history)
        for path, call in (("/api/tags", lambda c: c.get("/api/tags")),
                           ("/api/version", lambda c: c.get("/api/version")),
                           ("/api/show", lambda c: c.post("/api/show", json={"model": MODEL}))):
            with httpx.Client(base_url=t.fake.url, timeout=10) as direct:
                t.probes[path] = (call(http).content, call(direct).content)

        assert memory.usage.flush()
        consolidate_once(settings)
        memory.reload()
        for chat, question in enumerate((ALLERGY_Q, BILLING_Q)):  # each in a new chat
            n = len(t.fake.requests)
            resp = http.post("/api/chat", headers={"X-OpenWebUI-Chat-Id": f"chat-{chat + 2}", **USER}, json={
                "model": MODEL, "stream": False, "messages": [{"role": "user", "content": question}]})
            assert resp.status_code == 200, resp.text
            t.asked[question] = {"answer": resp.json(), "sent": system_text(t.fake.requests[n][1])}
        yield t
    memory.close()


def user_turns(memory: MemoryService) -> list[str]:
    return [e.payload.get("text", "") for e in memory.inbox.read_after(0)
            if e.kind == "turn" and e.payload.get("role") == "user"]


def test_background_tasks_are_never_her_turns_nor_get_memory(trial: Trial) -> None:
    said = user_turns(trial.memory)
    assert said and all(task_free(s) for s in said), said
    assert len(trial.task_requests) == 16
    for req in trial.task_requests:  # forwarded as the UI sent them: no READ-ONLY block, no instruction
        assert "PERSISTENT MEMORY" not in json.dumps(req), req
        assert "messages" not in req or len(req["messages"]) == 1
    for answer in trial.task_answers:  # the UI gets the model's answer as it was
        text = answer.get("message", {}).get("content") or answer.get("response")
        assert text.startswith("💊") or json.loads(text), text


def test_a_task_prompt_is_not_recalled_listed_or_exported(trial: Trial, tmp_path) -> None:
    for asked in trial.asked.values():
        assert task_free(asked["sent"]), asked["sent"]
        catalog = json.dumps(asked["answer"]["loci"]["catalog"])
        assert task_free(catalog), catalog
    out = tmp_path / "export.jsonl"
    with out.open("w") as handle:
        assert export_items(trial.settings, handle) > 0
    assert task_free(out.read_text()), out.read_text()


def test_her_facts_are_still_captured_and_recalled(trial: Trial) -> None:
    assert "penicillin" in trial.asked[ALLERGY_Q]["sent"]
    assert trial.asked[ALLERGY_Q]["answer"]["message"]["content"] == "You are allergic to penicillin."
    assert "CockroachDB" in trial.asked[BILLING_Q]["sent"]


def test_a_regenerated_answer_does_not_land_her_message_twice(trial: Trial) -> None:
    said = user_turns(trial.memory)
    assert said.count(PENICILLIN) == 1, said
    proposals = [e for e in trial.regenerated["events_after"] if e.kind == "proposal"]
    assert not [e for e in trial.regenerated["events_after"]
                if e.kind == "turn" and e.payload.get("role") == "user"]
    assert len({e.payload.get("title") for e in proposals}) <= 1


def test_an_edited_message_is_not_what_she_says_now(trial: Trial) -> None:
    sent = trial.asked[BILLING_Q]["sent"]
    assert "CockroachDB" in sent
    if "Postgres 16" in sent:  # the replaced words may show only after the new ones
        assert sent.index("CockroachDB") < sent.index("Postgres 16")


def test_probes_pass_through_and_her_chat_streams(trial: Trial) -> None:
    for path, (via_proxy, direct) in trial.probes.items():
        assert via_proxy == direct, path
    assert all(n > 2 for n in trial.streamed_pieces), trial.streamed_pieces


def test_the_words_an_edit_replaced_are_marked_as_such(trial: Trial) -> None:
    """The replaced turn (and the answer to it) is retracted as edited, with the reason in
    the inbox: never recalled again, nor listed."""
    sent = trial.asked[BILLING_Q]["sent"]
    assert "Postgres 16" not in sent, sent
    assert "Postgres 16" not in json.dumps(trial.asked[BILLING_Q]["answer"]["loci"]["catalog"])
    events = trial.memory.inbox.read_after(0)
    texts = {message_item_id(e.payload["turn_id"]): e.payload["text"] for e in events if e.kind == "turn"}
    # through memory.forget, each forget saying why
    edits = [e.payload for e in events if e.kind == "memory.update"
             and e.payload["patch"] == {"validation": "retracted"}
             and str(e.payload.get("reason", "")).startswith("edited by the user")]
    gone = [texts.get(p["item_id"]) for p in edits]
    assert BILLING_OLD in gone and len(gone) == 2, (gone, edits)  # her words and the answer to them


def test_the_edited_message_does_not_bring_back_the_words_it_replaced(trial: Trial) -> None:
    assert "Postgres 16" not in trial.edit_sent, trial.edit_sent
