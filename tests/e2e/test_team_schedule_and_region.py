"""Two clear conflicts a team meets, over HTTP (Litestar's TestClient against `loci serve`'s
app, hash embedder): a teammate moving a standing schedule ("We moved the weekly sync to
Thursdays at 2pm" / "The weekly sync is on Tuesdays at 11am") and two teammates naming
different cloud regions for one thing ("Atlas customer data lives in eu-central-1" / "...
us-east-1"). Broken: both second proposals were accepted beside the first and `/v1/conflicts`
listed neither pair ("Thursdays" read as no time, so nothing moved; "us-east-1" read as no
value, its "us" as the writers). Now the teammate's proposal is held for review and the pair
listed; the writer moving their own sync replaces what they said (recall gives the new time).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings
from tests.e2e.chat import curated_text, recall, team_fact

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
OMAR = {"user_id": "omar", "project_id": "atlas", "session_id": "o1", "org_id": "acme"}
LENA_ORION = {"user_id": "lena", "project_id": "orion", "session_id": "l2", "org_id": "acme"}
SYNC, MOVED = "The weekly sync is on Tuesdays at 11am", "We moved the weekly sync to Thursdays at 2pm"
EU, US = "Atlas customer data lives in eu-central-1", "Atlas customer data lives in us-east-1"
SAID = [  # (name, who, what they say = what the assistant proposes, title), in order
    ("sync", LENA, SYNC, "Weekly sync"),
    ("region", LENA, EU, "Atlas data region"),
    ("sync moved", OMAR, MOVED, "Weekly sync"),
    ("region other", OMAR, US, "Atlas data region"),
    ("own sync", LENA_ORION, SYNC, "Weekly sync"),
    ("own sync moved", LENA_ORION, MOVED, "Weekly sync"),
]


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("team-facts"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        outcomes = {name: team_fact(client, who, said, title) for name, who, said, title in SAID}
        conflicts = client.get("/v1/conflicts", params=LENA)
        assert conflicts.status_code == 200, conflicts.text
        yield {"outcomes": outcomes, "conflicts": conflicts.json(),
               "own sync": recall(client, LENA_ORION, "When is the weekly sync?")}


@pytest.mark.parametrize(("first", "second"), [("sync", "sync moved"), ("region", "region other")])
def test_a_teammates_contradiction_is_held_for_review_and_listed(team, first, second) -> None:
    outcomes = team["outcomes"]
    assert outcomes[first]["action"] == "accept", outcomes[first]
    held = outcomes[second]
    assert held["action"] == "quarantine" and "soft.contradiction" in held["rule_ids"], held
    listed = {frozenset((c["a"]["id"], c["b"]["id"])) for c in team["conflicts"]["conflicts"]}
    assert frozenset((outcomes[first]["item_id"], held["item_id"])) in listed, team["conflicts"]


def test_the_writer_moving_their_own_sync_replaces_what_they_said(team) -> None:
    old, new = team["outcomes"]["own sync"], team["outcomes"]["own sync moved"]
    assert new["action"] == "accept" and new["supersedes"] == [old["item_id"]], new
    shown = curated_text(team["own sync"])
    assert new["item_id"] in shown and old["item_id"] not in shown, shown
