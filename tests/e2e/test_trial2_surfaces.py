"""Promises a demanding new user checks on the surfaces around the chat loop: the command
line, the OpenAI-compatible and Ollama proxy, the MCP tools and the memory browser, and a
few days of writing, correcting, retracting and consolidating.

- The CLI: a wrong argument is a one-line `error:` and exit code 2, never a traceback, and an
  empty identity part is refused as in every API body.
- Nothing acknowledged is lost: a turn id sent again is a retry only with the same caller,
  role, words, speaker and proposals (tool calls, default scope); a different turn under a taken id
  is a 409 (an ingested row: named and skipped), never a 201 for a turn and proposals the
  inbox silently dropped; also when the requests race (one 201, the rest 409).
- A model's proposal whose JSON (or Python literal) escapes spell a lone surrogate is a parse
  error of that proposal, not a 500 for the whole turn.
- A validity window that ends before it starts is bad input (a 400 naming both ends), in a
  write and in an update (also one setting one end against the stored other); in a model's
  proposal (lenient by design) such a window, or a bound that is no time ("next week"), is
  dropped with a parse note, never stored and shown as `VALID=next week..`.
- `loci show` lists every change: those since the last consolidation too (who, when, inbox
  seq, marked pending), not "no history yet" or only the last consolidated state.
- Retraction is final: no `memory.update` (a validation of "verified", new content) brings a
  retracted memory back into recall; it is a 409 and the item stays retracted.
- Quarantine holds until a reviewer decides: an update raising the confidence (or setting
  "verified") of a quarantined memory is a 409 naming memory.review, not an approval that
  skips the review while the item still sits in the queue.
- Scope priority: on one subject the session claim comes first, also when it has its own
  title and shares fewer words with the question than the broader claims it overrides.
- A `supersedes` link retires nothing that was said and is not a way around the review.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from pipelines.consolidate import consolidate_once

DANA = {"user_id": "dana", "project_id": "atlas", "session_id": "s1", "org_id": "acme"}


def tool(client: TestClient, who: dict, action: str, args: dict) -> dict:
    body = client.post("/v1/tools", json={"action": action, "identity": who, "args": args}).json()
    assert body["ok"], body
    return body["result"]


def write(client: TestClient, who: dict, scope: str, title: str, content: str, **extra) -> str:
    item = {"type": "fact", "title": title, "content": content, "scope": scope, "why_store": "stated", **extra}
    result = tool(client, who, "memory.write", {"item": item})
    assert result["verdict"]["action"] == "accept", result
    return result["item_id"]


def injected_ids(client: TestClient, who: dict, query: str) -> list[str]:
    resp = client.post("/v1/recall", json={"identity": who, "query": query, "mode": "inject"})
    assert resp.status_code == 200, resp.text
    return re.findall(r"\[MEMORY: (\S+) ", resp.json()["injection"])


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no loci.toml of the working tree
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    monkeypatch.setenv("LOCI_MERGER", "extractive")
    return tmp_path / "data"


@pytest.mark.parametrize(("args", "message"), [
    (["--mode", "bogus"], "mode must be one of"),
    (["--k", "0"], "k must be a positive integer"),
    (["--user", ""], "identity"),
    (["--org", "  "], "identity"),
])
def test_loci_search_refuses_a_wrong_argument_with_a_message(data_dir: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli_app, ["search", "tile cache", *args, "--data-dir", str(data_dir)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and message in result.output
    assert "Traceback" not in result.output


def test_a_session_claim_under_its_own_title_comes_before_the_broader_ones(service) -> None:
    client, _ = service
    org = write(client, DANA, "org", "Standup time", "The daily standup is at 09:00.")
    user = write(client, DANA, "user", "Standup time", "The daily standup is at 10:00.")
    session = write(client, DANA, "session", "Standup moved", "The daily standup is at 11:00.")
    assert injected_ids(client, DANA, "what time is the standup?") == [session, user, org]


def test_a_turn_id_taken_by_another_turn_is_a_conflict_not_a_silent_drop(service) -> None:
    client, _ = service
    said = {"identity": DANA, "role": "assistant", "turn_id": "t1",
            "text": 'Noted. memory_save(topic="Lab door", content="The lab door opens with the blue badge.")'}
    first = client.post("/v1/turns", json=said)
    assert first.status_code == 201, first.text
    retry = client.post("/v1/turns", json=said)
    assert retry.status_code == 201 and retry.json()["seq"] == first.json()["seq"]
    other_words = {**said, "text": 'Also memory_save(topic="Parking", content="Visitors park on level 2.")'}
    other_caller = {**said, "identity": {**DANA, "user_id": "mike"}}
    call = {"function": {"name": "memory.propose", "arguments": {"items": [
        {"type": "fact", "title": "Parking", "content": "Visitors park on level 2."}]}}}
    other_calls = {**said, "tool_calls": [call]}
    for body in (other_words, other_caller, {**said, "role": "user"}, other_calls, {**said, "default_scope": "org"},
                 {**said, "speaker": "Mike"}):
        resp = client.post("/v1/turns", json=body)
        assert resp.status_code == 409 and "turn_id 't1'" in resp.json()["error"], resp.text
    assert "landed before without a speaker" in resp.json()["error"], resp.text  # how it landed, named
    hits = client.post("/v1/recall", json={"identity": DANA, "query": "where do visitors park?",
                                           "mode": "catalog"}).json()["hits"]
    assert all("level 2" not in h["content"] for h in hits)


def test_one_turn_id_sent_by_several_callers_at_once_lands_once(service) -> None:
    """Concurrent requests racing for one turn id: one 201, every other a 409, and what
    the inbox holds is the acknowledged turn (the check runs under the inbox's write lock)."""
    from concurrent.futures import ThreadPoolExecutor

    client, _ = service

    def send(n: int):
        return n, client.post("/v1/turns", json={"identity": DANA, "role": "user", "turn_id": "race",
                                                 "text": f"The badge number is {n}00."})

    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(send, range(8)))
    codes = sorted(resp.status_code for _, resp in answers)
    assert codes == [201] + [409] * 7, [r.text for _, r in answers]
    winner = next(n for n, resp in answers if resp.status_code == 201)
    hits = client.post("/v1/recall", json={"identity": DANA, "query": "what is the badge number?",
                                           "mode": "catalog"}).json()["hits"]
    assert [h["content"] for h in hits if "badge number" in h["content"]] == [f"The badge number is {winner}00."]


def test_ingest_names_a_row_whose_turn_id_another_row_took(data_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text('{"role": "user", "text": "The kiln fires on Fridays.", "turn_id": "1"}\n'
                    '{"role": "user", "text": "Glaze orders go out on Mondays.", "turn_id": "1"}\n', encoding="utf-8")
    result = CliRunner().invoke(cli_app, ["ingest", str(path), "--data-dir", str(data_dir)])
    assert result.exit_code == 1, result.output
    assert "line 2: turn_id '1' is already taken by another turn" in " ".join(result.output.split())


@pytest.mark.parametrize("said", [
    'Noted. <MEMORY_PROPOSALS_JSON>[{"type": "fact", "title": "Lab \\ud800", "content": "Badge."}]'
    '</MEMORY_PROPOSALS_JSON>',
    "Noted. memory_save(topic='Lab', content='Badge \\udfff here')",
])
def test_a_proposal_escaping_a_lone_surrogate_is_a_parse_error_not_a_500(service, said: str) -> None:
    client, _ = service
    resp = client.post("/v1/turns", json={"identity": DANA, "role": "assistant", "text": said})
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["proposals"] == [] and "lone surrogate" in body["parse_errors"][0]["message"]
    assert body["visible_text"] == "Noted."


@pytest.mark.parametrize(("action", "args"), [
    ("memory.write", {"item": {"type": "fact", "title": "Code freeze", "content": "Code freeze for the release.",
                               "scope": "project", "valid_from": "2026-03-01", "valid_to": "2026-02-01"}}),
    ("memory.update", {"id": "{id}", "patch": {"valid_from": "2026-03-01T00:00:00Z", "valid_to": "2026-02-01"}}),
    ("memory.update", {"id": "{id}", "patch": {"valid_to": "2026-02-01"}}),
])
def test_a_validity_window_that_ends_before_it_starts_is_a_400(service, action: str, args: dict) -> None:
    client, _ = service
    held = write(client, DANA, "project", "On call", "Ana is on call this week.", valid_from="2026-03-01")
    if action == "memory.update":
        args = {**args, "id": held}
    resp = client.post("/v1/tools", json={"action": action, "identity": DANA, "args": args})
    assert resp.status_code == 400, resp.text
    assert "valid_to '2026-02-01' is before valid_from '2026-03-01" in resp.json()["error"]


@pytest.mark.parametrize(("window", "note"), [
    ({"valid_from": "next week", "valid_to": "2026-06-01"}, "valid_from 'next week' is not an ISO-8601 time"),
    ({"valid_from": "2026-06-10", "valid_to": "2026-06-01"}, "valid_to '2026-06-01' is before valid_from"),
])
def test_a_proposed_window_that_is_no_time_is_dropped_with_a_note(service, window: dict, note: str) -> None:
    client, _ = service
    item = {"type": "fact", "title": "Oslo trip", "content": "The team trip goes to Oslo.", **window}
    said = "Noted. <MEMORY_PROPOSALS_JSON>" + json.dumps([item]) + "</MEMORY_PROPOSALS_JSON>"
    body = client.post("/v1/turns", json={"identity": DANA, "role": "assistant", "text": said}).json()
    (verdict,) = body["proposals"]
    assert verdict["action"] == "accept" and note in body["parse_errors"][0]["message"]
    stored = client.get(f"/v1/items/{verdict['item_id']}", params=DANA).json()["item"]
    assert stored["valid_from"] is None and stored["valid_to"] is None
    resp = client.post("/v1/recall", json={"identity": DANA, "query": "where does the team trip go?", "mode": "inject"})
    assert "The team trip goes to Oslo." in resp.json()["injection"] and "VALID=" not in resp.json()["injection"]


def test_loci_show_lists_the_changes_made_since_the_last_consolidation(service, monkeypatch) -> None:
    client, settings = service
    monkeypatch.setenv("LOCI_EMBEDDER", "hash")
    mike = {**DANA, "user_id": "mike", "session_id": "s7"}

    def show(item_id: str) -> str:
        result = CliRunner().invoke(cli_app, ["show", item_id, "--data-dir", str(settings.data_dir)])
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())

    held = write(client, DANA, "project", "Release day", "Releases ship on Tuesday.")
    assert "dana memory.write (pending) #1 verdict accept" in show(held)
    consolidate_once(settings)
    tool(client, mike, "memory.update", {"id": held, "patch": {"content": "Releases ship on Tuesday, after QA."}})
    tool(client, DANA, "memory.update", {"id": held, "patch": {"validation": "retracted"}})
    shown = show(held)
    assert "dana create #1" in shown
    # Said as the consolidated revision will say it: from what was stored to the new value.
    assert "mike memory.update (pending) #2 content: 'Releases ship on Tuesday.' -> " \
           "'Releases ship on Tuesday, after QA.'" in shown
    assert "dana memory.update (pending) #3 validation: 'unverified' -> 'retracted'" in shown
    consolidate_once(settings)
    shown = show(held)
    assert "mike update #2 content: 'Releases ship on Tuesday.' -> 'Releases ship on Tuesday, after QA.'" in shown
    assert "dana retract #3" in shown and "(pending)" not in shown


@pytest.mark.parametrize("patch", [{"validation": "verified"}, {"content": "The guest wifi is Atlas-Visitors."}])
def test_a_retracted_memory_is_not_revived_by_an_update(service, patch: dict) -> None:
    client, settings = service
    mike = {**DANA, "user_id": "mike", "session_id": "s7"}
    held = write(client, DANA, "project", "Guest wifi", "The guest wifi is Atlas-Guest.")
    tool(client, DANA, "memory.update", {"id": held, "patch": {"validation": "retracted"}})
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    resp = client.post("/v1/tools", json={"action": "memory.update", "identity": mike,
                                          "args": {"id": held, "patch": patch}})
    assert resp.status_code == 409 and "retracted" in resp.json()["error"], resp.text
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    assert injected_ids(client, DANA, "what is the guest wifi called?") == []
    assert client.get(f"/v1/items/{held}", params=DANA).json()["item"]["validation"] == "retracted"


@pytest.mark.parametrize("patch", [{"confidence": 1.0}, {"validation": "verified"}])
def test_an_update_does_not_lift_a_quarantine_past_the_review(service, patch: dict) -> None:
    client, _ = service
    item = {"type": "fact", "title": "Guest wifi", "content": "The guest wifi is Atlas-Guest.", "scope": "project",
            "confidence": 0.2}
    held = tool(client, DANA, "memory.write", {"item": item})
    assert held["verdict"]["action"] == "quarantine"
    resp = client.post("/v1/tools", json={"action": "memory.update", "identity": DANA,
                                          "args": {"id": held["item_id"], "patch": patch}})
    assert resp.status_code == 409 and "memory.review" in resp.json()["error"], resp.text
    assert injected_ids(client, DANA, "what is the guest wifi called?") == []
    tool(client, DANA, "memory.review", {"id": held["item_id"], "decision": "approve"})
    assert injected_ids(client, DANA, "what is the guest wifi called?") == [held["item_id"]]


def test_a_locomo_file_reusing_a_dia_id_names_the_turn_and_keeps_the_rest(data_dir: Path, tmp_path: Path) -> None:
    turns = [{"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
             {"speaker": "Bo", "dia_id": "D1:1", "text": "What is its name?"},
             {"speaker": "Ann", "dia_id": "D1:2", "text": "Miso."}]
    sample = {"sample_id": "s1", "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1": turns,
                                                  "session_1_date_time": "1:56 pm on 8 May, 2023"}}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    result = CliRunner().invoke(cli_app, ["ingest", str(path), "--format", "locomo", "--data-dir", str(data_dir)])
    assert result.exit_code == 1, result.output
    said = " ".join(result.output.split())
    assert "turn 1: dia_id 'D1:1' names an earlier, different turn" in said and "2 turns landed" in said


def test_a_link_does_not_retire_what_was_said_nor_skip_the_review(service) -> None:
    """`supersedes` retires its target. A verbatim turn is a record of what was said: it is
    neither retired by a link nor retires a memory (a correction is a memory.write); and a
    memory held for review supersedes nothing until a reviewer approves it. Each is a 409,
    and after consolidation both ends are still recalled as before."""
    client, settings = service
    said = client.post("/v1/turns", json={"identity": DANA, "role": "user",
                                          "text": "The guest wifi password changes every Monday."})
    assert said.status_code == 201, said.text
    hits = client.post("/v1/recall", json={"identity": DANA, "query": "guest wifi password",
                                           "mode": "catalog"}).json()["hits"]
    turn = next(h["id"] for h in hits if h["type"] == "message")
    rule = write(client, DANA, "project", "Wifi password rotation", "The guest wifi password rotates weekly.")
    held = tool(client, DANA, "memory.write", {"item": {"type": "fact", "title": "Wifi password rotation",
                                                         "content": "The guest wifi password never rotates.",
                                                         "scope": "project", "confidence": 0.2}})
    assert held["verdict"]["action"] == "quarantine"
    for src, dst, why in [(rule, turn, "what was said"), (turn, rule, "memory.write"),
                          (held["item_id"], rule, "memory.review")]:
        resp = client.post("/v1/tools", json={"action": "memory.link", "identity": DANA,
                                              "args": {"src_id": src, "dst_id": dst, "rel": "supersedes"}})
        assert resp.status_code == 409 and why in resp.json()["error"], resp.text
    assert tool(client, DANA, "memory.link", {"src_id": rule, "dst_id": turn, "rel": "derived_from"})["seq"]
    consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    for item_id in (turn, rule):
        item = client.get(f"/v1/items/{item_id}", params=DANA).json()["item"]
        assert item["superseded_by"] is None and item["archived"] is False, item
