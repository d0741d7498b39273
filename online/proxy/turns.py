"""After the answer: the exchange's user and assistant turns landed once, under ids derived
from the identity and the conversation (a client that retries the same request, or resends
history with a new question, never lands a turn twice), proposals governed by the policy;
and the pre-return Q* catalog of the memories the answer touches."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from online.schemas import MAX_QUERY_CHARS
from pipelines.capture import CaptureResult
from pipelines.materialize import message_item_id
from pipelines.records import sha256_text, stable_id

if TYPE_CHECKING:
    from online.proxy.exchange import Exchange


def digest(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def recall_query(text: str) -> str:
    """What recall reads of a chat message: all of it up to the API's limit, else its start
    and end (a pasted log with the question before or after it). A recall's cost grows with
    its query: a 1.7 MB message took 4 s before the model call and 14 s after it."""
    if len(text) <= MAX_QUERY_CHARS:
        return text
    half = MAX_QUERY_CHARS // 2
    return f"{text[:half]}\n{text[-half:]}"


def assistant_turn_id(user_key: str, history: list[list[str]], raw: str, proposing: list[dict[str, Any]]) -> str:
    """The id of the answer `raw` to the user turn `user_key` after the conversation's
    `history`. The proposing tool calls are said too: a regenerated answer proposing other
    items is another turn, not a retry whose proposals the inbox would drop."""
    calls = [digest(proposing)] if proposing else []
    return stable_id("turn", "proxy", user_key, "assistant", digest(history), sha256_text(raw), *calls)


def land_user(ex: Exchange) -> CaptureResult:
    return ex.service.capture(ex.identity, "user", ex.user_text, turn_id=ex.user_turn_id, forgot=ex.calls.forgot)


def land_assistant(ex: Exchange) -> CaptureResult | None:
    """What the model said over the rounds, proposals parsed (or, with the scan off, only
    what was shown). The engine's own answers and the model's requests to memory are not
    in it."""
    raw = "\n\n".join(t for t in ex.raw_texts if t.strip())
    said = "\n\n".join(t for t in ex.visible_texts if t.strip())
    proposing, forgot = ex.calls.proposing, ex.calls.forgot
    if ex.flags["post_response_scan"] and ex.scans:
        if raw.strip() or proposing:
            return ex.service.capture(ex.identity, "assistant", raw,
                                      tool_calls=proposing or None,
                                      turn_id=ex.assistant_turn_id(raw), answers=ex.user_text,
                                      zone=ex.tz, forgot=forgot)
    elif said.strip():
        # Proposals are still kept from the user, but nothing proposed is stored.
        return ex.service.capture(ex.identity, "assistant", said, parse=False,
                                  turn_id=ex.assistant_turn_id(said), forgot=forgot)
    return None


def catalog(ex: Exchange, visible: str, *turns: CaptureResult | None) -> dict[str, Any]:
    """Pre-return Q* pass over question + answer; this exchange's own turns, and the
    memories its answer just proposed (the user said them a moment ago), left out."""
    current = {message_item_id(t.turn_id) for t in turns if t}
    current.update(p.item_id for t in turns if t for p in t.proposals if p.item_id)
    query = f"{recall_query(ex.user_text)}\n{recall_query(visible)}".strip()
    if not query:
        return {"memory_catalog": []}
    result = ex.service.recall(query, ex.identity, mode="catalog", record_usage=False, said=ex.said,
                               tz=ex.tz)
    entries = [e for e in (result.catalog or {}).get("memory_catalog", []) if e.get("id") not in current]
    return {**dict(result.catalog or {}), "memory_catalog": entries}
