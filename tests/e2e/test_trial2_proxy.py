"""The proxy's OpenAI-compatible chat as a user has it (the official `openai` client against
`loci proxy` on loopback, in front of the fake Ollama server): a regenerated answer is a
turn of its own when it proposes other memories through tool calls, so what the answer's
`loci` field acknowledges is stored, not dropped as a retry of the first answer; and a second
`!reset` of a chat the summariser now summarises otherwise says it was summarised before,
instead of claiming memories saved that were not (or failing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai

from online.proxy.config import SUMMARY_INSTRUCTION
from tests.online.test_proxy import (  # noqa: F401 - fake and shared_fake are fixtures
    block,
    fake,
    shared_fake,
    system_text,
)

HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas"}


def proposing(title: str, content: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    call = {"function": {"name": "memory_propose",
                         "arguments": {"items": [{"type": "fact", "title": title, "content": content,
                                                  "why_store": "the user said so"}]}}}
    return lambda req: {"role": "assistant", "content": "", "tool_calls": [call]}


def test_a_regenerated_answer_proposing_other_memories_keeps_them(proxy, fake, memory) -> None:  # noqa: F811
    chat = openai.OpenAI(base_url=f"{proxy()}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    history = [{"role": "user", "content": "The office moved to Lyon; the wifi is Atlas-Guest."}]
    acknowledged = []
    for title, content in [("Office", "The office is in Lyon."), ("Guest wifi", "The guest wifi is Atlas-Guest.")]:
        fake.chat_reply = proposing(title, content)  # the same question, answered again differently
        reply = chat.create(model="llama3.2", messages=history)
        (verdict,) = reply.model_extra["loci"]["proposals"]
        assert verdict["action"] == "accept"
        acknowledged.append(verdict["item_id"])
    read = memory.view()
    stored = [read.get(item_id) for item_id in acknowledged]
    assert [it.content if it else None for it in stored] == ["The office is in Lyon.", "The guest wifi is Atlas-Guest."]


def test_a_second_reset_of_the_same_chat_summarised_otherwise_says_so(proxy, fake, memory) -> None:  # noqa: F811
    chat = openai.OpenAI(base_url=f"{proxy()}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions
    history = [{"role": "user", "content": "Always use type hints."}, {"role": "assistant", "content": "Sure."},
               {"role": "user", "content": "We go with DuckDB."}, {"role": "assistant", "content": "Noted."},
               {"role": "user", "content": "!reset"}]
    said = []
    for fact in ({"type": "decision", "title": "Warehouse engine", "content": "We use DuckDB."},
                 {"type": "preference", "title": "Code style", "content": "Dana wants type hints."}):
        # A summariser that is not deterministic: the same chat summarised otherwise.
        fake.chat_reply = lambda req, fact=fact: (block(fact) if system_text(req) == SUMMARY_INSTRUCTION else "ok")
        said.append(chat.create(model="llama3.2", messages=history).choices[0].message.content)
    assert said[0].startswith("[memory] Summarized 4 messages → 1 memories saved")
    assert said[1].startswith("[memory] This conversation was summarized before")
    titles = [e.payload["proposal"]["title"] for e in memory.inbox.read_after(0, kinds=["proposal"])]
    assert titles == ["Warehouse engine"]
