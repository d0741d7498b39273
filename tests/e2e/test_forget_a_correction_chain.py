"""Forgetting one claim of a chain of corrections, over HTTP: Lea says A, corrects it with B,
then corrects B with C. Whatever she forgets, the latest claim she did not forget stands and
the rest stay replaced: forget B and C is still current, A still replaced; forget C and B is
current again; forget A and the later ones stand; forget B and then C, and A is back. The same
at once (the service's fold) and after a consolidation run, whether the chain was consolidated
before the forget or not (`materialize.restored_by_forgetting` decides both)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as cli_app
from tests.assets.support import shared_instance
from tests.e2e.chat import consolidate, page_text, recall, tool

LEA = {"user_id": "lea", "project_id": "home", "session_id": "s1"}
SAID = {"A": "Leo is allergic to peanuts.", "B": "Leo is allergic to peanuts only now, not tree nuts.",
        "C": "Leo is allergic to tree nuts only now, not peanuts."}


def write(client, content: str) -> dict:
    return tool(client, LEA, "memory.write", {"item": {
        "type": "fact", "title": "Leo's allergy", "content": content, "confidence": 0.9, "scope": "user"}})


def states(client, ids: dict[str, str]) -> dict[str, str]:
    """Each claim as Lea's item page shows it: forgotten, replaced or current."""
    out = {}
    for name, item_id in ids.items():
        resp = client.get(f"/v1/items/{item_id}", params=LEA)
        assert resp.status_code in (200, 404), resp.text
        if resp.status_code == 404:  # out of what is served: it says whether a correction replaced it
            out[name] = "replaced" if "superseded it" in resp.json()["error"] else "forgotten"
            continue
        got = resp.json()["item"]
        out[name] = ("forgotten" if got["validation"] == "retracted"
                     else "replaced" if got["superseded_by"] else "current")
    return out


FORGET_B = {"A": "replaced", "B": "forgotten", "C": "current"}
FORGET_C = {"A": "replaced", "B": "current", "C": "forgotten"}
ALL_BUT_A = {"A": "current", "B": "forgotten", "C": "forgotten"}


# A consolidation run after the first `consolidated` claims (0: none). Once consolidated, a
# replaced claim is out of what is served (`memory.forget` of it: 404 naming its correction).
@pytest.mark.parametrize(("consolidated", "forgets", "expected"), [
    (0, ["B"], FORGET_B),
    (0, ["C"], FORGET_C),
    (0, ["A"], {"A": "forgotten", "B": "replaced", "C": "current"}),
    (0, ["B", "C"], ALL_BUT_A),
    (0, ["C", "B"], ALL_BUT_A),
    (2, ["B"], FORGET_B),
    (2, ["B", "C"], ALL_BUT_A),
    (3, ["C"], FORGET_C),
    (3, ["C", "B"], ALL_BUT_A),
])
def test_forgetting_one_claim_of_a_correction_chain_leaves_the_latest_remembered_one_current(
        service, consolidated, forgets, expected) -> None:
    client, settings = service
    forget_in_chain(client, lambda: consolidate(client, settings), consolidated, forgets, expected)


@pytest.mark.parametrize(("consolidated", "forgets", "expected"), [(2, ["B"], FORGET_B), (3, ["C", "B"], ALL_BUT_A)])
def test_the_same_through_dagster_runs_whose_asset_checks_pass(service, consolidated, forgets, expected) -> None:
    """The scheduled job's way (`run_consolidation`): its checks hold too (a claim standing
    again is not "superseded but active" for the link of the correction forgotten)."""
    client, settings = service

    def dagster_run() -> None:
        assert client.app.state.service.usage.flush()
        summary = run_consolidation(settings, instance=shared_instance())
        assert summary["status"] == "success" and "FAILED" not in summary["checks"].values(), summary
        assert client.post("/v1/admin/reload").status_code == 200

    forget_in_chain(client, dagster_run, consolidated, forgets, expected)


def forget_in_chain(client, run: Callable[[], None], consolidated: int, forgets: list[str],
                    expected: dict[str, str]) -> None:
    """Lea writes A, B and C (a consolidation `run` after the first `consolidated`), forgets
    `forgets` in order; each claim's state is `expected` at once and after another run."""
    ids = {}
    for name in "ABC":
        out = write(client, SAID[name])
        ids[name] = out["item_id"]
        if name != "A":
            assert out["supersedes"] == [ids[chr(ord(name) - 1)]], out  # each corrects the one before
        if len(ids) == consolidated:
            run()
    for name in forgets:
        tool(client, LEA, "memory.forget", {"id": ids[name], "reason": "said by mistake"})
    current = next(name for name, state in expected.items() if state == "current")
    for moment in ("at once", "after consolidation"):
        if moment == "after consolidation":
            run()
        assert states(client, ids) == expected, (moment, forgets)
        said = recall(client, LEA, "What is Leo allergic to?")["injection"]
        assert SAID[current] in said, (moment, said)
        assert all(SAID[name] not in said for name in "ABC" if name != current), (moment, said)


@pytest.mark.parametrize("consolidated", [2, 3])
def test_the_replaced_claim_names_the_correction_that_stands_not_the_forgotten_one(service, consolidated) -> None:
    """A's page says what replaced it: C once B (correcting A) is forgotten while C (correcting
    B) stands (`MemoryService.standing_in`); before, B, forgotten (its card a tombstone)."""
    client, settings = service
    ids = {}
    for name in "ABC":
        ids[name] = write(client, SAID[name])["item_id"]
        if len(ids) == consolidated:
            consolidate(client, settings)
    tool(client, LEA, "memory.forget", {"id": ids["B"], "reason": "said by mistake"})
    for moment in ("at once", "after consolidation"):
        if moment == "after consolidation":
            consolidate(client, settings)
        got = client.get(f"/v1/items/{ids['A']}", params=LEA).json()
        assert (got.get("replaced_by") or {}).get("id") == ids["C"], (moment, got.get("replaced_by"))
        card = page_text(client.get(f"/ui/items/{ids['A']}", params=LEA).text)
        assert f"superseded by {ids['C']} , the memory that took its place" in card, (moment, card[:1500])
    # as stored: consolidation wrote the standing correction (`governance._links`)
    shown = CliRunner().invoke(cli_app, ["show", ids["A"], "--json", "--data-dir", settings.data_dir])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["item"]["superseded_by"] == ids["C"], shown.stdout[:600]
