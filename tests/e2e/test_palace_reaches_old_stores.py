"""A store filed under the old palace rule gets today's places once, without anyone asking.

Until 2026-11-28 the palace filed every item under the project it was said in: an org-wide
rule Lena filed in atlas lived under "atlas", so Priya, in borealis, found the org's rule
under a project that is not hers, and Lena's own preference lived under "atlas" too. Today
an item lives under its audience (`pipelines.palace.scope_domain`). Consolidation locates
only what changed since its last run, so an old store kept the old places until each item
was touched; migration 006 marks the store and its next run moves every item whose domain
the rule changed, once, then goes back to locating only what changed.

The old store is built by the old rule itself (consolidated with the project as every
item's domain) and put back at schema version 5, before the migration."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

import pipelines.palace as palace
from online.app import create_app
from pipelines.consolidate import consolidate_once
from pipelines.consolidate.locations import PALACE_KEY
from pipelines.embedders import HashEmbedder
from pipelines.warehouse import Warehouse
from tests.assets.support import block, make_settings
from tests.e2e.chat import back_to_schema, tool, turn

LENA = {"user_id": "lena", "project_id": "atlas", "session_id": "l1", "org_id": "acme"}
PRIYA = {"user_id": "priya", "project_id": "borealis", "session_id": "p1", "org_id": "acme"}
FILED = {  # name: (what Lena says, the proposal's type, title, content, scope)
    "rule": ("Company policy: all customer data stays in the EU region.", "constraint",
             "Customer data region", "All customer data stays in the EU region (GDPR).", "org"),
    "taste": ("I prefer answers in bullet points.", "preference",
              "Lena's answer format", "Lena prefers answers in bullet points.", "user"),
    "timeout": ("We decided: the atlas API gateway timeout is 30 seconds.", "decision",
                "Atlas API timeout", "The atlas API gateway timeout is 30 seconds.", "project"),
}


def run(client: TestClient, settings) -> dict[str, Any]:
    """One consolidation as the scheduled job runs it, the service reloaded; its reports."""
    assert client.app.state.service.usage.flush()
    reports = consolidate_once(settings)
    assert client.post("/v1/admin/reload").status_code == 200
    return reports


def places(client: TestClient, ids: dict[str, str]) -> dict[str, str]:
    return {name: client.get(f"/v1/items/{i}", params=LENA).json()["item"]["metadata"]["palace"]
            for name, i in ids.items()}


def before_the_migration(data_dir: str) -> None:
    """The store at schema version 5, as the old code left it (no mark for the relocation)."""
    back_to_schema(data_dir, 5, PALACE_KEY)


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("old_palace"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    ids: dict[str, str] = {}
    out: dict[str, Any] = {"ids": ids}
    with TestClient(app) as client:
        for name, (said, type_, title, content, scope) in FILED.items():
            turn(client, LENA, "user", said)
            answer = turn(client, LENA, "assistant", "Noted. " + block({
                "type": type_, "title": title, "content": content, "why_store": "team",
                "confidence": 0.9, "scope": scope}))
            ids[name] = answer["proposals"][0]["item_id"]
        with pytest.MonkeyPatch.context() as old_rule:  # the rule before 2026-11-28
            old_rule.setattr(palace, "scope_domain", lambda item: palace.slugify(item.scope.project_id))
            run(client, settings)
        before_the_migration(settings.data_dir)
        out["old"] = places(client, ids)
        out["old as priya"] = tool(client, PRIYA, "memory.palace.list", {"path": ""})["children"]
        out["upgrade"] = run(client, settings)["palace"]
        out["new"] = places(client, ids)
        out["new as priya"] = tool(client, PRIYA, "memory.palace.list", {"path": ""})["children"]
        out["rule as priya"] = tool(client, PRIYA, "memory.palace.get", {"location": "acme"})
        out["again"] = run(client, settings)["palace"]
        with Warehouse(settings.warehouse_path, read_only=True) as wh:
            out["pending"] = wh.sweep_pending(PALACE_KEY)
            out["moves"] = {name: [e["details"]["previous"] for e in wh.item_events(i)
                                   if e["action"] == "palace.assign"] for name, i in ids.items()}
    assert app.state.internal_errors == 0
    yield out


def test_the_old_store_files_everything_under_the_project(upgraded) -> None:
    assert all(path.startswith("atlas/") for path in upgraded["old"].values()), upgraded["old"]
    assert "atlas" in upgraded["old as priya"]  # what the relocation is for


def test_after_the_upgrade_each_item_lives_under_its_audience(upgraded) -> None:
    new = upgraded["new"]
    assert new["rule"].split("/")[0] == "acme", new  # before the fix: atlas until the rule was edited
    assert new["taste"].split("/")[0] == "lena", new
    assert new["timeout"].split("/")[0] == "atlas", new  # a project's decision stays in the project
    assert "acme" in upgraded["new as priya"] and "atlas" not in upgraded["new as priya"], upgraded["new as priya"]
    assert upgraded["ids"]["rule"] in str(upgraded["rule as priya"]), upgraded["rule as priya"]


def test_the_relocation_is_made_once(upgraded) -> None:
    assert upgraded["upgrade"].moved == 2, upgraded["upgrade"]  # the rule and the preference
    assert upgraded["again"].moved == 0 and not upgraded["pending"], upgraded["again"]
    moves = upgraded["moves"]
    assert moves["rule"] == [None, upgraded["old"]["rule"]], moves  # each move audited, the old place kept
    assert moves["timeout"] == [None], moves
