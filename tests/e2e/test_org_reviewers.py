"""Who decides what waits on org-wide memory, over every review door: with reviewers named for
org acme (`org_reviewers`: Olga), Ana, who sees Raj's held rewrite of the org's data-residency
rule, may not approve or reject it, through `POST /v1/tools`, the MCP `memory_review` tool or
the browser's /ui/quarantine form: a 403 naming who may, nothing decided, the refusal audited
(`online.review.review_refusal`, the one check). Olga approves it. A held project note is
anyone's to decide, as before; an org that names no reviewers keeps anyone-who-sees-it. The
queue (`GET /v1/review`, `memory.review.list`, the browser's) says whether the caller may
decide each item (`may_decide`): Ana is not offered the buttons (queue or card), she is told
who decides."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
from litestar.testing import TestClient
from mcp.client.client import Client as MCPClient

from online.app import create_app
from online.mcp_server import build_server
from pipelines.embedders import HashEmbedder
from pipelines.item_report import reads_of
from pipelines.records import Identity
from tests.assets.support import make_settings
from tests.e2e.chat import page_text, tool

OLGA, RAJ, ANA = ({"user_id": u, "project_id": "analytics", "session_id": f"{u}1", "org_id": "acme"}
                  for u in ("olga", "raj", "ana"))
ZED = {"user_id": "zed", "project_id": "p", "session_id": "z1", "org_id": "globex"}
RULE = {"type": "constraint", "title": "Customer data residency", "content": "All customer data stays in the EU.",
        "confidence": 0.9, "scope": "org"}


@pytest.fixture
def client(tmp_path) -> Iterator[TestClient]:
    settings = make_settings(tmp_path, org_reviewers={"acme": ["olga"]})
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        yield client
    assert app.state.internal_errors == 0


def mcp_review(client: TestClient, who: dict, args: dict) -> tuple[bool, dict]:
    async def call() -> tuple[bool, dict]:
        async with MCPClient(build_server(client.app.state.service, Identity(**who))) as agent:
            result = await agent.call_tool("memory_review", args)
            return bool(result.is_error), json.loads(result.content[0].text)
    return anyio.run(call)


def held_rewrite(client: TestClient, owner: dict, editor: dict) -> str:
    rule = tool(client, owner, "memory.write", {"item": RULE})
    out = tool(client, editor, "memory.update", {"id": rule["item_id"],
                                                 "patch": {"content": "Customer data may also go to the US."}})
    assert out["verdict"]["action"] == "quarantine", out  # someone else's org-wide rule: held
    return rule["item_id"]


def waiting(client: TestClient, who: dict) -> list[str]:
    return [e["id"] for e in client.get("/v1/review", params=who).json()["pending"]]


def test_only_the_orgs_reviewers_decide_what_waits_on_its_org_wide_memory_at_every_door(client) -> None:
    rule = held_rewrite(client, OLGA, RAJ)
    assert rule in waiting(client, ANA)  # she sees what waits
    said = "only the reviewers of org 'acme' (olga)"
    for decision in ("approve", "reject"):
        resp = client.post("/v1/tools", json={"action": "memory.review", "identity": ANA,
                                              "args": {"id": rule, "decision": decision}})
        assert resp.status_code == 403 and said in resp.json()["error"], resp.text
    failed, body = mcp_review(client, ANA, {"id": rule, "decision": "approve"})
    assert failed and said in json.dumps(body), body
    page = client.post(f"/ui/quarantine/{rule}", params=ANA, data={"decision": "approve"}, follow_redirects=False)
    assert page.status_code == 403 and said in page_text(page.text), page.text
    assert rule in waiting(client, OLGA)  # nothing was decided
    refused = [r for r in reads_of(client.app.state.service.settings, rule) if r["refused"]]  # `loci audit`'s
    assert [(r["user"], r["action"]) for r in refused] == [("ana", "memory.review")] * 4, refused
    out = tool(client, OLGA, "memory.review", {"id": rule, "decision": "approve"})
    assert out["decision"] == "approve" and rule not in waiting(client, OLGA), out


def test_a_project_note_and_an_org_naming_no_reviewers_are_decided_as_before(client) -> None:
    note = tool(client, RAJ, "memory.write", {"item": {"type": "fact", "title": "Replica", "scope": "project",
                                                      "content": "The replica might move to us-west-2.",
                                                      "confidence": 0.2}})
    assert note["verdict"]["action"] == "quarantine", note  # unsure: held
    assert tool(client, ANA, "memory.review", {"id": note["item_id"], "decision": "approve"})["decision"] == "approve"
    other = {**ZED, "user_id": "yan", "session_id": "y1"}
    rule = held_rewrite(client, ZED, other)
    assert tool(client, ZED, "memory.review", {"id": rule, "decision": "approve"})["decision"] == "approve"


def test_the_queue_says_who_may_decide_and_the_browser_offers_the_buttons_only_to_them(client) -> None:
    """`GET /v1/review` says per waiting item whether the caller may decide it (`may_decide`,
    and who may when not); the browser's queue hides approve/reject from a member who would
    be refused and says who may. Broken: Ana was offered the buttons, then told 403."""
    rule = held_rewrite(client, OLGA, RAJ)
    said = "only the reviewers of org 'acme' (olga)"
    entry = {who["user_id"]: next(e for e in client.get("/v1/review", params=who).json()["pending"] if e["id"] == rule)
             for who in (ANA, OLGA)}
    assert not entry["ana"]["may_decide"] and said in entry["ana"]["refusal"], entry["ana"]
    assert entry["olga"]["may_decide"] and entry["olga"]["refusal"] is None, entry["olga"]
    listed = tool(client, ANA, "memory.review.list", {})["pending"]  # the same list as an action
    assert [(e["id"], e["may_decide"]) for e in listed] == [(rule, False)], listed
    ana_page, olga_page = (client.get("/ui/quarantine", params=who).text for who in (ANA, OLGA))
    assert f'action="/ui/quarantine/{rule}' not in ana_page and said in page_text(ana_page), page_text(ana_page)
    assert f'action="/ui/quarantine/{rule}' in olga_page and said not in page_text(olga_page)
    ana_card, olga_card = (client.get(f"/ui/items/{rule}", params=who).text for who in (ANA, OLGA))  # its card
    assert f'action="/ui/quarantine/{rule}' not in ana_card and said in page_text(ana_card)
    assert f'action="/ui/quarantine/{rule}' in olga_card and said not in page_text(olga_card)
    note = tool(client, RAJ, "memory.write", {"item": {"type": "fact", "title": "Replica", "scope": "project",
                                                      "content": "The replica might move to us-west-2.",
                                                      "confidence": 0.2}})["item_id"]
    mine = {e["id"]: e["may_decide"] for e in client.get("/v1/review", params=ANA).json()["pending"]}
    assert mine == {rule: False, note: True}, mine  # a project note is anyone's who sees it
    assert f'action="/ui/quarantine/{note}' in client.get("/ui/quarantine", params=ANA).text
