"""Governed memory in a real chat, when the user restates something in other words: Ines's
turns and her chat model's proposals land on `/v1/turns` with `at` and her zone, and
`/v1/recall` is asked in the same zone.

- A plan said again for another day, with no value to compare: "From Monday I work
  remotely", then "Actually, from Wednesday I work remotely". The second is the same plan
  moved: it replaces the first, and the office she works at now holds until the day before
  Wednesday (broken: a plan was taken for the same plan only when both stated values, so
  both plans stood, the Monday one taking over from Monday).
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

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
