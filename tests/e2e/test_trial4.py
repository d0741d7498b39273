"""A demanding new user's fourth trial, over HTTP (the proxy on loopback in front of the fake
Ollama server, and Litestar's TestClient against `loci serve`'s app).

- The pre-return catalog (`loci.catalog`) is what memory holds *besides* this exchange: the
  memory the same answer just proposed and Loci accepted is not listed back as something
  recalled (the user said it a moment ago), like the exchange's own turns.
- A proposal block is recognised by its tag however a model spells it (case, `-` or a space
  for `_`, `PROPOSAL` or `PROPOSALS`, with or without `_JSON`): it never reaches the user,
  streamed or not, and it is governed and landed like the documented tag.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pipelines.records import Identity
from tests.online.test_proxy import fake, shared_fake  # noqa: F401 - fixtures

HEADERS = {"X-Loci-User": "dana", "X-Loci-Project": "atlas", "X-Loci-Session": "s1"}
DANA = Identity(user_id="dana", project_id="atlas", session_id="s1")
KILN = {"type": "decision", "title": "Kiln day", "content": "The kiln fires on Fridays.",
        "why_store": "the team decided it", "confidence": 0.9}


def ollama_chat(url: str, text: str, stream: bool = False) -> tuple[str, dict[str, Any]]:
    """(the text the client sees, the `loci` field) of one /api/chat call."""
    resp = httpx.post(f"{url}/api/chat", json={"model": "llama3.2", "stream": stream, "messages": [
        {"role": "user", "content": text}]}, headers=HEADERS, timeout=60)
    assert resp.status_code == 200, resp.text
    lines = [json.loads(line) for line in resp.text.splitlines() if line.strip()]
    return "".join(obj["message"]["content"] for obj in lines), lines[-1].get("loci", {})


def test_the_catalog_does_not_list_back_what_this_exchange_just_stored(proxy, fake, memory) -> None:  # noqa: F811
    fake.chat_reply = lambda req: ("Noted: the kiln fires on Fridays. <MEMORY_PROPOSALS_JSON>"
                                   + json.dumps([KILN]) + "</MEMORY_PROPOSALS_JSON>")
    url = proxy()
    shown, loci = ollama_chat(url, "We decided the kiln fires on Fridays.")
    assert shown == "Noted: the kiln fires on Fridays."
    (verdict,) = loci["proposals"]
    assert verdict["action"] == "accept", verdict
    listed = [e["id"] for e in loci["catalog"]["memory_catalog"]]
    assert verdict["item_id"] not in listed, loci["catalog"]
    # The next exchange about it does list it: it is memory now.
    fake.chat_reply = lambda req: "On Fridays."
    _, loci = ollama_chat(url, "When does the kiln fire?")
    assert verdict["item_id"] in [e["id"] for e in loci["catalog"]["memory_catalog"]]


TAG_VARIANTS = ["MEMORY_PROPOSALS", "memory_proposals_json", "MEMORY-PROPOSALS-JSON", "Memory Proposals JSON",
                "MEMORY_PROPOSAL_JSON", "memory_proposal"]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tag", TAG_VARIANTS)
def test_a_proposal_block_under_a_variant_tag_is_not_shown_and_is_landed(proxy, fake, memory, tag,  # noqa: F811
                                                                          stream) -> None:
    fake.chat_reply = lambda req: (f"Noted.\n<{tag}>\n" + json.dumps([KILN]) + f"\n</{tag}>\nAnything else?")
    fake.stream_chunk_chars = 3  # the tag arrives in pieces
    shown, loci = ollama_chat(proxy(), "We decided the kiln fires on Fridays.", stream=stream)
    assert shown == "Noted.\nAnything else?", shown
    assert [(p["title"], p["action"]) for p in loci["proposals"]] == [("Kiln day", "accept")]
