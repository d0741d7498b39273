"""A later turn that names the memory's subject in other words, over HTTP (a household).

Maya's "Swim schedule: Leo's swimming lessons are on Thursdays at 5pm." was stored; days
later she said "Actually his swim class is on Tuesdays now." and the chat model proposed
nothing. Recall marks the claim `SAID_LATER` with that turn (was: unmarked, "class" is no
word of the claim, so the turn talked "of another thing"). Her "Leo's swim teacher is
now Ana." (another thing of swim than when) and "Actually Leo's piano lessons are on
Tuesdays." (another lesson) mark nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from litestar.testing import TestClient

from pipelines.materialize import message_item_id
from tests.e2e.test_governed_recall import make_app
from tests.e2e.test_later_turn_outdates_memory import ask, kept, said

MAYA = {"user_id": "maya", "project_id": "home", "session_id": "s1"}
NOW = datetime.now(timezone.utc)
LATER = "Actually his swim class is on Tuesdays now."


def test_a_later_turn_naming_the_subject_in_other_words_marks_the_memory(tmp_path) -> None:
    app = make_app(tmp_path)
    with TestClient(app) as client:
        claim = kept(client, MAYA, "Swim moved to Thursdays at 5pm from this week.", NOW - timedelta(days=9),
                     "Swim schedule", "Leo's swimming lessons are on Thursdays at 5pm.")
        later = {**MAYA, "session_id": "s2"}
        marked = message_item_id(said(client, later, "user", LATER, NOW - timedelta(days=2))["turn_id"])
        said(client, later, "user", "Leo's swim teacher is now Ana.", NOW - timedelta(days=2, seconds=-60))
        said(client, later, "user", "Actually Leo's piano lessons are on Tuesdays.",
             NOW - timedelta(days=2, seconds=-90))
        answer = ask(client, "What day is Leo's swimming?", "default", {**MAYA, "session_id": "s9"})
        (hit,) = [h for h in answer["hits"] if h["id"] == claim]
        assert hit.get("said_later") == [marked], hit
        assert f"SAID_LATER={marked}" in answer["injection"], answer["injection"]
    assert app.state.internal_errors == 0
