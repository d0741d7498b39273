"""A developer with three repos over three weeks (the thirty-first new-user trial). Kai codes
in `api` (Python), `web` (TypeScript) and `cli` (a command-line tool), each repo a Loci
project. His editor talks to the model through the OpenAI-compatible door of `loci proxy`
(`POST /v1/chat/completions`, the official `openai` client pointed at it, one header per
repo) in front of a fake model server on loopback; his agent writes explicit memories over
MCP (the `mcp` SDK client on `online.mcp_server.build_server`, over the service the proxy
serves). Every write is stamped by one simulated clock; the Dagster consolidation job runs at
the end of each week. Promises checked, as a demanding user meets them:

- Per-repo facts under one title ("Test command": `pytest -q` in api, `npm test` in web)
  are not a conflict, and each repo gets its own first, before his own default ("make
  test", user scope); "from <date> on, `pytest -n auto`" takes over on that day: upcoming
  before it, current after it, the old command ended (kept).
- Scope priority: his own default ("I prefer tabs", user scope, over MCP) against a repo's
  rule ("this repo uses 4 spaces"): in api the repo's rule comes first; in web, with no
  rule, his default is what he gets (kept). Said in api's chat ("Personally I prefer
  tabs"), the model naming no scope, his wish is his own (user scope), not the repo's
  (broken: it landed in api's project scope, and his teammate Ana got "Kai prefers tabs" as
  api's memory, under the block's note that preferences are her own wishes). A wish for
  one chat ("just for this chat, only the fast tests") comes first there, nowhere else (kept).
- Long pasted stack traces and logs are chatter: a credential inside one (AWS keys, a
  GitHub token, a password in a URL) is masked when the turn lands and never recalled,
  listed, searched or exported; the model's proposal to keep the connection string is
  refused (kept). The masked log still says which setting held a credential
  (`AWS_SECRET_ACCESS_KEY=[REDACTED]`; broken: the name went with the value).
- A decision revised twice (Postgres -> SQLite for the CLI, proposed as an OpenAI
  `memory_propose` tool call -> back to Postgres under another title): "what did we decide
  about X" gets the current decision first as curated memory, the turns after it labelled
  as conversation excerpts, chatter never among the curated; the older versions are not
  presented as what holds, and the history (`loci show`, `loci audit`, MCP `memory_read`)
  shows every revision (kept; the move said in the present tense, "moves from Postgres to
  SQLite", replaced nothing before: only "moved ... from" was read as a change).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

import anyio
import pytest
from mcp.client.client import Client as MCPClient
from openai import OpenAI
from typer.testing import CliRunner

from assets.run import run_consolidation
from loci.cli import app as loci_cli
from online.mcp_server import build_server
from online.proxy import ProxyConfig, create_proxy_app
from online.state import MemoryService
from pipelines.item_report import export_items
from pipelines.materialize import proposal_item_id
from pipelines.records import Identity
from tests.assets.support import make_settings, settings_env, shared_instance
from tests.e2e.chat import SimulatedClock
from tests.online.test_proxy import block, serve, shared_fake, system_text  # noqa: F401 - shared_fake: fixture

UTC = timezone.utc
USER = "kai"
REPOS = ("api", "web", "cli")
MODEL = "qwen2.5-coder"


def memo(type_: str, title: str, content: str, tags: list[str], scope: str = "project") -> dict[str, Any]:
    return {"type": type_, "title": title, "content": content, "tags": tags, "why_store": "the developer said so",
            "confidence": 0.9, "scope": scope}


PYTEST = memo("fact", "Test command", "Run the test suite with `pytest -q`.", ["testing", "tooling"])
# Said on day 15 of the three weeks: from day 18 on, api's tests run in parallel.
TAKEOVER = datetime.now(UTC).date() - timedelta(days=3)
TAKEOVER_SAID = f"{TAKEOVER:%B} {TAKEOVER.day}"
PARALLEL = memo("fact", "Test command",
                f"From {TAKEOVER_SAID}, run the api tests with `pytest -n auto` instead of `pytest -q`.", ["testing"])
NPM = memo("fact", "Test command", "Run the test suite with `npm test`.", ["testing", "tooling"])
SPACES = memo("constraint", "Indentation", "This repo indents with 4 spaces, never tabs.", ["style", "indentation"])
MAKE = memo("fact", "Test command", "My default for running tests anywhere is `make test`.", ["testing", "tooling"],
            scope="user")
TABS = memo("preference", "Indentation", "I prefer tabs for indentation.", ["style", "indentation"], scope="user")
# The same wish said in api's chat, the model naming no scope: his words make it his.
TABS_SAID = memo("preference", "Indentation style", "Kai prefers tabs for indentation.", ["style"])
TABS_SAID.pop("scope")
POSTGRES = memo("decision", "CLI storage backend", "The CLI stores its data in Postgres.", ["decision", "database"])
SQLITE = memo("decision", "CLI storage backend",
              "The CLI moves from Postgres to SQLite: a local file, no server to run.", ["decision", "database"])
BACK = memo("decision", "Database for the CLI",
            "The CLI goes back to Postgres instead of SQLite, sharing the server's database.",
            ["decision", "database"])

FREEZE = memo("constraint", "Code freeze", "Code freeze on the api repo until Friday: hotfixes only.",
              ["release", "freeze"])
# A wish for one chat: the model names no scope; its words say it.
FAST = memo("preference", "Test command for this chat",
            "Just for this chat, run only the fast tests: `pytest -q -m 'not slow'`.", ["testing"])
FAST.pop("scope")

# What Kai says in his editor's chat, and what the model proposes to remember of it.
SAID = {
    "In this repo the tests run with `pytest -q`.": PYTEST,
    f"From {TAKEOVER_SAID} on, the api tests run in parallel with `pytest -n auto`.": PARALLEL,
    "For the web app the tests run with `npm test`.": NPM,
    "House rule for this repo: 4 spaces, never tabs.": SPACES,
    "Personally I prefer tabs, for what it's worth.": TABS_SAID,
    "Heads up: code freeze on api until Friday, hotfixes only.": FREEZE,
    "Just for this chat, only run the fast tests, skip the slow ones.": FAST,
    "Let's keep the CLI's data in Postgres, like everything else.": POSTGRES,
    "Running Postgres for a local CLI is overkill; we're moving to SQLite for the CLI.": SQLITE,
    "Change of plan: the CLI needs the server's data, so we're going back to Postgres instead of SQLite.": BACK,
}

AWS_KEY = "AKIAQ3EGZ7XJ4KLMN2PR"
AWS_SECRET = "Hq8vR2mZt6Lw9Xp4Ns7Kd1Fy3Bc5Gj0Ua8Ee2Io"
DB_PASSWORD = "Vq8mZ2pxLr9wTk4n"
GITHUB_TOKEN = "ghp_R7kQ2vX9mL4pT8wN3zB6cY1dF5hJ0sA2uE4g"
SECRETS = (AWS_KEY, AWS_SECRET, DB_PASSWORD, GITHUB_TOKEN)
# The model, shown the log, proposes to keep the connection string, password and all.
DSN = memo("fact", "CLI database URL", f"The CLI connects with postgresql://kai:{DB_PASSWORD}@db.internal:5432/cli.",
           ["database"])


def stack_trace() -> str:
    """A long pasted log: a Postgres connection failure, the environment dumped with it."""
    lines = ["Why does this keep failing? Here's the whole log:", "```"]
    for n in range(160):  # longer than the 10,000 characters recall reads of a message
        lines.append(f"2026-11-0{n % 9 + 1}T10:{n:02d}:13Z WARN pool: postgres connection {n} timed out after 30s,"
                     f" retrying (attempt {n % 5 + 1} of 5)")
    lines += [
        "Traceback (most recent call last):",
        '  File "/home/kai/src/cli/kaicli/db.py", line 42, in connect',
        "    conn = psycopg2.connect(dsn)",
        '  File "/usr/lib/python3.12/site-packages/psycopg2/__init__.py", line 122, in connect',
        "    conn = _connect(dsn, connection_factory=connection_factory, **kwasync)",
        'psycopg2.OperationalError: connection to server at "db.internal" (10.0.3.7), port 5432 failed: '
        'FATAL:  password authentication failed for user "kai"',
        "Environment at failure:",
        f"  DATABASE_URL=postgresql://kai:{DB_PASSWORD}@db.internal:5432/cli",
        f"  AWS_ACCESS_KEY_ID={AWS_KEY}",
        f"  AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        "  PGCONNECT_TIMEOUT=30",
        f"  GITHUB_TOKEN={GITHUB_TOKEN}",
        "```",
    ]
    return "\n".join(lines)


CHATTER = [
    "ugh, Postgres is slow on my laptop again today",
    "the postgres docker container ate 2 GB of RAM lol",
    "does anyone actually like writing SQL migrations for sqlite?",
    "sqlite's type affinity bit me again, whatever",
]

TEST_Q = "How do I run the tests in this repo?"
INDENT_Q = "Tabs or spaces for indentation here?"
DECIDE_Q = "What did we decide about the database for the CLI?"


def model_reply(req: dict[str, Any]) -> Any:
    """The stand-in model: a proposal after a fact it should keep (the SQLite move as a
    `memory_propose` tool call, the others in a block), chatter otherwise."""
    last = next((m["content"] for m in reversed(req.get("messages", [])) if m["role"] == "user"), "")
    if SAID.get(last) is SQLITE:
        return {"role": "assistant", "content": "Makes sense for a local tool.", "tool_calls": [
            {"function": {"name": "memory_propose", "arguments": {"items": [SQLITE]}}}]}
    if last in SAID:
        return "Noted, I'll remember that. " + block(SAID[last])
    if "Traceback" in last:
        return "Password authentication failed: check the credentials in DATABASE_URL. " + block(DSN)
    return "Sure."


async def _mcp_calls(service: MemoryService, who: Identity, calls: list[tuple[str, Any]]) -> list[tuple[bool, Any]]:
    out = []
    async with MCPClient(build_server(service, who)) as agent:
        for name, args in calls:
            result = await agent.call_tool(name, args)
            out.append((bool(result.is_error), json.loads(result.content[0].text)))
    return out


def mcp(service: MemoryService, repo: str, *calls: tuple[str, Any]) -> list[tuple[bool, Any]]:
    who = Identity(user_id=USER, project_id=repo, session_id=f"{repo}-agent")
    return anyio.run(_mcp_calls, service, who, list(calls))


@pytest.fixture(scope="module")
def weeks(shared_fake, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:  # noqa: F811
    settings = make_settings(tmp_path_factory.mktemp("t31"))
    memory = MemoryService(settings, check_interval_ms=0)
    shared_fake.chat_reply = model_reply
    shared_fake.requests.clear()
    start: date = datetime.now(UTC).date() - timedelta(days=21)
    clock = SimulatedClock(UTC)
    seen: dict[str, Any] = {}
    app = create_proxy_app(settings, service=memory, upstream=shared_fake.url,
                           config=ProxyConfig(flags_check_interval_s=0))
    with pytest.MonkeyPatch.context() as patch, serve(app) as url:
        clock.patch_into(patch)
        clients = {repo: OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers={
            "X-Loci-User": USER, "X-Loci-Project": repo, "X-Loci-Session": f"{repo}-editor"}) for repo in REPOS}

        def on(day: int, hour: int = 10) -> None:
            clock.at(start + timedelta(days=day), time(hour))

        def chat(repo: str, text: str, stream: bool = False, session: str | None = None) -> tuple[str, str, Any]:
            """Kai's message in `repo`'s editor chat (or its chat `session`): (the answer, what
            memory the model got, the loci catalog)."""
            n = len(shared_fake.requests)
            messages = [{"role": "user", "content": text}]
            client = clients[repo].with_options(default_headers={"X-Loci-Session": session}) if session \
                else clients[repo]
            if stream:
                answer, extra, calls = "", None, []
                for chunk in client.chat.completions.create(model=MODEL, messages=messages, stream=True):
                    if chunk.choices:
                        answer += chunk.choices[0].delta.content or ""
                        calls += chunk.choices[0].delta.tool_calls or []
                    extra = (chunk.model_extra or {}).get("loci", extra)
                assert not calls, calls  # Loci's own tool call is not handed to the client
            else:
                done = client.chat.completions.create(model=MODEL, messages=messages)
                answer, extra = done.choices[0].message.content, (done.model_extra or {}).get("loci")
            sent = system_text(shared_fake.requests[n][1])
            return answer, sent, extra

        def consolidate() -> None:
            assert memory.usage.flush()
            assert run_consolidation(settings, instance=shared_instance())["status"] == "success"
            memory.reload()

        # Week 1: each repo's test command, api's indentation rule, Kai's own default over MCP,
        # the CLI's first storage decision, and a pasted log with credentials in it.
        on(0)
        chat("api", "In this repo the tests run with `pytest -q`.")
        chat("api", "House rule for this repo: 4 spaces, never tabs.", stream=True)
        chat("api", "Heads up: code freeze on api until Friday, hotfixes only.")
        on(1)
        chat("web", "For the web app the tests run with `npm test`.")
        ((failed, seen["tabs"]),) = mcp(memory, "web", ("memory_propose", {"items": [TABS, MAKE]}))
        assert not failed, seen["tabs"]
        on(2)
        chat("cli", "Let's keep the CLI's data in Postgres, like everything else.")
        on(3)
        seen["paste answer"] = chat("cli", stack_trace(), stream=True)[0]
        on(5)
        chat("api", "Personally I prefer tabs, for what it's worth.")
        for n, said in enumerate(CHATTER[:2]):
            on(4, 10 + n)
            chat("cli", said)
        on(6, 22)
        consolidate()
        # Week 2: the CLI moves to SQLite; more chatter.
        on(8)
        seen["sqlite answer"] = chat(
            "cli", "Running Postgres for a local CLI is overkill; we're moving to SQLite for the CLI.", stream=True)
        on(9)
        chat("cli", CHATTER[2])
        on(13, 22)
        consolidate()
        on(14)
        seen["ask week 2"] = chat("cli", DECIDE_Q)
        # Week 3: back to Postgres, said under another title; more chatter.
        on(15)
        chat("cli", "Change of plan: the CLI needs the server's data, so we're going back to Postgres instead "
                    "of SQLite.")
        chat("api", f"From {TAKEOVER_SAID} on, the api tests run in parallel with `pytest -n auto`.")
        on(16)
        chat("cli", CHATTER[3])
        seen["ask test before"] = chat("api", TEST_Q)
        on(20, 22)
        consolidate()

        on(17)
        chat("api", "Just for this chat, only run the fast tests, skip the slow ones.", session="api-hotfix")
        on(21)
        ana = OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers={
            "X-Loci-User": "ana", "X-Loci-Project": "api", "X-Loci-Session": "ana-editor"})
        n = len(shared_fake.requests)
        ana.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": INDENT_Q}])
        seen["ana indent"] = system_text(shared_fake.requests[n][1])
        seen["ask fast"] = {session: chat("api", TEST_Q, session=session) for session in ("api-hotfix", "api-other")}
        seen["ask freeze"] = chat("api", "Can I merge my feature branch into main on api today?")
        seen["ask"] = {(repo, q): chat(repo, q) for repo, q in (
            ("api", TEST_Q), ("web", TEST_Q), ("api", INDENT_Q), ("web", INDENT_Q), ("cli", DECIDE_Q))}
        seen["ask secret"] = chat("cli", f"What was the AWS key {AWS_KEY[:8]} in that log?")
        seen["search"] = mcp(memory, "cli", ("memory_search", {"query": DECIDE_Q}),
                             ("memory_search", {"query": "AWS_SECRET_ACCESS_KEY DATABASE_URL password log"}))
        seen["conflicts"] = {repo: mcp(memory, repo, ("memory_review_list", {}))[0] for repo in REPOS}
        events = memory.inbox.read_after(0)
        seen["events"] = events
        proposals = [e for e in events if e.kind == "proposal"]
        seen["ids"] = {(e.identity.project_id, e.payload["proposal"]["content"]): proposal_item_id(e.event_id)
                       for e in proposals}
        seen["verdicts"] = {(e.identity.project_id, e.payload["proposal"]["content"]): e.payload for e in proposals}
        seen["by title"] = {(e.identity.project_id, e.payload["proposal"]["title"]): e.payload for e in proposals}
        runner = CliRunner(env=settings_env(settings))
        seen["runner"] = (runner, str(settings.data_dir))
        seen["settings"] = settings
        seen["memory"] = memory
        yield seen
    memory.close()


def item_id(weeks: dict[str, Any], repo: str, item: dict[str, Any]) -> str:
    return weeks["ids"][(repo, item["content"])]


def verdict(weeks: dict[str, Any], repo: str, item: dict[str, Any]) -> dict[str, Any]:
    return weeks["verdicts"][(repo, item["content"])]


def header_of(sent: str, item: str) -> str:
    """The header line of `item`'s entry in the memory block."""
    return next(line for line in sent.splitlines() if line.startswith(f"[MEMORY: {item} "))


def curated_part(sent: str) -> str:
    return sent.split("CONVERSATION EXCERPTS")[0]


def entry_order(sent: str, *needles: str) -> list[int]:
    """Where each needle first shows in the curated part (-1: not there)."""
    return [curated_part(sent).find(needle) for needle in needles]


def test_every_write_landed_as_a_memory(weeks) -> None:
    for repo, item in (("api", PYTEST), ("web", NPM), ("api", SPACES), ("web", TABS), ("web", MAKE), ("api", TABS_SAID),
                       ("cli", POSTGRES), ("cli", SQLITE), ("cli", BACK), ("api", FREEZE), ("api", FAST)):
        assert (repo, item["content"]) in weeks["ids"], (repo, item["title"], sorted(weeks["ids"]))


def test_each_repo_gets_its_own_test_command_and_no_conflict(weeks) -> None:
    _, api, _ = weeks["ask"][("api", TEST_Q)]
    _, web, _ = weeks["ask"][("web", TEST_Q)]
    assert "npm test" not in api and "pytest" not in web
    # the repo's own command first, his personal default after it (or not at all)
    for sent, own in ((api, "pytest -n auto"), (web, "npm test")):
        here, default = entry_order(sent, own, "make test")
        assert here >= 0 and (default == -1 or here < default), sent
    for item in (PYTEST, NPM, MAKE):
        assert verdict(weeks, "api" if item is PYTEST else "web", item)["verdict"]["action"] == "accept"
    # beside his personal default it may be flagged, saying the repo's (more specific) applies
    for sent, repo, own in ((api, "api", PARALLEL), (web, "web", NPM)):
        header = header_of(sent, item_id(weeks, repo, own))
        assert "CONFLICT" not in header or "SCOPE=project" in header, header
    # nothing of the two is waiting for review
    for repo in ("api", "web"):
        failed, queue = weeks["conflicts"][repo]
        assert not failed and queue["count"] == 0, queue


def test_the_repo_rule_outranks_his_default_there_and_only_there(weeks) -> None:
    _, api, _ = weeks["ask"][("api", INDENT_Q)]
    spaces, tabs, said = entry_order(api, SPACES["content"], TABS["content"], TABS_SAID["content"])
    assert spaces >= 0, api
    assert (tabs == -1 or spaces < tabs) and (said == -1 or spaces < said), api
    # what he said of himself in api's chat is his (user scope): it replaced no repo rule, and
    # his teammate in api does not get his wish as the repo's
    assert verdict(weeks, "api", TABS_SAID)["default_scope"] == "user"
    assert not verdict(weeks, "api", TABS_SAID).get("supersedes")
    ana = weeks["ana indent"]
    assert SPACES["content"] in curated_part(ana) and "tabs for indentation" not in ana.replace(
        SPACES["content"], ""), ana
    _, web, _ = weeks["ask"][("web", INDENT_Q)]
    assert TABS["content"] in curated_part(web) and SPACES["content"] not in web, web


def test_what_we_decided_is_the_current_decision_first_turns_as_evidence(weeks) -> None:
    _, sent, _ = weeks["ask"][("cli", DECIDE_Q)]
    curated = curated_part(sent)
    assert BACK["content"] in curated, sent
    first = curated.split("[MEMORY: ", 1)[1]
    assert first.startswith(item_id(weeks, "cli", BACK)), sent
    # the replaced versions are not presented as what holds
    assert SQLITE["content"] not in curated and POSTGRES["content"] not in curated, sent
    # turns only as labelled excerpts, after the curated part
    if "[TURN:" in sent:
        assert sent.index("CONVERSATION EXCERPTS") < sent.index("[TURN:")
    for chatter in CHATTER:
        assert chatter not in curated


def test_a_wish_for_one_chat_comes_first_there_and_nowhere_else(weeks) -> None:
    assert verdict(weeks, "api", FAST)["default_scope"] == "session"
    _, hotfix, _ = weeks["ask fast"]["api-hotfix"]
    fast, repo = entry_order(hotfix, FAST["content"], PARALLEL["content"])
    assert fast >= 0 and (repo == -1 or fast < repo), hotfix
    _, other, _ = weeks["ask fast"]["api-other"]
    assert FAST["content"] not in other and PARALLEL["content"] in curated_part(other), other


def test_a_command_that_takes_over_on_a_day_does_so_that_day(weeks) -> None:
    """Said on day 15 for day 18: before it, `pytest -q` holds and the new one is upcoming;
    after it, the new one holds and the old is history."""
    said = verdict(weeks, "api", PARALLEL)
    assert said["proposal"].get("valid_from", "")[:10] == TAKEOVER.isoformat(), said["proposal"]
    assert item_id(weeks, "api", PYTEST) in said.get("ends", {}), said
    _, before, _ = weeks["ask test before"]
    now, upcoming = entry_order(before, PYTEST["content"], PARALLEL["content"])
    assert now >= 0 and (upcoming == -1 or now < upcoming), before
    if upcoming >= 0:
        header = header_of(before, item_id(weeks, "api", PARALLEL))
        assert "UPCOMING" in header, header
    _, after, _ = weeks["ask"][("api", TEST_Q)]
    new, old = entry_order(after, PARALLEL["content"], PYTEST["content"])
    assert new >= 0 and (old == -1 or new < old), after
    if old >= 0:
        header = header_of(after, item_id(weeks, "api", PYTEST))
        assert "ENDED" in header, header


def test_a_freeze_until_friday_is_over_three_weeks_later(weeks) -> None:
    item = verdict(weeks, "api", FREEZE)
    assert item["proposal"].get("valid_to"), item["proposal"]
    _, sent, _ = weeks["ask freeze"]
    # shown, if at all, as history: its window named and marked over
    if FREEZE["content"] in curated_part(sent):
        header = header_of(sent, item_id(weeks, "api", FREEZE))
        assert "ENDED" in header and "VALID=" in header, header


def test_the_move_to_sqlite_replaced_the_first_decision_at_once(weeks) -> None:
    """Week 2: the SQLite decision is what holds; the Postgres one is its history."""
    assert verdict(weeks, "cli", SQLITE).get("supersedes") == [item_id(weeks, "cli", POSTGRES)]
    _, sent, _ = weeks["ask week 2"]
    curated = curated_part(sent)
    assert SQLITE["content"] in curated and POSTGRES["content"] not in curated, sent


def test_the_model_may_not_keep_a_credential_from_the_log(weeks) -> None:
    rejected = weeks["by title"][("cli", DSN["title"])]
    assert rejected["verdict"]["action"] == "reject" and DB_PASSWORD not in json.dumps(rejected), rejected


def test_mcp_search_gives_the_current_decision_first_and_what_it_replaced(weeks) -> None:
    (failed, body), _ = weeks["search"]
    assert not failed, body
    curated = [h for h in body["hits"] if h.get("type") != "message"]
    assert curated and curated[0]["id"] == item_id(weeks, "cli", BACK), body["hits"]
    replaced = {r["id"] for r in curated[0].get("replaced", [])}
    assert item_id(weeks, "cli", SQLITE) in replaced, curated[0]


def test_a_secret_in_a_pasted_log_is_never_kept_nor_recalled(weeks, tmp_path) -> None:
    turns = [e.payload["text"] for e in weeks["events"] if e.kind == "turn"]
    (pasted,) = [t for t in turns if "Traceback" in t]
    # the log still reads: which setting held a credential, not the credential
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"):
        assert f"  {name}=[REDACTED]" in pasted, pasted[-600:]
    everything = json.dumps([e.payload for e in weeks["events"]])
    for secret in SECRETS:
        assert secret not in everything, secret
    _, sent, catalog = weeks["ask secret"]
    (_, _), (failed, body) = weeks["search"]
    out = tmp_path / "export.jsonl"
    with out.open("w") as handle:
        export_items(weeks["settings"], handle)
    for text in (sent, json.dumps(catalog), json.dumps(body), out.read_text()):
        for secret in SECRETS:
            assert secret not in text


def test_the_history_shows_every_revision(weeks) -> None:
    runner, data_dir = weeks["runner"]
    current = item_id(weeks, "cli", BACK)
    shown = runner.invoke(loci_cli, ["show", current, "--data-dir", data_dir])
    assert shown.exit_code == 0, shown.output
    earlier = shown.output.split("replaced earlier versions")[1] if "replaced earlier versions" in shown.output \
        else ""
    assert "SQLite" in earlier, shown.output
    first = item_id(weeks, "cli", POSTGRES)
    audit = runner.invoke(loci_cli, ["audit", first, "--data-dir", data_dir])
    assert audit.exit_code == 0, audit.output
    assert "superseded" in audit.output or item_id(weeks, "cli", SQLITE) in audit.output, audit.output
    failed, read = mcp(weeks["memory"], "cli", ("memory_read", {"ids": [item_id(weeks, "cli", SQLITE)]}))[0]
    assert not failed and read["superseded_by"].get(item_id(weeks, "cli", SQLITE)) == current, read



