"""Tenant isolation under concurrency, against a real service process.

Many users, projects, sessions and orgs write (memory.write, assistant turns with proposals)
and read (recall in every mode, memory.search, memory.read, GET /v1/items, palace browse,
/v1/conflicts) at the same time from several threads. Every id any read returns, in hits,
the injection block, the catalog, palace cards or conflict pairs, is checked against an
independent registry of who wrote what with which scope (`Scope.visible_to` is the
oracle). Same-titled claims are written by many tenants, so a leak would also show up as a
cross-tenant conflict. Reads also never miss an acknowledged write the caller may see
(read-your-writes across threads).

Another tenant's id is refused exactly like an unknown id: same status, same message shape,
by GET /v1/items, memory.read, memory.update and memory.link, and a refused update
changes nothing. `tests/online/test_tenancy.py` covers the single-threaded walk.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec
from litestar.testing import TestClient

from bench.harness import (
    ServiceProcess,
    ident,
    publish,
    random_identity,
    tenant_items,
    unique_phrase,
)
from online.app import create_app
from pipelines.embedders import HashEmbedder
from pipelines.materialize import message_item_id
from pipelines.records import SCOPE_KINDS, Identity, Scope
from pipelines.settings import Settings

INJECTED_ID = re.compile(r"\[MEMORY: ([^ |]+) \|")
SHARED_TITLES = ("Database choice", "Deploy window", "Cache policy")  # claims many tenants make
THREADS = 6
RUN_SECONDS = 5.0


@dataclass
class Registry:
    """Who may see what: every item id with the scope it was written with."""

    scopes: dict[str, Scope] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item_id: str, scope: Scope) -> None:
        with self.lock:
            self.scopes[item_id] = scope

    def snapshot(self) -> dict[str, Scope]:
        with self.lock:
            return dict(self.scopes)


@dataclass
class Observation:
    who: Identity
    route: str
    ids: list[str]


def palace_items(rng: random.Random, owners: list[Identity]):
    items = tenant_items(60, rng, owners, prefix="snap")
    out = []
    for n, it in enumerate(items):
        title = SHARED_TITLES[n % 3] if n % 4 == 0 else it.title  # conflicting claims across tenants
        kind = "decision" if n % 4 == 0 else it.type
        room = rng.choice(["ops", "design", "data"])
        out.append(msgspec.structs.replace(
            it, title=title, type=kind, metadata={"palace": f"{it.scope.project_id}/{room}/{kind}/{it.id}"}))
    return out


class Tenant(threading.Thread):
    """One client thread acting as a random tenant on every request."""

    def __init__(self, n: int, url: str, registry: Registry, deadline: float):
        super().__init__(name=f"tenant-{n}", daemon=True)
        self.rng = random.Random(100 + n)
        self.url, self.registry, self.deadline = url, registry, deadline
        self.observations: list[Observation] = []
        self.failures: list[str] = []  # 5xx or unexpected statuses
        self.counts: dict[str, int] = {}

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            while time.monotonic() < self.deadline:
                who = random_identity(self.rng)
                op = self.rng.choice(["write", "turn", "recall", "search", "read", "item", "palace",
                                      "conflicts"])
                self.counts[op] = self.counts.get(op, 0) + 1
                try:
                    getattr(self, op)(client, who)
                except AssertionError as exc:
                    self.failures.append(f"{op} as {who}: {exc}")

    def check(self, resp: httpx.Response, *ok: int) -> dict:
        assert resp.status_code in ok, (f"{resp.request.method} {resp.request.url.path}: "
                                        f"{resp.status_code} {resp.text[:300]}")
        return resp.json()

    def tool(self, client: httpx.Client, who: Identity, action: str, args: dict, *ok: int) -> dict:
        resp = client.post("/v1/tools", json={"action": action, "identity": ident(who), "args": args})
        return self.check(resp, *(ok or (200,)))

    # writes ---------------------------------------------------------------------------

    def write(self, client: httpx.Client, who: Identity) -> None:
        kind = self.rng.choice(SCOPE_KINDS)
        body = self.tool(client, who, "memory.write", {"item": {
            "type": "decision", "title": self.rng.choice(SHARED_TITLES), "scope": kind,
            "content": f"We decided on {unique_phrase(self.rng)}.", "confidence": 0.9}})
        self.registry.add(body["result"]["item_id"], Scope.for_identity(kind, who))

    def turn(self, client: httpx.Client, who: Identity) -> None:
        kind = self.rng.choice(SCOPE_KINDS)
        proposal = {"type": "fact", "title": f"fact {unique_phrase(self.rng, 2)}", "scope": kind,
                    "content": f"The {unique_phrase(self.rng)} holds.", "why_store": "durable"}
        turn_id = f"turn-{self.name}-{self.rng.getrandbits(48):x}"
        body = self.check(client.post("/v1/turns", json={
            "identity": ident(who), "role": "assistant", "turn_id": turn_id,
            "text": f"Done. <MEMORY_PROPOSALS_JSON>{json.dumps([proposal])}</MEMORY_PROPOSALS_JSON>"}), 201)
        self.registry.add(message_item_id(turn_id), Scope.for_identity("user", who))  # the raw turn
        for p in body["proposals"]:
            if p["item_id"]:
                self.registry.add(p["item_id"], Scope.for_identity(kind, who))

    # reads ----------------------------------------------------------------------------

    def observe(self, who: Identity, route: str, ids) -> None:
        self.observations.append(Observation(who, route, list(ids)))

    def recall(self, client: httpx.Client, who: Identity) -> None:
        mode = self.rng.choice(["inject", "catalog", "hybrid"])
        query = self.rng.choice([*SHARED_TITLES, "what did we decide?", unique_phrase(self.rng, 2)])
        body = self.check(client.post("/v1/recall", json={"identity": ident(who), "query": query,
                                                          "mode": mode, "k": 30}), 200)
        for hit in body["hits"]:  # the scope the service reports must itself be visible
            assert Scope(**hit["scope"]).visible_to(who), hit
        self.observe(who, f"recall/{mode}", [h["id"] for h in body["hits"]])
        self.observe(who, "recall/injection", INJECTED_ID.findall(body["injection"]))
        self.observe(who, "recall/catalog", [e["id"] for e in body["catalog"].get("memory_catalog", [])])

    def search(self, client: httpx.Client, who: Identity) -> None:
        scope = self.rng.choice([None, *SCOPE_KINDS])
        args = {"query": self.rng.choice(SHARED_TITLES), "k": 50, **({"scope": scope} if scope else {})}
        hits = self.tool(client, who, "memory.search", args)["result"]["hits"]
        self.observe(who, "memory.search", [h["id"] for h in hits])

    def read(self, client: httpx.Client, who: Identity) -> None:
        known = self.registry.snapshot()  # acknowledged before this request was sent
        ids = self.rng.sample(sorted(known), min(40, len(known))) + [f"unknown-{self.rng.getrandbits(32)}"]
        result = self.tool(client, who, "memory.read", {"ids": ids})["result"]
        got = [i["id"] for i in result["items"]]
        self.observe(who, "memory.read", got)
        assert set(got) | set(result["missing"]) == set(ids)
        should_see = {i for i in ids if i in known and known[i].visible_to(who)}
        assert set(got) == should_see, ("read-your-writes", sorted(should_see - set(got))[:3])

    def item(self, client: httpx.Client, who: Identity) -> None:
        known = self.registry.snapshot()
        item_id = self.rng.choice(sorted(known))
        resp = client.get(f"/v1/items/{item_id}", params=ident(who))
        body = self.check(resp, 200, 404)
        assert (resp.status_code == 200) == known[item_id].visible_to(who), (item_id, resp.status_code)
        if resp.status_code == 200:
            self.observe(who, "items.get", [body["item"]["id"]])

    def palace(self, client: httpx.Client, who: Identity) -> None:
        path = ""
        for _ in range(3):  # walk down domain/room/shelf
            children = self.tool(client, who, "memory.palace.list", {"path": path})["result"]["children"]
            if not children:
                return
            path = f"{path}/{self.rng.choice(children)}".strip("/")
        items = self.tool(client, who, "memory.palace.get", {"location": path})["result"]["items"]
        self.observe(who, "memory.palace.get", [i["id"] for i in items])

    def conflicts(self, client: httpx.Client, who: Identity) -> None:
        pairs = self.check(client.get("/v1/conflicts", params=ident(who)), 200)["conflicts"]
        self.observe(who, "conflicts", [x for p in pairs for x in (p["a"]["id"], p["b"]["id"])])


def test_concurrent_tenants_never_see_each_others_items(tmp_path: Path) -> None:
    rng = random.Random(42)
    settings = Settings(embedder="hash", data_dir=str(tmp_path / "data"), recall_k=30, catalog_k=40)
    owners = [random_identity(rng) for _ in range(12)]
    snap = palace_items(rng, owners)
    publish(settings, snap, HashEmbedder(settings.embedder_dim))
    registry = Registry()
    for it in snap:
        registry.add(it.id, it.scope)

    with ServiceProcess(settings) as service:
        deadline = time.monotonic() + RUN_SECONDS
        tenants = [Tenant(n, service.url, registry, deadline) for n in range(THREADS)]
        for t in tenants:
            t.start()
        for t in tenants:
            t.join(RUN_SECONDS + 60)
        assert not any(t.is_alive() for t in tenants)

    failures = [f for t in tenants for f in t.failures]
    assert failures == [], failures[:5]
    scopes = registry.snapshot()
    leaks, unknown, returned = [], [], 0
    for t in tenants:
        for obs in t.observations:
            for item_id in obs.ids:
                returned += 1
                if item_id not in scopes:
                    unknown.append((obs.route, item_id))
                elif not scopes[item_id].visible_to(obs.who):
                    leaks.append((obs.route, obs.who, item_id, scopes[item_id]))
    assert leaks == [], leaks[:5]
    assert unknown == [], unknown[:5]
    # Not vacuous: every kind of read ran and returned items, under real concurrency.
    routes = {obs.route for t in tenants for obs in t.observations if obs.ids}
    assert {"memory.search", "memory.read", "items.get", "memory.palace.get", "conflicts"} <= routes, routes
    assert any(r.startswith("recall/") for r in routes) and returned > 200
    assert sum(t.counts.get("write", 0) + t.counts.get("turn", 0) for t in tenants) > 20


def error_shape(resp, item_id: str) -> tuple[int, str, str]:
    """Status, content type and JSON body with the id masked: what a caller can compare."""
    text = json.dumps(resp.json(), sort_keys=True).replace(item_id, "<ID>")
    return resp.status_code, resp.headers["content-type"], text


def test_foreign_ids_are_refused_exactly_like_unknown_ids(tmp_path: Path) -> None:
    settings = Settings(embedder="hash", data_dir=str(tmp_path / "data"))
    ann = Identity(user_id="ann", project_id="atlas", session_id="s1", org_id="acme")
    eve = Identity(user_id="eve", project_id="borealis", session_id="s9", org_id="globex")
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    with TestClient(app) as client:
        def tool(who: Identity, action: str, args: dict):
            return client.post("/v1/tools", json={"action": action, "identity": ident(who), "args": args})

        eve_ids = {}
        for kind in SCOPE_KINDS:  # one private item of Eve's per scope kind
            resp = tool(eve, "memory.write", {"item": {"title": f"Eve {kind}", "scope": kind,
                                                       "content": f"Eve's {kind} secret plan."}})
            eve_ids[kind] = resp.json()["result"]["item_id"]
        mine = tool(ann, "memory.write",
                    {"item": {"title": "Ann", "content": "Ann's own note."}}).json()["result"]["item_id"]
        # Same length as the foreign ids, so not even the body size tells them apart.
        unknown = "mem_" + "0" * (len(eve_ids["org"]) - 4)

        for kind, foreign in eve_ids.items():
            assert client.get(f"/v1/items/{foreign}", params=ident(eve)).status_code == 200  # it exists
            got = client.get(f"/v1/items/{foreign}", params=ident(ann))
            ref = client.get(f"/v1/items/{unknown}", params=ident(ann))
            assert error_shape(got, foreign) == error_shape(ref, unknown) and got.status_code == 404, kind
            assert len(got.content) == len(ref.content)

            read = tool(ann, "memory.read", {"ids": [foreign, unknown, mine]}).json()["result"]
            assert read["missing"] == [foreign, unknown] and [i["id"] for i in read["items"]] == [mine]

            for action, args in (("memory.update", {"id": "<ID>", "patch": {"content": "hijacked"}}),
                                 ("memory.link", {"src_id": mine, "dst_id": "<ID>", "rel": "supports"}),
                                 ("memory.link", {"src_id": "<ID>", "dst_id": mine, "rel": "refines"})):
                fill = lambda i, args=args: {k: (i if v == "<ID>" else v) for k, v in args.items()}  # noqa: E731
                got, ref = tool(ann, action, fill(foreign)), tool(ann, action, fill(unknown))
                assert error_shape(got, foreign) == error_shape(ref, unknown) and got.status_code == 404, action

            # Nothing changed for Eve: her item is as she wrote it, with no link from Ann.
            item = client.get(f"/v1/items/{foreign}", params=ident(eve)).json()["item"]
            assert item["content"] == f"Eve's {kind} secret plan." and item["links"] == []
    assert app.state.internal_errors == 0
