"""The READ-ONLY block of one memory search the engine runs for the model (the user's
recall phrasing, or the model's `recall <topic>`): recall's format, curated memories apart
from the turns that say what was asked."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from online.proxy.tool_calls import MemoryCalls, ToolRound
from pipelines.recall.episodic import is_message, says_something_asked
from pipelines.recall.lexical import normalise_label, query_terms
from pipelines.recall.render import format_entry, format_turn, frame
from pipelines.records import time_zone


def listed_as_an_answer(hit: dict[str, Any]) -> bool:
    """A searched turn a listing found as an answer whatever its words: said on the day the
    question names ("what did we talk about yesterday?"), or the caller's own words about
    themselves ("what do you know about me?"); ranked by that channel (`rank_said_when`,
    `rank_self` in its components)."""
    comps = hit.get("components") or {}
    return bool(comps.get("rank_said_when") or comps.get("rank_self"))


def search_block(calls: MemoryCalls, query: str, said: list[str], zone: str, *,
                 origin: str, hidden: Collection[str] = ()) -> tuple[bool, str, list[str]]:
    """Search as the user (`calls`); (found, READ-ONLY block of the hits, hit ids); `said`:
    the texts of this conversation, `zone`: the user's IANA zone. The block is recall's:
    curated memories under the authoritative footer, raw turns apart as what was said
    (dated on the user's calendar), and a turn whose own words share none with the query
    left out (it states nothing asked; the search lists it), as is a turn of this
    conversation (the model has it). A turn that only asks never reaches here: recall
    drops it (`episodic.states_nothing`). `hidden`: ids left out (the answers a regeneration
    discards, and their memories)."""
    calls.searched.add(query.strip().lower())
    result = calls.dispatch("memory.search", {"query": query})
    hits = [h for h in result.get("hits", []) if h["id"] not in hidden]
    ids = [h["id"] for h in hits]
    entries: list[str] = []
    turns: list[str] = []
    view = calls.service.current
    now = datetime.now(time_zone(zone))  # days on the user's calendar
    # As in an injected recall, a turn found only through its neighbours ("Good choice.")
    # says nothing asked: its neighbour is the evidence (`says_something_asked`), unless
    # a listing found it as an answer; nor one of this conversation: the model has it.
    terms = query_terms(query)
    in_chat = {normalise_label(text) for text in said}
    for hit in hits:
        item = calls.service.get_item(hit["id"], calls.identity, view)
        if item is None:
            continue
        if not is_message(item):
            entries.append(format_entry(item, pending=hit.get("pending_review", ""), now=now))
        elif normalise_label(item.content) in in_chat:
            continue
        elif says_something_asked(item, terms) or listed_as_an_answer(hit):
            turns.append(format_turn(item, zone=now.tzinfo))
    found = bool(entries or turns)
    calls.tool_rounds.append(ToolRound("memory.search", {"query": query}, found, origin, ids))
    return found, (frame(entries, turns=turns) if found else ""), ids
