"""What a chat loop is told, and what the inbox keeps, when the policy rejects a proposal
for a secret (a trial found a Stripe key in the content turning the title "Stripe" into
"[REDACTED]", and the one key given as two reasons, "49 characters" and "32 characters")."""

from __future__ import annotations

import json

from pipelines.inbox import open_inbox
from tests.e2e.chat import tool

DEV = {"user_id": "dev", "project_id": "billing", "session_id": "d1"}
STRIPE = "sk_live_51HqLyjWDarjtT1zdp7dcXYZ9a8b7c6d"  # made up, of a live key's shape


def propose(client, title: str, content: str) -> dict:
    (outcome,) = tool(client, DEV, "memory.propose", {"items": [
        {"type": "fact", "title": title, "content": content, "why_store": "billing", "confidence": 0.9}]})["proposals"]
    assert outcome["action"] == "reject", outcome
    return outcome


def stored_proposal(settings, event_id: str) -> dict:
    with open_inbox(settings) as inbox:
        return inbox.get(event_id).payload["proposal"]


def test_only_the_field_holding_the_secret_is_redacted(service) -> None:
    client, settings = service
    in_content = propose(client, "Stripe live key", f"The Stripe live key is {STRIPE}.")
    assert in_content["title"] == "Stripe live key", in_content  # before the fix: "[REDACTED]"
    assert "sk_live" not in json.dumps(in_content)
    kept = stored_proposal(settings, in_content["event_id"])
    assert kept["title"] == "Stripe live key" and STRIPE not in json.dumps(kept), kept

    in_title = propose(client, f"Key {STRIPE}", "The Stripe live key for billing.")
    assert in_title["title"] == "[REDACTED]" and "sk_live" not in json.dumps(in_title), in_title
    assert STRIPE not in json.dumps(stored_proposal(settings, in_title["event_id"]))


def test_one_key_is_one_reason(service) -> None:
    client, _ = service
    (reason,) = propose(client, "Stripe", f"The Stripe live key is {STRIPE}.")["reasons"]  # before: 40 and 32 chars
    assert "stripe key, 40 characters" in reason, reason
