"""The chat-hook engine: one chat/generate exchange with memory, the four hooks around a
model call, without any HTTP.

    ex = Exchange(service, settings, config, identity, CHAT, body)
    sent = ex.prepare()                         # 1. recall + READ-ONLY block + instruction
    step = ex.after_round(sent, raw, visible, calls)   # 4. intercept: re-ask with step.reask?
    sent = shown.end_round(step, visible)       # a request to memory is never shown; re-ask?
    ex.add_closing(shown)                       # the engine's own last paragraph, if any
    loci = ex.finish(visible_text)              # 2. land turns + proposals, 3. Q* catalog

Two drivers: the proxy (`online.proxy.handlers`, streamed and not, the blocking methods in
a worker thread) and the in-process `online.middleware.MemoryMiddleware`.

This module holds the round's state and what to do after each answer; the jobs it hands
out: `tool_calls` (running Loci's memory.* calls), `search_block` (the READ-ONLY block of a
search), `turns` (landing the turns, the pre-return catalog), `shown` (what the user sees).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from online.proxy.config import (
    NOTHING_FOUND_NOTE,
    NOTHING_NEW_NOTE,
    RESULTS_INSTRUCTION,
    TEXT_RECALL_HINT,
    TOOLS_HINT,
    ProxyConfig,
    flag,
)
from online.proxy.dialects import ChatDialect, GenerateDialect
from online.proxy.memory_tools import MEMORY_TOOL_SPECS, is_loci_call
from online.proxy.rounds import (
    CHOSEN_REASON,
    EDITED_REASON,
    REGENERATED_REASON,
    Round,
    answers_to,
    follower,
    landed_text,
    latest_at,
    record_answer,
    record_discarded,
    record_round,
    retract_round,
    rewritten,
    said_later,
    same_words,
    was_discarded,
)
from online.proxy.search_block import search_block
from online.proxy.shown import REQUEST_LEAD, REQUEST_START, VisibleText, cut_at
from online.proxy.tasks import her_words
from online.proxy.tool_calls import MemoryCalls, Read, ToolRound
from online.proxy.turns import assistant_turn_id, catalog, digest, land_assistant, land_user, recall_query
from online.state import MemoryService
from pipelines.capture import CaptureResult
from pipelines.materialize import message_item_id
from pipelines.recall.intents import RecallIntent, detect_recall_intent
from pipelines.recall.query import asks_what_i_said
from pipelines.recall.render import without_entries
from pipelines.records import Identity, ProposedItem, sha256_text, stable_id
from pipelines.settings import FLAG_DEFAULTS, Settings

log = logging.getLogger("loci.proxy")

Dialect = ChatDialect | GenerateDialect
MAX_EARLIER_READ = 32  # earlier messages of a resent history read for an edit, per request


def max_rounds_text(rounds: int) -> str:
    return f"The memory lookup did not finish within {rounds} tool rounds."


def nothing_found_answer(topic: str) -> str:
    """The engine's own answer when a recall finds nothing and the driver does not let the
    model answer (`Exchange.answers_nothing_found`)."""
    return (f"I found nothing in memory about {topic.strip()!r}, so I cannot recall it. "
            "If you tell me, I can remember it from now on.")


@dataclass
class RoundResult:
    """What to do after one model answer."""

    reask: dict[str, Any] | None  # the body to ask again with; None: that was the last round
    client_calls: list[dict[str, Any]]  # the tool calls the client gets to see
    request_at: int | None = None  # the round's text from here on was a request to memory

    @property
    def withhold(self) -> bool:
        return self.request_at is not None

    def shown(self, visible: str) -> str:
        """The part of the round's text the user sees."""
        return visible if self.request_at is None else visible[: self.request_at]


@dataclass
class Exchange:
    """One exchange. `answers_nothing_found`: when a recall (the user's phrasing or a
    model's memory call) finds nothing, the engine answers "nothing in memory" itself
    (`answer`) instead of telling the model so; the proxy leaves it off so the answer keeps
    the model's voice and stream."""

    service: MemoryService
    settings: Settings
    config: ProxyConfig
    identity: Identity
    dialect: Dialect
    body: dict[str, Any]
    answers_nothing_found: bool = False
    tz: str | None = None  # the user's IANA zone ("yesterday" is theirs); None: `Settings.timezone`
    flags: dict[str, bool] = field(init=False)
    injected_ids: list[str] = field(default_factory=list)
    intercepted: bool = False
    found_in_memory: bool | None = None
    rounds_done: int = 0
    raw_texts: list[str] = field(default_factory=list)  # what the model said, per round
    visible_texts: list[str] = field(default_factory=list)
    unfinished: bool = False  # rounds ran out with memory requests still pending
    answer: str | None = None  # the engine's own answer: the model is not asked (again)
    user_turn: CaptureResult | None = None
    assistant_turn: CaptureResult | None = None
    edited_away: list[str] = field(default_factory=list)  # what an edit of the chat retracted (`online.proxy.rounds`)
    regenerated_away: list[str] = field(default_factory=list)  # answers a regeneration discarded (+ memories)
    discarded: set[str] = field(default_factory=set)  # what this request asks again for: answers, their memories
    names_chat: bool = False  # the client names the chat (a chat id): its first message's place is its own

    def __post_init__(self) -> None:
        # One consistent set of flags for the whole request, even if they flip meanwhile.
        self.flags = {name: flag(self.settings, name) for name in FLAG_DEFAULTS}
        self.structured = self.dialect.structured(self.body)
        # what she said: her words, not the template a client wrapped them in (`tasks.her_words`)
        self.user_text = her_words(self.dialect.user_text(self.body))
        self.client_tools = self.dialect.client_tool_names(self.body)
        self.text_intent_used = False
        who = msgspec.to_builtins(self.identity)
        self.user_key = digest([who, self.dialect.name, self.dialect.history_until_user(self.body)])
        # The conversation the client sent: its turns are in the model's context already.
        self.said = self.dialect.earlier_texts(self.body)
        # "What did I tell you about penicillin?": searched as its subject ("penicillin"), so
        # every recall of the exchange is told that the user asks for their own words.
        self.own_words = asks_what_i_said(self.user_text)
        self.user_turn_id = stable_id("turn", "proxy", self.user_key)
        self.calls = MemoryCalls(self.service, self.identity, tz=self.tz, own_words=self.own_words,
                                 offers_changes=self.offers_tools)

    @property
    def tool_rounds(self) -> list[ToolRound]:
        return self.calls.tool_rounds

    @property
    def ignored_calls(self) -> list[str]:
        return self.calls.ignored_calls

    # -- 1. before the call -----------------------------------------------------------------

    def prepare(self) -> dict[str, Any]:
        """The body for the first model call: memory context and instruction injected.
        With `answer` set afterwards, the model need not be called."""
        self.retract_replaced()  # before recall: what the user replaced is not recalled into it
        blocks: list[str] = []
        text = self.user_text
        intent = detect_recall_intent(text) if text.strip() and self.flags["recall_interception"] else None
        if intent is not None:
            # The user asks memory directly: search first and give the model the result,
            # or say plainly that memory has nothing, so it does not improvise.
            self.intercepted = True
            found, block = self._search(intent.query, origin="user-intent")
            self.found_in_memory = found
            if found:
                blocks += [block, RESULTS_INSTRUCTION]
            else:
                blocks.append(self._nothing_found(repr(intent.query), intent.query))
        elif text.strip() and self.flags["context_injection"]:
            result = self.service.recall(recall_query(text), self.identity, said=self.said, tz=self.tz,
                                         own_words=self.own_words)
            injection = without_entries(result.injection, self.discarded) if self.discarded else result.injection
            if injection:
                blocks.append(injection)
                self.injected_ids = [h.item.id for h in result.hits if getattr(h, "delivery", "inject") == "inject"
                                     and h.item.id not in self.discarded]
                self.calls.seen_ids.update(self.injected_ids)
        instruction = self._instruction()
        if instruction:
            blocks.append(instruction)
        body = self.dialect.inject(self.body, blocks)
        if self.offers_tools:
            body = self.dialect.add_tools(body, MEMORY_TOOL_SPECS)
        return body

    def _messages(self) -> list[list[str]] | None:
        """Role and text of the chat's messages (None: the dialect sends no conversation)."""
        return self.dialect.history(self.body) if isinstance(self.dialect, ChatDialect) else None

    def _place(self, msgs: list[list[str]], index: int) -> str:
        """The digest of the conversation before message `index` (the place it is said at)."""
        return digest([msgspec.to_builtins(self.identity), self.dialect.name, msgs[:index]])

    def _turn_at(self, msgs: list[list[str]], index: int) -> str:
        """The id the user message at `index` is landed under (`user_turn_id` for the latest)."""
        return stable_id("turn", "proxy", self._place(msgs, index + 1))

    def retract_replaced(self) -> None:
        """Retract the rounds an edit of this chat replaced (`online.proxy.rounds`): the
        latest message's, and earlier ones a resent history changed."""
        msgs = self._messages()
        users = [i for i, (role, _) in enumerate(msgs or []) if role == "user"]
        if not msgs or not users:
            return
        self._retract_edits(msgs, users)
        if len(users) > 1:
            self._chosen_again(msgs, users[-2])
        if users[-1] == len(msgs) - 1:  # asked again: its recall never shows the answers it replaces
            self.discarded = {i for a in self._discarded_answers(self.user_turn_id)
                              for i in (message_item_id(str(a["turn_id"])), *map(str, a.get("proposed") or ()))}

    def _retract_edits(self, msgs: list[list[str]], users: list[int]) -> None:
        service, latest = self.service, users[-1]
        said = sha256_text(msgs[latest][1])
        placed = latest_at(service, self._place(msgs, latest))
        if placed is not None and placed["said_sha256"] == said and placed.get("key"):
            self.user_key, self.user_turn_id = placed["key"], placed["turn_id"]  # as landed (below)
        elif placed is not None and placed["said_sha256"] != said and follower(service, placed["turn_id"]) is None \
                and (len(users) > 1 or self.names_chat) \
                and not rewritten(service, placed["turn_id"], msgs[latest][1]):
            # (a first message unnamed: every chat of a session starts at its place, a new chat is no edit)
            self._retract_edit(placed["turn_id"], self.user_turn_id)
            back = service.view().get(message_item_id(self.user_turn_id))
            if back is not None and back.validation == "retracted":  # edited back to words it replaced
                self.user_key = digest([self.user_key, "said again", placed["turn_id"]])
                self.user_turn_id = stable_id("turn", "proxy", self.user_key)
        for n, index in enumerate(reversed(users[1:-1])):  # earlier messages, the latest first
            if n >= MAX_EARLIER_READ or service.inbox.get(stable_id("evt", "turn", self._turn_at(msgs, index))):
                break  # landed as it is: the conversation up to it is unchanged
            said = sha256_text(msgs[index][1])
            placed = latest_at(service, self._place(msgs, index))
            if placed is not None and placed["said_sha256"] != said \
                    and not said_later(service, placed["turn_id"], said, len(users)) \
                    and not rewritten(service, placed["turn_id"], msgs[index][1]):
                now = self._turn_at(msgs, index)
                self._retract_edit(placed["turn_id"], now)
                # what she says there now is hers, as the latest message would be
                service.capture(self.identity, "user", her_words(msgs[index][1]), turn_id=now)
                parent = users[users.index(index) - 1]
                record_round(service, self.identity, Round(self._place(msgs, index), now, said, now),
                             self._turn_at(msgs, parent))

    def _chosen_again(self, msgs: list[list[str]], index: int) -> None:
        """The chat goes on from the answer to the user message at `index` that a
        regeneration had discarded (the user switched back to it, a UI's earlier sibling):
        the answers to it since are retracted, and the chosen one's words and memories land
        again (a forgotten item is never revived: a fresh turn, its memories proposed anew)."""
        if index + 1 >= len(msgs) or msgs[index + 1][0] != "assistant":
            return
        service, shown = self.service, msgs[index + 1][1]
        said = sha256_text(msgs[index][1])
        placed = latest_at(service, self._place(msgs, index))
        turn = placed["turn_id"] if placed is not None and placed["said_sha256"] == said else self._turn_at(msgs, index)
        model = str(self.body.get("model") or "")
        answers = [a for a in answers_to(service, turn) if a.get("model_sha256") == sha256_text(model)]
        if len(answers) < 2:
            return  # never regenerated: nothing to go back to
        view = service.view()
        live = [a for a in answers if (it := view.get(message_item_id(str(a["turn_id"])))) is not None
                and it.validation != "retracted"]
        if not live or any(same_words(landed_text(service, str(a["turn_id"])) or "", shown) for a in live):
            return  # the chat shows the answer that stands (or one never landed)
        chosen = next((a for a in reversed(answers) if a not in live and was_discarded(service, str(a["turn_id"]))
                       and same_words(landed_text(service, str(a["turn_id"])) or "", shown)), None)
        if chosen is None:
            return
        now = retract_round(service, self.identity, None, live, CHOSEN_REASON.format(turn=turn))
        self.regenerated_away += now
        record_discarded(service, self.identity,
                         [str(a["turn_id"]) for a in live if message_item_id(str(a["turn_id"])) in now])
        memories = [it for i in chosen.get("proposed") or () if (it := view.get(str(i))) is not None]
        again = service.capture(
            self.identity, "assistant", landed_text(service, str(chosen["turn_id"])) or shown, parse=False,
            turn_id=stable_id("turn", "proxy", str(chosen["turn_id"]), "chosen again"), answers=msgs[index][1],
            extra_proposals=[ProposedItem(type=m.type, title=m.title, content=m.content, tags=list(m.tags),
                                          confidence=m.confidence, scope=m.scope.kind) for m in memories])
        record_answer(service, self.identity, turn, again.turn_id,
                      [p.item_id for p in again.proposals if p.item_id], model)

    def _retract_edit(self, replaced: str, now: str) -> None:
        answers = answers_to(self.service, replaced)
        self.edited_away += retract_round(self.service, self.identity, replaced, answers,
                                          EDITED_REASON.format(turn=now))

    def _nothing_found(self, topic: str, query: str) -> str:
        """The note for the model that memory has nothing (or, when the engine answers
        itself, that answer, and no note)."""
        if self.answers_nothing_found:
            self.answer = nothing_found_answer(query)
            return ""
        return NOTHING_FOUND_NOTE.format(topic=topic)

    @property
    def offers_tools(self) -> bool:
        return self.flags["memory_tools"] and self.dialect.supports_tools

    @property
    def scans(self) -> bool:
        """Whether proposals are parsed out of the answer (never for structured output)."""
        return not self.structured

    @property
    def reads_model_text(self) -> bool:
        """Whether recall phrasing in the model's text is acted on."""
        return self.config.intercept_model_text and self.flags["recall_interception"] and not self.structured

    def _instruction(self) -> str:
        if not (self.config.proposal_instruction and self.flags["post_response_scan"]) or self.structured:
            return ""
        parts = [self.config.proposal_instruction]
        if self.offers_tools:
            parts.append(TOOLS_HINT)
        if self.reads_model_text:
            parts.append(TEXT_RECALL_HINT)
        return " ".join(parts)

    # -- 4. after each model answer: intercept requests to memory -------------------------------

    def split_calls(self, calls: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(Loci's memory.* calls, the client's calls)."""
        own = [c for c in calls if is_loci_call(c, self.client_tools)]
        return own, [c for c in calls if not is_loci_call(c, self.client_tools)]

    @property
    def takes_requests(self) -> bool:
        """Whether a `recall <topic>` line in the model's answer is a request to Loci."""
        return self.reads_model_text and "recall" in self.config.model_text_triggers

    def find_request(self, said: str) -> tuple[int, RecallIntent] | None:
        """Where the answer holds the `recall <topic>` request the instruction offers the
        model (`TEXT_RECALL_HINT`) and what it asks: the first line that starts like one.
        Such a request is for Loci, never for the user."""
        if not self.takes_requests:
            return None
        at = 0
        for line in said.split("\n"):
            head = line.lstrip(REQUEST_LEAD)
            if REQUEST_START.match(head):
                intent = detect_recall_intent(head.replace("`", " ").strip())
                return (at, intent) if intent is not None and intent.trigger == "recall" else None
            at += len(line) + 1
        return None

    def after_round(self, sent: dict[str, Any], raw: str, visible: str,
                    calls: list[dict[str, Any]]) -> RoundResult:
        """Record one model answer; say whether to re-ask, and what of its text is shown."""
        own, client_calls = self.split_calls(calls)
        reads = self.calls.sort(own)
        found = None if client_calls else self.find_request(visible)
        at, request = found if found is not None else (None, None)
        self.raw_texts.append(raw if at is None else cut_at(raw, visible, at))
        self.visible_texts.append(visible if at is None else visible[:at])
        if client_calls or not self.flags["recall_interception"]:
            return RoundResult(None, client_calls)  # the client's own tool loop comes first
        if self.rounds_done >= self.config.max_tool_rounds:
            pending = request is not None or (bool(reads) and not "".join(self.visible_texts).strip())
            self.unfinished = pending and self.answer is None
            return RoundResult(None, client_calls, at)
        if reads:
            return RoundResult(self._answer_reads(sent, visible, reads), client_calls)
        if request is not None:
            return RoundResult(self._answer_request(sent, visible, request), client_calls, at)
        if self.reads_model_text and not self.text_intent_used:
            return RoundResult(self._answer_text_intent(sent, visible), client_calls)
        return RoundResult(None, client_calls)

    def _answer_reads(self, sent: dict[str, Any], said: str,
                      reads: list[Read]) -> dict[str, Any] | None:
        self.rounds_done += 1
        self.intercepted = True
        messages, any_found, searched = [], False, []
        for action, args, call in reads:
            found, payload = self.calls.run(action, args, origin="model-tool-call")
            any_found |= found
            if action == "memory.search":
                searched.append(str(args.get("query", "")))
            messages.append(self.dialect.tool_message(action, payload, call.get("id")))
        self.found_in_memory = bool(self.found_in_memory) or any_found
        notes = [] if any_found else [self._nothing_found(
            ", ".join(repr(q) for q in searched if q) or "this request",
            ", ".join(q for q in searched if q) or self.user_text)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_tools(sent, said, [c for _, _, c in reads], messages, notes)

    def _answer_request(self, sent: dict[str, Any], said: str, request: RecallIntent) -> dict[str, Any] | None:
        """Answer the model's `recall <topic>`: new results, or a note that memory holds
        nothing more (everything found was already shown, or it asked before)."""
        self.rounds_done += 1
        self.intercepted = True
        query = request.query
        if query.strip().lower() in self.calls.searched:
            found, block, new = True, "", False
        else:
            found, block, ids = self._search_block(query, origin="model-text")
            new = not set(ids) <= self.calls.seen_ids
            self.calls.seen_ids.update(ids)
            self.found_in_memory = bool(self.found_in_memory) or found
        if found and new:
            blocks = [block, RESULTS_INSTRUCTION]
        elif found:
            blocks = [NOTHING_NEW_NOTE.format(topic=repr(query))]
        else:
            blocks = [self._nothing_found(repr(query), query)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_context(sent, said, blocks)

    def _answer_text_intent(self, sent: dict[str, Any], said: str) -> dict[str, Any] | None:
        """Recall phrasing inside the model's answer ("as we decided earlier"): one search
        and one re-ask, only when it finds something the model has not seen."""
        intent = detect_recall_intent(said) if said.strip() else None
        if intent is None or intent.trigger not in self.config.model_text_triggers \
                or intent.query.strip().lower() in self.calls.searched:
            return None
        self.text_intent_used = True
        found, block, ids = self._search_block(intent.query, origin="model-text")
        if found and set(ids) <= self.calls.seen_ids:
            return None  # the model already had all of it in its context
        self.rounds_done += 1
        self.intercepted = True
        self.found_in_memory = bool(self.found_in_memory) or found
        blocks = [block, RESULTS_INSTRUCTION] if found else [self._nothing_found(repr(intent.query), intent.query)]
        if self.answer is not None:
            return None
        return self.dialect.reask_with_context(sent, said, blocks)

    def closing_text(self) -> str:
        """A last paragraph the engine adds to what the user sees: its own answer, or that
        the memory lookup ran out of rounds."""
        if self.answer is not None:
            return self.answer
        if self.unfinished:
            return max_rounds_text(self.config.max_tool_rounds)
        return ""

    def add_closing(self, shown: VisibleText) -> str:
        """Add the closing paragraph (if any) to what the user sees; the text added."""
        closing = self.closing_text()
        if not closing:
            return ""
        shown.start_round()
        return shown.emit(closing)

    # -- memory reads ------------------------------------------------------------------------------

    def _search_block(self, query: str, *, origin: str) -> tuple[bool, str, list[str]]:
        return search_block(self.calls, query, self.said, self.tz or self.settings.timezone, origin=origin,
                            hidden=self.discarded)

    def _search(self, query: str, *, origin: str) -> tuple[bool, str]:
        found, block, ids = self._search_block(query, origin=origin)
        self.calls.seen_ids.update(ids)
        return found, block

    # -- 2 + 3. after the answer: land the turns, pre-return catalog --------------------------

    def assistant_turn_id(self, raw: str) -> str:
        return assistant_turn_id(self.user_key, self.dialect.history(self.body), raw, self.calls.proposing)

    def _record_round(self) -> None:
        """Keep what this round landed, in the inbox (`online.proxy.rounds` reads it back)."""
        msgs = self._messages()
        users = [i for i, (role, _) in enumerate(msgs or []) if role == "user"]
        if self.user_turn is None or not msgs or not users:
            return
        latest, answer = users[-1], self.assistant_turn
        if latest == len(msgs) - 1:
            self._retract_discarded()
        record_round(self.service, self.identity,
                     Round(self._place(msgs, latest), self.user_turn.turn_id, sha256_text(msgs[latest][1]),
                           self.user_key),
                     self._turn_at(msgs, users[-2]) if len(users) > 1 else None,
                     (answer.turn_id, [p.item_id for p in answer.proposals if p.item_id],
                      str(self.body.get("model") or "")) if answer else None)

    def _discarded_answers(self, user_turn_id: str) -> list[dict]:
        """The chat asks the same model again with the conversation ending at this user
        message: the answers it landed to it before are discarded (a regeneration, or a retry
        whose answer the user never saw), this one's left out once landed."""
        kept, model = self.assistant_turn, sha256_text(str(self.body.get("model") or ""))
        return [a for a in answers_to(self.service, user_turn_id)
                if a.get("model_sha256") == model and (kept is None or a["turn_id"] != kept.turn_id)]

    def _retract_discarded(self) -> None:
        """Retract the discarded answers (`_discarded_answers`) once this one has landed (a
        retry given the same answer keeps it: one turn); until then recall hides them
        (`prepare`)."""
        kept, gone = self.assistant_turn, self._discarded_answers(self.user_turn.turn_id)
        if gone:
            now = retract_round(self.service, self.identity, None, gone,
                                REGENERATED_REASON.format(turn=self.user_turn.turn_id),
                                keep=[p.item_id for p in kept.proposals if p.item_id] if kept is not None else ())
            self.regenerated_away += now
            record_discarded(self.service, self.identity,
                             [str(a["turn_id"]) for a in gone if message_item_id(str(a["turn_id"])) in now])

    def finish(self, visible: str) -> dict[str, Any]:
        """Land the user and assistant turns (proposals governed by the policy), run the
        pre-return Q* pass; returns what goes in the response's `loci` field. The engine's
        own answers and the model's requests to memory are not landed as something said."""
        if self.user_text.strip():
            self.user_turn = land_user(self)
        self.assistant_turn = land_assistant(self)
        assistant = self.assistant_turn
        if self.calls.held:
            self.calls.link_held([t.turn_id for t in (self.user_turn, assistant) if t])
        self._record_round()
        out: dict[str, Any] = {
            "injected_ids": list(self.injected_ids),
            "intercepted": self.intercepted,
            "found_in_memory": self.found_in_memory,
            "tool_rounds": [{"action": r.action, "found": r.found, "origin": r.origin, "ids": r.ids}
                            for r in self.tool_rounds],
            "proposals": [{"title": p.title, "action": p.action, "item_id": p.item_id, "form": p.form,
                           "reasons": list(p.reasons), "scope": p.scope, "supersedes": list(p.supersedes)}
                          for p in (assistant.proposals if assistant else [])],
            "turn_ids": {"user": self.user_turn.turn_id if self.user_turn else None,
                         "assistant": assistant.turn_id if assistant else None},
        }
        if self.edited_away:
            out["edited_away"] = list(self.edited_away)
        if self.regenerated_away:
            out["regenerated_away"] = list(self.regenerated_away)
        if self.ignored_calls:
            out["ignored_tool_calls"] = list(self.ignored_calls)
        if self.calls.unlinked:
            out["unlinked_turns"] = list(self.calls.unlinked)
        if self.config.catalog_field:
            out["catalog"] = catalog(self, visible, self.user_turn, assistant)
        return out
