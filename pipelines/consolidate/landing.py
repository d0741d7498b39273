"""Stage 1: inbox events landed into the warehouse (and the run record opened)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipelines.consolidate.common import Hook, call_hook, read_window
from pipelines.materialize import proposal_item_id
from pipelines.records import Event
from pipelines.warehouse import Warehouse

# -- runs --------------------------------------------------------------------------------


def begin_run(warehouse: Warehouse, run_id: str, from_seq: int) -> list[str]:
    """Record the start of `run_id` (if not yet recorded) and close runs left 'running' by
    a dead process (safe: the caller holds the warehouse lock). Returns the closed ids."""
    closed = []
    for run in warehouse.runs():
        if run["status"] == "running" and run["run_id"] != run_id:
            warehouse.finish_run(run["run_id"], "abandoned", {"reason": "the run process died"},
                                 to_seq=int(run["inbox_from_seq"]))
            closed.append(run["run_id"])
    if warehouse.get_run(run_id) is None:
        warehouse.start_run(run_id, from_seq)
    return closed


# -- 1. landing --------------------------------------------------------------------------


@dataclass
class LandReport:
    from_seq: int
    to_seq: int
    landed: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    malformed: list[str] = field(default_factory=list)  # event ids landed without a row
    abandoned_runs: list[str] = field(default_factory=list)


def _turn_row(e: Event) -> dict[str, Any]:
    p, who = e.payload, e.identity
    return {
        "turn_id": str(p["turn_id"]), "event_id": e.event_id, "inbox_seq": e.seq,
        "user_id": who.user_id, "project_id": who.project_id, "session_id": who.session_id,
        "org_id": who.org_id, "role": str(p.get("role", "user")), "text": str(p.get("text", "")),
        "turn_ref": p.get("turn_ref"), "speaker": p.get("speaker"), "at": str(p.get("at") or e.at),
    }  # fmt: skip


def _proposal_row(e: Event) -> dict[str, Any]:
    p, who = e.payload, e.identity
    verdict = p["verdict"]
    action = str(verdict["action"])
    return {
        "proposal_id": str(p.get("proposal_id") or e.event_id), "event_id": e.event_id,
        "inbox_seq": e.seq, "turn_id": p.get("turn_id"), "user_id": who.user_id,
        "project_id": who.project_id, "session_id": who.session_id, "org_id": who.org_id,
        "form": str(p.get("form", "api")), "proposal": dict(p["proposal"]), "action": action,
        "reasons": [str(r) for r in verdict.get("reasons", [])],
        "rule_ids": [str(r) for r in verdict.get("rule_ids", [])],
        "policy_version": str(verdict.get("policy_version", "")),
        "item_id": None if action == "reject" else proposal_item_id(e.event_id),
        "at": str(p.get("at") or e.at),
    }  # fmt: skip


def land_events(
    inbox: Any, warehouse: Warehouse, *, run_id: str | None = None, hook: Hook | None = None
) -> LandReport:
    """Land inbox events after the ingestion watermark: turns into `chat_turns`, proposals
    into `proposals` (with their online verdicts), every event into `landed_events`.
    Idempotent by event id. The watermark itself moves in `govern_items`."""
    from_seq = warehouse.last_ingested_seq()
    events, top = read_window(inbox, from_seq)
    already = warehouse.landed_ids([e.event_id for e in events]) if events else set()
    new = [e for e in events if e.event_id not in already]
    report = LandReport(from_seq=from_seq, to_seq=top, landed=len(new),
                        by_kind=dict(sorted(Counter(e.kind for e in new).items())))
    turns, proposals = [], []
    for e in new:
        try:
            if e.kind == "turn":
                turns.append(_turn_row(e))
            elif e.kind == "proposal":
                proposals.append(_proposal_row(e))
        except (KeyError, TypeError, ValueError, AttributeError):
            report.malformed.append(e.event_id)
    with warehouse.transaction():
        if run_id is not None:
            report.abandoned_runs = begin_run(warehouse, run_id, from_seq)
        warehouse.put_chat_turns(turns)
        warehouse.put_proposals(proposals)
        warehouse.mark_landed(new)
        call_hook(hook, "land:before_commit")
    return report
