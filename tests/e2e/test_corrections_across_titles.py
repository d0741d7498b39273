"""A coding agent keeps a project's decisions through the tool API, and a decision changes
under another title: "Orders database: The orders service uses PostgreSQL 16", weeks later
"Orders DB migration: We moved the orders service from PostgreSQL to CockroachDB". Before,
the second was stored beside the first, recall ranked the stale PostgreSQL decision first
and nothing was flagged: the rule read neither "moved <what> from" nor "uses" / "runs on" as
one subject. Now the author's correction replaces the older decision at write time, the
proposal's verdict says which one it replaced, and recall answers with the new decision
only, before and after consolidation. The same for a claim the user takes back in other words
("I'm allergic to penicillin", then "Allergy test came back negative, I'm not allergic to
penicillin"): the rule read no denial, so both stood and the assistant was told both."""

from __future__ import annotations

from tests.e2e.chat import consolidate, recall, tool

DEV = {"user_id": "dev", "project_id": "shop", "session_id": "s1"}
LATER = {**DEV, "session_id": "s2"}


def propose(client, who: dict, title: str, content: str) -> dict:
    (outcome,) = tool(client, who, "memory.propose",
                      {"items": [{"type": "decision", "title": title, "content": content}]})["proposals"]
    assert outcome["action"] == "accept", outcome
    return outcome


def test_a_decision_moved_under_another_title_replaces_the_old_one(service) -> None:
    client, settings = service
    old = propose(client, DEV, "Orders database", "The orders service uses PostgreSQL 16.")
    assert old["supersedes"] == []
    for n in range(6):  # chatter about the same service in between
        client.post("/v1/turns", json={"identity": DEV, "role": "user",
                                       "text": f"the orders service is slow again today, retry {n}"})
    new = propose(client, LATER, "Orders DB migration", "We moved the orders service from PostgreSQL to CockroachDB.")
    assert new["supersedes"] == [old["item_id"]], new
    item = client.get(f"/v1/items/{old['item_id']}", params=DEV).json()["item"]
    assert item["superseded_by"] == new["item_id"], item

    def answer() -> str:
        got = recall(client, DEV, "which database does the orders service use?")
        ids = [h["id"] for h in got["hits"]]
        assert new["item_id"] in ids and old["item_id"] not in ids, ids
        return got["injection"]

    assert "CockroachDB" in answer() and "PostgreSQL 16" not in answer()
    consolidate(client, settings)
    assert "CockroachDB" in answer() and "PostgreSQL 16" not in answer()


def test_a_write_that_changes_a_decision_in_other_words_says_what_it_replaced(service) -> None:
    client, _ = service
    old = tool(client, DEV, "memory.write", {"item": {"type": "decision", "title": "Search backend",
                                                      "content": "Product search is powered by Elasticsearch 7."}})
    assert old["supersedes"] == []
    new = tool(client, LATER, "memory.write", {"item": {
        "type": "decision", "title": "OpenSearch cutover",
        "content": "Product search runs on OpenSearch 2.11; the Elasticsearch cluster was shut down."}})
    assert new["supersedes"] == [old["item_id"]], new
    hits = recall(client, DEV, "what powers product search?")["hits"]
    assert [h["id"] for h in hits if h["type"] == "decision"] == [new["item_id"]], hits


def test_a_fact_taken_back_in_other_words_is_no_longer_recalled(service) -> None:
    client, settings = service
    me = {"user_id": "sam", "project_id": "home", "session_id": "a"}
    old = tool(client, me, "memory.write", {
        "item": {"type": "fact", "title": "Allergies", "content": "I'm allergic to penicillin."},
        "default_scope": "user"})
    new = tool(client, {**me, "session_id": "b"}, "memory.write", {"item": {
        "type": "fact", "title": "Penicillin",
        "content": "Allergy test came back negative - I'm not allergic to penicillin."}, "default_scope": "user"})
    assert new["supersedes"] == [old["item_id"]], new
    for moment in ("at once", "after consolidation"):
        block = recall(client, me, "am I allergic to penicillin?")["injection"]
        assert "not allergic to penicillin" in block and "I'm allergic to penicillin." not in block, (moment, block)
        consolidate(client, settings)


def test_two_items_of_one_list_under_one_title_are_both_kept(service) -> None:
    """The other way round: a team keeps a list under one title ("Replicas": prod and
    staging). Before, "Staging api runs 1 replica" was taken for the author's correction of
    "Prod api runs 6 replicas" (same title, same words, another number) and the prod figure
    left recall. Two notes under one title whose subjects each name something the other
    never says are two items: both kept and shown, marked as notes under one title."""
    client, settings = service
    prod = propose(client, DEV, "Replicas", "Prod api runs 6 replicas.")
    staging = propose(client, LATER, "Replicas", "Staging api runs 1 replica.")
    assert staging["supersedes"] == [], staging
    for moment in ("at once", "after consolidation"):
        answer = recall(client, DEV, "how many replicas does the api run?")
        block = answer["injection"]
        assert "Prod api runs 6 replicas." in block and "Staging api runs 1 replica." in block, (moment, block)
        hit = next(h for h in answer["hits"] if h["id"] == staging["item_id"])
        assert hit["same_title"] == [prod["item_id"]] and not hit["conflict"], (moment, hit)
        consolidate(client, settings)
    # one of them said again with another number is still a correction
    prod2 = propose(client, {**DEV, "session_id": "s3"}, "Replicas", "Prod api runs 8 replicas.")
    assert prod2["supersedes"] == [prod["item_id"]], prod2


def test_a_longer_restatement_under_another_title_corrects_and_a_weighed_option_does_not(service) -> None:
    """"Retry policy: Failed webhooks are retried 3 times" is one subject with "Webhook
    retries: Webhooks get retried five times, then dropped to the dead-letter queue": the
    first says its subject whole inside the second. A note that only weighs an option ("We're
    evaluating a move of the ledger service to Postgres, nothing decided") replaces nothing."""
    client, settings = service
    retries = propose(client, DEV, "Retry policy", "Failed webhooks are retried 3 times before we give up.")
    ledger = propose(client, DEV, "Ledger database", "The ledger service runs on MySQL 5.7.")
    plan = propose(client, LATER, "Ledger DB plans",
                   "We're evaluating a move of the ledger service to Postgres sometime next year, nothing decided.")
    assert plan["supersedes"] == [], plan
    new = propose(client, LATER, "Webhook retries",
                  "Webhooks get retried five times, then dropped to the dead-letter queue.")
    assert new["supersedes"] == [retries["item_id"]], new
    consolidate(client, settings)
    hits = recall(client, DEV, "how often are failed webhooks retried?")["hits"]
    ids = [h["id"] for h in hits]
    assert new["item_id"] in ids and retries["item_id"] not in ids, hits
    hits = recall(client, DEV, "what database does the ledger service run on?")["hits"]
    ids = [h["id"] for h in hits]
    assert ledger["item_id"] in ids and plan["item_id"] in ids, hits
    assert not any(h.get("conflict") for h in hits if h["id"] in (ledger["item_id"], plan["item_id"])), hits


def test_a_rule_moved_or_taken_back_in_other_words_under_another_title_replaces_the_old_one(service) -> None:
    """"Standup moved to 10:15" under "Daily sync" shares only half its words with "Daily
    standup is at 9:30" under "Standup time", and "Nobody may force-push to main" denies with
    a word that was not read as a negation: both were stored beside the rule they change.
    Starting next week, the move takes over then: the old time holds until it."""
    client, _ = service
    for (old_title, old_text), (new_title, new_text), asked, stale in (
            (("Standup time", "Daily standup is at 9:30."),
             ("Daily sync", "Standup moved to 10:15 starting next week."), "when is the daily standup?", "9:30"),
            (("Force pushes", "Force-pushing to main is allowed for maintainers."),
             ("Main branch protection", "Nobody may force-push to main, maintainers included."),
             "may maintainers force-push to main?", "is allowed")):
        old = tool(client, DEV, "memory.write", {"item": {"type": "decision", "title": old_title, "content": old_text}})
        new = tool(client, LATER, "memory.write", {"item": {"type": "decision", "title": new_title,
                                                            "content": new_text}})
        block = recall(client, DEV, asked)["injection"]
        if "next week" in new_text:  # the old time holds until then (`capture.takes_over`)
            assert new["supersedes"] == [] and new["ends"] == [old["item_id"]], (new_text, new)
            assert new_text in block and stale in block and " | UPCOMING" in block, block
            continue
        assert new["supersedes"] == [old["item_id"]], (new_text, new)
        assert new_text in block and stale not in block, block
