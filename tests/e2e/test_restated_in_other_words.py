"""Governed memory in a real chat, when the user restates something in other words: Ines's
turns and her chat model's proposals land on `/v1/turns` with `at` and her zone, and
`/v1/recall` is asked in the same zone.

- A preference restated under another title, in other words, saying it changed: "Coffee:
  I drink oat flat whites", later "Morning drink: I've switched from flat whites to black
  americanos". With the product's embedder (MiniLM) the two are close in meaning and the
  newer says it changed (`conflicts.CHANGED_CLOSE`): recall gives the newer, the older
  loses on recency (broken: neither title nor values matched, both were given as current,
  the older first). A preference merely close in meaning (green tea in the afternoon) is
  left alone. Not covered: the same change said with no word in common and a looser
  likeness ("Coffee order: oat flat white" / "Morning drink: I've switched to black
  americano", cosine ~0.40, below that of tea and coffee): the embedder cannot tell it.
- A plan said again for another day, with no value to compare: "From Monday I work
  remotely", then "Actually, from Wednesday I work remotely". The second is the same plan
  moved: it replaces the first, and the office she works at now holds until the day before
  Wednesday (broken: a plan was taken for the same plan only when both stated values, so
  both plans stood, the Monday one taking over from Monday).
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from litestar.testing import TestClient

from online.app import create_app
from tests.assets.support import make_settings
from tests.e2e.chat import said_with_proposal

TZ = "Europe/Lisbon"
ZONE = ZoneInfo(TZ)
INES = {"user_id": "ines", "project_id": "home", "session_id": "chat"}


def proposal(type_: str, title: str, content: str) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so"}


def recall(client, query: str) -> dict:
    resp = client.post("/v1/recall", json={"identity": INES, "query": query, "tz": TZ})
    assert resp.status_code == 200, resp.text
    return resp.json()


def item(client, item_id: str) -> dict:
    return client.get(f"/v1/items/{item_id}", params=INES).json()["item"]


def curated(answer: dict) -> list[str]:
    return [h["id"] for h in answer["hits"] if h["type"] != "message"]


@pytest.fixture
def product_service(tmp_path, minilm_embedder):
    """The real app with the product's embedder (MiniLM, loaded once per test session)."""
    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=minilm_embedder, check_interval_ms=0)
    with TestClient(app) as client:
        yield client
    assert app.state.internal_errors == 0


def test_a_preference_changed_in_other_words_under_another_title_wins_recall(product_service) -> None:
    client = product_service
    yesterday = datetime.combine(datetime.now(ZONE).date() - timedelta(days=1), time(9), ZONE)
    old = said_with_proposal(client, INES, yesterday - timedelta(days=20), "I always get an oat flat white.",
                             proposal("preference", "Coffee", "I drink oat flat whites."), TZ)
    tea = said_with_proposal(client, INES, yesterday - timedelta(days=10), "In the afternoon I have green tea.",
                             proposal("preference", "Tea", "I drink green tea in the afternoon."), TZ)
    new = said_with_proposal(client, INES, yesterday, "I switched from flat whites to black americanos.",
                             proposal("preference", "Morning drink",
                                      "I've switched from flat whites to black americanos."), TZ)
    answer = recall(client, "what coffee do I drink?")
    shown = curated(answer)
    assert new["item_id"] in shown and old["item_id"] not in shown, answer["hits"]
    winner = next(h for h in answer["hits"] if h["id"] == new["item_id"])
    assert winner["conflict_with"] == [old["item_id"]], winner  # the older lost to it
    hits = {h["id"]: h for h in recall(client, "what do I drink in the afternoon?")["hits"]}
    assert tea["item_id"] in hits and not hits[tea["item_id"]].get("conflict"), hits


def test_a_plan_said_again_for_another_day_without_values_replaces_the_first(service) -> None:
    client, _ = service
    yesterday = datetime.combine(datetime.now(ZONE).date() - timedelta(days=1), time(10), ZONE)
    office = said_with_proposal(client, INES, yesterday - timedelta(days=30), "I work at the office.",
                                proposal("fact", "Work location", "I work at the office."), TZ)
    monday = said_with_proposal(client, INES, yesterday, "From Monday I work remotely.",
                                proposal("fact", "Work location", "From Monday I work remotely."), TZ)
    wednesday = said_with_proposal(client, INES, yesterday + timedelta(hours=1),
                                   "Actually, from Wednesday I work remotely, not Monday.",
                                   proposal("fact", "Work location", "Actually, from Wednesday I work remotely."), TZ)
    first, moved = item(client, monday["item_id"]), item(client, wednesday["item_id"])
    assert first["valid_from"] and moved["valid_from"] and first["valid_from"] < moved["valid_from"], (first, moved)
    assert wednesday["supersedes"] == [monday["item_id"]], wednesday
    assert first["superseded_by"] == wednesday["item_id"], first
    start = datetime.fromisoformat(moved["valid_from"])
    assert wednesday["ends"] == [office["item_id"]], wednesday
    assert item(client, office["item_id"])["valid_to"] == (start - timedelta(seconds=1)).isoformat(), office
    shown = curated(recall(client, "where do I work?"))
    assert wednesday["item_id"] in shown and monday["item_id"] not in shown, shown
