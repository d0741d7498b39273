"""Loci's memory.* tool calls of one exchange, run as the user: the model's reads (and the
changes it may ask for) dispatched through `online.tools.ToolDispatcher`, proposals kept for
landing with the answer, other writes refused; what each call found, for the model's tool
message and the exchange's record (`ToolRound`)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import msgspec

from online.proxy.memory_tools import CHANGE_ACTIONS, PROPOSE_ACTIONS, READ_ACTIONS, call_name, retracts
from online.state import MemoryService
from online.tools import ToolDispatcher, ToolError
from pipelines.recall.intents import (
    ToolCallError,
    canonical_tool_name,
    detect_recall_intent,
    parse_memory_tool_call,
    tool_arguments,
)
from pipelines.records import Identity

log = logging.getLogger("loci.proxy")

Read = tuple[str, dict[str, Any], dict[str, Any]]  # (action, arguments, the call as sent)


@dataclass
class ToolRound:
    """One memory read the engine ran: who asked (`origin`: user-intent, model-tool-call,
    model-text) and what came back."""

    action: str
    args: dict[str, Any]
    found: bool
    origin: str
    ids: list[str] = field(default_factory=list)

class MemoryCalls:
    """The memory calls of one exchange and what they left: `searched` (queries, lowered),
    `seen_ids` (ids the model has been shown in this exchange), `tool_rounds`, `proposing`
    (memory.propose calls), `forgot` (what the model's calls retracted for the user), `held`
    (what they asked to forget that waits for review), `ignored_calls`, `unlinked` (each held
    forget whose round's turns could not be linked to it, and why). `offers_changes`: the
    model was offered the tools, so it may ask for the user's changes (`CHANGE_ACTIONS`)."""

    def __init__(self, service: MemoryService, identity: Identity, *, tz: str | None, own_words: bool,
                 offers_changes: bool) -> None:
        self.service = service
        self.identity = identity
        self.tz = tz
        self.own_words = own_words
        self.offers_changes = offers_changes
        self.tools = ToolDispatcher(service)
        self.searched: set[str] = set()
        self.seen_ids: set[str] = set()
        self.tool_rounds: list[ToolRound] = []
        self.proposing: list[dict[str, Any]] = []
        self.forgot: list[str] = []
        self.held: list[str] = []
        self.ignored_calls: list[str] = []
        self.unlinked: list[str] = []

    def sort(self, own: list[dict[str, Any]]) -> list[Read]:
        """Loci's calls of one answer: proposals kept for landing, reads and the changes the
        model may ask for (`CHANGE_ACTIONS`, when the tools are offered) returned as (action,
        arguments, call); other writes refused."""
        reads: list[Read] = []
        for call in own:
            name = canonical_tool_name(call_name(call))
            if name in PROPOSE_ACTIONS:
                self.proposing.append(call)
            elif name in READ_ACTIONS:
                try:
                    req = parse_memory_tool_call(call)
                except ToolCallError as exc:
                    self.ignored_calls.append(f"{name}: {exc}")
                    continue
                if req is not None:
                    args = {k: v for k, v in msgspec.to_builtins(req.arguments).items() if v not in (None, [], "")}
                    args.pop("mode", None)
                    reads.append((req.name, args, call))
            elif name in CHANGE_ACTIONS and self.offers_changes:
                # The user's "forget X" / "change X to Y": run as the user, governed by the
                # dispatcher (policy, audit, held for review when it is someone else's claim).
                try:
                    reads.append((name, tool_arguments(call.get("function", call).get("arguments")), call))
                except ToolCallError as exc:
                    self.ignored_calls.append(f"{name}: {exc}")
            else:  # memory.write / link / consolidate / review, or a change not offered
                self.ignored_calls.append(f"{name}: not allowed to the model")
        return reads

    def dispatch(self, action: str, args: dict[str, Any]) -> dict[str, Any]:
        if action == "memory.search" and isinstance(args, dict):
            if self.tz is not None and "tz" not in args:
                args = {**args, "tz": self.tz}  # the model's search too reads "yesterday" as the user's
            if self.own_words:
                args = {**args, "own_words": True}  # and looks for the user's own words first
        try:
            result = self.tools.dispatch(action, args, self.identity)["result"]
        except ToolError as exc:
            result = {"error": exc.message}
        if action == "memory.search" and "hits" in result:
            result = drop_recall_questions(result)
        return result

    def run(self, action: str, args: dict[str, Any], *, origin: str) -> tuple[bool, str]:
        """Run a read action (or a change the model may ask for); (found, JSON payload for a
        tool message)."""
        if action == "memory.search":
            self.searched.add(str(args.get("query", "")).strip().lower())
        result = self.dispatch(action, args)
        found = found_in(action, result)
        ids = [h["id"] for h in result.get("hits", [])] if action == "memory.search" else \
            [i["id"] for i in result.get("items", []) if isinstance(i, dict) and "id" in i] + \
            ([result["item_id"]] if action in CHANGE_ACTIONS and "item_id" in result else [])
        self.seen_ids.update(ids)
        self.tool_rounds.append(ToolRound(action, args, found, origin, ids))
        verdict = (result.get("verdict") or {}).get("action")
        if action in CHANGE_ACTIONS and retracts(action, args) and verdict in ("accept", "quarantine"):
            # this round's turns are forgotten with it: now, or when a reviewer approves it (`link_held`)
            gone = self.forgot if verdict == "accept" else self.held
            gone.append(str(result["item_id"]))
        return found, json.dumps(compact(action, result), ensure_ascii=False)

    def link_held(self, turn_ids: list[str]) -> None:
        """The round's turns (landed: `turn_ids`) wait with each forget held for review, as
        memory.forget's `turn_ids` keep them: its approval forgets them, its rejection leaves them.
        A link refused (the forget decided meanwhile, the item no longer the caller's to see) is
        no ignored call of the model's (its forget ran): the approval would leave these turns
        recallable, so it is named in the answer (`unlinked`, `loci.unlinked_turns`) and logged."""
        for item_id in dict.fromkeys(self.held):
            try:
                self.tools.dispatch("memory.forget", {"id": item_id, "turn_ids": turn_ids}, self.identity)
            except ToolError as exc:
                self.unlinked.append(f"memory.forget {item_id}: the round's turns {turn_ids} not linked "
                                     f"({exc.status}): {exc.message}")
                log.warning("held forget of %s: the round's turns %s not linked for %s: %s", item_id, turn_ids,
                            self.identity.user_id, exc.message)


def drop_recall_questions(result: dict[str, Any]) -> dict[str, Any]:
    """A stored chat turn that was itself a recall request ("what did we decide about X?")
    is not evidence about X: dropped, so "nothing in memory" never quotes the question back."""
    hits = [h for h in result["hits"]
            if not (h.get("type") == "message" and detect_recall_intent(h.get("content", "")))]
    if len(hits) == len(result["hits"]):
        return result
    return {**result, "hits": hits, "found": bool(hits)}


def found_in(action: str, result: dict[str, Any]) -> bool:
    if "error" in result:
        return False
    if action == "memory.search":
        return bool(result.get("found"))
    if action == "memory.palace.list":
        return bool(result.get("children"))
    if action in CHANGE_ACTIONS:
        return True  # done, or held for review: the verdict says which
    # memory.read: what became of an id no longer served (merged, replaced, archived) answers too
    return any(result.get(key) for key in ("items", "merged_into", "superseded_by", "archived"))


def compact(action: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the model gets back from a memory tool call."""
    if action == "memory.search" and "hits" in result:
        return {"found": result.get("found"), "message": result.get("message"),
                "hits": [{k: h[k] for k in ("id", "type", "tier", "title", "content", "tags", "pending_review")
                          if k in h} for h in result["hits"]]}
    return result
