"""The memory browser (/ui) in a real browser: `loci serve` in its own process on 127.0.0.1,
Debian's Chromium driven by Playwright, a real consolidation between the steps.

Dana (project orion) writes two decisions that contradict each other (the second is
quarantined for it) and proposes two low-confidence facts, which the policy quarantines.
Omar, in the same project, reviews the queue: he approves one and rejects the other by
clicking the buttons. The item page and recall change at once (the decision is an inbox
event folded into the delta); after the next consolidation the warehouse holds a revision
and an audit event with Omar as the actor.
Every page is saved as a screenshot under test-artifacts/ui/.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness import make_settings, settings_env
from pipelines.consolidate import consolidate_once
from pipelines.settings import Settings
from pipelines.warehouse import Warehouse
from tests.fakes.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
DANA = {"user_id": "dana", "project_id": "orion", "session_id": "s1"}
OMAR = {"user_id": "omar", "project_id": "orion", "session_id": "s9"}
EVE = {"user_id": "eve", "project_id": "borealis", "session_id": "s2"}


def query(who: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in who.items())


def chromium_path() -> str:
    """Debian's Chromium (browser downloads are impossible here; .ci/run installs it)."""
    path = os.environ.get("LOCI_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("no Chromium binary: install Debian's `chromium` package (apt-get install -y chromium; "
                    ".ci/run does this) or point LOCI_CHROMIUM at one", pytrace=False)
    return path


class Server:
    def __init__(self, settings: Settings, base: str) -> None:
        self.settings = settings
        self.base = base

    def tool(self, who: dict[str, str], action: str, args: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{self.base}/v1/tools", json={"action": action, "identity": who, "args": args})
        assert response.status_code == 200, response.text
        return response.json()["result"]

    def consolidate(self) -> None:
        consolidate_once(self.settings)
        assert httpx.post(f"{self.base}/v1/admin/reload").status_code == 200

    def item(self, who: dict[str, str], item_id: str) -> httpx.Response:
        return httpx.get(f"{self.base}/v1/items/{item_id}", params=who)

    def recall_ids(self, who: dict[str, str], text: str) -> list[str]:
        body = httpx.post(f"{self.base}/v1/recall", json={"identity": who, "query": text, "mode": "hybrid"}).json()
        return [hit["id"] for hit in body["hits"]]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    settings = make_settings(tmp_path_factory.mktemp("browser"))
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "loci.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=ROOT, env=settings_env(settings), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else "server exited"
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "loci serve did not become ready"
            time.sleep(0.1)
        srv = Server(settings, base)
        seed(srv)
        yield srv
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def seed(srv: Server) -> None:
    # Two teammates disagree (one author's second claim would correct her first instead).
    for who, title, content in ((DANA, "Telemetry store", "Orion telemetry uses InfluxDB."),
                                (OMAR, "Telemetry store", "Orion telemetry uses TimescaleDB.")):
        srv.tool(who, "memory.write", {"item": {"type": "decision", "title": title, "content": content,
                                                 "tags": ["telemetry"], "scope": "project"}})
    proposed = srv.tool(DANA, "memory.propose", {"items": [
        {"type": "fact", "title": "Deploy window", "content": "Orion deploys on Friday afternoons.",
         "tags": ["deploys"], "confidence": 0.3},
        {"type": "fact", "title": "Pager rotation", "content": "Orion pager rotation changes every Tuesday.",
         "tags": ["oncall"], "confidence": 0.3},
    ]})["proposals"]
    assert [p["action"] for p in proposed] == ["quarantine", "quarantine"], proposed
    srv.consolidate()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    yield context.new_page()
    context.close()


def shot(page: Any, name: str) -> Path:
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def queued_ids(page: Any) -> list[str]:
    return [el.get_attribute("id")[2:] for el in page.query_selector_all("div.queued")]


def test_every_page_renders_for_the_caller(server: Server, page: Any) -> None:
    who = query(DANA)
    response = page.goto(f"{server.base}/ui/?{who}")
    assert response.status == 200 and "Memory of dana" in page.inner_text("h1")
    shot(page, "home")

    # The palace, level by level, by clicking: domain -> room -> shelf -> cards.
    page.goto(f"{server.base}/ui/palace?{who}")
    assert page.inner_text("h2") == "Domains"
    shot(page, "palace-domains")
    for level in ("Rooms", "Shelves"):
        page.click("#children li a")
        assert page.inner_text("h2") == level
    shot(page, "palace-shelves")
    page.click("#children li a")
    assert page.inner_text("h2") == "Cards on this shelf"
    titles = page.inner_text("#cards")
    assert "Telemetry store" in titles or "Deploy window" in titles, titles
    shot(page, "palace-cards")

    page.click("#cards a")
    assert page.url.startswith(f"{server.base}/ui/items/")
    fields = page.inner_text("#fields")
    for label in ("tier", "scope", "confidence", "validation", "provenance", "palace"):
        assert label in fields
    history = page.inner_text("#history")
    assert "create" in history and "dana" in history  # the published revision + audit event
    assert "pipeline" in history  # the palace stage's own work
    shot(page, "card")

    page.goto(f"{server.base}/ui/conflicts?{who}")
    conflicts = page.inner_text("#conflicts")
    assert "InfluxDB" in conflicts and "TimescaleDB" in conflicts, conflicts
    shot(page, "conflicts")

    page.goto(f"{server.base}/ui/quarantine?{query(OMAR)}")
    # The two low-confidence proposals, and the second telemetry decision (it contradicts the first).
    queue = page.inner_text("#queue")
    assert len(queued_ids(page)) == 3 and "soft.low_confidence" in queue and "soft.contradiction" in queue, queue
    shot(page, "quarantine")


def test_bad_id_forbidden_item_and_empty_identity_are_4xx_pages(server: Server, page: Any) -> None:
    response = page.goto(f"{server.base}/ui/items/mem_nothing_here?{query(DANA)}")
    assert response.status == 404 and "no item" in page.inner_text("#error")
    shot(page, "error-404")
    page.goto(f"{server.base}/ui/quarantine?{query(DANA)}")
    held = queued_ids(page)[0]
    response = page.goto(f"{server.base}/ui/items/{held}?{query(EVE)}")  # another project
    assert response.status == 404
    response = page.goto(f"{server.base}/ui/palace?user_id=&project_id=orion")
    assert response.status == 400 and "user_id" in page.inner_text("#error")
    shot(page, "error-400")
    forged = httpx.post(f"{server.base}/ui/quarantine/{held}?{query(EVE)}", data={"decision": "approve"})
    assert forged.status_code == 404 and "text/html" in forged.headers["content-type"]


def review(page: Any, server: Server, item_id: str, decision: str, note: str) -> None:
    page.goto(f"{server.base}/ui/quarantine?{query(OMAR)}")
    assert item_id in queued_ids(page)
    page.fill(f"#q-{item_id} input[name=note]", note)
    page.click(f"#q-{item_id} button[value={decision}]")
    page.wait_for_selector("#flash")
    assert item_id in page.inner_text("#flash")
    assert item_id not in queued_ids(page)  # gone from the queue at once


def stored_review(settings: Settings, item_id: str) -> tuple[list[dict], list[dict]]:
    with Warehouse(settings.warehouse_path, read_only=True) as wh:
        return wh.revisions(item_id), wh.item_events(item_id)


def held_item(server: Server, page: Any, title: str) -> str:
    page.goto(f"{server.base}/ui/quarantine?{query(OMAR)}")
    for item_id in queued_ids(page):
        if title in page.inner_text(f"#q-{item_id}"):
            return item_id
    raise AssertionError(f"{title!r} not in the quarantine queue")


def test_approve_flow(server: Server, page: Any) -> None:
    item_id = held_item(server, page, "Deploy window")
    before = server.item(DANA, item_id).json()["item"]
    assert before["validation"] == "unverified" and before["confidence"] <= 0.5
    review(page, server, item_id, "approve", "confirmed with the release team")
    shot(page, "quarantine-after-approve")

    item = server.item(DANA, item_id).json()["item"]  # the delta, before any consolidation
    assert item["validation"] == "verified" and item["expires_at"] is None and item["confidence"] >= 0.8
    assert item["metadata"]["review"]["by"] == "omar"
    assert item_id in server.recall_ids(DANA, "when does orion deploy?")
    page.goto(f"{server.base}/ui/items/{item_id}?{query(DANA)}")
    assert page.inner_text("#state") == "verified" and "approve by omar" in page.inner_text("#review")
    assert "memory.review" in page.inner_text("#inbox") and "pending" in page.inner_text("#inbox")
    shot(page, "card-approved")

    server.consolidate()
    revisions, events = stored_review(server.settings, item_id)
    (reviewed,) = [r for r in revisions if r["reason"] == "review_approve"]
    assert (reviewed["actor"], reviewed["snapshot"]["validation"]) == ("omar", "verified")
    assert any(e["actor"] == "omar" and e["details"]["reason"] == "review_approve" for e in events)
    page.goto(f"{server.base}/ui/items/{item_id}?{query(DANA)}")
    assert "review_approve" in page.inner_text("#history")  # now from the published history
    shot(page, "card-approved-consolidated")


def test_reject_flow(server: Server, page: Any) -> None:
    item_id = held_item(server, page, "Pager rotation")
    # Held for review, it is not recalled (not even catalogued) until approved.
    assert item_id not in server.recall_ids(DANA, "when does the pager rotation change?")
    review(page, server, item_id, "reject", "nobody agreed to this")

    item = server.item(DANA, item_id).json()["item"]
    assert item["validation"] == "retracted" and item["metadata"]["review"]["decision"] == "reject"
    assert item_id not in server.recall_ids(DANA, "when does the pager rotation change?")
    page.goto(f"{server.base}/ui/items/{item_id}?{query(DANA)}")
    assert page.inner_text("#state") == "retracted"
    shot(page, "card-rejected")
    # Decided once: a second decision on the same item is refused, as a page.
    again = httpx.post(f"{server.base}/ui/quarantine/{item_id}?{query(OMAR)}", data={"decision": "approve"})
    assert again.status_code == 409 and "not in quarantine" in again.text

    server.consolidate()
    revisions, events = stored_review(server.settings, item_id)
    (reviewed,) = [r for r in revisions if r["reason"] == "review_reject"]
    assert (reviewed["actor"], reviewed["snapshot"]["validation"]) == ("omar", "retracted")
    assert any(e["action"] == "retract" and e["actor"] == "omar" for e in events)
