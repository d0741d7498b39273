"""Governed-memory benchmark: is the curated answer first when a store also holds chatter?

    loci bench governed [--json OUT] [--consolidate] [--k K] [--embedder hash|minilm] [--workdir DIR]

A deterministic mixed store is built through the service's own write path
(`MemoryService.capture`: proposal parsing, the write policy, the inbox; recall then reads
the inbox delta exactly as `POST /v1/recall` does; `--consolidate` also runs the Dagster
job and recalls from the published snapshot), with the deterministic hash embedder (it
measures the ranking rules alone) or, with `--embedder minilm`, the product's default model:

- curated memories, proposed by the assistant in `<MEMORY_PROPOSALS_JSON>` blocks:
  project decisions and facts, user preferences, org facts, session notes, for several
  users and projects, plus one subject stated at all four scopes with different values;
- chatter around them, as raw chat turns: acknowledgements and greetings, requests the
  model never turned into a memory ("Please remember that I like emacs."), earlier copies
  of the very questions asked later, and turns that only mention a subject.

Then every question whose answer is a curated memory is asked from a fresh session of
the owner (the scope questions from the session that holds the session-scoped value), in
catalog and in inject mode, and the table reports MRR, hit@1 and hit@3 of the curated
answer (rank among the hits in the order returned), and the share of injected text that
comes from raw turns (`message` items).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import driver

ORG = "acme"
BASE_DAY = "2026-10-{day:02d}T{hour:02d}:{minute:02d}:00+00:00"

PROJECTS = {
    "orion": {"db": "TimescaleDB", "cloud": "AWS", "region": "eu-west-1", "day": "Monday",
              "api": "gRPC", "weeks": "two", "ci": "GitHub Actions", "staging": "eu-central-1",
              "fw": "Svelte", "tool": "Grafana alerting"},
    "atlas": {"db": "PostgreSQL", "cloud": "GCP", "region": "us-east1", "day": "Wednesday",
              "api": "REST", "weeks": "three", "ci": "Buildkite", "staging": "us-west1",
              "fw": "React", "tool": "Alertmanager"},
    "borealis": {"db": "ClickHouse", "cloud": "Azure", "region": "northeurope", "day": "Friday",
                 "api": "GraphQL", "weeks": "four", "ci": "GitLab CI", "staging": "westeurope",
                 "fw": "Vue", "tool": "PagerDuty rules"},
}
USERS = {
    "qa": {"project": "orion", "editor": "Neovim", "review": "morning", "lang": "Rust"},
    "dana": {"project": "atlas", "editor": "VS Code", "review": "afternoon", "lang": "Go"},
    "eve": {"project": "borealis", "editor": "IntelliJ", "review": "evening", "lang": "Kotlin"},
    "finn": {"project": "orion", "editor": "Helix", "review": "lunch break", "lang": "Python"},
}

# (type, title, content, question, mention) per project: the mention is a chat turn that
# names the subject without answering it.
PROJECT_MEMORIES = [
    ("decision", "{P} telemetry database", "{P} telemetry is stored in {db}.",
     "Which database does {P} telemetry use?", "We should revisit the {P} telemetry database at some point."),
    ("decision", "{P} deployment target", "{P} deploys to {cloud}, region {region}.",
     "Where does {P} deploy to?", "The {P} deployment came up again in standup."),
    ("fact", "{P} on-call rotation", "The {P} on-call rotation hands over every {day}.",
     "When does the {P} on-call rotation hand over?", "I am on the {P} on-call rotation next month."),
    ("decision", "{P} API style", "{P} exposes a {api} API to its clients.",
     "What kind of API does {P} expose?", "Can you help me document the {P} API later?"),
    ("fact", "{P} release cadence", "{P} ships a release every {weeks} weeks.",
     "How often does {P} ship a release?", "The next {P} release is going to be a big one."),
    ("decision", "{P} CI system", "{P} builds and tests run on {ci}.",
     "Which CI system runs the {P} builds?", "The {P} builds were flaky yesterday."),
    ("fact", "{P} staging cluster", "The {P} staging cluster runs in {staging}.",
     "Which region is the {P} staging cluster in?", "I broke the {P} staging cluster again, sorry."),
    ("decision", "{P} frontend framework", "The {P} frontend is written in {fw}.",
     "What is the {P} frontend written in?", "The {P} frontend needs a redesign."),
]
USER_MEMORIES = [
    ("preference", "Preferred editor", "{U} edits code in {editor}.",
     "Which editor do I use?", "My editor crashed twice today."),
    ("preference", "Code review slot", "{U} reviews pull requests in the {review}.",
     "When do I usually review pull requests?", "I have three pull requests to review."),
    ("preference", "Favourite language", "{U} likes writing {lang} the most.",
     "Which programming language do I like best?", "Learning a new programming language is fun."),
]
ORG_MEMORIES = [
    ("constraint", "Expense approval", "Expenses above 500 euros need a director's approval.",
     "Which expenses need a director's approval?", "I need to file my expenses this week."),
    ("fact", "Security contact", "Security incidents are reported to the secops rota at secops@acme.example.",
     "Who do I report a security incident to?", "There was a security training this morning."),
    ("constraint", "Customer data residency", "Customer data must stay in the European Union.",
     "Where must customer data be stored?", "Customer data questions keep coming up."),
]
SESSION_MEMORIES = [
    ("note", "Current migration", "In this session we are migrating the {P} alerts to {tool}.",
     "What are we migrating in this session?", "This migration is taking forever."),
]
# One subject, four scopes, four values: the asking session sees all four and the most
# specific one answers (scope priority).
RETENTION = [
    ("session", "Retention for this experiment", "Telemetry retention is 30 days for this experiment."),
    ("project", "Orion retention policy", "Telemetry retention is 90 days in orion."),
    ("user", "My retention default", "Telemetry retention is 365 days for my data."),
    ("org", "Company retention standard", "Telemetry retention is 7 days across the company."),
]
RETENTION_QUESTION = "How many days is telemetry retention?"

ACKS = ["ok", "thanks!", "great, thanks", "sure", "hi", "hello!", "Got it.", "Sounds good.",
        "ok thanks", "yes", "cool", "perfect, thank you"]
ASSISTANT_ACKS = ["Sure.", "Got it.", "You're welcome!", "Happy to help.", "Noted.",
                  "Let me check.", "I don't know that yet."]
REQUESTS = ["Please remember that I like emacs.", "Please remember that I drink tea, not coffee.",
            "Remember that I am out next Friday."]


@dataclass
class Question:
    text: str
    identity: dict[str, str]
    expected_title: str
    kind: str  # project | user | org | session | scope
    expected_id: str | None = None


@dataclass
class Store:
    questions: list[Question] = field(default_factory=list)
    curated: int = 0
    turns: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)


def _fill(template: str, **values: str) -> str:
    return template.format(**values)


class _Clock:
    """Deterministic turn times, one minute apart."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        day, rest = divmod(self.n, 600)
        return BASE_DAY.format(day=1 + day % 28, hour=8 + rest // 60, minute=rest % 60)


def build_store(service: Any) -> Store:
    """Write the mixed store through `service.capture` (policy and inbox included)."""
    from pipelines.records import Identity

    store = Store()
    clock = _Clock()
    turn_no = 0

    def say(who: dict[str, str], role: str, text: str) -> Any:
        nonlocal turn_no
        turn_no += 1
        store.turns += 1
        return service.capture(Identity(**who), role, text, turn_id=f"gov-{turn_no:05d}",
                               at=clock.next(), speaker=who["user_id"] if role == "user" else "assistant")

    def propose(who: dict[str, str], scope: str, kind: str, title: str, content: str) -> str | None:
        block = json.dumps([{"type": kind, "title": title, "content": content, "scope": scope,
                             "why_store": "stated by the user", "confidence": 0.9,
                             "importance": 6}])
        say(who, "user", f"For the record: {content}")
        result = say(who, "assistant", f"Noted. <MEMORY_PROPOSALS_JSON>{block}</MEMORY_PROPOSALS_JSON>")
        store.curated += 1
        for outcome in result.proposals:
            store.verdicts[outcome.action] = store.verdicts.get(outcome.action, 0) + 1
        return result.proposals[0].item_id if result.proposals else None

    def chatter(who: dict[str, str], i: int, mention: str, question: str) -> None:
        say(who, "user", ACKS[i % len(ACKS)])
        say(who, "assistant", ASSISTANT_ACKS[i % len(ASSISTANT_ACKS)])
        say(who, "user", question)  # asked before the answer was stored
        say(who, "assistant", ASSISTANT_ACKS[(i + 3) % len(ASSISTANT_ACKS)])
        say(who, "user", mention)
        say(who, "assistant", ACKS[(i + 5) % len(ACKS)])
        say(who, "user", REQUESTS[i % len(REQUESTS)])
        say(who, "assistant", "Sounds good.")

    i = 0
    for user, prof in USERS.items():
        project = prof["project"]
        values = {**PROJECTS[project], "P": project, "U": user.capitalize(), **prof}
        work = {"user_id": user, "project_id": project, "session_id": f"{user}-work", "org_id": ORG}
        ask = {**work, "session_id": f"{user}-ask"}
        if project != "orion" or user == "qa":  # one owner states a project's facts
            for kind, title, content, question, mention in PROJECT_MEMORIES:
                t, q = _fill(title, **values), _fill(question, **values)
                chatter(work, i, _fill(mention, **values), q)
                i += 1
                item_id = propose(work, "project", kind, t, _fill(content, **values))
                store.questions.append(Question(q, ask, t, "project", item_id))
        for kind, title, content, question, mention in USER_MEMORIES:
            chatter(work, i, _fill(mention, **values), question)
            i += 1
            item_id = propose(work, "user", kind, title, _fill(content, **values))
            store.questions.append(Question(question, ask, title, "user", item_id))
        for kind, title, content, question, mention in SESSION_MEMORIES:
            chatter(work, i, _fill(mention, **values), question)
            i += 1
            item_id = propose(work, "session", kind, title, _fill(content, **values))
            store.questions.append(Question(question, work, title, "session", item_id))
    admin = {"user_id": "dana", "project_id": "atlas", "session_id": "dana-admin", "org_id": ORG}
    for kind, title, content, question, mention in ORG_MEMORIES:
        chatter(admin, i, mention, question)
        i += 1
        item_id = propose(admin, "org", kind, title, content)
        for user, prof in USERS.items():
            ask = {"user_id": user, "project_id": prof["project"], "session_id": f"{user}-ask",
                   "org_id": ORG}
            store.questions.append(Question(question, ask, title, "org", item_id))
    exp = {"user_id": "qa", "project_id": "orion", "session_id": "qa-experiment", "org_id": ORG}
    ids = {}
    for scope, title, content in RETENTION:
        chatter(exp, i, "Telemetry retention keeps coming up.", RETENTION_QUESTION)
        i += 1
        ids[scope] = propose(exp, scope, "fact", title, content)
    store.questions.append(Question(RETENTION_QUESTION, exp, RETENTION[0][1], "scope", ids["session"]))
    # From another session of the same user the project value is the most specific one.
    other = {**exp, "session_id": "qa-ask"}
    store.questions.append(Question(RETENTION_QUESTION, other, RETENTION[1][1], "scope", ids["project"]))
    return store


@dataclass
class ModeScore:
    ranks: list[int | None] = field(default_factory=list)
    chatter_chars: int = 0
    injected_chars: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        n = len(self.ranks)
        rr = [1.0 / r if r else 0.0 for r in self.ranks]
        out = {
            "questions": n,
            "mrr": round(sum(rr) / n, 4) if n else 0.0,
            "hit@1": round(sum(1 for r in self.ranks if r == 1) / n, 4) if n else 0.0,
            "hit@3": round(sum(1 for r in self.ranks if r and r <= 3) / n, 4) if n else 0.0,
            "missing": sum(1 for r in self.ranks if r is None),
        }
        if self.injected_chars:
            out["chatter_share"] = round(self.chatter_chars / self.injected_chars, 4)
        return out


def _rank(result: Any, expected_id: str | None, mode: str) -> int | None:
    hits = [h for h in result.hits if mode != "inject" or h.delivery == "inject"]
    for pos, hit in enumerate(hits, start=1):
        if hit.item.id == expected_id:
            return pos
    return None


def evaluate(service: Any, store: Store, k: int) -> dict[str, Any]:
    from pipelines.records import Identity

    view = service.view()
    scores = {"catalog": ModeScore(), "inject": ModeScore()}
    by_kind: dict[str, dict[str, ModeScore]] = {}
    per_question = []
    for q in store.questions:
        row: dict[str, Any] = {"question": q.text, "kind": q.kind, "expected": q.expected_title,
                               "identity": q.identity}
        for mode, score in scores.items():
            started = time.perf_counter()
            result = service.recall(q.text, Identity(**q.identity), mode=mode, k=k,
                                    record_usage=False, view=view)
            score.latencies_ms.append((time.perf_counter() - started) * 1e3)
            rank = _rank(result, q.expected_id, mode)
            score.ranks.append(rank)
            by_kind.setdefault(q.kind, {}).setdefault(mode, ModeScore()).ranks.append(rank)
            row[f"{mode}_rank"] = rank
            if mode == "inject":
                for hit in result.hits:
                    if hit.delivery != "inject":
                        continue
                    size = len(hit.item.title) + len(hit.item.content)
                    score.injected_chars += size
                    if hit.item.type == "message":
                        score.chatter_chars += size
                row["inject_top"] = [f"{h.item.type}:{h.item.content[:40]}" for h in result.hits[:3]]
        per_question.append(row)
    return {
        "modes": {mode: s.summary() for mode, s in scores.items()},
        "by_kind": {kind: {m: s.summary() for m, s in modes.items()} for kind, modes in by_kind.items()},
        "latency_ms_p50": {m: round(sorted(s.latencies_ms)[len(s.latencies_ms) // 2], 3)
                           for m, s in scores.items() if s.latencies_ms},
        "per_question": per_question,
    }


def _consolidate(settings: Any) -> None:
    from assets.run import run_consolidation

    summary = run_consolidation(settings, instance="ephemeral")
    if summary.get("status") != "success":
        raise RuntimeError(f"consolidation failed: {summary.get('error')}")


def run(workdir: Path, *, k: int, consolidate: bool, embedder: str = "hash") -> dict[str, Any]:
    from online.state import MemoryService
    from pipelines.embedders import make_embedder
    from pipelines.settings import Settings

    # The turns are dated weeks ago: aging is off so consolidation keeps them (the
    # questions are asked "right after" the conversations).
    settings = Settings(data_dir=str(workdir), embedder=embedder, merger="extractive",
                        stm_aging_days=36_500.0)
    service = MemoryService(settings, embedder=make_embedder(settings),
                            check_interval_ms=0, swap_in_background=False)
    try:
        started = time.perf_counter()
        store = build_store(service)
        build_s = time.perf_counter() - started
        if consolidate:
            _consolidate(settings)
            service.reload()
        result = evaluate(service, store, k)
    finally:
        service.close()
    result.update({
        "benchmark": "governed",
        "store": {"turns": store.turns, "curated": store.curated, "verdicts": store.verdicts,
                  "questions": len(store.questions), "build_s": round(build_s, 3),
                  "consolidated": consolidate},
        "config": {"k": k, "embedder": embedder, "path": "snapshot" if consolidate else "inbox delta"},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    })
    return result


def print_table(result: dict[str, Any]) -> None:
    print(f"governed recall: {result['store']['questions']} questions, {result['store']['turns']} turns, "
          f"{result['store']['curated']} curated ({result['config']['path']}, {result['config']['embedder']} embedder)")
    print(f"{'mode / kind':<22}{'MRR':>8}{'hit@1':>8}{'hit@3':>8}{'missing':>9}{'chatter':>9}")
    rows = [(m, s) for m, s in result["modes"].items()]
    rows += [(f"  {kind} ({m})", s) for kind, modes in result["by_kind"].items() for m, s in modes.items()]
    for name, s in rows:
        chatter = f"{s['chatter_share']:.3f}" if "chatter_share" in s else "-"
        print(f"{name:<22}{s['mrr']:>8.3f}{s['hit@1']:>8.3f}{s['hit@3']:>8.3f}{s['missing']:>9}{chatter:>9}")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = driver.parser("governed", __doc__, quick=None)
    p.add_argument("--k", type=int, default=10, help="hits per recall (default 10)")
    p.add_argument("--embedder", choices=("hash", "minilm"), default="hash",
                   help="hash: the ranking rules alone, deterministic (default); minilm: the product's model")
    p.add_argument("--consolidate", action="store_true",
                   help="run the consolidation job and recall from the snapshot")
    args = p.parse_args(argv)
    if args.k < 1:
        p.error("--k must be >= 1")
    return args


def measure(args: argparse.Namespace, workdir: Path, say: driver.Say) -> dict[str, Any]:
    say(f"building the mixed store in {workdir} ...")
    return run(workdir, k=args.k, consolidate=args.consolidate, embedder=args.embedder)


def main(argv: Sequence[str] | None = None) -> int:
    return driver.run(_parse(argv), measure, print_table)


if __name__ == "__main__":
    sys.exit(main())
