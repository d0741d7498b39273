"""Governed memory in a real chat, when the user restates something in other words: Ines's
turns and her chat model's proposals land on `/v1/turns` with `at` and her zone, and
`/v1/recall` is asked in the same zone.

- A preference restated under another title, in other words, saying it changed: "Coffee:
  I drink oat flat whites", later "Morning drink: I've switched from flat whites to black
  americanos". With the product's embedder (MiniLM) the two are close in meaning and the
  newer says it changed (`conflicts.CHANGED_CLOSE`): her write corrects the older (the
  write reads the proposal's cosine as recall reads it), and recall gives the newer only
  (broken: neither title nor values matched, both were given as current, the older
  first; then recall flagged the pair and the older lost on recency, but stayed). A
  preference merely close in meaning (green tea in the afternoon) is left alone. Not
  covered: the same change said with no word in common and a looser likeness ("Coffee
  order: oat flat white" / "Morning drink: I've switched to black americano", cosine
  ~0.40, below that of tea and coffee): the embedder cannot tell it.
- A plan said again for another day, with no value to compare: "From Monday I work
  remotely", then "Actually, from Wednesday I work remotely". The second is the same plan
  moved: it replaces the first, and the office she works at now holds until the day before
  Wednesday (broken: a plan was taken for the same plan only when both stated values, so
  both plans stood, the Monday one taking over from Monday).
- A plan ended by another from a later day, under the same title: "From Monday I work
  remotely", then "I'm back in the office from Wednesday": the remote plan holds until the
  day before Wednesday and is not replaced (kept: the same title, contents that do not
  compare, `conflicts.MAY_UPDATE`). Under other titles ("Remote work" / "Office return"):
  test_whose_plans_and_what_moves.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from litestar.testing import TestClient

from online.app import create_app
from tests.assets.support import make_settings
from tests.e2e.chat import ZonedChat, curated, zoned_chat

TZ = "Europe/Lisbon"
INES = {"user_id": "ines", "project_id": "home", "session_id": "chat"}


def proposal(type_: str, title: str, content: str) -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "she said so"}


@pytest.fixture
def product_chat(tmp_path, minilm_embedder) -> Iterator[ZonedChat]:
    """Ines's chat over the real app with the product's embedder (MiniLM, loaded once per session)."""
    settings = make_settings(tmp_path)
    app = create_app(settings, embedder=minilm_embedder, check_interval_ms=0)
    with TestClient(app) as client:
        yield ZonedChat(client, settings, INES, TZ)
    assert app.state.internal_errors == 0


def test_a_preference_changed_in_other_words_under_another_title_wins_recall(product_chat) -> None:
    chat = product_chat
    old = chat.say("coffee", chat.yesterday - timedelta(days=20), "I always get an oat flat white.",
                   proposal("preference", "Coffee", "I drink oat flat whites."))
    tea = chat.say("tea", chat.yesterday - timedelta(days=10), "In the afternoon I have green tea.",
                   proposal("preference", "Tea", "I drink green tea in the afternoon."))
    new = chat.say("americano", chat.yesterday, "I switched from flat whites to black americanos.",
                   proposal("preference", "Morning drink", "I've switched from flat whites to black americanos."))
    answer = chat.recall("what coffee do I drink?")
    shown = curated(answer)
    assert new["item_id"] in shown and old["item_id"] not in shown, answer["hits"]
    assert new["supersedes"] == [old["item_id"]], new  # corrected at write, as recall would mark it
    hits = {h["id"]: h for h in chat.recall("what do I drink in the afternoon?")["hits"]}
    assert tea["item_id"] in hits and not hits[tea["item_id"]].get("conflict"), hits


@pytest.fixture(scope="module")
def plans_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZonedChat]:
    """One app (hash embedder) for the plan scenarios, each told by its own user."""
    with zoned_chat(tmp_path_factory, "plans", INES, TZ) as chat:
        yield chat


def test_a_plan_said_again_for_another_day_without_values_replaces_the_first(plans_app) -> None:
    chat = plans_app
    now = datetime.now(ZoneInfo(TZ))
    # two days to come, in order, named by their weekday ("From Monday", "from Wednesday")
    first_day, moved_day = (f"{chat.today + timedelta(days=n):%A}" for n in (2, 4))
    office = chat.say("office", chat.yesterday - timedelta(days=30), "I work at the office.",
                      proposal("fact", "Work location", "I work at the office."))
    plan = chat.say("plan", now - timedelta(minutes=30), f"From {first_day} I work remotely.",
                    proposal("fact", "Work location", f"From {first_day} I work remotely."))
    moved = chat.say("moved", now - timedelta(minutes=20),
                     f"Actually, from {moved_day} I work remotely, not {first_day}.",
                     proposal("fact", "Work location", f"Actually, from {moved_day} I work remotely."))
    first, second = chat.item(plan["item_id"])["item"], chat.item(moved["item_id"])["item"]
    assert first["valid_from"] and second["valid_from"] and first["valid_from"] < second["valid_from"], (
        first, second)
    assert moved["supersedes"] == [plan["item_id"]], moved
    assert first["superseded_by"] == moved["item_id"], first
    assert moved["ends"] == [office["item_id"]], moved
    start = datetime.fromisoformat(second["valid_from"])
    assert chat.item(office["item_id"])["item"]["valid_to"] == (start - timedelta(seconds=1)).isoformat()
    shown = curated(chat.recall("where do I work?"))
    assert moved["item_id"] in shown and plan["item_id"] not in shown, shown


def test_back_in_the_office_from_a_day_ends_a_plan_to_work_remotely_then(plans_app) -> None:
    chat = ZonedChat(plans_app.client, plans_app.settings, {**INES, "user_id": "rui", "project_id": "rui-home"}, TZ)
    now = datetime.now(ZoneInfo(TZ))
    remote_day, back_day = (f"{chat.today + timedelta(days=n):%A}" for n in (2, 4))
    office = chat.say("office", chat.yesterday - timedelta(days=30), "I work at the office.",
                      proposal("fact", "Work location", "I work at the office."))
    plan = chat.say("plan", now - timedelta(minutes=30), f"From {remote_day} I work remotely.",
                    proposal("fact", "Work location", f"From {remote_day} I work remotely."))
    back = chat.say("back", now - timedelta(minutes=20), f"I'm back in the office from {back_day}.",
                    proposal("fact", "Work location", f"I'm back in the office from {back_day}."))
    remote, returned = chat.item(plan["item_id"])["item"], chat.item(back["item_id"])["item"]
    assert returned["valid_from"] and remote["valid_from"] < returned["valid_from"], (remote, returned)
    assert back["ends"] == [plan["item_id"]] and not back.get("supersedes"), back  # not the same plan moved
    start = datetime.fromisoformat(returned["valid_from"])
    assert remote["valid_to"] == (start - timedelta(seconds=1)).isoformat(), remote
    assert remote["superseded_by"] is None, remote
    assert chat.item(office["item_id"])["item"]["valid_to"] < remote["valid_from"]  # the plan still ends it
