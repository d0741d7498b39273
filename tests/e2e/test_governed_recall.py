"""Governed memory in a real chat loop, over HTTP: what a user meets once a conversation
holds chatter next to curated memories.

Each scenario writes through `POST /v1/turns` (the assistant proposes memories in
`<MEMORY_PROPOSALS_JSON>` blocks, the policy governs them, the inbox lands them) and reads
through `POST /v1/recall` and `GET /v1/conflicts`, on real parts (SQLite inbox, the recall
engine over the inbox delta) with the deterministic hash embedder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.recall.render import FOOTER
from pipelines.settings import Settings

ORION_S1 = {"user_id": "qa", "project_id": "orion", "session_id": "s1", "org_id": "acme"}
ORION_S9 = {**ORION_S1, "session_id": "s9"}
QUESTION = "Which database does orion telemetry use?"
CHATTER = [
    ("user", "hi"), ("assistant", "Hello! How can I help?"),
    ("user", QUESTION), ("assistant", "I don't know that yet."),
    ("user", "ok"), ("assistant", "Anything else?"),
    ("user", "Please remember that I like emacs."), ("assistant", "Sure."),
    ("user", "thanks!"), ("assistant", "You're welcome!"),
    ("user", "We should look at the orion telemetry dashboards again."), ("assistant", "Good idea."),
    ("user", QUESTION), ("assistant", "Let me check."),
    ("user", "ok"), ("assistant", "Got it."),
]


def make_app(tmp_path: Path, **overrides) -> Litestar:
    settings = Settings(embedder="hash", data_dir=str(tmp_path), **overrides)
    return create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    app = make_app(tmp_path)
    with TestClient(app) as c:
        yield c
    assert app.state.internal_errors == 0


def turn(client: TestClient, who: dict, role: str, text: str) -> dict:
    resp = client.post("/v1/turns", json={"identity": who, "role": role, "text": text})
    assert resp.status_code == 201, resp.text
    return resp.json()


def propose(client: TestClient, who: dict, **item) -> dict:
    """The assistant proposes one memory; returns its verdict (with the item id)."""
    block = json.dumps([{"why_store": "stated by the user", "confidence": 0.9, **item}])
    body = turn(client, who, "assistant", f"Noted. <MEMORY_PROPOSALS_JSON>{block}</MEMORY_PROPOSALS_JSON>")
    (verdict,) = body["proposals"]
    return verdict


def recall(client: TestClient, who: dict, query: str, **kw) -> dict:
    resp = client.post("/v1/recall", json={"identity": who, "query": query, **kw})
    assert resp.status_code == 200, resp.text
    return resp.json()


def chat_then_decide(client: TestClient) -> str:
    for role, text in CHATTER:
        turn(client, ORION_S1, role, text)
    turn(client, ORION_S1, "user", "We settled it: orion telemetry goes to TimescaleDB.")
    verdict = propose(client, ORION_S1, type="decision", title="Orion telemetry database",
                      content="Orion telemetry is stored in TimescaleDB.", tags=["telemetry"])
    assert verdict["action"] == "accept"
    for role, text in CHATTER[:8]:
        turn(client, {**ORION_S1, "session_id": "s2"}, role, text)
    return verdict["item_id"]


# -- 1. chatter must not crowd out an accepted decision ---------------------------------------


def test_an_accepted_decision_comes_before_chatter(client: TestClient) -> None:
    decision = chat_then_decide(client)
    for k in (5, 10):
        body = recall(client, ORION_S9, QUESTION, mode="inject", k=k)
        assert body["hits"][0]["id"] == decision, [h["content"] for h in body["hits"]]


def test_chat_turns_are_never_injected_as_authoritative_facts(client: TestClient) -> None:
    chat_then_decide(client)
    body = recall(client, ORION_S9, QUESTION, mode="inject", k=10)
    injection = body["injection"]
    assert "TimescaleDB" in injection
    authoritative = injection.split(FOOTER)[0]
    for hit in body["hits"]:
        if hit["type"] == "message" and hit["delivery"] == "inject":
            assert hit["content"] not in authoritative, hit["content"]
            assert hit["content"] in injection.split(FOOTER)[1]
    messages = [h for h in body["hits"] if h["type"] == "message"]
    assert all(h["content"] not in ("ok", "hi", "thanks!") for h in messages)
    assert sum(h["content"] == QUESTION for h in messages) == 0  # earlier copies of the question


def test_catalog_titles_of_chat_turns_say_who_when_and_what(client: TestClient) -> None:
    chat_then_decide(client)
    body = recall(client, ORION_S9, "orion telemetry dashboards", mode="catalog", k=10)
    entries = body["catalog"]["memory_catalog"]
    messages = [e for e in entries if e["type"] == "message"]
    assert messages, entries
    for entry in messages:
        assert entry["title"] not in ("user", "assistant")
        assert "2026" in entry["title"] or "20" in entry["title"]  # the date it was said
    assert any("dashboards" in e["title"] for e in messages)
    # The hits of the answer (and memory.search) carry the same title as the catalog.
    hit_titles = {h["id"]: h["title"] for h in body["hits"] if h["type"] == "message"}
    assert hit_titles and all(hit_titles[e["id"]] == e["title"] for e in messages if e["id"] in hit_titles)


def test_trivial_turns_and_exact_duplicates_are_not_candidates(client: TestClient) -> None:
    chat_then_decide(client)
    body = recall(client, ORION_S9, "ok thanks", mode="catalog", k=10)
    assert [h["content"] for h in body["hits"]] == []
    assert body["found"] is False
    body = recall(client, ORION_S9, "orion telemetry dashboards", mode="catalog", k=10)
    contents = [h["content"] for h in body["hits"]]
    assert len(contents) == len(set(contents)), contents


# -- 2. scope priority ----------------------------------------------------------------------


RETENTION = [("session", "Retention for this experiment", "Telemetry retention is 30 days for this experiment."),
             ("project", "Orion retention policy", "Telemetry retention is 90 days in orion."),
             ("user", "My retention default", "Telemetry retention is 365 days for my data."),
             ("org", "Company retention standard", "Telemetry retention is 7 days across the company.")]


def store_retention(client: TestClient) -> dict[str, str]:
    ids = {}
    for scope, title, content in RETENTION:
        verdict = propose(client, ORION_S1, type="fact", title=title, content=content, scope=scope)
        assert verdict["action"] == "accept", verdict
        ids[scope] = verdict["item_id"]
    return ids


def test_scope_priority_session_project_user_org(client: TestClient) -> None:
    ids = store_retention(client)
    for mode in ("catalog", "inject"):
        body = recall(client, ORION_S1, "How many days is telemetry retention?", mode=mode, k=10)
        order = [h["id"] for h in body["hits"] if h["id"] in ids.values()]
        assert order == [ids["session"], ids["project"], ids["user"], ids["org"]], mode
        # From another session the session value is invisible: project comes first.
        body = recall(client, ORION_S9, "How many days is telemetry retention?", mode=mode, k=10)
        order = [h["id"] for h in body["hits"] if h["id"] in ids.values()]
        assert order == [ids["project"], ids["user"], ids["org"]], mode


def test_recall_honours_the_scope_filter(client: TestClient) -> None:
    ids = store_retention(client)
    body = recall(client, ORION_S1, "How many days is telemetry retention?", mode="catalog", scope="user")
    assert [h["id"] for h in body["hits"]] == [ids["user"]]
    resp = client.post("/v1/recall", json={"identity": ORION_S1, "query": "retention", "scope": "galaxy"})
    assert resp.status_code == 400 and "scope" in resp.text


# -- 3. conflicts -----------------------------------------------------------------------------


def test_conflicts_finds_same_subject_facts_under_different_titles(client: TestClient) -> None:
    ids = store_retention(client)
    body = client.get("/v1/conflicts", params=ORION_S1).json()
    pairs = {frozenset((c["a"]["id"], c["b"]["id"])) for c in body["conflicts"]}
    wanted = {frozenset((a, b)) for a in ids.values() for b in ids.values() if a < b}
    assert wanted <= pairs, body
    # Chatter about the subject is not a conflicting claim.
    turn(client, ORION_S1, "user", "Telemetry retention keeps coming up.")
    assert client.get("/v1/conflicts", params=ORION_S1).json()["count"] == body["count"]


def test_a_users_newer_correction_supersedes_their_own_fact(client: TestClient) -> None:
    old = propose(client, ORION_S1, type="fact", title="Standup time", content="Standup is at 09:30.", scope="user")
    assert old["action"] == "accept"
    new = propose(client, ORION_S1, type="fact", title="Standup time", content="Standup is at 10:15.", scope="user")
    assert new["action"] == "accept", new
    body = recall(client, ORION_S9, "When is standup?", mode="inject", k=5)
    ids = [h["id"] for h in body["hits"]]
    assert ids and ids[0] == new["item_id"]
    assert old["item_id"] not in ids
    assert "10:15" in body["injection"] and "09:30" not in body["injection"]


def test_someone_elses_contradiction_stays_quarantined_and_flagged(client: TestClient) -> None:
    propose(client, ORION_S1, type="decision", title="Orion telemetry database",
            content="Orion telemetry is stored in TimescaleDB.")
    finn = {**ORION_S1, "user_id": "finn", "session_id": "f1"}
    other = propose(client, finn, type="decision", title="Orion telemetry database",
                    content="Orion telemetry is stored in InfluxDB.")
    assert other["action"] == "quarantine"
    assert "soft.contradiction" in other["rule_ids"]
    body = client.get("/v1/conflicts", params=ORION_S1).json()
    assert body["count"] == 1


# -- 8. always-inject, tight budgets, counts -------------------------------------------------


def test_importance_eight_is_always_injected(client: TestClient) -> None:
    verdict = propose(client, ORION_S1, type="constraint", title="Never deploy on Fridays",
                      content="Production deploys are frozen on Fridays.", importance=8)
    body = recall(client, ORION_S9, "What colour is the logo?", mode="inject")
    assert verdict["item_id"] in [h["id"] for h in body["hits"]]
    assert "frozen on Fridays" in body["injection"]


def test_found_count_matches_the_hits_shown(client: TestClient) -> None:
    propose(client, ORION_S1, type="constraint", title="Never deploy on Fridays",
            content="Production deploys are frozen on Fridays.", importance=9)
    chat_then_decide(client)
    body = recall(client, ORION_S9, QUESTION, mode="inject", k=3)
    n = sum(h["type"] != "message" for h in body["hits"])  # the turns are counted apart, as excerpts
    assert body["message"].startswith(f"Found {n} memor"), (body["message"], n)


def test_a_small_budget_still_answers_with_what_fits(tmp_path: Path) -> None:
    app = make_app(tmp_path, inject_budget_tokens=100)
    with TestClient(app) as c:
        chat_then_decide(c)
        body = recall(c, ORION_S9, QUESTION, mode="inject", k=5)
    assert body["found"] is True
    assert not body["message"].startswith("No memory found")
    assert body["injection"] and "TimescaleDB" in body["injection"]
    assert len(body["injection"]) <= 4 * 100


# -- the governed benchmark as a regression guard ---------------------------------------------


def test_governed_benchmark_curated_answers_lead(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from bench import governed

    out = tmp_path / "governed.json"
    assert governed.main(["--json", str(out), "--workdir", str(tmp_path / "store")]) == 0
    result = json.loads(out.read_text())
    assert result["store"]["verdicts"] == {"accept": result["store"]["curated"]}
    inject, catalog = result["modes"]["inject"], result["modes"]["catalog"]
    assert inject["missing"] == 0 and inject["hit@1"] >= 0.9 and catalog["mrr"] >= 0.85
    assert inject["chatter_share"] < 0.5
    assert result["by_kind"]["scope"]["inject"]["hit@1"] == 1.0
    assert "MRR" in capsys.readouterr().out
