"""A conflict is shown whichever of its two claims the query found, over HTTP.

Iris keeps the ferry time for her project ("The ferry to Ashford leaves at 7:15") and, in
her own user scope, an older habit of hers under another title ("... leaves at 8:40, from
the harbour pier by the blue kiosk"). Asked about "the blue kiosk pier", recall found only
the user claim and showed 8:40 as if nothing disagreed: a hit's `conflict_with` named only
claims the query had retrieved, and the project claim (the one that applies) was not one
of them. A claim accepted while it disagrees with a stored one (another scope kind) now
names it (`metadata.disagrees_with`), and recall brings the two in together from either
side, as it does a held claim (`held_against`), and after consolidation merged the claim
that disagreed.
"""

from __future__ import annotations

from assets.run import run_consolidation
from tests.assets.support import shared_instance
from tests.e2e.chat import recall, tool
from tests.e2e.test_partial_corrections import entries

IRIS = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s1"}


def write(client, scope: str, title: str, content: str) -> str:
    (outcome,) = tool(client, IRIS, "memory.propose", {"default_scope": scope, "items": [
        {"type": "fact", "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome["item_id"]


def test_a_claim_found_alone_is_shown_with_the_claim_it_disagrees_with(service) -> None:
    client, _ = service
    project = write(client, "project", "Ferry", "The ferry to Ashford leaves at 7:15.")
    user = write(client, "user", "Morning boat", "The ferry to Ashford leaves at 8:40, from the harbour pier "
                                                  "by the blue kiosk.")
    found = recall(client, IRIS, "blue kiosk pier", mode="hybrid")
    hits = {h["id"]: h for h in found["hits"]}
    assert set(hits) == {project, user}, hits
    assert hits[user]["conflict_with"] == [project] and hits[project]["conflict_with"] == [user], hits
    shown = entries(found["injection"])
    assert f"SCOPE=project | CONFLICT={user}" in shown[project] and f"CONFLICT={project}" in shown[user], shown


def test_an_edit_that_now_disagrees_names_it_too(service) -> None:
    """An edit of what a claim says is a write: what it now disagrees with is named anew."""
    client, _ = service
    project = write(client, "project", "Ferry", "The ferry to Ashford leaves at 7:15.")
    note = write(client, "user", "Lighthouse", "The lighthouse by the green shed is red.")
    edit = tool(client, IRIS, "memory.update", {"id": note, "patch": {
        "title": "Slipway boat",
        "content": "The ferry to Ashford leaves at 9:05, from the old slipway by the green shed."}})
    assert edit["verdict"]["action"] == "accept", edit
    hits = {h["id"]: h for h in recall(client, IRIS, "green shed slipway", mode="hybrid")["hits"]}
    assert set(hits) == {project, note} and hits[note]["conflict_with"] == [project], hits


def test_a_disagreement_survives_consolidation_merging_the_claim_that_disagreed(service) -> None:
    """Iris says her morning boat three times over; the scheduled consolidation (the Dagster
    job) merges the three into one claim. The merged claim answers for them, and it still
    disagrees with the project's ferry time: found from either side, both come in, marked
    (broken: the merged claim did not carry its members' `disagrees_with`, so "the blue
    kiosk pier" showed 8:40 alone once they were merged)."""
    client, settings = service
    project = write(client, "project", "Ferry", "The ferry to Ashford leaves at 7:15.")
    said = [write(client, "user", title, content) for title, content in [
        ("Morning boat", "The ferry to Ashford leaves at 8:40, from the harbour pier by the blue kiosk."),
        ("My morning boat", "The ferry to Ashford leaves at 8:40 from the harbour pier by the blue kiosk."),
        ("Boat in the morning", "From the harbour pier by the blue kiosk, the ferry to Ashford leaves at 8:40.")]]
    assert client.app.state.service.usage.flush()
    assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
    assert client.post("/v1/admin/reload").status_code == 200
    for question in ("blue kiosk pier", "When does the ferry to Ashford leave?"):
        found = recall(client, IRIS, question, mode="hybrid")
        hits = {h["id"]: h for h in found["hits"] if h["type"] == "fact"}
        (merged,) = set(hits) - {project}
        assert merged not in said and project in hits, (question, hits)  # merged, and its rival found with it
        assert hits[merged]["conflict_with"] == [project] and hits[project]["conflict_with"] == [merged], hits
        shown = entries(found["injection"])
        assert f"CONFLICT={merged}" in shown[project] and f"CONFLICT={project}" in shown[merged], shown
