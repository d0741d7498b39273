"""A small team's three weeks (the twelfth new-user trial), over HTTP (Litestar's TestClient
against `loci serve`'s app) with a real Dagster consolidation run (`run_consolidation`, the
job `loci consolidate` runs: hash embedder, extractive merger) and a snapshot hot-swap
(`/v1/admin/reload`) between the weeks, so merges, tier promotion and the swap all happen
between conversations. Org acme; Ana leads project atlas, Ben works on it and keeps personal
notes and a sandbox project. Week 1: an org rule, atlas's convention and Ben's own wish on
one subject (indentation), the atlas API decision, chatter about the API. Week 2: Ana states
the release cadence three times (one cluster to merge), Ben forgets a personal note. Week 3:
Ana moves the API from REST to gRPC under another title. Checked after each consolidation,
the way the chat loop meets it (what `/v1/recall` injects):

- Decisions outrank chatter, and the chatter stays, labelled as what was said (kept).
- Scope priority: in atlas the project's convention, then Ben's own wish, then the org's
  rule; in Ben's sandbox his wish before the org's rule, each marked with its scope (broken:
  the org's "Indentation" came first in both, because the question names its title word for
  word and that put it before every other curated memory, whatever its scope; and nothing
  told the model that the rule in "tabs", which the conflict rule cannot compare with
  "4-space", was the broader of one subject).
- A decision changed under another title supersedes the old one, which is no longer
  injected and keeps its history: who replaced it, when, by which correction (kept), and
  who wrote it (broken: once a consolidation retired it, its card's inbox events were
  empty: the service looked them up from the item as served, and it was served no more).
- A merged cluster keeps its members' provenance (ids, authors, inbox events), and each
  member's card its own write (broken the same way: "Inbox events: None").
- Forgetting survives every later consolidation (kept).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from assets.run import run_consolidation
from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings, shared_instance
from tests.e2e.chat import page_text, recall, tool, turn

ANA = {"user_id": "ana", "project_id": "atlas", "session_id": "w1-ana", "org_id": "acme"}
BEN = {"user_id": "ben", "project_id": "atlas", "session_id": "w1-ben", "org_id": "acme"}
SANDBOX = {"user_id": "ben", "project_id": "sandbox", "session_id": "sb", "org_id": "acme"}
WEEKS = ("week 1", "week 2", "week 3")
INDENT = "what indentation should I use?"
API = "what is the atlas public API style?"
RELEASE = "when does atlas ship a release?"
FORGOTTEN = "the atlas billing RFC reading"
CHATTER = [(BEN, "lol the API meeting ran long again, the API debate about REST never ends"),
           (ANA, "I think the API style REST thing is fine, maybe, whatever works for the public API"),
           (BEN, "we talked about the atlas public API style for an hour, REST or not, no idea"),
           ({**BEN, "session_id": "w3-ben"}, "grpc tooling for the atlas API is a bit rough honestly")]


def week(who: dict, n: int) -> dict:
    return {**who, "session_id": f"w{n}-{who['user_id']}"}


def write(client: TestClient, who: dict, type_: str, title: str, content: str, scope: str = "project") -> str:
    result = tool(client, who, "memory.write", {"item": {
        "type": type_, "title": title, "content": content, "why_store": "said in chat", "confidence": 0.9,
        "scope": scope}})
    assert result["verdict"]["action"] == "accept", result
    return result["item_id"]


def consolidate(client: TestClient, settings) -> None:
    """The scheduled job's run, then the service swaps in the snapshot it published."""
    assert client.app.state.service.usage.flush()
    assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
    assert client.post("/v1/admin/reload").status_code == 200


@pytest.fixture(scope="module")
def weeks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The three weeks, each followed by a consolidation; what recall answered after each."""
    settings = make_settings(tmp_path_factory.mktemp("weeks"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, Any] = {}
    seen: dict[str, dict[str, dict]] = {}

    def look(name: str) -> None:
        seen[name] = {
            "atlas indent": recall(client, week(BEN, 3), INDENT),
            "sandbox indent": recall(client, SANDBOX, INDENT),
            "api": recall(client, week(BEN, 3), API),
            "release": recall(client, week(BEN, 3), RELEASE),
            "forgotten": recall(client, week(BEN, 3), FORGOTTEN, mode="catalog"),
        }

    with TestClient(app) as client:
        ids["org"] = write(client, ANA, "constraint", "Indentation", "Acme code uses tabs for indentation.", "org")
        ids["project"] = write(client, ANA, "decision", "Atlas indentation",
                               "The atlas codebase uses 4-space indentation.")
        ids["mine"] = write(client, BEN, "preference", "My indentation", "I use 2-space indentation in my code.",
                            "user")
        ids["rest"] = write(client, ANA, "decision", "Atlas API style", "The atlas public API is REST over JSON.")
        for who, text in CHATTER[:3]:
            turn(client, who, "user", text)
        consolidate(client, settings)
        look("week 1")

        ids["cadence"] = [write(client, week(ANA, 2), "decision", title, content) for title, content in [
            ("Atlas release cadence", "Atlas ships a release every two weeks on Thursday."),
            ("Release cadence for atlas", "Atlas ships a release every two weeks, on Thursday."),
            ("Atlas releases", "Every two weeks on Thursday, atlas ships a release.")]]
        ids["note"] = write(client, week(BEN, 2), "todo", "Atlas reading", "Read the atlas billing RFC before Friday.",
                            "user")
        turn(client, week(BEN, 2), "user", "the release on thursday went ok i guess, lots of noise in the channel")
        assert tool(client, week(BEN, 2), "memory.update", {"id": ids["note"], "patch": {
            "validation": "retracted"}})["verdict"]["action"] == "accept"
        consolidate(client, settings)
        look("week 2")

        grpc = tool(client, week(ANA, 3), "memory.write", {"item": {
            "type": "decision", "title": "Atlas transport protocol", "why_store": "team decision", "confidence": 0.9,
            "content": "We moved the atlas public API from REST to gRPC.", "scope": "project"}})
        ids["grpc"], ids["grpc_seq"], ids["grpc_supersedes"] = grpc["item_id"], grpc["seq"], grpc["supersedes"]
        turn(client, *CHATTER[3][:1], "user", CHATTER[3][1])
        consolidate(client, settings)
        look("week 3")
        yield {"client": client, "ids": ids, "seen": seen}


def curated_then_turns(hits: list[dict]) -> bool:
    kinds = [h["type"] == "message" for h in hits]
    return kinds == sorted(kinds)


def authoritative(injection: str) -> str:
    return injection.split("CONVERSATION EXCERPTS")[0]


@pytest.mark.parametrize("name", WEEKS)
def test_decisions_outrank_the_chatter_which_stays_labelled_as_what_was_said(weeks, name: str) -> None:
    answer = weeks["seen"][name]["api"]
    hits = answer["hits"]
    assert curated_then_turns(hits), [(h["type"], h["title"]) for h in hits]
    assert hits[0]["id"] == (weeks["ids"]["grpc"] if name == "week 3" else weeks["ids"]["rest"])
    turns = [h["id"] for h in hits if h["type"] == "message"]
    assert turns and {h["content"] for h in hits if h["type"] == "message"} <= {text for _, text in CHATTER}
    assert "CONVERSATION EXCERPTS (what was said, not verified; not authoritative)" in answer["injection"]
    for said in turns:
        assert f"[TURN: {said}" in answer["injection"] and said not in authoritative(answer["injection"])


@pytest.mark.parametrize("name", WEEKS)
def test_the_project_convention_comes_before_my_wish_and_my_wish_before_the_org_rule(weeks, name: str) -> None:
    ids = weeks["ids"]
    atlas = [h["id"] for h in weeks["seen"][name]["atlas indent"]["hits"] if h["type"] != "message"]
    assert atlas[:3] == [ids["project"], ids["mine"], ids["org"]], weeks["seen"][name]["atlas indent"]["hits"]
    sandbox = [h["id"] for h in weeks["seen"][name]["sandbox indent"]["hits"] if h["type"] != "message"]
    assert sandbox[:2] == [ids["mine"], ids["org"]], weeks["seen"][name]["sandbox indent"]["hits"]
    injected = weeks["seen"][name]["atlas indent"]["injection"]
    assert injected.index("4-space") < injected.index("2-space") < injected.index("tabs")
    # each marked with its scope: where they differ, the block says the most specific applies
    for answer, kinds in ((weeks["seen"][name]["atlas indent"], ("project", "user", "org")),
                          (weeks["seen"][name]["sandbox indent"], ("user", "org"))):
        headers = [line for line in answer["injection"].splitlines() if line.startswith("[MEMORY:")]
        assert [line.split("SCOPE=")[1].split(" ")[0].rstrip("]") for line in headers[:len(kinds)]] == list(kinds)
        assert "Entries marked SCOPE speak of one subject from several scopes" in answer["injection"]


def test_a_decision_changed_under_another_title_replaces_the_old_which_keeps_its_history(weeks) -> None:
    client, ids = weeks["client"], weeks["ids"]
    assert ids["grpc_supersedes"] == [ids["rest"]]
    for name in WEEKS[:2]:
        assert "REST over JSON" in authoritative(weeks["seen"][name]["api"]["injection"])
    assert "REST over JSON" not in weeks["seen"]["week 3"]["api"]["injection"]
    gone = client.get(f"/v1/items/{ids['rest']}", params=week(BEN, 3))
    assert gone.status_code == 200 and gone.json()["replaced_by"] == {"id": ids["grpc"], "how": "superseded"}
    assert "REST over JSON" in gone.json()["item"]["content"] and gone.json()["state"] == "superseded"
    card = client.get(f"/ui/items/{ids['rest']}", params=week(BEN, 3))
    assert card.status_code == 200
    history = page_text(card.text.split('id="history"')[1].split("</table>")[0])
    assert f"ana supersede (superseded) {ids['grpc_seq']}" in history and ids["grpc"] in history, history
    assert "ana memory.write verdict accept" in inbox_events(card.text)  # who wrote it, once retired too


def inbox_events(page: str) -> str:
    """The card's "Inbox events" table: the writes that created or changed the memory."""
    return page_text(page.split("Inbox events", 1)[1])


def test_a_merged_cluster_keeps_its_members_provenance_and_history(weeks) -> None:
    client, ids = weeks["client"], weeks["ids"]
    merged = weeks["seen"]["week 2"]["release"]["hits"][0]
    assert merged["id"] not in ids["cadence"]
    for name in WEEKS[1:]:
        assert weeks["seen"][name]["release"]["hits"][0]["id"] == merged["id"]
    got = client.get(f"/v1/items/{merged['id']}", params=week(BEN, 3)).json()
    assert sorted(got["item"]["metadata"]["merged_from"]) == sorted(ids["cadence"])
    assert got["item"]["metadata"]["authors"] == ["ana"] and got["item"]["tier"] != "stm"
    written = [(h["identity"]["user_id"], h["payload"]["item"]["id"]) for h in got["history"]]
    assert sorted(written) == sorted(("ana", member) for member in ids["cadence"])
    for member in ids["cadence"]:
        gone = client.get(f"/v1/items/{member}", params=week(BEN, 3)).json()
        assert gone["replaced_by"] == {"id": merged["id"], "how": "merged"}, gone
        card = client.get(f"/ui/items/{member}", params=week(BEN, 3))
        assert card.status_code == 200 and "ana memory.write verdict accept" in inbox_events(card.text), member


def test_a_forgotten_note_stays_forgotten_through_later_consolidations(weeks) -> None:
    client, ids = weeks["client"], weeks["ids"]
    for name in WEEKS[1:]:
        assert ids["note"] not in [h["id"] for h in weeks["seen"][name]["forgotten"]["hits"]], name
    got = client.get(f"/v1/items/{ids['note']}", params=week(BEN, 3)).json()
    assert got["item"]["validation"] == "retracted"
    assert [e["action"] for e in got["events"]].count("retract") == 1
