"""A team lead's fortnight (the thirtieth new-user trial). Olga, the org admin of acme, states
an org-wide policy ("all customer data stays in the EU"); Tom leads the analytics project and
decides the analytics replica's region with Raj, his teammate, from their editors' agents over
MCP (the official `mcp` SDK client on `online.mcp_server.build_server`, over the service the
HTTP API serves), the memory browser (/ui) and the CLI (`loci show`, `loci audit`, `loci
export`). Every write is stamped by a simulated clock; consolidations run as the scheduled job
does. Promises checked, as a demanding user meets them:

- Recall ranks the scopes session > project > user > org: the project's decision comes before
  the org's policy, Tom's own preference between them (kept).
- The review queue over MCP: Tom lists what Raj's edits hold (kept) and decides them with a
  reason from his agent (broken: there was no MCP review tool; `memory_review` now decides one
  through the `memory.review` action, with its scope checks): Raj may not approve his own held
  edit, a member of another project or another org cannot see it to decide it (a 404 as for an
  unknown id), a second decision is a 409, a bad decision a tool error.
- Four versions of one decision (us-east-1 by Tom, eu-west-1 by Raj approved by Tom with a
  reason, eu-central-1 by Tom, eu-north-1 in other words as a new claim replacing it): the
  MCP search hit of the current one says what it replaced (broken: nothing said it), and
  every version, who, when and why is on `loci show`, `loci audit` and the browser card
  (broken: a review's approval showed a cut-off JSON blob, not who approved whose edit and
  why; `loci audit` listed reads only; the version replaced was dated by the first one's
  writing, day 1, though it came to say eu-central-1 on day 6).
- `loci export --type decision --all --history` gives the decision log, every version with
  who, when and why (broken: no type filter, no history in an export).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from litestar.testing import TestClient
from mcp.client.client import Client as MCPClient
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as loci_cli
from online.app import create_app
from online.mcp_server import build_server
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import make_settings, settings_env, shared_instance
from tests.e2e.chat import SimulatedClock, mcp, page_text

ORG, ANALYTICS = "acme", "analytics"
OLGA = {"user_id": "olga", "project_id": "it-admin", "session_id": "o1", "org_id": ORG}
TOM = {"user_id": "tom", "project_id": ANALYTICS, "session_id": "t1", "org_id": ORG}
RAJ = {"user_id": "raj", "project_id": ANALYTICS, "session_id": "r1", "org_id": ORG}
EVE = {"user_id": "eve", "project_id": "web", "session_id": "e1", "org_id": ORG}  # another project
MAL = {"user_id": "tom", "project_id": ANALYTICS, "session_id": "m1", "org_id": "globex"}  # another org
UTC = timezone.utc


def memo(type_: str, title: str, content: str, tags: list[str], why: str, scope: str = "project"
         ) -> dict[str, Any]:
    return {"type": type_, "title": title, "content": content, "tags": tags, "why_store": why,
            "confidence": 0.9, "scope": scope}


POLICY = memo("constraint", "Customer data residency", "All customer data stays in the EU.",
              ["policy", "data-residency"], "org-wide policy from legal", scope="org")
US_EAST = memo("decision", "Analytics replica region", "Use us-east-1 for the analytics replica.",
               ["decision", "infra"], "latency to the BI vendor")
PREFERENCE = memo("preference", "My sandbox region", "I prefer eu-west-1 for my own sandboxes and replica tests.",
                  ["preference"], "personal", scope="user")
EU_WEST = "Use eu-west-1 for the analytics replica."
EU_CENTRAL = "Use eu-central-1 for the analytics replica."
EU_NORTH = memo("decision", "Analytics replica location",
                "The analytics replica is moved to eu-north-1 instead of eu-central-1.",
                ["decision", "infra"], "cheaper storage in Stockholm")
US_WEST = memo("decision", "Analytics replica region", "Use us-west-2 for the analytics replica.",
               ["decision", "infra"], "the BI vendor moved to Oregon")
APPROVE_NOTE = "org policy: customer data stays in the EU"
REJECT_NOTE = "us-west-2 is outside the EU; see the residency policy"
REGION_Q = "Which region does the analytics replica use?"
# Asked so that each scope's memory answers it in words (the org's policy says nothing of a region).
SCOPES_Q = "Which region should the analytics replica use, and where must customer data stay?"




@pytest.fixture(scope="module")
def fortnight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("t30"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    start: date = datetime.now(UTC).date() - timedelta(days=14)
    clock = SimulatedClock(UTC)
    ids: dict[str, str] = {}
    seen: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch, TestClient(app) as client:
        clock.patch_into(patch)
        service = client.app.state.service

        def on(day: int, hour: int = 10) -> None:
            clock.at(start + timedelta(days=day), time(hour))

        def propose(name: str, who: dict, item: dict) -> dict:
            ((failed, body),) = mcp(service, who, ("memory_propose", {"items": [item]}))
            assert not failed, body
            (outcome,) = body["proposals"]
            ids[name] = outcome["item_id"]
            return outcome

        def consolidate() -> None:
            assert service.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            assert client.post("/v1/admin/reload").status_code == 200

        # Week 1: the org's policy, the project's decision, Tom's own preference.
        on(0)
        seen["policy"] = propose("policy", OLGA, POLICY)
        on(1)
        seen["us-east"] = propose("replica", TOM, US_EAST)
        seen["preference"] = propose("preference", TOM, PREFERENCE)
        on(2, 22)
        consolidate()
        on(3)
        seen["recall v1"] = client.post("/v1/recall", json={"query": SCOPES_Q, "identity": TOM})
        # Raj moves the replica to the EU (an edit of Tom's decision: held for review) and, in
        # his other chat, proposes another region under the same title (held: it contradicts Tom's).
        on(4)
        ((_, seen["raj edit"]),) = mcp(service, RAJ, ("memory_update", {"id": ids["replica"],
                                                                        "patch": {"content": EU_WEST}}))
        on(4, 11)
        seen["us-west"] = propose("us-west", RAJ, US_WEST)
        # Day 5: Tom goes through the queue from his agent.
        on(5)
        seen["queue"] = {name: mcp(service, who, ("memory_review_list", {}))[0]
                         for name, who in (("tom", TOM), ("eve", EVE), ("mal", MAL))}
        seen["tools"] = anyio.run(_listed_tools, service)
        seen["review as raj"] = mcp(service, RAJ, ("memory_review", {"id": ids["replica"], "decision": "approve"}))[0]
        seen["review as eve"] = mcp(service, EVE, ("memory_review", {"id": ids["replica"], "decision": "approve"}))[0]
        seen["review as mal"] = mcp(service, MAL, ("memory_review", {"id": ids["replica"], "decision": "approve"}))[0]
        # Tom's own preference (user scope) is his alone: to Raj as an unknown id, not "nothing waits".
        seen["review of tom's own"] = mcp(service, RAJ, ("memory_review", {"id": ids["preference"],
                                                                         "decision": "reject"}))[0]
        seen["bad reviews"] = mcp(service, TOM, *[
            ("memory_review", {"id": ids["replica"], "decision": "maybe"}),
            ("memory_review", {"id": ids["replica"]}),
            ("memory_review", {"id": ids["replica"], "decision": "approve", "note": "x" * 2001}),
            ("memory_review", {"id": "no-such-id", "decision": "reject"}),
            ("memory_review", {"id": ids["policy"], "decision": "approve"}),  # nothing waits on it
        ])
        on(5, 10)
        ((_, seen["approve"]), (_, seen["reject"])) = mcp(
            service, TOM, ("memory_review", {"id": ids["replica"], "decision": "approve", "note": APPROVE_NOTE}),
            ("memory_review", {"id": ids["us-west"], "decision": "reject", "note": REJECT_NOTE}))
        seen["twice"] = mcp(service, TOM, ("memory_review", {"id": ids["us-west"], "decision": "approve"}))[0]
        seen["queue after"] = mcp(service, TOM, ("memory_review_list", {}))[0]
        # Day 6: Tom narrows it to Frankfurt (his correction of what he approved: applied at once).
        on(6)
        ((_, seen["tom edit"]),) = mcp(service, TOM, ("memory_update", {"id": ids["replica"],
                                                                        "patch": {"content": EU_CENTRAL}}))
        on(7, 22)
        consolidate()
        # Day 8: in other words, a new claim replacing it (Tom's own correction).
        on(8)
        seen["eu-north"] = propose("eu-north", TOM, EU_NORTH)
        on(9, 22)
        consolidate()

        on(10)
        seen["search"] = {name: mcp(service, who, ("memory_search", {"query": REGION_Q}))[0]
                          for name, who in (("tom", TOM), ("raj", RAJ), ("eve", EVE))}
        seen["recall"] = client.post("/v1/recall", json={"query": REGION_Q, "identity": TOM})
        seen["read replaced"] = mcp(service, TOM, ("memory_read", {"ids": [ids["replica"]]}))[0]
        seen["items api"] = client.get(f"/v1/items/{ids['replica']}", params=TOM)
        seen["card"] = client.get(f"/ui/items/{quote(ids['replica'])}", params=TOM)
        seen["current card"] = client.get(f"/ui/items/{quote(ids['eu-north'])}", params=TOM)
        runner = CliRunner(env=settings_env(settings))
        data_dir = str(settings.data_dir)
        seen["show"] = runner.invoke(loci_cli, ["show", ids["replica"], "--data-dir", data_dir])
        seen["show current"] = runner.invoke(loci_cli, ["show", ids["eu-north"], "--data-dir", data_dir])
        seen["audit"] = runner.invoke(loci_cli, ["audit", ids["replica"], "--data-dir", data_dir])
        seen["export"] = {name: runner.invoke(loci_cli, ["export", "--data-dir", data_dir, *args]) for name, args in [
            ("decisions", ["--user", "tom", "--project", ANALYTICS, "--org", ORG, "--type", "decision"]),
            ("decision log", ["--user", "tom", "--project", ANALYTICS, "--org", ORG, "--type", "decision", "--all",
                              "--history"]),
            ("eve", ["--user", "eve", "--project", "web", "--org", ORG, "--type", "decision"]),
            ("bad type", ["--type", "meeting"]),
        ]}
        yield {"ids": ids, "seen": seen, "start": start}
    assert app.state.internal_errors == 0


async def _listed_tools(service: Any) -> dict[str, Any]:
    async with MCPClient(build_server(service, Identity(**TOM))) as agent:
        return {tool.name: tool for tool in (await agent.list_tools()).tools}


def hit_ids(body: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in body["hits"]]


def test_recall_puts_the_project_decision_before_the_org_policy(fortnight) -> None:
    ids, seen = fortnight["ids"], fortnight["seen"]
    assert seen["policy"]["action"] == seen["us-east"]["action"] == "accept"
    resp = seen["recall v1"]
    assert resp.status_code == 200, resp.text
    order = hit_ids(resp.json())
    # The project's decision first; the org's policy and Tom's preference (other needs) shown too.
    assert order[0] == ids["replica"] and {ids["policy"], ids["preference"]} <= set(order), order
    # Raj sees the project's decision, not Tom's preference; Eve (web) sees neither of the project's.
    raj, eve = (seen["search"][name][1] for name in ("raj", "eve"))
    assert ids["preference"] not in hit_ids(raj) and ids["eu-north"] in hit_ids(raj)
    assert ids["eu-north"] not in hit_ids(eve) and ids["replica"] not in hit_ids(eve)


def test_the_review_queue_is_decided_from_the_agent_with_a_reason(fortnight) -> None:
    ids, seen = fortnight["ids"], fortnight["seen"]
    assert seen["raj edit"]["verdict"]["action"] == "quarantine" and seen["us-west"]["action"] == "quarantine"
    failed, queue = seen["queue"]["tom"]
    assert not failed
    pending = {p["id"]: p for p in queue["pending"]}
    assert pending[ids["replica"]]["kind"] == "edit" and pending[ids["replica"]]["proposed_by"] == "raj"
    assert pending[ids["replica"]]["new_content"] == EU_WEST
    assert pending[ids["us-west"]]["kind"] == "proposal"
    # Another project's member and another org's see nothing of analytics's queue.
    assert seen["queue"]["eve"][1]["count"] == 0 and seen["queue"]["mal"][1]["count"] == 0
    tools = seen["tools"]
    assert "memory_review" in tools, sorted(tools)
    schema = tools["memory_review"].input_schema
    assert set(schema["required"]) == {"id", "decision"} and schema["additionalProperties"] is False
    assert tools["memory_review"].annotations.destructive_hint is True
    assert "memory_review" in tools["memory_review_list"].description  # the list says how to decide
    # Raj may not approve his own held edit; Eve and Mal cannot see it: as for an unknown id.
    failed, body = seen["review as raj"]
    assert failed and body["status"] == 409 and "its editor cannot approve it" in body["error"], body
    for name in ("review as eve", "review as mal", "review of tom's own"):
        failed, body = seen[name]
        assert failed and body["status"] == 404, (name, body)
    statuses = [(failed, body.get("status")) for failed, body in seen["bad reviews"]]
    assert statuses == [(True, 400), (True, 400), (True, 400), (True, 404), (True, 409)], seen["bad reviews"]
    # Tom's decisions: the edit applied, the other region rejected, each with his reason.
    assert seen["approve"]["decision"] == "approve" and seen["approve"]["verdict"]["action"] == "accept"
    assert seen["reject"]["decision"] == "reject"
    failed, twice = seen["twice"]
    assert failed and twice["status"] == 409
    assert seen["queue after"][1]["count"] == 0
    assert seen["tom edit"]["verdict"]["action"] == "accept"


def test_the_current_decision_says_what_it_replaced(fortnight) -> None:
    ids, seen = fortnight["ids"], fortnight["seen"]
    assert seen["eu-north"]["action"] == "accept" and ids["replica"] in seen["eu-north"]["supersedes"]
    failed, body = seen["search"]["tom"]
    assert not failed
    hits = {h["id"]: h for h in body["hits"]}
    assert ids["replica"] not in hits and ids["us-west"] not in hits
    current = hits[ids["eu-north"]]
    (replaced,) = current["replaced"]
    # Its id, title, who and when; not its words (they would read as evidence): memory_read gives them.
    assert replaced["id"] == ids["replica"] and replaced["title"] == US_EAST["title"] and "content" not in replaced
    assert EU_CENTRAL not in json.dumps(body)
    failed, read = seen["read replaced"]
    assert not failed and read["replaced"][0]["content"] == EU_CENTRAL and read["superseded_by"] == {
        ids["replica"]: ids["eu-north"]}
    day8 = (fortnight["start"] + timedelta(days=8)).isoformat()
    assert replaced["by"] == "tom" and replaced["replaced_at"][:10] == day8


def test_every_version_who_when_and_why(fortnight) -> None:
    ids, seen, start = fortnight["ids"], fortnight["seen"], fortnight["start"]

    def day(n: int) -> str:
        return (start + timedelta(days=n)).isoformat()

    shown = seen["show"]
    assert shown.exit_code == 0, shown.output
    history = shown.output.split("history")[1]
    lines = [ln for ln in history.splitlines() if "pipeline" not in ln]
    created = next(ln for ln in lines if " create " in ln)
    assert day(1) in created and "tom" in created and "latency to the BI vendor" in created
    held = next(ln for ln in lines if "raj" in ln)
    assert day(4) in held and "held for review" in held and EU_WEST in held, held
    approved = next(ln for ln in lines if "review_approve" in ln)
    assert day(5) in approved and "by raj" in approved and APPROVE_NOTE in approved, approved
    edited = next(ln for ln in lines if "#" in ln and day(6) in ln)
    assert "tom" in edited and "eu-central-1" in edited
    assert f"superseded by {ids['eu-north']}" in shown.output
    # The browser card says the same.
    card = seen["card"]
    assert card.status_code == 200
    text = page_text(card.text)
    assert APPROVE_NOTE in text and "held for review" in text and EU_WEST in text
    assert "metadata.review" not in text and "metadata.held_edit" not in text
    # The current decision's card and `loci show` list the version it replaced, dated by when
    # it came to say that (Tom's edit of day 6), not by when the first version was written.
    current = page_text(seen["current card"].text).split("Replaced earlier versions")[1]
    assert EU_CENTRAL in current and day(6) in current and day(1) not in current, current
    (line,) = [ln for ln in seen["show current"].output.split("replaced earlier versions")[1].splitlines()
               if ids["replica"] in ln]
    assert day(6) in line and "tom" in line and "eu-central-1" in line, line
    # The items API: each revision as stored, the reviewer and the note on the approval.
    api = seen["items api"].json()
    assert [r["snapshot"]["content"] for r in api["revisions"] if r["actor"]] == \
        [US_EAST["content"], US_EAST["content"], EU_WEST, EU_CENTRAL, EU_CENTRAL], api["revisions"]
    # `loci audit`: the changes by people (not the pipeline's), then who was shown it.
    audit = seen["audit"]
    assert audit.exit_code == 0, audit.output
    changes, reads = audit.output.split("reads of")
    assert f"approved by tom (the edit by raj): {APPROVE_NOTE!r}" in changes and "pipeline" not in changes
    assert "latency to the BI vendor" in changes and EU_WEST in changes
    assert "refused" not in changes  # the refused attempts are among the reads, with the caller's org
    assert "memory.review.list" in reads and "items.get" in reads
    (other_org,) = [line for line in reads.splitlines() if "globex" in line]
    assert "REFUSED: not visible to the caller" in other_org


def test_the_decision_log_exports(fortnight) -> None:
    ids, seen = fortnight["ids"], fortnight["seen"]
    for name in ("decisions", "decision log", "eve"):
        assert seen["export"][name].exit_code == 0, (name, seen["export"][name].output)
    decisions = [json.loads(line) for line in seen["export"]["decisions"].stdout.splitlines()]
    assert {d["type"] for d in decisions} == {"decision"}
    # The current decision; the rejected one only as its tombstone (no text), as every export leaves it.
    assert {d["id"] for d in decisions if d["content"]} == {ids["eu-north"]}
    assert {d["id"] for d in decisions if not d["content"]} == {ids["us-west"]}
    lines = seen["export"]["decision log"].stdout.splitlines()
    log = {d["item"]["id"]: d for d in map(json.loads, lines)}
    assert {ids["eu-north"], ids["replica"], ids["us-west"]} <= set(log)
    assert ids["policy"] not in log
    # Every version of the replica's decision: who, when, what it said, why.
    versions = [(v["by"], v["at"][:10], v.get("content"), v["change"]) for v in log[ids["replica"]]["history"]
                if v["action"].split()[0] in ("create", "update") and "held for review" not in v["change"]]
    day = [(fortnight["start"] + timedelta(days=n)).isoformat() for n in range(10)]
    assert [v[:3] for v in versions] == [("tom", day[1], US_EAST["content"]), ("tom", day[5], EU_WEST),
                                         ("tom", day[6], EU_CENTRAL)], versions
    assert "latency to the BI vendor" in versions[0][3] and APPROVE_NOTE in versions[1][3]
    assert "by raj" in versions[1][3]
    (held,) = [v for v in log[ids["replica"]]["history"] if "held for review" in v["change"]]
    assert held["by"] == "raj" and held["at"][:10] == day[4] and EU_WEST in held["change"]
    (replaced,) = [v for v in log[ids["replica"]]["history"] if v["action"].startswith("supersede")]
    assert replaced["by"] == "tom" and ids["eu-north"] in replaced["change"]
    (rejected,) = [v for v in log[ids["us-west"]]["history"] if "review_reject" in v["action"]]
    assert rejected["by"] == "tom" and REJECT_NOTE in rejected["change"]
    assert seen["export"]["eve"].stdout.strip() == ""
    bad = seen["export"]["bad type"]
    assert bad.exit_code == 2 and "decision" in bad.output
