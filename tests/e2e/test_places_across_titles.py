"""Places that exclude each other, across titles (trial30's team lead). The org's "Customer
data residency: All customer data stays in the EU." and the analytics project's "Analytics
replica data location: Customer data for the analytics replica is stored in the US
(us-east-1)." are one subject (customer data, where it is kept) in two scopes: recall marks
both and /v1/conflicts lists the pair (was: unmarked, none listed; with one title they were
marked). Within the project, Raj's "Replica location for analytics: The analytics replica
goes to us-west-2." beside Tom's "Analytics replica region: Use eu-central-1 for the analytics
replica." is held (was: accepted, the two unmarked)."""

from __future__ import annotations

from litestar.testing import TestClient

ORG = "acme"
OLGA = {"user_id": "olga", "project_id": "it-admin", "session_id": "o1", "org_id": ORG}
TOM = {"user_id": "tom", "project_id": "analytics", "session_id": "t1", "org_id": ORG}
RAJ = {"user_id": "raj", "project_id": "analytics", "session_id": "r1", "org_id": ORG}


def memo(type_: str, title: str, content: str, scope: str = "project") -> dict:
    return {"type": type_, "title": title, "content": content, "why_store": "team", "confidence": 0.9,
            "scope": scope}


def propose(client: TestClient, who: dict, item: dict) -> dict:
    resp = client.post("/v1/tools", json={"action": "memory.propose", "args": {"items": [item]}, "identity": who})
    assert resp.status_code == 200, resp.text
    return resp.json()["result"]["proposals"][0]


def test_an_org_policy_and_a_project_decision_contradicting_it_in_other_words_are_marked(service) -> None:
    c, _ = service
    policy = propose(c, OLGA, memo("constraint", "Customer data residency", "All customer data stays in the EU.",
                                   scope="org"))
    decision = propose(c, TOM, memo("decision", "Analytics replica data location",
                                    "Customer data for the analytics replica is stored in the US (us-east-1)."))
    body = c.post("/v1/recall", json={"query": "Where is customer data stored for the analytics replica?",
                                      "identity": TOM}).json()
    hits = {h["id"]: h for h in body["hits"]}
    assert {policy["item_id"], decision["item_id"]} <= set(hits)
    # The project's decision first (scope order), both marked as contradicting each other.
    assert body["hits"][0]["id"] == decision["item_id"]
    assert policy["item_id"] in hits[decision["item_id"]]["conflict_with"], hits
    assert "SCOPE=org" in body["injection"] and "CONFLICT=" in body["injection"]
    assert c.get("/v1/conflicts", params=TOM).json()["count"] == 1


def test_a_teammates_other_region_under_another_title_is_held(service) -> None:
    c, _ = service
    tom = propose(c, TOM, memo("decision", "Analytics replica region",
                               "Use eu-central-1 for the analytics replica."))
    raj = propose(c, RAJ, memo("decision", "Replica location for analytics",
                               "The analytics replica goes to us-west-2."))
    assert raj["action"] == "quarantine" and tom["item_id"] in " ".join(raj["reasons"]), raj
