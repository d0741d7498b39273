"""MemoryMiddleware: the four hooks (inject, govern+store, pre-return catalog, intercept)
and the feature flags, with a scripted fake LLM (no HTTP)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from online.middleware import MemoryMiddleware, MiddlewareError
from online.proxy.config import PROPOSAL_INSTRUCTION
from online.state import MemoryService
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.materialize import message_item_id
from pipelines.records import Identity
from pipelines.settings import Settings

WHO = Identity(user_id="dana", project_id="atlas", session_id="s1")
SECRET = "AKIAIOSFODNN7EXAMPLE"

Reply = str | dict | Callable[[list[dict]], str | dict]


class ScriptedLLM:
    """Plays back replies in order (a callable reply sees the messages); records every call."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict[str, Any]]] = []

    def __call__(self, messages: list[dict[str, Any]]) -> str | dict:
        self.calls.append(messages)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        return reply(messages) if callable(reply) else reply


def proposal_block(*items: dict) -> str:
    return f"<MEMORY_PROPOSALS_JSON>{json.dumps(list(items))}</MEMORY_PROPOSALS_JSON>"


def search_call(query: str, call_id: str = "c1") -> dict:
    return {"message": {"role": "assistant", "content": "",
                        "tool_calls": [{"id": call_id, "function": {"name": "memory.search",
                                                                    "arguments": {"query": query}}}]}}


def system_text(messages: list[dict]) -> str:
    return "\n".join(m["content"] for m in messages if m["role"] == "system")


def answer_from_tool_results(messages: list[dict]) -> str:
    hits = [h for m in messages if m["role"] == "tool" for h in json.loads(m["content"]).get("hits", [])]
    return " ".join(h["content"] for h in hits) or "I don't know."


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(embedder="hash", data_dir=str(tmp_path))


@pytest.fixture
def service(settings: Settings) -> Iterator[MemoryService]:
    svc = MemoryService(settings, embedder=HashEmbedder(settings.embedder_dim))
    yield svc
    svc.close()


def remember(service: MemoryService, title: str, content: str) -> str:
    out = ToolDispatcher(service).dispatch("memory.write", {"item": {"type": "decision", "title": title,
                                                                      "content": content}}, WHO)
    return out["result"]["item_id"]


def with_flags(settings: Settings, **flags: bool) -> Settings:
    return msgspec.structs.replace(settings, flags={**settings.flags, **flags})


def user(text: str) -> list[dict]:
    return [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": text}]


def test_injects_the_read_only_block_and_the_proposal_instruction(service: MemoryService) -> None:
    item_id = remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM("Keep tiles under 40 ms.")
    out = MemoryMiddleware(service, llm).chat(user("Which latency budget applies to tiles?"), WHO)
    sent = llm.calls[0]
    assert sent[0] == {"role": "system", "content": "You are helpful."}  # caller's system first
    assert "PERSISTENT MEMORY (READ-ONLY)" in system_text(sent) and "40 ms at p95" in system_text(sent)
    assert PROPOSAL_INSTRUCTION in system_text(sent)
    assert sent[-1] == {"role": "user", "content": "Which latency budget applies to tiles?"}
    assert out.injected_ids == [item_id] and out.text == "Keep tiles under 40 ms."


def test_proposals_are_governed_stored_and_recalled_next_turn(service: MemoryService) -> None:
    reply = "Understood, Tuesdays it is. " + proposal_block(
        {"type": "decision", "title": "Deploy day", "content": "Deploys happen on Tuesdays only.", "tags": ["deploy"]},
        {"type": "fact", "title": "AWS key", "content": f"The AWS key is {SECRET}"},
    )
    mw = MemoryMiddleware(service, ScriptedLLM(reply))
    first = mw.chat(user("From now on we deploy on Tuesdays only."), WHO)
    assert first.text == "Understood, Tuesdays it is."
    assert sorted(p.action for p in first.proposals) == ["accept", "reject"]
    assert first.user_turn is not None and first.assistant_turn is not None

    llm = ScriptedLLM("Tuesday.")
    second = MemoryMiddleware(service, llm).chat(user("Which day do deploys happen?"), WHO)
    injected = system_text(llm.calls[0])
    assert "Deploys happen on Tuesdays only." in injected and SECRET not in injected
    accepted = next(p for p in first.proposals if p.action == "accept")
    assert accepted.item_id in second.injected_ids
    assert SECRET not in json.dumps([e.payload for e in service.inbox.read_after(0)])


def test_tool_call_proposals_are_stored_too(service: MemoryService) -> None:
    reply = {"message": {"role": "assistant", "content": "Noted.", "tool_calls": [
        {"function": {"name": "memory.propose", "arguments": {"items": [
            {"type": "preference", "title": "Answer style", "content": "Dana prefers terse answers."}]}}}]}}
    out = MemoryMiddleware(service, ScriptedLLM(reply)).chat(user("Please keep answers terse."), WHO)
    assert [p.action for p in out.proposals] == ["accept"] and out.text == "Noted."
    assert service.recall("answer style terse", WHO).found


def test_model_search_call_is_run_and_the_model_reasked_with_results(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM(search_call("tile latency budget"), answer_from_tool_results)
    out = MemoryMiddleware(service, llm, with_flags(service.settings, context_injection=False)).chat(
        user("Remind the team of the tile budget."), WHO)
    assert len(llm.calls) == 2 and out.intercepted and out.found_in_memory
    tool_msgs = [m for m in llm.calls[1] if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["tool_call_id"] == "c1"
    assert out.text == "The tile latency budget is 40 ms at p95."
    assert out.tool_rounds[0].action == "memory.search" and out.tool_rounds[0].origin == "model-tool-call"


def test_nothing_found_is_said_explicitly_without_asking_the_model_to_improvise(service: MemoryService) -> None:
    llm = ScriptedLLM(search_call("zebra migration"), "Zebras migrate 3000 km every June.")
    out = MemoryMiddleware(service, llm).chat(user("Tell me about zebra migration."), WHO)
    assert len(llm.calls) == 1  # the model was not re-asked
    assert "nothing in memory" in out.text and "zebra migration" in out.text
    assert "3000" not in out.text and out.found_in_memory is False
    # The service's own "nothing found" is not stored as something said, so it can never
    # come back later as "memory" about zebras.
    turns = service.inbox.read_after(0, kinds=["turn"])
    assert [t.payload["role"] for t in turns] == ["user"] and out.assistant_turn is None
    hits = ToolDispatcher(service).dispatch("memory.search", {"query": "zebra migration"}, WHO)["result"]["hits"]
    assert hits and not any("nothing in memory" in h["content"] for h in hits)


def test_user_recall_phrasing_is_intercepted(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM("It is 40 ms at p95.")
    out = MemoryMiddleware(service, llm).chat(user("What do we know about the tile latency budget?"), WHO)
    assert out.intercepted and out.found_in_memory and out.tool_rounds[0].origin == "user-intent"
    sent = system_text(llm.calls[0])
    assert "40 ms at p95" in sent and "Answer only from them" in sent

    silent = ScriptedLLM("Zebras migrate 3000 km.")
    miss = MemoryMiddleware(service, silent).chat(user("What do we know about zebra migration?"), WHO)
    assert silent.calls == [] and miss.llm_calls == 0
    assert "nothing in memory" in miss.text and "3000" not in miss.text


def test_tool_rounds_are_bounded(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM(search_call("tile latency budget"))  # asks again and again
    out = MemoryMiddleware(service, llm, max_tool_rounds=2).chat(user("Budget for tiles?"), WHO)
    assert len(llm.calls) == 3 and len(out.tool_rounds) == 2
    assert "did not finish within 2 tool rounds" in out.text


def test_model_cannot_write_memory_through_tool_calls(service: MemoryService) -> None:
    item_id = remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    reply = {"message": {"role": "assistant", "content": "Done.", "tool_calls": [
        {"function": {"name": "memory.update", "arguments": {"id": item_id, "patch": {"content": "999 ms"}}}}]}}
    out = MemoryMiddleware(service, ScriptedLLM(reply)).chat(user("Change the budget to 999 ms."), WHO)
    assert out.ignored_tool_calls and service.inbox.read_after(0, kinds=["memory.update"]) == []
    assert service.get_item(item_id, WHO).content == "The tile latency budget is 40 ms at p95."


def test_pre_return_catalog_is_attached(service: MemoryService) -> None:
    item_id = remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    out = MemoryMiddleware(service, ScriptedLLM("Use the tile latency budget.")).chat(
        user("What should guide tile rendering latency?"), WHO)
    assert item_id in [e["id"] for e in out.catalog["memory_catalog"]] and item_id in out.catalog_ids


def test_flag_enabled_off_is_a_pass_through(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    before = service.inbox.max_seq()
    llm = ScriptedLLM("raw " + proposal_block({"title": "x", "content": "y"}))
    msgs = user("What do we know about the tile latency budget?")
    out = MemoryMiddleware(service, llm, with_flags(service.settings, enabled=False)).chat(msgs, WHO)
    assert llm.calls == [msgs] and out.text.startswith("raw <MEMORY_PROPOSALS_JSON>")
    assert service.inbox.max_seq() == before and not out.intercepted


def test_flag_context_injection_off(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM("ok")
    MemoryMiddleware(service, llm, with_flags(service.settings, context_injection=False)).chat(
        user("Which latency budget applies to tiles?"), WHO)
    assert "PERSISTENT MEMORY" not in system_text(llm.calls[0])
    assert PROPOSAL_INSTRUCTION in system_text(llm.calls[0])


def test_flag_post_response_scan_off_strips_but_stores_nothing(service: MemoryService) -> None:
    llm = ScriptedLLM("Sure. " + proposal_block({"type": "decision", "title": "Deploy day",
                                                 "content": "Deploys happen on Tuesdays only."}))
    out = MemoryMiddleware(service, llm, with_flags(service.settings, post_response_scan=False)).chat(
        user("We deploy on Tuesdays."), WHO)
    assert out.text == "Sure." and out.proposals == []
    assert service.inbox.read_after(0, kinds=["proposal"]) == []
    assert PROPOSAL_INSTRUCTION not in system_text(llm.calls[0])


def test_flag_recall_interception_off(service: MemoryService) -> None:
    llm = ScriptedLLM(search_call("zebra"), "fallback answer")
    out = MemoryMiddleware(service, llm, with_flags(service.settings, recall_interception=False)).chat(
        user("What do we know about zebras?"), WHO)
    assert not out.intercepted and out.tool_rounds == [] and len(llm.calls) == 1


def test_bad_input_raises_middleware_error(service: MemoryService) -> None:
    mw = MemoryMiddleware(service, ScriptedLLM(42))  # type: ignore[arg-type]
    with pytest.raises(MiddlewareError, match="messages"):
        mw.chat("hello", WHO)  # type: ignore[arg-type]
    with pytest.raises(MiddlewareError, match="role"):
        mw.chat([{"content": "hi"}], WHO)
    with pytest.raises(MiddlewareError, match="identity"):
        mw.chat(user("hi"), "dana")  # type: ignore[arg-type]
    with pytest.raises(MiddlewareError, match="llm reply"):
        mw.chat(user("hi"), WHO)
    with pytest.raises(MiddlewareError, match="callable"):
        MemoryMiddleware(service, "not a function")  # type: ignore[arg-type]


def test_a_recall_request_from_the_model_is_answered_and_never_shown(service: MemoryService) -> None:
    remember(service, "Tile latency budget", "The tile latency budget is 40 ms at p95.")
    llm = ScriptedLLM("recall tile latency budget", "It is 40 ms at p95.")
    out = MemoryMiddleware(service, llm).chat(user("Which latency budget applies to tiles?"), WHO)
    assert out.text == "It is 40 ms at p95." and len(llm.calls) == 2
    assert "memory holds nothing about 'tile latency budget' beyond" in system_text(llm.calls[1])
    assert "recall" not in out.assistant_turn.visible_text


def test_a_chat_uis_background_task_passes_through_uncaptured(service: MemoryService) -> None:
    remember(service, "Deploy day", "Deploys happen on Tuesdays only.")
    task = [{"role": "user", "content": (
        "### Task:\nGenerate a concise, 3-5 word title with an emoji summarizing the chat history.\n"
        'JSON format: { "title": "your concise title here" }\n### Chat History:\n<chat_history>\n'
        "USER: When do deploys happen?\nASSISTANT: On Tuesdays.\n</chat_history>")}]
    llm = ScriptedLLM('{"title": "🚀 Deploy days"}')
    out = MemoryMiddleware(service, llm).chat(task, WHO)
    assert llm.calls == [task] and out.text == '{"title": "🚀 Deploy days"}'  # no memory injected
    assert out.user_turn is None and [e for e in service.inbox.read_after(0) if e.kind == "turn"] == []


def test_an_edited_message_and_a_regenerated_answer_retract_what_they_replaced(service: MemoryService) -> None:
    def chat(*texts: str) -> list[dict]:
        return [{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(texts)]

    mw = MemoryMiddleware(service, ScriptedLLM("Noted, Monday."))
    mw.chat(chat("We ship the tile service this quarter."), WHO)
    first = mw.chat(chat("We ship the tile service this quarter.", "Noted.", "Deploys happen on Mondays."), WHO)
    mw.llm = ScriptedLLM("Noted: deploys on Mondays.")
    again = mw.chat(chat("We ship the tile service this quarter.", "Noted.", "Deploys happen on Mondays."), WHO)
    assert again.regenerated_away == [message_item_id(first.assistant_turn.turn_id)]
    view = service.view()
    assert view.get(message_item_id(first.assistant_turn.turn_id)).validation == "retracted"  # regenerated
    assert view.get(message_item_id(again.assistant_turn.turn_id)).validation != "retracted"
    llm = ScriptedLLM("Noted.")
    edited = MemoryMiddleware(service, llm).chat(
        chat("We ship the tile service this quarter.", "Noted.", "Deploys happen on Tuesdays only."), WHO)
    assert "Mondays" not in system_text(llm.calls[0]) and len(edited.edited_away) == 2
    view = service.view()
    assert view.get(message_item_id(first.user_turn.turn_id)).validation == "retracted"  # edited
    assert view.get(message_item_id(again.assistant_turn.turn_id)).validation == "retracted"


def test_a_first_message_is_read_as_edited_only_in_a_named_chat(service: MemoryService) -> None:
    mw = MemoryMiddleware(service, ScriptedLLM("Noted."))
    named, session = Identity(user_id="ana", session_id="chat-7"), Identity(user_id="ana", session_id="week-3")
    for who, names in ((named, True), (session, False)):
        first = mw.chat([{"role": "user", "content": "Deploys happen on Mondays."}], who, names_chat=names)
        later = mw.chat([{"role": "user", "content": "Deploys happen on Tuesdays."}], who, names_chat=names)
        assert later.edited_away == ([message_item_id(first.user_turn.turn_id),
                                      message_item_id(first.assistant_turn.turn_id)] if names else [])
