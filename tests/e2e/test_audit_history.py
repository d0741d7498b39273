"""Every change is a revision: the audit history a chat loop leaves behind, end to end.

Over HTTP (Litestar's test client, real SQLite inbox, real DuckDB warehouse, real FAISS
snapshot): Dana writes a project decision and a consolidation stores it. Between the next
two consolidations Dana and then Omar (same project) correct it through `memory.update`,
Omar files it elsewhere in the memory palace (`memory.palace.assign`), Eve (another
project) tries to change it and to move it, Omar tries to store a credential in it (the
policy refuses), a second decision is written and corrected before any consolidation, and
Dana retracts the first one (Loci never deletes: a retracted item stays, with its history,
and is never recalled). After the consolidation, the warehouse holds one revision and one
audit event per accepted change, each with its actor, inbox seq and the time it was asked
for; the four refused attempts are `refused` events that changed nothing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as loci_cli
from online.app import create_app
from pipelines.consolidate import consolidate_once
from pipelines.embedders import HashEmbedder
from pipelines.records import sha256_text
from pipelines.warehouse import Warehouse
from tests.assets.support import make_settings
from tests.e2e.chat import consolidate, page_text

DANA = {"user_id": "dana", "project_id": "orion", "session_id": "s1"}
OMAR = {"user_id": "omar", "project_id": "orion", "session_id": "s7"}
EVE = {"user_id": "eve", "project_id": "borealis", "session_id": "s2"}
CREDENTIAL = "AKIAIOSFODNN7EXAMPLE"


def tool(client: TestClient, who: dict[str, str], action: str, args: dict[str, Any]) -> tuple[int, dict]:
    response = client.post("/v1/tools", json={"action": action, "identity": who, "args": args})
    return response.status_code, response.json()


def write(client: TestClient, who: dict[str, str], title: str, content: str) -> str:
    status, body = tool(client, who, "memory.write", {
        "item": {"type": "decision", "title": title, "content": content, "scope": "project"}})
    assert status == 200 and body["result"]["verdict"]["action"] == "accept", body
    return body["result"]["item_id"]


def update(client: TestClient, who: dict[str, str], item_id: str, patch: dict[str, Any]) -> tuple[int, dict]:
    return tool(client, who, "memory.update", {"id": item_id, "patch": patch})


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = make_settings(tmp_path_factory.mktemp("audit"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    seqs: dict[str, int] = {}
    with TestClient(app) as client:
        telemetry = write(client, DANA, "Orion telemetry store", "Orion telemetry uses InfluxDB.")
        consolidate_once(settings)

        status, body = update(client, DANA, telemetry, {"content": "Orion telemetry uses TimescaleDB."})
        assert status == 200
        seqs["dana"] = body["result"]["seq"]
        status, body = update(client, OMAR, telemetry,
                              {"content": "Orion telemetry uses TimescaleDB 2.14.", "importance": 8})
        assert status == 200
        seqs["omar"] = body["result"]["seq"]
        status, body = tool(client, OMAR, "memory.palace.assign",
                            {"id": telemetry, "location": "orion/storage/databases"})
        assert status == 200, body
        seqs["assign"] = body["result"]["seq"]
        status, body = update(client, EVE, telemetry, {"content": "Orion telemetry uses SQLite."})
        assert status == 404  # invisible to Eve: answered exactly like an unknown id
        status, body = tool(client, EVE, "memory.palace.assign", {"id": telemetry, "location": "borealis/misc/stuff"})
        assert status == 404
        own = write(client, EVE, "Borealis storage", "Borealis telemetry uses ClickHouse.")
        status, body = tool(client, EVE, "memory.link", {"src_id": own, "dst_id": telemetry, "rel": "contradicts"})
        assert status == 404
        status, body = update(client, OMAR, telemetry, {"content": f"Orion telemetry key {CREDENTIAL}"})
        assert status == 422  # refused by the policy
        retention = write(client, OMAR, "Orion retention", "Orion keeps raw telemetry 30 days.")
        # (a teammate's edit that keeps the value: one to another value would be held for review)
        status, body = update(client, DANA, retention,
                              {"content": "Orion keeps raw telemetry 30 days, then deletes it."})
        assert status == 200
        seqs["retention"] = body["result"]["seq"]
        status, body = update(client, DANA, telemetry, {"validation": "retracted"})
        assert status == 200
        seqs["retract"] = body["result"]["seq"]
        consolidate_once(settings)
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return {
            "data_dir": str(settings.data_dir),
            "seqs": seqs,
            "telemetry": (wh.get_item(telemetry), wh.revisions(telemetry), wh.item_events(telemetry)),
            "retention": (wh.get_item(retention), wh.revisions(retention), wh.item_events(retention)),
        }


def test_each_accepted_change_is_its_own_revision_and_event(scenario) -> None:
    item, revisions, events = scenario["telemetry"]
    seqs = scenario["seqs"]
    changes = [r for r in revisions if r["inbox_seq"] is not None and r["reason"] != "create"]
    assert [(r["actor"], r["inbox_seq"], r["reason"], r["snapshot"]["content"], r["snapshot"]["validation"])
            for r in changes] == [
        ("dana", seqs["dana"], "inbox_update", "Orion telemetry uses TimescaleDB.", "unverified"),
        ("omar", seqs["omar"], "inbox_update", "Orion telemetry uses TimescaleDB 2.14.", "unverified"),
        ("omar", seqs["assign"], "palace_assign", "Orion telemetry uses TimescaleDB 2.14.", "unverified"),
        ("dana", seqs["retract"], "inbox_update", "Orion telemetry uses TimescaleDB 2.14.", "retracted"),
    ]
    assert changes[2]["snapshot"]["metadata"]["palace_pin"]["room"] == "storage"
    assert all(r["requested_at"] for r in changes)
    assert [r["requested_at"] for r in changes] == sorted(r["requested_at"] for r in changes)
    by_seq = {e["inbox_seq"]: e for e in events if e["action"] in ("update", "retract") and e["actor"]}
    assert [(e["action"], e["actor"]) for _, e in sorted(by_seq.items())] == [
        ("update", "dana"), ("update", "omar"), ("update", "omar"), ("retract", "dana")]
    for r in changes:  # the event of a change records the content that change wrote
        event = by_seq[r["inbox_seq"]]
        assert event["content_sha256"] == r["snapshot"]["content_hash"]
        assert event["requested_at"] == r["requested_at"]
    # The final value is the last change; the intermediate one is kept in history.
    assert item.content == "Orion telemetry uses TimescaleDB 2.14." and item.validation == "retracted"


def test_refused_attempts_are_audit_events_that_change_nothing(scenario) -> None:
    item, revisions, events = scenario["telemetry"]
    refused = [e for e in events if e["action"] == "refused"]
    assert [(e["actor"], e["details"]["attempted"]) for e in refused] == [
        ("eve", "memory.update"), ("eve", "memory.palace.assign"), ("eve", "memory.link"),
        ("omar", "memory.update")]
    assert all(e["inbox_seq"] is not None and e["requested_at"] for e in refused)
    assert {e["details"]["reason"] for e in refused} == {"not visible to the caller", "rejected by the policy"}
    # Content hashes at refusal time are the unchanged ones; no revision holds the attempts.
    assert all(e["content_sha256"] != sha256_text("") for e in refused)
    assert not any("SQLite" in r["snapshot"]["content"] or CREDENTIAL in r["snapshot"]["content"]
                   or "borealis" in str(r["snapshot"]["metadata"]) for r in revisions)
    assert CREDENTIAL not in str(events)


def test_an_item_created_and_changed_before_consolidation_keeps_both_values(scenario) -> None:
    item, revisions, events = scenario["retention"]
    asked = [r for r in revisions if r["actor"] is not None]  # not the pipeline's own revisions
    assert [(r["reason"], r["actor"], r["snapshot"]["content"]) for r in asked] == [
        ("create", "omar", "Orion keeps raw telemetry 30 days."),
        ("inbox_update", "dana", "Orion keeps raw telemetry 30 days, then deletes it."),
    ]
    assert asked[1]["inbox_seq"] == scenario["seqs"]["retention"]
    assert [(e["action"], e["actor"]) for e in events if e["actor"] and e["action"] != "refused"] == [
        ("create", "omar"), ("update", "dana")]
    assert item.content == "Orion keeps raw telemetry 30 days, then deletes it."


def test_loci_show_lists_each_change_on_one_line(scenario) -> None:
    item, revisions, events = scenario["telemetry"]
    seqs = scenario["seqs"]
    runner = CliRunner()
    shown = runner.invoke(loci_cli, ["show", item.id, "--data-dir", scenario["data_dir"]])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith(item.id) and "retracted" in lines[0]
    history = lines[lines.index("history (time UTC, actor, action, inbox seq, change):") + 1:]
    assert len(history) == len(events)  # one line per audit event, revisions folded in
    def line_of(seq: int) -> str:
        return next(line for line in history if f"#{seq} " in line)

    dana, omar, assign, retract = (line_of(seqs[k]) for k in ("dana", "omar", "assign", "retract"))
    assert " dana " in dana and " update " in dana
    assert "'Orion telemetry uses InfluxDB.' -> 'Orion telemetry uses TimescaleDB.'" in dana
    assert " omar " in omar and "importance: 5 -> 8" in omar
    assert " omar " in assign and "palace_assign" in assign and "orion/storage/databases" in assign
    assert " dana " in retract and " retract " in retract and "'unverified' -> 'retracted'" in retract
    refused = [line for line in history if " refused " in line]
    assert len(refused) == 4 and all("(nothing changed)" in line for line in refused)
    assert " eve " in refused[0] and "memory.update: not visible to the caller" in refused[0]
    assert " eve " in refused[1] and "memory.palace.assign: not visible to the caller" in refused[1]
    assert " eve " in refused[2] and "memory.link: not visible to the caller" in refused[2]
    assert " omar " in refused[3] and "rejected by the policy" in refused[3]
    assert CREDENTIAL not in shown.output

    raw = runner.invoke(loci_cli, ["show", item.id, "--json", "--data-dir", scenario["data_dir"]])
    assert raw.exit_code == 0, raw.output
    record = json.loads(raw.output)
    assert record["source"] == "warehouse" and record["item"]["id"] == item.id
    assert [r["revision_num"] for r in record["revisions"]] == [r["revision_num"] for r in revisions]
    assert [e["id"] for e in record["events"]] == [e["id"] for e in events]

    missing = runner.invoke(loci_cli, ["show", "mem_nothing", "--data-dir", scenario["data_dir"]])
    assert missing.exit_code == 1 and "no item mem_nothing" in missing.output


def test_loci_list_shows_whole_ids_that_loci_show_takes_on_a_narrow_terminal(scenario, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    item = scenario["retention"][0]
    listed = CliRunner().invoke(loci_cli, ["list", "--data-dir", scenario["data_dir"]])
    assert listed.exit_code == 0 and item.id in listed.output, listed.output
    shown = CliRunner().invoke(loci_cli, ["show", item.id, "--data-dir", scenario["data_dir"]])
    assert shown.exit_code == 0 and shown.output.startswith(item.id)


def test_loci_search_shows_whole_ids_that_loci_show_takes_on_a_narrow_terminal(scenario, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    item = scenario["retention"][0]
    found = CliRunner().invoke(loci_cli, ["search", "how long does orion keep raw telemetry?", "--user", "dana",
                                          "--project", "orion", "--data-dir", scenario["data_dir"]])
    assert found.exit_code == 0 and item.id in found.output, found.output


def test_loci_list_marks_a_retracted_item(scenario, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    telemetry, retention = scenario["telemetry"][0], scenario["retention"][0]
    listed = CliRunner().invoke(loci_cli, ["list", "--data-dir", scenario["data_dir"]])
    assert listed.exit_code == 0, listed.output
    line = {i.id: next(x for x in listed.output.splitlines() if i.id in x) for i in (telemetry, retention)}
    assert "retracted" in line[telemetry.id] and "retracted" not in line[retention.id], listed.output


def test_a_refused_review_by_a_same_named_user_of_another_org_shows_their_org(service) -> None:
    """Tom of globex tries to approve what waits on acme's claim (he cannot see it: refused,
    404); acme's history names him "tom (org globex)", not plain "tom", who in acme is someone
    else: on the browser's card and in `loci show`. Acme's own Tom stays plain "tom"."""
    client, settings = service
    acme_tom = {"user_id": "tom", "project_id": "atlas", "session_id": "t1", "org_id": "acme"}
    acme_raj = {**acme_tom, "user_id": "raj", "session_id": "r1"}
    globex_tom = {**acme_tom, "org_id": "globex", "session_id": "g1"}
    status, body = tool(client, acme_raj, "memory.write", {"item": {
        "type": "fact", "title": "Atlas replica", "content": "The atlas replica might move to us-west-2.",
        "confidence": 0.2, "scope": "project"}})
    assert status == 200 and body["result"]["verdict"]["action"] == "quarantine", body
    held = body["result"]["item_id"]
    status, body = tool(client, globex_tom, "memory.review", {"id": held, "decision": "approve"})
    assert status == 404, body
    consolidate(client, settings)
    card = page_text(client.get(f"/ui/items/{held}", params=acme_raj).text)
    assert "tom (org globex)" in card and "memory.review" in card, card[-1500:]
    shown = CliRunner().invoke(loci_cli, ["show", held, "--data-dir", str(settings.data_dir)])
    assert shown.exit_code == 0 and "tom (org globex)" in shown.output, shown.output
    status, body = tool(client, acme_tom, "memory.review", {"id": held, "decision": "approve"})
    assert status == 200, body
    consolidate(client, settings)
    card = page_text(client.get(f"/ui/items/{held}", params=acme_raj).text)
    assert "tom (org globex)" in card and "tom (org acme)" not in card, card
