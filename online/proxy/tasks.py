"""What a chat UI wraps around the user's words, told by structure:

- background task requests (`is_task_prompt`): what a chat UI (Open WebUI, LibreChat, ...) sends through the
same chat APIs besides the user's chat, to title a chat, tag it, suggest follow-up
questions or search queries. They are not something the user said: one is forwarded
untouched (no memory injected, no turn landed, no proposal read).

Told by structure, not by one UI's wording: a request with no earlier turns whose one user
message quotes a chat transcript (role-labelled lines such as `USER: ...` / `ASSISTANT:
...`, both roles, or such lines inside a `<chat_history>`-like tag), gives an instruction
around it, and asks for a machine-read answer (a `format` / `response_format`, JSON named
in the instruction, or `stream: false`). A person's first message that pastes a transcript
into a streamed chat, asking in words, is still theirs;
- her message wrapped in a template (`her_words`): Open WebUI's RAG template puts the
  sources of an attached file or a web search around her words, `<user_query>her
  words</user_query>`. The model reads it all; her turn is her words (the sources are not
  something she said). Told only when the shape is unmistakable: one such tag, and an
  instruction and another tagged block (the sources) around it.
"""

from __future__ import annotations

import re

# A line said by a role: "USER: ...", "Assistant: ...", "**Human:** ...", "> AI: ...".
_ROLE_LINE = re.compile(
    r"^[ \t>*_#-]*(?P<role>user|human|assistant|ai|bot|model|system)[*_ \t]*:", re.IGNORECASE | re.MULTILINE)
_ASKER_ROLES = {"user", "human"}
# A tagged block a template quotes the history in: <chat_history>, <conversation>, <messages>...
_TAGGED = re.compile(r"<(?P<tag>[\w-]*(?:history|conversation|chat|transcript|messages|dialog)[\w-]*)>"
                     r"(?P<body>.*?)</(?P=tag)>", re.IGNORECASE | re.DOTALL)
_JSON_NAMED = re.compile(r"\bJSON\b")
_WORD = re.compile(r"\w+")
MIN_INSTRUCTION_WORDS = 4


def quoted_transcript(text: str) -> tuple[bool, str]:
    """(whether `text` quotes a chat transcript, the text around it: the instruction)."""
    for tagged in _TAGGED.finditer(text):
        if _ROLE_LINE.search(tagged["body"]):
            return True, text[: tagged.start()] + text[tagged.end():]
    roles = {m["role"].lower() for m in _ROLE_LINE.finditer(text)}
    if roles & _ASKER_ROLES and roles - _ASKER_ROLES - {"system"}:
        lines = [ln for ln in text.splitlines() if not _ROLE_LINE.match(ln)]
        return True, "\n".join(lines)
    return False, text


def is_task_prompt(text: str, *, earlier_turns: bool, format_asked: bool, stream_off: bool) -> bool:
    """Whether a request's user message `text` is a UI's background task (module doc)."""
    if earlier_turns or not text:
        return False
    quoted, instruction = quoted_transcript(text)
    if not quoted or len(_WORD.findall(instruction)) < MIN_INSTRUCTION_WORDS:
        return False
    return format_asked or stream_off or bool(_JSON_NAMED.search(instruction))


# The tag a template puts her words in: <user_query>, <query>, <question>, <user_input>...
_HER_TAG = re.compile(r"<(?P<tag>user[_-]?(?:query|question|input|message|request)|query|question)>"
                      r"(?P<body>.*?)</(?P=tag)>", re.IGNORECASE | re.DOTALL)
# The block it puts the sources in: <context>, <sources>, <documents>, <search_results>...
_SOURCES = re.compile(r"<(?P<tag>[\w-]*(?:context|source|document|knowledge|result|retriev|reference)[\w-]*)"
                      r"(?:\s[^<>]*)?>.*?</(?P=tag)>", re.IGNORECASE | re.DOTALL)


def her_words(text: str) -> str:
    """The user's words in a message a client wrapped in a template (module doc); the
    message itself when it is not told as one."""
    found = list(_HER_TAG.finditer(text))
    if len(found) != 1 or not found[0]["body"].strip():
        return text
    around = text[: found[0].start()] + text[found[0].end():]
    instruction = _SOURCES.sub(" ", around)
    if instruction == around or len(_WORD.findall(instruction)) < MIN_INSTRUCTION_WORDS:
        return text
    return found[0]["body"].strip()
