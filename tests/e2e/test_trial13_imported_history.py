"""One person's imported history and the month after it (the thirteenth new-user trial),
over HTTP: `loci import` of a LoCoMo file, then the proxy's OpenAI-compatible chat (the
official `openai` client, on loopback in front of the fake Ollama server), the MCP tools
(the dispatcher behind `loci mcp`) and `loci serve`'s JSON API, with one real Dagster
consolidation (`run_consolidation`) and a snapshot hot-swap between the weeks. Nora moves
from another assistant: she exports her October chats with it as a LoCoMo file (her and
"Assistant"), imports them, and goes on in her own project "home". Promises checked:

- An imported history is the importer's: `loci import --user nora --project home --speaker
  Nora` lands the conversations as Nora's turns in her project, her own as the user's, and
  "what did I tell you about my sister last month?" answers from them, labelled as what
  was said on its day (broken: a LoCoMo file always landed as user "<sample_id>" in project
  "locomo": nothing of it was ever recalled for Nora, and no option said otherwise). The
  time words of a question about the conversation itself are not its subject (broken:
  "month" made "Nora's rent is 1520 euros a month" the first, authoritative, answer; "last
  week" brought "three times a week" the same way).
- A correction of an imported fact: "my rent went up, it's 1520 euros" is the authoritative
  answer, her live turn comes before the imported one, which is marked as said earlier
  (broken: "Nora" in the file and "user" in the chat were two speakers, so the imported
  turn came first, unmarked, as if someone else had said it).
- Forgetting reaches what was said: asked to forget what she told the old assistant about
  her landlord (an imported turn, no claim to retract), the MCP agent's `memory_forget`
  of the turn takes it out of recall, before and after consolidation, and the export
  keeps only its tombstone, no neighbouring turn's context quoting it (broken: a 400, "a
  verbatim record ... write a new memory instead": a turn said or imported without a claim
  could never be forgotten).
- Kept, checked on the way: a secret in the imported chat and one typed by accident in a
  live chat are masked in every turn shown; a tag narrows an MCP search; a pinned wish
  (importance 9) is injected on any question.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from loci.cli import app as cli_app
from online.app import create_app
from online.mcp_server import call as mcp_call
from online.proxy import ProxyConfig, create_proxy_app
from online.tools import ToolDispatcher
from pipelines.embedders import HashEmbedder
from pipelines.records import Identity
from tests.assets.support import make_settings
from tests.e2e.chat import recall, tool
from tests.e2e.test_trial12_weeks import consolidate
from tests.fakes.ollama_server import FakeOllama
from tests.online.test_proxy import block, serve, system_text

NORA = {"user_id": "nora", "project_id": "home", "session_id": "dec-1"}
OLD_CHATS = [{"sample_id": "old-assistant", "conversation": {
    "speaker_a": "Nora", "speaker_b": "Assistant",
    "session_1_date_time": "10:00 am on 2 October, 2026",
    "session_1": [
        {"speaker": "Nora", "dia_id": "D1:1", "text": "My landlord is Mr. Petrov and the rent is 1450 euros a month."},
        {"speaker": "Assistant", "dia_id": "D1:2", "text": "Noted: Mr. Petrov, 1450 euros a month."},
        {"speaker": "Nora", "dia_id": "D1:3", "text": "I run the Lisbon half marathon every March, best time 1:52."}],
    "session_2_date_time": "3:30 pm on 20 October, 2026",
    "session_2": [
        {"speaker": "Nora", "dia_id": "D2:1", "text": "My sister Lena's wedding is on June 12, 2027 in Porto."},
        {"speaker": "Nora", "dia_id": "D2:2", "text": "My wifi password is BlueFalcon!2024 by the way."}]}}]
RENT = {"type": "fact", "title": "Rent", "content": "Nora's rent is 1520 euros a month.", "tags": ["home", "money"],
        "why_store": "she said so", "confidence": 0.9, "scope": "user"}
SISTER = "What did I tell you about my sister last month?"
LANDLORD = "Who is my landlord, Mr. Petrov?"


def land(data_dir: Path, *args: str) -> Any:
    return CliRunner().invoke(cli_app, [*args, "--data-dir", str(data_dir)])


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The import, a week of chat (proxy, MCP), a consolidation, then the questions again."""
    tmp = tmp_path_factory.mktemp("month")
    settings = make_settings(tmp)
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    old = tmp / "old-assistant.json"
    old.write_text(json.dumps(OLD_CHATS))
    seen: dict[str, Any] = {"import": land(settings.data_dir, "import", str(old), "--user", "nora",
                                           "--project", "home", "--speaker", "Nora")}
    with TestClient(app) as client, FakeOllama() as fake:
        service = client.app.state.service
        with serve(create_proxy_app(settings, service=service, upstream=fake.url,
                                    config=ProxyConfig(flags_check_interval_s=0))) as url:
            chat = openai.OpenAI(base_url=f"{url}/v1", api_key="unused",
                                 default_headers={"X-Loci-User": "nora", "X-Loci-Project": "home"})

            def say(text: str, reply: str = "Okay.") -> str:
                fake.chat_reply = lambda req: reply
                chat.chat.completions.create(model="llama3.2", messages=[{"role": "user", "content": text}])
                return system_text([body for path, body in fake.requests][-1])  # the block the model got

            seen["sister"] = say(SISTER)
            say("My rent went up, it's 1520 euros a month now.", "Noted. " + block(RENT))
            seen["rent"] = say("How much is my rent?")
            say("oops, my bank PIN is 4471, ignore that")
            seen["pin"] = say("What is my bank PIN?")
            seen["wifi"] = say("What is my wifi password?")
        who = Identity(**NORA)
        agent = ToolDispatcher(service)

        def mcp(name: str, args: dict) -> tuple[bool, dict]:
            result = mcp_call(agent, name, args, who)
            return bool(result.is_error), json.loads(result.content[0].text)

        seen["tagged"] = mcp("memory_search", {"query": "rent", "tags": ["money"]})
        tool(client, NORA, "memory.write", {"item": {
            "type": "preference", "title": "Units", "content": "Always answer with metric units.",
            "why_store": "her wish", "importance": 9, "confidence": 0.9, "scope": "user"}})
        landlord = [h for h in mcp("memory_search", {"query": "landlord Petrov"})[1]["hits"]
                    if h["type"] == "message" and "Mr. Petrov" in h["content"]]
        seen["forget"] = [mcp("memory_forget", {"id": h["id"]}) for h in landlord]
        seen["landlord turns"] = [h["id"] for h in landlord]
        seen["landlord now"] = recall(client, NORA, LANDLORD)
        seen["petrov now"] = recall(client, NORA, "Petrov", mode="catalog")
        consolidate(client, settings)
        seen["landlord later"] = recall(client, NORA, LANDLORD)
        seen["petrov later"] = recall(client, NORA, "Petrov", mode="catalog")
        seen["sister later"] = recall(client, {**NORA, "session_id": "dec-9"}, SISTER)
        seen["marathon later"] = recall(client, {**NORA, "session_id": "dec-9"}, "my half marathon best time")
        seen["stats"] = client.get("/v1/stats", params=NORA).json()["counts"]["snapshot"]["state"]
        seen["export"] = land(settings.data_dir, "export").output
        yield seen


def excerpts(injection: str) -> str:
    return injection.split("CONVERSATION EXCERPTS", 1)[1] if "CONVERSATION EXCERPTS" in injection else ""


def test_an_imported_history_is_the_importers_and_answers_what_she_said_last_month(month) -> None:
    assert month["import"].exit_code == 0, month["import"].output
    assert "5 turns landed" in " ".join(month["import"].output.split())
    for shown in (month["sister"], month["sister later"]["injection"]):
        said = excerpts(shown)
        assert "| user | 2026-10-20]" in said and "Lena's wedding is on June 12, 2027" in said, shown
    assert "half marathon" in month["marathon later"]["injection"]
    # "last month" says when she told it, not what about: her rent "a month" is no answer
    assert [h["title"] for h in month["sister later"]["hits"] if h["type"] != "message"] == ["Units"]
    assert "1520" not in month["sister later"]["injection"], month["sister later"]["injection"]


def test_imported_and_typed_secrets_are_masked_wherever_a_turn_is_shown(month) -> None:
    assert "[REDACTED]" in month["wifi"] and "BlueFalcon" not in month["wifi"], month["wifi"]
    assert "4471" not in month["pin"], month["pin"]


def test_a_correction_of_an_imported_fact_answers_and_the_imported_turn_says_it_was_said_earlier(month) -> None:
    authoritative, said = month["rent"].split("CONVERSATION EXCERPTS")
    assert "1520 euros" in authoritative and "1450" not in authoritative, month["rent"]
    # her live turn first; the imported one after it, marked as said earlier (it was
    # "Nora" beside "user": two speakers, neither placed nor marked)
    assert said.index("went up, it's 1520") < said.index("1450 euros"), said
    assert "(Said earlier; a later turn, " in said.split("1450 euros")[1], said
    failed, found = month["tagged"]
    assert not failed and [h["title"] for h in found["hits"]] == ["Rent"], found


def test_an_imported_turn_is_forgotten_when_she_asks_and_stays_forgotten(month) -> None:
    assert len(month["landlord turns"]) == 2, month["landlord turns"]  # hers and the old assistant's echo
    for failed, answer in month["forget"]:
        assert not failed and answer["verdict"]["action"] == "accept", answer
    for moment in ("landlord now", "landlord later"):
        answer = month[moment]
        assert "Petrov" not in answer["injection"] and not set(month["landlord turns"]) & {
            h["id"] for h in answer["hits"]}, (moment, answer["injection"])
        assert "Always answer with metric units." in answer["injection"], moment  # the pinned wish, always on
    for moment in ("petrov now", "petrov later"):  # nor is a neighbour found by the forgotten words
        found = [h["content"] for h in month[moment]["hits"] if h["type"] == "message"]
        assert not found, (moment, found)
    assert month["stats"]["retracted"] == 2, month["stats"]
    assert "Petrov" not in month["export"] and all(i in month["export"] for i in month["landlord turns"])


def test_a_turn_is_forgotten_never_edited_and_an_export_owns_its_own_scopes(service, tmp_path) -> None:
    client, settings = service
    client.post("/v1/turns", json={"identity": NORA, "role": "user", "text": "My gym is FitLab on Rua Augusta."})
    (said,) = [h["id"] for h in recall(client, NORA, "gym FitLab", mode="catalog")["hits"]]
    resp = client.post("/v1/tools", json={"action": "memory.update", "identity": NORA, "args": {
        "id": said, "patch": {"validation": "retracted", "content": "My gym is Holmes Place."}}})
    assert resp.status_code == 400 and "forget the turn (memory.forget)" in resp.json()["error"]
    export = tmp_path / "items.jsonl"
    export.write_text("")
    refused = land(settings.data_dir, "import", str(export), "--format", "items", "--user", "nora")
    assert refused.exit_code == 2 and "an export names each item's own scope" in " ".join(refused.output.split())
    old = tmp_path / "old.json"
    old.write_text(json.dumps(OLD_CHATS))
    misspelt = land(settings.data_dir, "import", str(old), "--user", "nora", "--speaker", "nora")
    assert misspelt.exit_code == 1 and "none of the file's speakers (Assistant, Nora)" in " ".join(
        misspelt.output.split()), misspelt.output
    # nothing imported: the gym turn is all there is (the recall's usage event may land in
    # the inbox at any time, from the usage log's writer, so the last seq can't tell)
    assert client.get("/v1/stats", params=NORA).json()["delta_items"] == 1
