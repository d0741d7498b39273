"""A chat UI's background tasks told from the user's chat by their structure
(`online.proxy.tasks`), in each chat API's shape: several UIs' templates are tasks, a
person's messages (a pasted transcript asked about in a streamed chat, a JSON request later
in a chat) are not."""

from __future__ import annotations

from typing import Any

import pytest

from online.proxy.dialects import CHAT, GENERATE
from online.proxy.openai_chat import OPENAI_CHAT
from online.proxy.tasks import her_words

HISTORY = "USER: We moved the offsite to Lisbon.\nASSISTANT: Noted, Lisbon it is."

TEMPLATES = {
    "open webui title": ("### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat "
                         'history.\n### Output:\nJSON format: { "title": "your concise title here" }\n'
                         f"### Chat History:\n<chat_history>\n{HISTORY}\n</chat_history>"),
    "open webui old title": ("Create a concise, 3-5 word title with an emoji as a title for the chat history, "
                             "in the given language. RESPOND ONLY WITH THE TITLE TEXT.\n\nChat History:\n"
                             f"<chat_history>\n{HISTORY}\n</chat_history>"),
    "open webui queries, before any answer": (
        "### Task:\nAnalyze the chat history to determine the necessity of generating search queries.\n"
        '### Output:\nStrictly return in JSON format: { "queries": ["query1", "query2"] }\n'
        "### Chat History:\n<chat_history>\nUSER: Any news on the Lisbon offsite?\n</chat_history>"),
    "librechat title": ("Please generate a concise, 5-word-or-less title for the conversation, using its same "
                        "language, with no punctuation.\n\nConversation:\nUser: We moved the offsite to Lisbon."
                        "\nAI: Noted, Lisbon it is."),
    "markdown roles": ("Summarize the following exchange as a JSON object with a `summary` key.\n\n"
                       "**Human:** We moved the offsite to Lisbon.\n**Assistant:** Noted, Lisbon it is."),
}


def chat(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "system", "content": "You are helpful."},
                                       {"role": "user", "content": text}], **extra}


@pytest.mark.parametrize("name", TEMPLATES)
def test_ui_task_templates_are_tasks_in_every_chat_api(name: str) -> None:
    text = TEMPLATES[name]
    assert CHAT.background_task(chat(text, stream=False))
    assert GENERATE.background_task({"model": "m", "prompt": text, "stream": False})
    assert OPENAI_CHAT.background_task(chat(text, stream=False))


def test_json_asked_in_words_or_format_is_enough_when_streamed() -> None:
    assert CHAT.background_task(chat(TEMPLATES["open webui title"]))  # JSON named in the instruction
    assert CHAT.background_task(chat(TEMPLATES["librechat title"], format="json"))
    assert OPENAI_CHAT.background_task(chat(TEMPLATES["librechat title"], response_format={"type": "json_object"}))


def test_a_person_pasting_a_transcript_in_a_streamed_chat_is_still_the_user() -> None:
    pasted = f"My colleague and the bot had this exchange, what do you make of it?\n\n{HISTORY}"
    assert not CHAT.background_task(chat(pasted))
    assert not GENERATE.background_task({"model": "m", "prompt": pasted})


def test_later_in_a_chat_or_without_a_quoted_transcript_it_is_the_user() -> None:
    later = {"model": "m", "stream": False, "format": "json", "messages": [
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": TEMPLATES["open webui title"]}]}
    assert not CHAT.background_task(later)
    assert not GENERATE.background_task({"model": "m", "prompt": TEMPLATES["librechat title"],
                                         "stream": False, "context": [1, 2, 3]})
    for text in ("Give me my to-do list as JSON, please.",
                 "Note for the user: the assistant: should always answer in JSON.",
                 "User: dana. Password rotation is due Friday; reply in JSON."):
        assert not CHAT.background_task(chat(text, stream=False, format="json")), text


def test_an_instruction_is_needed_around_the_transcript() -> None:
    assert not CHAT.background_task(chat(HISTORY, stream=False, format="json"))


RAG = ("### Task:\nRespond to the user query using the provided context.\n<context>\n<source id=\"1\">notes.md: "
       "Postgres 16 since May.</source>\n</context>\n\n<user_query>\nWhich database is it?\n</user_query>")


def test_her_words_are_told_inside_a_sources_template_only() -> None:
    assert her_words(RAG) == "Which database is it?"
    mine = [  # a person's messages with such tags: hers whole
        "Why does <user_query>x</user_query> break my template?",
        "<question>What is 2+2?</question><answer>4</answer> Please check whether my answer is right.",
        RAG.replace("<user_query>", "<user_query>a</user_query><user_query>"),  # two: not one template
        RAG.replace("### Task:\nRespond to the user query using the provided context.", "ok"),  # no instruction
    ]
    assert [her_words(t) for t in mine] == mine
