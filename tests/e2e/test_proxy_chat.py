"""Chat scenarios through the running proxy, as a user has them: the official `ollama`
client talks to `loci proxy` served on loopback, in front of the Ollama-compatible fake
server, while `loci flags ...` (the real CLI) flips flags in the config file.

- A flag flipped with the CLI applies to the next request of the running proxy, no restart.
- `enabled` off makes the proxy a plain pass-through: the upstream gets exactly the user's
  messages, nothing is captured; back on, memory works again.
- A model's own `recall <topic>` request never reaches the user, streamed or not, even when
  everything it finds was already injected; a model that keeps asking is stopped.
- A chat loop that speaks only OpenAI's API (the official `openai` client, base_url the
  proxy's /v1) gets the same memory across conversations, and the same pass-through when off.
- Asked "What did I tell you about penicillin?", the memory handed to the model (injected,
  or found by its own memory_search) lists the user's own turn before the model's longer
  echo of it, over Ollama's API and OpenAI's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import ollama
import openai
import pytest
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.proxy import ProxyConfig, create_proxy_app
from online.proxy.config import NOTHING_NEW_NOTE, RESULTS_INSTRUCTION
from online.state import MemoryService
from pipelines.records import Identity
from pipelines.settings import FLAG_DEFAULTS
from tests.e2e.chat import on_their_yesterday_not_utcs
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import (  # noqa: F401 - fake and shared_fake are fixtures
    answer_from_memory,
    block,
    chats,
    events,
    fake,
    serve,
    shared_fake,
    system_text,
    tool_hits,
)

WHO = Identity(user_id="dana", project_id="atlas")
HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas"}
MODEL = "llama3.2"
STAGING = {"type": "fact", "title": "Staging cluster region",
           "content": "The staging cluster runs in eu-central-1.", "tags": ["staging"]}
QUESTION = "Which region is the staging cluster in?"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "loci.toml"
    path.write_text('[flags]\ncontext_injection = true\n', encoding="utf-8")
    return path


@pytest.fixture
def service(tmp_path: Path, config_file: Path) -> Iterator[MemoryService]:
    from pipelines.settings import load_settings

    settings = load_settings(config_file, environ={}, embedder="hash", data_dir=str(tmp_path / "data"))
    svc = MemoryService(settings, check_interval_ms=0)
    yield svc
    svc.close()


@pytest.fixture
def proxy(fake: FakeOllama, service: MemoryService, config_file: Path) -> Iterator[Callable[..., str]]:
    """proxy(**config) -> URL of a running proxy watching `config_file` for flags (checked
    on every request here, so the scenario does not wait out the one-second throttle)."""
    with ExitStack() as stack:
        def start(**config: Any) -> str:
            app = create_proxy_app(service.settings, service=service, upstream=fake.url, flags_file=config_file,
                                   config=ProxyConfig(flags_check_interval_s=0, **config))
            return stack.enter_context(serve(app))

        yield start


def loci(config_file: Path, *args: str) -> str:
    """Run the `loci` CLI against `config_file`; its output."""
    result = CliRunner().invoke(cli_app, list(args), env={"LOCI_CONFIG": str(config_file)})
    assert result.exit_code == 0, result.output
    return result.output


def ask(url: str, text: str, *, stream: bool = False) -> str:
    messages = [{"role": "user", "content": text}]
    reply = ollama.Client(host=url, headers=HEADERS).chat(model=MODEL, messages=messages, stream=stream)
    parts = list(reply) if stream else [reply]
    return "".join(p.message.content or "" for p in parts)


def remember_staging(service: MemoryService) -> None:
    service.capture(WHO, "assistant", "Noted. " + block(STAGING))


# -- live flags ------------------------------------------------------------------------------------


def test_every_flag_is_listed_and_settable_from_the_cli(config_file: Path) -> None:
    listed = loci(config_file, "flags", "list")
    assert {line.split(" = ")[0] for line in listed.splitlines()} == set(FLAG_DEFAULTS)
    assert "memory_tools = off" in listed
    loci(config_file, "flags", "enable", "memory_tools")
    assert "memory_tools = on" in loci(config_file, "flags", "list")
    assert "context_injection = true" in config_file.read_text()  # the rest of the file kept
    refused = CliRunner().invoke(cli_app, ["flags", "enable", "telepathy"], env={"LOCI_CONFIG": str(config_file)})
    assert refused.exit_code == 2 and "unknown flag 'telepathy'" in refused.output


def test_a_flag_flipped_with_the_cli_applies_without_a_restart(proxy, fake, service, config_file) -> None:
    remember_staging(service)
    url = proxy()
    fake.chat_reply = answer_from_memory
    assert ask(url, QUESTION) == "From memory: The staging cluster runs in eu-central-1."
    assert "PERSISTENT MEMORY" in system_text(chats(fake)[-1])

    loci(config_file, "flags", "disable", "context_injection")
    assert ask(url, QUESTION) == "I have no idea."  # same proxy, no restart: nothing injected
    assert "PERSISTENT MEMORY" not in system_text(chats(fake)[-1])

    loci(config_file, "flags", "enable", "memory_tools")
    ask(url, QUESTION)
    assert "memory_search" in [t["function"]["name"] for t in chats(fake)[-1].get("tools") or []]

    loci(config_file, "flags", "enable", "context_injection")
    assert "The staging cluster runs in eu-central-1." in ask(url, QUESTION)
    assert "PERSISTENT MEMORY" in system_text(chats(fake)[-1])


def test_enabled_off_makes_the_running_proxy_a_plain_pass_through(proxy, fake, service, config_file) -> None:
    remember_staging(service)
    url = proxy()
    reply = "Sure. " + block({"type": "fact", "title": "x", "content": "Proposed while off."})
    fake.chat_reply = lambda req: reply
    assert ask(url, QUESTION) == "Sure."  # memory on: the proposal is stripped and landed
    assert service.usage.flush()  # that turn's recall usage too (written off the request path)
    landed = service.inbox.max_seq()

    loci(config_file, "flags", "disable", "enabled")
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": QUESTION}]
    for stream in (False, True):
        parts = ollama.Client(host=url, headers=HEADERS).chat(model=MODEL, messages=messages, stream=stream)
        text = "".join(p.message.content or "" for p in (list(parts) if stream else [parts]))
        assert text == reply  # untouched: the block is the model's text, shown as it came
        sent = chats(fake)[-1]
        assert sent["messages"] == messages and not sent.get("tools")  # exactly the user's messages
    assert service.inbox.max_seq() == landed  # nothing captured while off

    loci(config_file, "flags", "enable", "enabled")
    assert ask(url, QUESTION) == "Sure."
    assert service.usage.flush()
    assert service.inbox.max_seq() > landed  # on again: the turn's recall (usage) lands


# -- the model's own recall request ----------------------------------------------------------------


def recalling_model(lead: str) -> Callable[[dict[str, Any]], str]:
    """Asks memory with `recall <topic>` first (as the proxy's instruction offers), after
    `lead`, then answers from what memory handed it."""
    def reply(req: dict[str, Any]) -> str:
        if not any(m["content"].startswith("MEMORY SEARCH RESULT") or m["content"] == RESULTS_INSTRUCTION
                   for m in req["messages"] if m["role"] == "system"):
            return f"{lead}recall staging cluster region"
        return answer_from_memory(req)

    return reply


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("lead", ["", "Let me check memory.\n"])
def test_a_recall_request_whose_hits_were_all_injected_never_reaches_the_user(proxy, fake, service,
                                                                             stream, lead) -> None:
    remember_staging(service)
    url = proxy()
    fake.chat_reply = recalling_model(lead)
    text = ask(url, QUESTION, stream=stream)
    assert text == f"{lead}From memory: The staging cluster runs in eu-central-1."
    first, second = chats(fake)[-2:]
    assert "PERSISTENT MEMORY" in system_text(first)  # everything it could find was injected
    assert NOTHING_NEW_NOTE.format(topic=repr("staging cluster region")) in system_text(second)
    said = [e.payload["text"] for e in events(service, "turn") if e.payload["role"] == "assistant"]
    assert said[-1].split() == text.split() and not any("recall staging" in s for s in said)


@pytest.mark.parametrize("stream", [False, True])
def test_a_model_that_keeps_asking_memory_is_stopped_and_never_shown_its_request(proxy, fake, service,
                                                                                stream) -> None:
    remember_staging(service)
    url = proxy(max_tool_rounds=2)
    fake.chat_reply = lambda req: "`recall staging cluster region`"
    text = ask(url, QUESTION, stream=stream)
    assert text == "The memory lookup did not finish within 2 tool rounds."
    assert len(chats(fake)) == 3


def test_an_answer_that_only_starts_like_a_request_streams_unchanged(proxy, fake, service) -> None:
    url = proxy()
    fake.chat_reply = lambda req: "Recall that staging mirrors production, so check eu-central-1."
    fake.stream_chunk_chars = 3
    assert ask(url, QUESTION, stream=True) == "Recall that staging mirrors production, so check eu-central-1."
    assert len(chats(fake)) == 1
    raw = json.dumps(chats(fake)[-1])
    assert "write `recall <topic>`" in raw  # the instruction that offers the request form


# -- an OpenAI-only chat loop ----------------------------------------------------------------------


def test_an_openai_client_chat_loop_remembers_across_conversations(proxy, fake, service, config_file) -> None:
    url = proxy()
    chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                         default_headers=HEADERS).chat.completions

    def sent() -> list[dict[str, Any]]:
        return [b for p, b in fake.requests if p == "/v1/chat/completions"]

    # Conversation 1, streamed: the user states a fact, the model proposes to keep it.
    fake.chat_reply = lambda req: "Noted: staging is in eu-central-1. " + block(STAGING)
    history = [{"role": "user", "content": "Our staging cluster runs in eu-central-1."}]
    chunks = list(chat.create(model=MODEL, messages=history, stream=True))
    said = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert said == "Noted: staging is in eu-central-1."
    assert [p["title"] for p in chunks[-1].model_extra["loci"]["proposals"]] == [STAGING["title"]]

    # Conversation 2, a new chat: the fact comes back from memory, not from the history.
    fake.chat_reply = answer_from_memory
    reply = chat.create(model=MODEL, messages=[{"role": "user", "content": QUESTION}])
    assert "The staging cluster runs in eu-central-1." in reply.choices[0].message.content
    assert "PERSISTENT MEMORY" in system_text(sent()[-1])

    # `loci flags disable enabled`: the same running proxy passes the chat through untouched.
    loci(config_file, "flags", "disable", "enabled")
    assert service.usage.flush()  # conversation 2's recall usage lands now, not during the check below
    landed = service.inbox.max_seq()
    fake.chat_reply = lambda req: "Sure. " + block({"type": "fact", "title": "x", "content": "Proposed while off."})
    messages = [{"role": "user", "content": QUESTION}]
    reply = chat.create(model=MODEL, messages=messages)
    assert reply.choices[0].message.content.startswith("Sure. <MEMORY_PROPOSALS_JSON>")
    assert sent()[-1]["messages"] == messages and "loci" not in (reply.model_extra or {})
    assert service.inbox.max_seq() == landed


def test_a_chat_client_names_its_time_zone_and_yesterday_is_the_users(proxy, fake, service) -> None:
    url = proxy()
    at = on_their_yesterday_not_utcs(ZoneInfo("Asia/Tokyo"))
    service.capture(WHO, "user", "We moved the warehouse pickup to Wednesdays.", at=at.isoformat())
    fake.chat_reply = answer_from_memory

    def asked(headers: dict[str, str]) -> str:
        chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0,
                             default_headers=headers).chat.completions
        chat.create(model=MODEL, messages=[{"role": "user", "content": "What did we talk about yesterday?"}])
        return system_text([b for p, b in fake.requests if p == "/v1/chat/completions"][-1])

    assert "warehouse pickup" in asked(HEADERS | {"X-Loci-Timezone": "Asia/Tokyo"})
    assert "warehouse pickup" not in asked(HEADERS)  # on UTC's calendar it was not yesterday
    with pytest.raises(openai.BadRequestError, match="Mars/Olympus"):
        asked(HEADERS | {"X-Loci-Timezone": "Mars/Olympus"})


# -- what the user said themselves -----------------------------------------------------------------

ALLERGY = "I'm allergic to penicillin, so never suggest it."
ECHO = ("Understood: you're allergic to penicillin, so I will never suggest penicillin or any antibiotic of the "
        "penicillin family such as amoxicillin, and whenever an antibiotic comes up I will remind you to ask "
        "your doctor about alternatives.")


def test_asked_what_she_told_it_the_users_own_words_come_before_the_models_echo(proxy, fake, service,
                                                                               config_file) -> None:
    url = proxy()
    fake.chat_reply = lambda req: ECHO
    assert ask(url, ALLERGY) == ECHO  # both turns land through the proxy

    # A new conversation, over Ollama's API and OpenAI's: the memory handed to the model
    # lists her own turn first, the longer echo after it.
    fake.chat_reply = lambda req: "You told me you are allergic to penicillin."
    question = "What did I tell you about penicillin?"
    ask(url, question)
    openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=HEADERS) \
        .chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}])
    for path in ("/api/chat", "/v1/chat/completions"):
        memory = system_text([b for p, b in fake.requests if p == path][-1])
        assert ALLERGY in memory and ECHO in memory, memory
        assert memory.index(ALLERGY) < memory.index(ECHO), (path, memory)

    # With memory tools, the model's own search for the subject gets her words first too.
    config_file.write_text("[flags]\ncontext_injection = true\nmemory_tools = true\n", encoding="utf-8")

    def searching_model(req: dict[str, Any]) -> str | dict[str, Any]:
        if not any(m["role"] == "tool" for m in req["messages"]):
            return {"content": "", "tool_calls": [
                {"function": {"name": "memory_search", "arguments": {"query": "penicillin"}}}]}
        return "You told me you are allergic to penicillin."

    fake.chat_reply = searching_model
    ask(url, question)
    first, second = chats(fake)[-2:]
    search = next(t["function"] for t in first["tools"] if t["function"]["name"] == "memory_search")
    assert "query" in search["parameters"]["properties"] and "own_words" not in search["parameters"]["properties"]
    found = tool_hits(second)
    assert ALLERGY in found and ECHO in found and found.index(ALLERGY) < found.index(ECHO), found
