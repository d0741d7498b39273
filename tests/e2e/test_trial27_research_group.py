"""A research group's month (the twenty-seventh new-user trial). Ada (the PI), Ben and Cyd
share the project "thesis-lab" (org uni) and keep reading notes and lab decisions in Loci:
from a chat app over HTTP (`/v1/turns`), from their editors' agents over MCP (the official
`mcp` SDK client on `online.mcp_server.build_server`, over the same service), in the memory
browser (/ui) and with the CLI (`loci show`, `loci export`). Every write is stamped by a
simulated clock over four weeks ending yesterday; two consolidations run as the scheduled job
does (the Dagster job, in process). Promises checked, as a demanding user meets them:

- Search shows the curated memories first and the raw turns after them, labelled as
  evidence (MCP: kept; the browser: broken, it had no search page at all: /ui/search now
  gives the `memory.search` action's answer, turns under "Conversation excerpts").
- Tags filter in every surface: MCP search (kept, any case), the browser's search and
  `loci search --tag` / `loci export --tag` (broken: no tag option anywhere but the API).
- A reversed decision ("we use PyTorch" -> "we switched to JAX", by Ben: held as
  contradicting Ada's, approved by her in the browser; Ben may not approve his own) shows
  the current one with what it replaced, who said that and when: MCP read and `loci show`
  (kept), the browser card (broken: it linked the old id only; now it lists the earlier
  versions, what each said, by whom, when).
- Cyd's private notes (written over MCP, said in the chat, held for review) never reach Ada
  or Ben: search, browse, review queues, item by id (kept); export (broken: `loci export`
  could only dump everyone's; `--user/--project/--org` now exports what one member may
  see); `loci audit ID` (new) lists who was shown it and the refused attempts on it.
- A forgotten note is gone from search, the browser card (broken: the card showed its
  title and text; now who forgot it and when only) and the export (kept); the items API and
  memory.read (broken: the whole item, to a teammate and to Cyd) give its tombstone (who
  forgot it, when), its palace shelf (broken: listed by title) leaves it off: one rule,
  `item_report.as_read`.
- A held proposal is approved through the browser's review form and then recalled (kept).
- Bad input (malformed MCP arguments, unknown tags, huge page numbers, bad ids in /ui URLs,
  bad CLI options) is a 4xx, a tool error or a non-zero exit with a message, never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Any
from urllib.parse import quote

import pytest
from litestar.testing import TestClient
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as loci_cli
from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import block, make_settings, settings_env, shared_instance
from tests.e2e.chat import SimulatedClock, mcp, page_text

ORG, LAB = "uni", "thesis-lab"
ADA = {"user_id": "ada", "project_id": LAB, "session_id": "a1", "org_id": ORG}
BEN = {"user_id": "ben", "project_id": LAB, "session_id": "b1", "org_id": ORG}
CYD = {"user_id": "cyd", "project_id": LAB, "session_id": "c1", "org_id": ORG}
UTC = timezone.utc


def note(type_: str, title: str, content: str, tags: list[str], scope: str = "project",
         confidence: float = 0.9) -> dict[str, Any]:
    return {"type": type_, "title": title, "content": content, "tags": tags, "why_store": "lab notes",
            "confidence": confidence, "scope": scope}


VASWANI = note("note", "Vaswani et al. 2017: Attention Is All You Need",
               "Vaswani et al. (2017), Attention Is All You Need: the Transformer replaces recurrence "
               "with self-attention.", ["paper", "transformers"])
DDPM = note("note", "Ho et al. 2020: Denoising Diffusion Probabilistic Models",
            "Ho, Jain and Abbeel (2020), DDPM: image generation by learning to reverse a gradual "
            "noising process.", ["paper", "diffusion"])
PYTORCH = note("decision", "Lab deep learning framework",
               "The lab uses PyTorch for all thesis experiments.", ["decision", "tooling"])
JAX = note("decision", "Lab deep learning framework",
           "We switched from PyTorch to JAX for all thesis experiments.", ["decision", "tooling"])
PRIVATE = note("note", "Cyd's program plans",
               "Cyd is considering leaving the PhD program after the spring term.", ["personal"], scope="user")
INTERVIEW = note("note", "Cyd's interview", "Cyd has a job interview at DeepMind on Friday; the lab must not know.",
                 ["personal"], scope="user")
UNSURE = note("note", "Cyd's advisor plans", "Cyd might switch advisors next year.", ["personal"], scope="user",
              confidence=0.3)
SMITH = note("note", "Smith et al. 2019: graph kernels survey",
             "Smith et al. (2019) survey graph kernels for molecule property prediction.", ["paper", "graphs"])
A100 = note("fact", "Shared GPU node", "The department may give the lab a shared A100 node in December.",
            ["infrastructure"], confidence=0.3)
CHATTER = [(BEN, "lol the PyTorch conference stickers finally arrived, framework swag everywhere"),
           (CYD, "my cat is called Jax, he sat on the keyboard during the experiments meeting"),
           (BEN, "deep learning framework wars on twitter again, switched off my phone")]
FRAMEWORK_Q = "which deep learning framework does the lab use for thesis experiments?"




def ui_query(who: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {**who, **extra}


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    settings = make_settings(tmp_path_factory.mktemp("t27"))
    app = create_app(settings, embedder=HashEmbedder(settings.embedder_dim), check_interval_ms=0)
    start: date = datetime.now(UTC).date() - timedelta(days=27)
    clock = SimulatedClock(UTC)
    ids: dict[str, str] = {}
    said_at: dict[str, datetime] = {}
    seen: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch, TestClient(app) as client:
        clock.patch_into(patch)
        service = client.app.state.service

        def on(day: int, hour: int = 10) -> None:
            clock.at(start + timedelta(days=day), time(hour))

        def chat(name: str, who: dict, said: str, item: dict | None) -> dict:
            """One exchange in the chat app: the user's turn, the assistant's with its proposal."""
            resp = client.post("/v1/turns", json={"identity": who, "role": "user", "text": said})
            assert resp.status_code == 201, resp.text
            if item is None:
                return resp.json()
            resp = client.post("/v1/turns", json={"identity": who, "role": "assistant",
                                                  "text": "Noted. " + block(item)})
            assert resp.status_code == 201, resp.text
            (outcome,) = resp.json()["proposals"]
            ids[name], said_at[name] = outcome["item_id"], clock.now
            return outcome

        def propose_mcp(name: str, who: dict, item: dict) -> dict:
            ((failed, body),) = mcp(service, who, ("memory_propose", {"items": [item]}))
            assert not failed, body
            (outcome,) = body["proposals"]
            ids[name], said_at[name] = outcome["item_id"], clock.now
            return outcome

        def consolidate() -> None:
            assert service.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            assert client.post("/v1/admin/reload").status_code == 200

        # Week 1: reading notes, the framework decision, chatter, Cyd's private note.
        on(0)
        assert chat("vaswani", ADA, "Notes on Vaswani 2017 for the reading group.", VASWANI)["action"] == "accept"
        on(1)
        assert propose_mcp("ddpm", BEN, DDPM)["action"] == "accept"
        on(2)
        assert chat("pytorch", ADA, "Lab decision: we use PyTorch for all thesis experiments.",
                    PYTORCH)["action"] == "accept"
        on(3)
        for who, said in CHATTER:
            chat("", who, said, None)
        on(4)
        assert propose_mcp("private", CYD, PRIVATE)["action"] == "accept"
        # In the chat too, privately: her turn and the note must stay hers; an unsure one is held.
        assert chat("interview", CYD, "Note to self, private: job interview at DeepMind on Friday, don't tell the lab.",
                    INTERVIEW)["action"] == "accept"
        assert propose_mcp("unsure", CYD, UNSURE)["action"] == "quarantine"
        on(5)
        assert chat("smith", CYD, "Adding my note on the Smith 2019 graph kernels survey.", SMITH)["action"] == "accept"
        on(13, 22)
        consolidate()
        # Week 3: Ben reverses the decision from his editor; Cyd forgets her Smith note.
        on(15)
        seen["jax"] = propose_mcp("jax", BEN, JAX)
        seen["own approval"] = client.post(f"/ui/quarantine/{ids['jax']}", params=BEN, data={"decision": "approve"})
        on(16, 9)  # Ada reviews it in the browser: she agrees, the lab switches
        seen["approve jax"] = client.post(f"/ui/quarantine/{ids['jax']}", params=ADA,
                                          data={"decision": "approve", "note": "agreed at group meeting"},
                                          follow_redirects=False)
        on(16)
        ((failed, seen["forget"]),) = mcp(service, CYD, ("memory_forget", {"id": ids["smith"]}))
        assert not failed, seen["forget"]
        # Week 4: Ben's unsure proposal is held; Ada approves it in the browser.
        on(20)
        seen["a100"] = chat("a100", BEN, "I heard we might get an A100 node from the department?", A100)
        on(22)
        seen["queue before"] = page_text(client.get("/ui/quarantine", params=ADA).text)
        seen["approve"] = client.post(f"/ui/quarantine/{ids['a100']}", params=ADA,
                                      data={"decision": "approve", "note": "confirmed by the department"},
                                      follow_redirects=False)
        on(26, 22)
        consolidate()

        # What each surface shows, asked on the day after the last consolidation.
        on(27)
        seen["search"] = {name: mcp(service, who, ("memory_search", {"query": FRAMEWORK_Q}))[0]
                          for name, who in (("ada", ADA), ("cyd", CYD))}
        seen["tagged"] = {tags: mcp(service, ADA, ("memory_search", {"query": "papers we read", "tags": list(tags)}))[0]
                          for tags in (("paper",), ("diffusion",), ("no-such-tag",), ("Paper", "PAPER"))}
        seen["private search"] = {name: mcp(service, who, ("memory_search", {
            "query": "Is Cyd considering leaving the PhD program?"}))[0] for name, who in
            (("ada", ADA), ("ben", BEN), ("cyd", CYD))}
        seen["forgotten read"] = mcp(service, ADA, ("memory_read", {"ids": [ids["smith"]]}),
                                     ("memory_palace_get", {"location": f"{LAB}/paper/note"}))
        seen["forgotten read by cyd"] = mcp(service, CYD, ("memory_read", {"ids": [ids["smith"]]}))[0]
        seen["forgotten shelf"] = client.get("/ui/palace", params=ui_query(ADA, path=f"{LAB}/paper/note"))
        ((_, mine),) = mcp(service, CYD, ("memory_read", {"ids": [ids["private"]]}))
        shelf = mine["items"][0]["metadata"]["palace"].rsplit("/", 1)[0]
        seen["private shelf"] = {name: (mcp(service, who, ("memory_palace_get", {"location": shelf}))[0],
                                        client.get("/ui/palace", params=ui_query(who, path=shelf)))
                                 for name, who in (("ada", ADA), ("ben", BEN), ("cyd", CYD))}
        seen["interview search"] = {name: mcp(service, who, ("memory_search", {
            "query": "Does Cyd have a job interview at DeepMind?"}))[0] for name, who in
            (("ada", ADA), ("ben", BEN), ("cyd", CYD))}
        seen["review lists"] = {name: mcp(service, who, ("memory_review_list", {}))[0][1]
                                for name, who in (("ada", ADA), ("cyd", CYD))}
        seen["quarantine pages"] = {name: page_text(client.get("/ui/quarantine", params=who).text)
                                    for name, who in (("ada", ADA), ("ben", BEN), ("cyd", CYD))}
        seen["forgotten search"] = {name: mcp(service, who, ("memory_search", {
            "query": "Smith 2019 graph kernels survey"}))[0] for name, who in (("ada", ADA), ("cyd", CYD))}
        seen["read"] = mcp(service, ADA, ("memory_read", {"ids": [ids["pytorch"], ids["jax"], ids["private"]]}))[0]
        seen["a100 search"] = mcp(service, BEN, ("memory_search", {"query": "shared A100 GPU node"}))[0]
        seen["review list"] = mcp(service, ADA, ("memory_review_list", {}))[0]
        seen["bad mcp"] = mcp(service, ADA, *[
            ("memory_search", {"query": "x", "tags": "paper"}),
            ("memory_search", {"query": "x", "tags": [""]}),
            ("memory_search", {"query": "x", "k": 0}),
            ("memory_search", {"query": "x", "k": 10**12}),
            ("memory_search", {"query": "x", "type": "paper"}),
            ("memory_read", {"ids": "abc"}),
            ("memory_read", {"ids": ["x" * 201]}),
            ("memory_forget", {}),
            ("memory_forget", {"id": ids["private"]}),
            ("memory_update", {"id": ids["jax"], "patch": []}),
            ("memory_palace_get", {"location": "../../etc"}),
            ("memory_propose", {"items": [{"content": "x", "tags": "paper"}]}),
        ])
        seen["ui search"] = {
            name: client.get("/ui/search", params=ui_query(who, q=q, **extra))
            for name, who, q, extra in [
                ("framework", CYD, FRAMEWORK_Q, {}),
                ("paper tag", ADA, "papers we read", {"tag": "paper"}),
                ("diffusion tag", BEN, "papers we read", {"tag": "diffusion"}),
                ("unknown tag", ADA, "papers we read", {"tag": "no-such-tag"}),
                ("private as ben", BEN, "Cyd leaving the PhD program", {}),
                ("private as cyd", CYD, "Cyd leaving the PhD program", {}),
                ("forgotten", CYD, "Smith 2019 graph kernels survey", {}),
            ]}
        seen["cards"] = {name: client.get(f"/ui/items/{quote(ids[key])}", params=who) for name, key, who in [
            ("jax", "jax", ADA), ("pytorch", "pytorch", BEN), ("private as ben", "private", BEN),
            ("private as ada", "private", ADA), ("private as cyd", "private", CYD), ("smith", "smith", ADA)]}
        seen["items api"] = {name: client.get(f"/v1/items/{ids[key]}", params=who) for name, key, who in [
            ("private as ben", "private", BEN), ("smith as ada", "smith", ADA), ("smith as cyd", "smith", CYD)]}
        seen["palace"] = {name: page_text(client.get("/ui/palace", params=who).text) +
                          json.dumps(mcp(service, who, ("memory_palace_list", {"path": ""}))[0][1])
                          for name, who in (("ada", ADA), ("ben", BEN))}
        seen["bad ui"] = [(url, params, client.get(url, params=params)) for url, params in [
            ("/ui/palace", ui_query(ADA, page=10**9)),
            ("/ui/palace", ui_query(ADA, page=5000)),
            ("/ui/palace", ui_query(ADA, page="two")),
            ("/ui/quarantine", ui_query(ADA, page=-1)),
            ("/ui/items/" + "x" * 300, ADA),
            ("/ui/items/%00", ADA),
            ("/ui/items/no-such-id", ADA),
            ("/ui/search", ui_query(ADA, q="")),
            ("/ui/search", ui_query(ADA, q="x", tag="t" * 101)),
            ("/ui/search", ui_query(ADA, q="x", page=10**9)),
            ("/ui/search", ui_query(ADA, q="papers", page=5000)),
            ("/ui/palace", ui_query(ADA, path="a/b/c/d/e")),
        ]]
        data_dir = str(settings.data_dir)
        runner = CliRunner(env=settings_env(settings))  # the CLI reads the store as the service does
        seen["show"] = {name: runner.invoke(loci_cli, ["show", ids[name], "--data-dir", data_dir])
                        for name in ("jax", "pytorch", "smith")}
        seen["export"] = {
            name: runner.invoke(loci_cli, ["export", "--data-dir", data_dir, *args])
            for name, args in [
                ("admin", []),
                ("ben", ["--user", "ben", "--project", LAB, "--org", ORG]),
                ("cyd", ["--user", "cyd", "--project", LAB, "--org", ORG]),
                ("ada papers", ["--user", "ada", "--project", LAB, "--org", ORG, "--tag", "paper"]),
            ]}
        seen["audit"] = {name: runner.invoke(loci_cli, ["audit", ids[name], "--data-dir", data_dir])
                         for name in ("private", "jax")}
        seen["cli search"] = runner.invoke(loci_cli, [
            "search", "papers we read", "--tag", "paper", "--user", "ada", "--project", LAB, "--org", ORG,
            "--data-dir", data_dir])
        seen["bad cli"] = [runner.invoke(loci_cli, [*args, "--data-dir", data_dir]) for args in [
            ["export", "--user", ""], ["export", "--tag", " "], ["search", "papers", "--tag", "  "],
            ["audit", ids["jax"], "--tz", "Mars/Olympus"], ["show", "no-such-id"]]]
        seen["audit unknown"] = runner.invoke(loci_cli, ["audit", "no-such-id", "--data-dir", data_dir])
        yield {"ids": ids, "said_at": said_at, "seen": seen, "start": start}
    assert app.state.internal_errors == 0


def hit_ids(body: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in body["hits"]]


def test_search_shows_the_curated_current_decision_first_and_turns_as_evidence(month) -> None:
    ids, seen = month["ids"], month["seen"]
    for who, (failed, body) in seen["search"].items():
        assert not failed, body
        hits = body["hits"]
        assert hits[0]["id"] == ids["jax"], (who, hits[:3])
        assert ids["pytorch"] not in hit_ids(body), who  # the replaced claim is never shown as current
        kinds = [h["type"] == "message" for h in hits]
        assert kinds == sorted(kinds), who  # every curated memory before every turn
        assert all(h.get("evidence") for h in hits if h["type"] == "message"), who
        assert not any(h.get("evidence") for h in hits if h["type"] != "message"), who
    # The browser's search: the same order, the turns under a heading saying what they are.
    page = seen["ui search"]["framework"]
    assert page.status_code == 200, page.text
    text = page_text(page.text)
    assert JAX["content"] in text and PYTORCH["content"] not in text.split("Conversation excerpts")[0]
    assert "Conversation excerpts" in text and "not verified" in text
    assert text.index(JAX["content"]) < text.index("Conversation excerpts")


def test_tags_filter_every_surface(month) -> None:
    ids, seen = month["ids"], month["seen"]
    (failed, paper), (_, diffusion), (unknown_failed, unknown) = (seen["tagged"][t] for t in
                                                                  (("paper",), ("diffusion",), ("no-such-tag",)))
    assert not failed and set(hit_ids(paper)) == {ids["vaswani"], ids["ddpm"]}, paper
    assert hit_ids(seen["tagged"][("Paper", "PAPER")][1]) == hit_ids(paper)  # a tag is a tag, whatever its case
    assert hit_ids(diffusion) == [ids["ddpm"]]
    # An unknown tag finds nothing and says so; it is not an error.
    assert not unknown_failed and unknown["found"] is False and unknown["hits"] == [] and unknown["message"]
    text = {name: page_text(seen["ui search"][name].text) for name in ("paper tag", "diffusion tag", "unknown tag")}
    assert VASWANI["title"] in text["paper tag"] and DDPM["title"] in text["paper tag"]
    assert PYTORCH["title"] not in text["paper tag"] and SMITH["title"] not in text["paper tag"]
    assert DDPM["title"] in text["diffusion tag"] and VASWANI["title"] not in text["diffusion tag"]
    assert seen["ui search"]["unknown tag"].status_code == 200 and "Nothing found" in text["unknown tag"]
    searched = seen["cli search"]
    assert searched.exit_code == 0 and ids["vaswani"] in searched.output and ids["ddpm"] in searched.output
    assert ids["jax"] not in searched.output and ids["smith"] not in searched.output
    exported = [json.loads(line) for line in seen["export"]["ada papers"].stdout.splitlines()]
    assert seen["export"]["ada papers"].exit_code == 0
    # Its count is said on stderr, never among the JSON lines (`loci export > file`).
    assert "exported 3 items" in seen["export"]["ada papers"].stderr and "exported" not in \
        seen["export"]["ada papers"].stdout
    # The forgotten Smith note only as its tombstone: an id for an import to retract, no text.
    assert {e["id"] for e in exported if e["content"]} == {ids["vaswani"], ids["ddpm"]}
    assert [e["id"] for e in exported if not e["content"]] == [ids["smith"]]


def test_a_reversed_decision_shows_the_current_one_with_its_history_everywhere(month) -> None:
    ids, seen, said_at = month["ids"], month["seen"], month["said_at"]
    # Ben's reversal contradicts Ada's decision: held until a reviewer (Ada) approves it.
    assert seen["jax"]["action"] == "quarantine" and ids["pytorch"] in " ".join(seen["jax"]["reasons"])
    assert seen["approve jax"].status_code == 303, seen["approve jax"].text
    # Ben may not approve his own held reversal: a 409 page saying so, nothing changed.
    assert seen["own approval"].status_code == 409 and "ben" in page_text(seen["own approval"].text).lower()
    ada_day = said_at["pytorch"].date().isoformat()
    # MCP: reading both ids names the current one; the replaced one as last stored, by whom.
    failed, read = seen["read"]
    assert not failed
    assert [i["id"] for i in read["items"]] == [ids["jax"]] and ids["private"] in read["missing"]
    (current,) = read["items"]  # the current claim names what it replaced and who stated it
    assert {"rel": "supersedes", "to": ids["pytorch"]}.items() <= current["links"][0].items()
    assert current["scope"]["user_id"] == "ben" and current["validation"] == "verified"
    assert read["superseded_by"] == {ids["pytorch"]: ids["jax"]}
    (old,) = read["replaced"]
    assert old["content"] == PYTORCH["content"] and old["scope"]["user_id"] == "ada"
    # The browser: the current card says what it replaced, who said that and when.
    card = seen["cards"]["jax"]
    assert card.status_code == 200
    text = page_text(card.text)
    assert "Replaced earlier versions" in text, text
    earlier = text.split("Replaced earlier versions")[1]
    assert PYTORCH["content"] in earlier and "ada" in earlier and ada_day in earlier
    old_card = page_text(seen["cards"]["pytorch"].text)
    assert "superseded by" in old_card and ids["jax"] in old_card
    # `loci show`: the current claim, its history (Ben proposed it), the version it replaced.
    shown = seen["show"]["jax"]
    assert shown.exit_code == 0, shown.output
    assert JAX["content"] in shown.output and "ben" in shown.output.split("history")[1]
    (line,) = [ln for ln in shown.output.split("replaced earlier versions")[1].splitlines()
               if ids["pytorch"] in ln]
    assert "ada" in line and ada_day in line and "PyTorch" in line
    assert f"superseded by {ids['jax']}" in seen["show"]["pytorch"].output


def test_a_private_note_never_reaches_a_teammate(month) -> None:
    ids, seen = month["ids"], month["seen"]
    private = ids["private"]
    for who in ("ada", "ben"):
        failed, body = seen["private search"][who]
        assert not failed and private not in hit_ids(body) and PRIVATE["content"] not in json.dumps(body)
        assert private not in seen["palace"][who] and PRIVATE["title"] not in seen["palace"][who]
    assert private in hit_ids(seen["private search"]["cyd"][1])
    assert PRIVATE["content"] not in page_text(seen["ui search"]["private as ben"].text)
    assert PRIVATE["content"] in page_text(seen["ui search"]["private as cyd"].text)
    for who in ("ben", "ada"):
        card = seen["cards"][f"private as {who}"]
        assert card.status_code in (403, 404) and PRIVATE["content"] not in card.text
    assert seen["cards"]["private as cyd"].status_code == 200
    assert seen["items api"]["private as ben"].status_code in (403, 404)
    assert PRIVATE["content"] not in seen["export"]["ben"].stdout and seen["export"]["ben"].exit_code == 0
    assert PRIVATE["content"] in seen["export"]["cyd"].stdout
    assert "DeepMind" not in seen["export"]["ben"].stdout and "DeepMind" in seen["export"]["cyd"].stdout
    assert JAX["content"] in seen["export"]["ben"].stdout  # the lab's memory is shared
    # Its palace shelf, named outright: empty for a teammate, over MCP and in the browser.
    for who, ((_, shelf), page) in seen["private shelf"].items():
        listed = [i["id"] for i in shelf.get("items", [])]
        assert (private in listed) == (who == "cyd"), (who, shelf)
        assert (PRIVATE["title"] in page_text(page.text)) == (who == "cyd"), (who, page.status_code)
        assert page.status_code < 500
    # Said in the chat: neither the note nor the turn that said it reaches a teammate.
    for who in ("ada", "ben"):
        failed, body = seen["interview search"][who]
        assert not failed and "DeepMind" not in json.dumps(body["hits"]), (who, body)
    assert ids["interview"] in hit_ids(seen["interview search"]["cyd"][1])
    # Held for review, it waits in Cyd's queue only (she may reject it; nobody else sees it).
    assert UNSURE["content"] not in json.dumps(seen["review lists"]["ada"])
    assert UNSURE["content"] in json.dumps(seen["review lists"]["cyd"])
    for who in ("ada", "ben"):
        assert UNSURE["title"] not in seen["quarantine pages"][who]
    assert UNSURE["title"] in seen["quarantine pages"]["cyd"]
    # `loci audit`: every read that returned it was Cyd's; Ada's attempt to forget it is
    # listed as refused.
    audited = seen["audit"]["private"]
    assert audited.exit_code == 0, audited.output
    rows = [line.split() for line in audited.output.split("reads of")[1].splitlines()[1:]]  # its changes before
    assert {row[2] for row in rows if "REFUSED:" not in row} == {"cyd"}, audited.output
    assert [row[2] for row in rows if "REFUSED:" in row] == ["ada"], audited.output
    assert {line.split()[2] for line in seen["audit"]["jax"].output.split("reads of")[1].splitlines()[1:]} \
        >= {"ada", "cyd"}
    # Another member may not forget it either: it is invisible to her.
    failed, body = seen["bad mcp"][8]
    assert failed and body["status"] == 404, body


def test_a_forgotten_note_is_gone_from_every_surface(month) -> None:
    ids, seen = month["ids"], month["seen"]
    assert seen["forget"].get("forgotten") or seen["forget"], seen["forget"]
    for who, (failed, body) in seen["forgotten search"].items():
        assert not failed and ids["smith"] not in hit_ids(body), who
        assert "Smith et al. (2019)" not in json.dumps(body), (who, body)
    assert "Smith et al. (2019)" not in page_text(seen["ui search"]["forgotten"].text)
    assert seen["cards"]["smith"].status_code == 404 or "Smith et al. (2019)" not in seen["cards"]["smith"].text
    assert SMITH["content"] not in seen["export"]["admin"].stdout
    assert SMITH["content"] not in seen["export"]["cyd"].stdout
    for who in ("ada", "ben"):
        assert SMITH["title"] not in seen["palace"][who]
    # `loci show` is the operator's audit of the whole store: the retraction, by Cyd, is listed.
    shown = seen["show"]["smith"]
    assert shown.exit_code == 0 and "retracted" in shown.output.splitlines()[0]
    assert any(" cyd " in line and " retract " in line for line in shown.output.splitlines())


def test_a_forgotten_note_leaves_no_text_in_the_items_api(month) -> None:
    said_at = month["said_at"]
    for who in ("ada", "cyd"):  # a teammate, and Cyd herself: forgetting removes it for its author too
        got = month["seen"]["items api"][f"smith as {who}"]
        assert got.status_code == 200 and SMITH["content"] not in got.text and SMITH["title"] not in got.text, who
        body = got.json()
        assert body["state"] == "retracted" and body["item"]["id"] == month["ids"]["smith"]
        # Its tombstone: who forgot it and when (a day after she wrote it), nothing it said.
        (forgot,) = [e for e in body["events"] if e["action"] == "retract"]
        assert forgot["actor"] == "cyd" and "details" not in forgot, forgot
        assert str(forgot["requested_at"])[:10] == (said_at["smith"] + timedelta(days=11)).date().isoformat()


def test_a_forgotten_note_leaves_no_text_in_mcp_read(month) -> None:
    for failed, read in (month["seen"]["forgotten read"][0], month["seen"]["forgotten read by cyd"]):
        assert not failed and SMITH["content"] not in json.dumps(read) and SMITH["title"] not in json.dumps(read)
        (tombstone,) = read["items"]
        assert tombstone["validation"] == "retracted" and tombstone["scope"]["user_id"] == "cyd"


def test_a_forgotten_note_leaves_the_palace_shelf(month) -> None:
    (_, (failed, shelf)) = month["seen"]["forgotten read"]
    assert not failed and month["ids"]["smith"] not in [i["id"] for i in shelf["items"]]
    assert SMITH["title"] not in page_text(month["seen"]["forgotten shelf"].text)


def test_a_held_proposal_is_approved_in_the_browser(month) -> None:
    ids, seen = month["ids"], month["seen"]
    assert seen["a100"]["action"] == "quarantine", seen["a100"]
    assert A100["title"] in seen["queue before"]
    assert seen["approve"].status_code == 303 and "approved" in seen["approve"].headers["location"]
    failed, body = seen["a100 search"]
    assert not failed and hit_ids(body)[0] == ids["a100"]
    assert seen["review list"][1]["count"] == 0


def test_bad_input_is_a_4xx_with_a_message(month) -> None:
    for (failed, body), expected in zip(seen_bad := month["seen"]["bad mcp"], [400] * 8 + [404] + [400] * 3,
                                        strict=True):
        assert failed and body["status"] == expected and body["error"], (body, seen_bad.index((failed, body)))
    for url, params, resp in month["seen"]["bad ui"]:
        assert 400 <= resp.status_code < 500, (url, params, resp.status_code, page_text(resp.text)[:300])
        assert "error" in resp.text.lower() or "no " in page_text(resp.text).lower(), url
    # The CLI: a bad option is a message and a non-zero exit, never a traceback.
    for result in month["seen"]["bad cli"]:
        assert result.exit_code in (1, 2) and "error" in result.output and not result.exception or \
            isinstance(result.exception, SystemExit), (result.output, result.exception)
    assert "no read returned no-such-id" in month["seen"]["audit unknown"].output
