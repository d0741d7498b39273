"""A customer-support team's fortnight (the thirty-second new-user trial). Org `helpdesk`: two
agents, Ana and Ben, and their lead, Lia (the org's reviewer), serve two customers, Acme and
Globex, each a Loci project. The agents chat through `loci proxy`'s Ollama door (`POST
/api/chat`, the official `ollama` client, a fake model on loopback) and their agent writes over
MCP (the `mcp` SDK client on `online.mcp_server.build_server`); Lia uses the memory browser
(/ui) and its review form. Every write is stamped by one simulated clock; the Dagster
consolidation job runs between the weeks. Promises checked, as a demanding user meets them:

- The org's refund rule ("over $500 needs the lead") and Acme's contract exception ("up to
  $1000 approved") under one title: in Acme's chat the exception comes first (SCOPE=project),
  the org rule after it, neither replacing the other; Globex gets the org rule and nothing of
  Acme's (kept).
- One customer's facts (Acme's contacts, its exception) never reach the other customer's
  chat, MCP search or browser search (kept).
- Ana's small talk about refunds never outranks the decision on refund disputes: curated
  memory first, turns only as labelled conversation excerpts after it (kept).
- Acme's contact changes under another title and by another agent ("Acme contact" by Ana ->
  "Who to email at Acme" by Ben, "John Smith has left Acme"): was unseen by the conflict
  rule; now seen (fixed): Ben's contradicts Ana's, so it is held for review, listed on the
  conflicts page, and John is marked PENDING_REVIEW in the chat.
- A card number read out by mistake is masked when the turn lands and never recalled or
  exported, the model's proposal to keep it refused, and Ana can still forget the turn
  (kept); a test-card number read out as a customer's card ("4111 1111 1111 1111") is masked
  in the stored turn too (broken: test cards were exempt from masking, not only from the
  proposal policy).
- Ben's edit of the org rule ($500 -> $300) waits for Lia (the org's reviewer); she approves
  it in the browser with a reason; the rule's card and `/v1/items` history show both
  versions, who held it and who approved it and why; every chat then gets $300 (kept).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from urllib.parse import quote

import ollama
import pytest
from litestar.testing import TestClient

from assets.run import run_consolidation
from online.app import create_app
from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.item_report import export_items
from pipelines.materialize import message_item_id, proposal_item_id
from tests.assets.support import make_settings, shared_instance
from tests.e2e.chat import SimulatedClock, mcp, page_text
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

UTC = timezone.utc
ORG, ACME, GLOBEX = "helpdesk", "acme", "globex"
MODEL = "llama3.2"


def who(user: str, project: str, session: str | None = None) -> dict[str, str]:
    return {"user_id": user, "project_id": project, "session_id": session or f"{user}-{project}", "org_id": ORG}


LIA, ANA_ACME, BEN_ACME, BEN_GLOBEX = who("lia", "support-lead"), who("ana", ACME), who("ben", ACME), who(
    "ben", GLOBEX)


def memo(type_: str, title: str, content: str, tags: list[str], scope: str = "project") -> dict[str, Any]:
    return {"type": type_, "title": title, "content": content, "tags": tags, "why_store": "support team",
            "confidence": 0.9, "scope": scope}


POLICY = memo("constraint", "Refund approval limit", "Refunds over $500 need the lead's approval.",
              ["refunds", "policy"], scope="org")
POLICY_300 = "Refunds over $300 need the lead's approval."
EXCEPTION = memo("constraint", "Refund approval limit",
                 "Acme's contract: refunds up to $1000 are approved without the lead.", ["refunds", "contract"])
JOHN = memo("fact", "Acme contact", "Acme's contact person is John Smith (john.smith@acme.example).",
            ["contact"])
PRIYA = memo("fact", "Who to email at Acme",
              "Email Priya Patel (priya.patel@acme.example) at Acme now; John Smith has left Acme.", ["contact"])
MARIA = memo("fact", "Globex contact", "Globex's contact person is Maria Lopez (maria@globex.example).",
             ["contact"])
DECIDED = memo("decision", "Acme refund escalations",
               "Decision: Acme refund disputes go to Acme's account manager, not to engineering.",
               ["refunds", "decision"])
CARD = "4539 1488 0343 6467"  # Luhn-valid, no test card's repeated digits
CARD_SAID = f"Customer read me the card for the refund: {CARD}, expires 12/28."
# Read out by a Globex customer: a number the card networks publish for testing, but said as
# the customer's card; a stored turn keeps no card number, whatever it is.
TEST_CARD = "4111 1111 1111 1111"
TEST_CARD_SAID = f"Globex customer wants the chargeback on card {TEST_CARD}, can you check it?"
CARD_MEMO = memo("fact", "Acme refund card", f"The refund goes to card {CARD}.", ["refunds"])
APPROVE_NOTE = "finance lowered the limit in November"

# What the agents say in their chat, and what the model proposes to keep of it.
SAID = {
    "Acme's contract says refunds up to $1000 are approved without the lead.": EXCEPTION,
    "Acme's contact person is John Smith, john.smith@acme.example.": JOHN,
    "Globex's contact is Maria Lopez, maria@globex.example.": MARIA,
    "We decided: Acme refund disputes go to their account manager, not engineering.": DECIDED,
    "Heads up, from now on email Priya Patel (priya.patel@acme.example) for Acme; John Smith left.": PRIYA,
    CARD_SAID: CARD_MEMO,
}
CHATTER = [
    "lol the Acme refund queue is brutal today, refunds refunds refunds",
    "I swear every Acme refund ticket comes in on a Monday, need more coffee",
    "refund disputes again, haha, engineering would love these",
]
REFUND_Q = "Can I approve an $800 refund for this customer without the lead?"
CONTACT_Q = "Who do I email at Acme?"
DISPUTE_Q = "What did we decide about Acme refund disputes?"
CARD_Q = "What card number did the customer give for the refund?"


def model_reply(req: dict[str, Any]) -> str:
    last = next((m["content"] for m in reversed(req.get("messages", [])) if m["role"] == "user"), "")
    if last in SAID:
        return "Noted. " + block(SAID[last])
    if "card for the refund" in last:  # said as landed: the model sees what the proxy forwards
        return "Noted. " + block(CARD_MEMO)
    return "Sure."




@pytest.fixture(scope="module")
def fortnight(shared_fake, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:  # noqa: F811
    settings = make_settings(tmp_path_factory.mktemp("t32"), org_reviewers={ORG: ["lia"]})
    memory = MemoryService(settings, check_interval_ms=0)
    shared_fake.chat_reply = model_reply
    shared_fake.requests.clear()
    start: date = datetime.now(UTC).date() - timedelta(days=14)
    clock = SimulatedClock(UTC)
    seen: dict[str, Any] = {"ids": {}}
    ids = seen["ids"]
    proxy = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                             config=ProxyConfig(flags_check_interval_s=0))
    browser_app = create_app(settings, service=memory, check_interval_ms=0)
    with pytest.MonkeyPatch.context() as patch, serve(proxy) as url, TestClient(browser_app) as browser:
        clock.patch_into(patch)

        def on(day: int, hour: int = 10) -> None:
            clock.at(start + timedelta(days=day), time(hour))

        def chat(ident: dict[str, str], text: str) -> str:
            """An agent's message in their customer's chat: what memory the model got."""
            headers = {"X-Loci-User": ident["user_id"], "X-Loci-Project": ident["project_id"],
                       "X-Loci-Session": ident["session_id"], "X-Loci-Org": ORG}
            n = len(shared_fake.requests)
            ollama.Client(host=url, headers=headers).chat(model=MODEL, messages=[{"role": "user", "content": text}])
            return system_text(shared_fake.requests[n][1])

        def consolidate() -> None:
            assert memory.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            memory.reload()

        # Week 1: Lia's org rule (her agent, over MCP); the customers' facts in the agents' chats.
        on(0)
        ((failed, body),) = mcp(memory, LIA, ("memory_propose", {"items": [POLICY]}))
        assert not failed, body
        (seen["policy"],) = body["proposals"]
        ids["policy"] = seen["policy"]["item_id"]
        on(1)
        chat(ANA_ACME, "Acme's contract says refunds up to $1000 are approved without the lead.")
        chat(ANA_ACME, "Acme's contact person is John Smith, john.smith@acme.example.")
        chat(BEN_GLOBEX, "Globex's contact is Maria Lopez, maria@globex.example.")
        on(2)
        chat(ANA_ACME, "We decided: Acme refund disputes go to their account manager, not engineering.")
        for n, said in enumerate(CHATTER):
            on(3, 10 + n)
            chat(ANA_ACME, said)
        on(4)
        chat(ANA_ACME, CARD_SAID)
        chat(BEN_GLOBEX, TEST_CARD_SAID)
        on(6, 22)
        consolidate()
        # Week 2: Ana forgets the card turn; Acme's contact changes under another title; Ben
        # edits the org rule (held for Lia); Lia decides in the browser.
        on(7)
        events = memory.inbox.read_after(0)
        (card_turn,) = [e for e in events if e.kind == "turn" and "card for the refund" in e.payload["text"]]
        ids["card turn"] = message_item_id(card_turn.payload["turn_id"])
        seen["forget card"] = mcp(memory, ANA_ACME, ("memory_forget", {"id": ids["card turn"],
                                                                       "reason": "card number said by mistake"}))[0]
        on(8)
        chat(BEN_ACME, "Heads up, from now on email Priya Patel (priya.patel@acme.example) for Acme; John Smith left.")
        on(9)
        ((_, seen["ben edit"]),) = mcp(memory, BEN_GLOBEX, ("memory_update", {
            "id": ids["policy"], "patch": {"content": POLICY_300}}))
        on(10)
        seen["queue page"] = browser.get("/ui/quarantine", params=LIA)
        seen["conflicts page"] = browser.get("/ui/conflicts", params=LIA)
        seen["approve"] = browser.post(f"/ui/quarantine/{quote(ids['policy'])}", params=LIA,
                                       data={"decision": "approve", "note": APPROVE_NOTE}, follow_redirects=False)
        on(11, 22)
        consolidate()

        on(13)
        proposals = [e for e in memory.inbox.read_after(0) if e.kind == "proposal"]
        seen["verdicts"] = {e.payload["proposal"]["content"]: e.payload for e in proposals}
        for e in proposals:
            ids.setdefault(e.payload["proposal"]["content"], proposal_item_id(e.event_id))
        seen["events"] = memory.inbox.read_after(0)
        seen["ask"] = {
            "acme refund": chat(ANA_ACME, REFUND_Q),
            "globex refund": chat(BEN_GLOBEX, REFUND_Q),
            "acme contact": chat(ANA_ACME, CONTACT_Q),
            "globex contact": chat(BEN_GLOBEX, CONTACT_Q),
            "dispute": chat(ANA_ACME, DISPUTE_Q),
            "card": chat(ANA_ACME, CARD_Q),
        }
        seen["search globex"] = mcp(memory, BEN_GLOBEX, ("memory_search", {"query": "Acme contact email refund"}))[0]
        seen["browser globex"] = browser.get("/ui/search", params={**BEN_GLOBEX, "q": "Acme contact"})
        seen["policy card"] = browser.get(f"/ui/items/{quote(ids['policy'])}", params=LIA)
        seen["policy api"] = browser.get(f"/v1/items/{quote(ids['policy'])}", params=LIA)
        seen["conflicts after"] = browser.get("/ui/conflicts", params={**ANA_ACME})
        seen["settings"] = settings
        yield seen
        assert browser_app.state.internal_errors == 0
    memory.close()


def curated_part(sent: str) -> str:
    return sent.split("CONVERSATION EXCERPTS")[0]


def header_of(sent: str, item: str) -> str:
    return next(line for line in sent.splitlines() if line.startswith(f"[MEMORY: {item} "))


def entry_order(sent: str, *needles: str) -> list[int]:
    return [curated_part(sent).find(needle) for needle in needles]


def item_id(seen: dict[str, Any], item: dict[str, Any]) -> str:
    return seen["ids"][item["content"]]


def test_every_fact_landed(fortnight) -> None:
    for item in (EXCEPTION, JOHN, MARIA, DECIDED):
        assert fortnight["verdicts"][item["content"]]["verdict"]["action"] == "accept", item["title"]
    # Ben's new contact contradicts Ana's (John "has left"): held for review, not lost
    priya = fortnight["verdicts"][PRIYA["content"]]["verdict"]
    assert priya["action"] == "quarantine" and item_id(fortnight, JOHN) in " ".join(priya["reasons"]), priya
    assert fortnight["policy"]["action"] == "accept"


def test_the_customer_exception_comes_first_and_the_org_rule_stands(fortnight) -> None:
    exception = fortnight["verdicts"][EXCEPTION["content"]]
    # an exception for one customer replaces nothing of the org's rule
    assert not exception.get("supersedes") and not exception.get("ends"), exception
    acme = fortnight["ask"]["acme refund"]
    here, org = entry_order(acme, EXCEPTION["content"], POLICY_300)
    assert here >= 0 and (org == -1 or here < org), acme
    header = header_of(acme, item_id(fortnight, EXCEPTION))
    assert "CONFLICT" not in header or "SCOPE=project" in header, header
    # Globex: the org's (changed) rule, nothing of Acme's contract
    globex = fortnight["ask"]["globex refund"]
    assert POLICY_300 in curated_part(globex) and "$1000" not in globex and "Acme" not in globex, globex


def test_one_customers_facts_never_reach_the_other(fortnight) -> None:
    globex = fortnight["ask"]["globex contact"]
    for text in (globex, json.dumps(fortnight["search globex"][1]), page_text(fortnight["browser globex"].text)):
        for acme_word in ("John Smith", "Priya", "acme.example", "$1000"):
            assert acme_word not in text, (acme_word, text[:2000])
    assert "Maria" not in fortnight["ask"]["acme contact"]


def test_small_talk_never_outranks_the_decision(fortnight) -> None:
    sent = fortnight["ask"]["dispute"]
    curated = curated_part(sent)
    first = curated.split("[MEMORY: ", 1)[1]
    assert first.startswith(item_id(fortnight, DECIDED)), sent
    for chatter in CHATTER:
        assert chatter not in curated, chatter
    if "[TURN:" in sent:
        assert sent.index("CONVERSATION EXCERPTS") < sent.index("[TURN:")


def test_the_contact_change_is_seen(fortnight) -> None:
    """The change across titles and authors ("Email Priya ... now; John Smith has left Acme")
    is seen: listed on the conflicts page, and John, while it waits for review, is marked in
    the chat as having a change pending (or, were it accepted, Priya comes first)."""
    john = item_id(fortnight, JOHN)
    assert john in fortnight["conflicts after"].text, page_text(fortnight["conflicts after"].text)[-1500:]
    sent = fortnight["ask"]["acme contact"]
    new, old = entry_order(sent, PRIYA["content"], JOHN["content"])
    if old >= 0:
        assert (new >= 0 and new < old) or any(
            m in header_of(sent, john) for m in ("PENDING_REVIEW", "CONFLICT", "ENDED", "SUPERSEDED")), sent


def test_the_conflicts_page_says_the_customers_exception_applies(fortnight) -> None:
    """Broken before: the org's refund rule and Acme's contract exception were listed as a plain
    contradiction, where recall resolves them by scope: the lead reads that Acme's applies."""
    row = page_text(fortnight["conflicts after"].text).split("Refund approval limit", 1)[1]
    assert "the project one applies where both do" in row[:800], row[:800]


def test_a_card_number_said_by_mistake_is_never_kept(fortnight, tmp_path) -> None:
    everything = json.dumps([e.payload for e in fortnight["events"]])
    assert CARD not in everything and CARD.replace(" ", "") not in everything
    assert fortnight["verdicts"].get(CARD_MEMO["content"]) is None  # not even the proposal's words
    refused = [v for v in fortnight["verdicts"].values() if v["proposal"]["title"] == CARD_MEMO["title"]]
    assert all(v["verdict"]["action"] == "reject" for v in refused), refused
    (test_turn,) = [e.payload["text"] for e in fortnight["events"] if e.kind == "turn" and "chargeback" in
                    e.payload["text"]]
    assert TEST_CARD not in everything and "[REDACTED]" in test_turn, test_turn
    failed, forgot = fortnight["forget card"]
    assert not failed, forgot
    sent = fortnight["ask"]["card"]
    assert "expires 12/28" not in sent and "6467" not in sent, sent
    out = tmp_path / "export.jsonl"
    with out.open("w") as handle:
        export_items(fortnight["settings"], handle)
    assert CARD not in out.read_text() and "0343 6467" not in out.read_text()


def test_the_lead_reviews_the_rule_change_and_its_history_reads_right(fortnight) -> None:
    edit = fortnight["ben edit"]
    assert edit["verdict"]["action"] == "quarantine", edit
    queue = page_text(fortnight["queue page"].text)
    assert POLICY_300 in queue and "ben" in queue, queue
    assert fortnight["approve"].status_code == 303, fortnight["approve"].text
    card = fortnight["policy card"]
    assert card.status_code == 200, card.text
    text = page_text(card.text)
    history = text.split("Revisions and audit events")[1]
    # both versions, who held it, who approved it and why
    assert "$500" in history and "$300" in history and "held for review" in history, history
    assert f"approved by lia (the edit by ben): '{APPROVE_NOTE}'" in history, history
    api = fortnight["policy api"].json()
    contents = [r["snapshot"]["content"] for r in api["revisions"] if r["actor"]]
    assert contents[0] == POLICY["content"] and contents[-1] == POLICY_300, api["revisions"]
    # the current rule reads $300 in every customer's chat; $500 not as what holds
    for name in ("acme refund", "globex refund"):
        assert "over $500" not in curated_part(fortnight["ask"][name]), fortnight["ask"][name]

