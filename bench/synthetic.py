"""Deterministic synthetic memory for the benchmarks: items, chat turns and queries.

Everything is derived from a seed (`random.Random(seed)`), so a size/seed pair always
yields the same data and cached embeddings keyed by it stay valid.

Realism, roughly as a team's chat memory looks:
- several owners: users, projects and sessions; items are user-, project- or
  session-scoped (most project-scoped), turns belong to one user's session;
- topics with their own vocabulary (databases, deployment, travel, pets...), so items on
  one topic share words and neighbours (dense and lexical search have signal to find);
- lengths: titles of 3-10 words, content of ~8-120 words (log-normal, a long tail), tags
  (1-4 of ~120 labels, topic-biased), entities (people, systems, places);
- the memory types and tiers of a working store (mostly STM facts/notes/messages, fewer
  decisions/constraints, some MTM/LTM);
- assistant turns sometimes carry a `<MEMORY_PROPOSALS_JSON>` block (the model proposing
  memories), as the chat loop sends them.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from pipelines.records import Identity, MemoryItem, Provenance, Scope, stable_id

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np

GENERATOR_VERSION = 2  # bump when the output for a given seed changes (cache keys use it)

TOPICS: dict[str, list[str]] = {
    "database": ["postgres", "schema", "migration", "index", "replica", "query", "vacuum",
                 "partition", "transaction", "deadlock", "connection", "pool", "backup"],
    "deploy": ["kubernetes", "helm", "rollout", "canary", "pipeline", "docker", "image",
               "cluster", "node", "autoscaler", "ingress", "staging", "release"],
    "latency": ["p95", "p99", "budget", "cache", "cdn", "timeout", "throughput", "profile",
                "hot", "path", "regression", "benchmark", "milliseconds"],
    "security": ["token", "rotation", "oauth", "scopes", "audit", "vault", "tls", "cert",
                 "expiry", "permissions", "role", "sso", "mfa"],
    "frontend": ["react", "component", "bundle", "css", "accessibility", "render", "hook",
                 "state", "router", "design", "tokens", "storybook", "typescript"],
    "ml": ["embedding", "model", "training", "eval", "dataset", "drift", "feature", "label",
           "inference", "gpu", "quantize", "recall", "precision"],
    "billing": ["invoice", "stripe", "plan", "seat", "refund", "proration", "tax", "currency",
                "webhook", "dunning", "trial", "coupon", "ledger"],
    "travel": ["flight", "hotel", "itinerary", "visa", "layover", "train", "booking",
               "passport", "conference", "airport", "luggage", "lisbon", "tokyo"],
    "health": ["running", "marathon", "yoga", "sleep", "diet", "knee", "physio", "gym",
               "swimming", "stretching", "doctor", "vitamins", "hiking"],
    "family": ["daughter", "son", "school", "birthday", "grandma", "recital", "soccer",
               "vacation", "dinner", "anniversary", "babysitter", "homework", "camping"],
    "pets": ["dog", "cat", "vet", "adoption", "leash", "kitten", "puppy", "grooming",
             "shelter", "walks", "vaccines", "food", "training"],
    "hobbies": ["painting", "guitar", "pottery", "photography", "chess", "gardening",
                "baking", "novel", "poetry", "knitting", "climbing", "cycling", "concert"],
}
TOPIC_NAMES = tuple(TOPICS)
FILLER = ("the", "we", "should", "keep", "after", "before", "because", "with", "for", "and",
          "then", "maybe", "next", "week", "team", "agreed", "that", "our", "is", "on", "it",
          "a", "to", "of", "in", "this", "plan", "new", "old", "last", "first", "time")
PEOPLE = ("Dana", "Ravi", "Mei", "Jonas", "Amara", "Luis", "Sofia", "Kenji", "Nadia", "Omar",
          "Priya", "Tom", "Elena", "Bruno", "Aisha", "Lars", "Chloe", "Yusuf", "Ines", "Hana")
SYSTEMS = ("Atlas", "Beacon", "Comet", "Delta", "Ember", "Falcon", "Granite", "Harbor",
           "Iris", "Juniper", "Kepler", "Lumen")
TEMPLATES = (
    "{P} said {w0} {w1} needs {w2} before {S} ships",
    "We decided to move {S} {w0} to {w1} and drop the {w2}",
    "{P} prefers {w0} over {w1} for the {w2}",
    "Remember that {S} {w0} must stay under the {w1} {w2}",
    "TODO: check {w0} {w1} with {P} after the {w2} review",
    "{P} mentioned the {w0} {w1} went badly last {w2}",
    "The {w0} for {S} uses {w1} with a {w2} fallback",
    "{P} is planning a {w0} {w1} trip with the {w2}",
)
TYPE_WEIGHTS = {"fact": 24, "note": 18, "message": 20, "decision": 8, "preference": 7,
                "todo": 7, "constraint": 4, "definition": 4, "pattern": 3, "pointer": 2,
                "summary": 3}
TIER_WEIGHTS = {"stm": 70, "mtm": 20, "ltm": 10}
SCOPE_WEIGHTS = {"project": 55, "user": 35, "session": 10}
EPOCH = datetime(2025, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Owners:
    """The owner ids a data set is spread over."""

    users: tuple[str, ...]
    projects: tuple[str, ...]
    sessions_per_user: int = 8

    def identity(self, rng: random.Random, *, session: str | None = None) -> Identity:
        u = rng.randrange(len(self.users))
        # Each user works mostly in one or two projects.
        p = (u + (rng.random() < 0.2)) % len(self.projects)
        s = session or f"s{rng.randrange(self.sessions_per_user)}"
        return Identity(user_id=self.users[u], project_id=self.projects[p], session_id=s)


def owners(users: int = 20, projects: int = 5, sessions_per_user: int = 8) -> Owners:
    if users < 1 or projects < 1 or sessions_per_user < 1:
        raise ValueError("users, projects and sessions_per_user must be >= 1")
    return Owners(tuple(f"user{i:03d}" for i in range(users)),
                  tuple(f"proj{i:02d}" for i in range(projects)), sessions_per_user)


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    return rng.choices(list(weights), weights=list(weights.values()))[0]


def _length(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(round(math.exp(rng.gauss(math.log(median), sigma))))))


def _topic_words(rng: random.Random, topic: str, n: int) -> list[str]:
    vocab = TOPICS[topic]
    # A second topic leaks in now and then, as real notes wander.
    other = TOPICS[rng.choice(TOPIC_NAMES)]
    return [rng.choice(other if rng.random() < 0.15 else vocab) for _ in range(n)]


def sentence(rng: random.Random, topic: str) -> str:
    w = _topic_words(rng, topic, 3)
    return rng.choice(TEMPLATES).format(P=rng.choice(PEOPLE), S=rng.choice(SYSTEMS),
                                        w0=w[0], w1=w[1], w2=w[2])


def text_of_length(rng: random.Random, topic: str, words: int) -> str:
    """Sentences on `topic` (with filler words) until about `words` words."""
    parts: list[str] = []
    count = 0
    while count < words:
        s = sentence(rng, topic)
        if rng.random() < 0.5:
            extra = [rng.choice(FILLER) if rng.random() < 0.6 else rng.choice(TOPICS[topic])
                     for _ in range(rng.randint(3, 12))]
            s = f"{s}, {' '.join(extra)}"
        parts.append(s + ".")
        count += len(s.split())
    return " ".join(parts)


def _tags(rng: random.Random, topic: str) -> list[str]:
    n = rng.choices([1, 2, 3, 4], weights=[3, 4, 2, 1])[0]
    pool = [topic, *TOPICS[topic][:6], rng.choice(TOPIC_NAMES)]
    return sorted({rng.choice(pool) for _ in range(n)})


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="microseconds")


def synthetic_item(rng: random.Random, index: int, seed: int, who: Owners) -> MemoryItem:
    topic = rng.choice(TOPIC_NAMES)
    item_type = _weighted(rng, TYPE_WEIGHTS)
    tier = "stm" if item_type == "message" else _weighted(rng, TIER_WEIGHTS)
    ident = who.identity(rng)
    kind = "user" if item_type == "message" else _weighted(rng, SCOPE_WEIGHTS)
    words = _length(rng, 28 if item_type != "summary" else 90, 0.6, 6, 160)
    content = text_of_length(rng, topic, words)
    title_words = _topic_words(rng, topic, rng.randint(2, 6))
    title = (rng.choice(PEOPLE) if item_type == "message"
             else " ".join([rng.choice(SYSTEMS), *title_words]).capitalize())
    created = EPOCH + timedelta(minutes=rng.randrange(0, 60 * 24 * 365))
    refs = [f"T{index}"] if item_type == "message" else []
    return MemoryItem(
        id=stable_id("syn", seed, index),
        tier=tier,  # type: ignore[arg-type]
        type=item_type,  # type: ignore[arg-type]
        title=title,
        content=content,
        scope=Scope.for_identity(kind, ident),  # type: ignore[arg-type]
        tags=_tags(rng, topic),
        entities=sorted({rng.choice(PEOPLE), rng.choice(SYSTEMS)}),
        provenance=Provenance(source_kind="chat", source_id=f"turn-{seed}-{index}",
                              turn_refs=refs, created_at=_iso(created)),
        confidence=round(rng.uniform(0.55, 1.0), 3),
        importance=rng.choices(range(1, 11), weights=[2, 4, 8, 10, 12, 10, 7, 4, 2, 1])[0],
        validation=rng.choices(["unverified", "verified", "contested"], weights=[70, 27, 3])[0],
        created_at=_iso(created),
        updated_at=_iso(created + timedelta(minutes=rng.randrange(0, 600))),
        usage_count=rng.choices([0, 1, 2, 5], weights=[60, 20, 12, 8])[0],
        metadata={"synthetic": True, "topic": topic},
    )


def synthetic_items(n: int, *, seed: int = 0, users: int = 20, projects: int = 5) -> list[MemoryItem]:
    """`n` active items spread over `users` users and `projects` projects."""
    if n < 0:
        raise ValueError("n must be >= 0")
    rng = random.Random(f"items:{seed}")
    who = owners(users, projects)
    return [synthetic_item(rng, i, seed, who) for i in range(n)]


def synthetic_queries(n: int, *, seed: int = 0, users: int = 20, projects: int = 5) -> list[tuple[str, Identity]]:
    """`n` distinct recall questions, each with the identity asking it (an owner of the
    item set generated with the same users/projects)."""
    rng = random.Random(f"queries:{seed}")
    who = owners(users, projects)
    forms = ("what did we decide about {a} {b}?", "what does {P} think about the {a} {b}?",
             "remind me of the {a} and {b} for {S}", "{S} {a} {b} status",
             "when is the {a} {b} happening?", "anything on {a} with {P}?")
    out: list[tuple[str, Identity]] = []
    seen: set[str] = set()
    while len(out) < n:
        topic = rng.choice(TOPIC_NAMES)
        a, b = _topic_words(rng, topic, 2)
        q = rng.choice(forms).format(a=a, b=b, P=rng.choice(PEOPLE), S=rng.choice(SYSTEMS))
        if len(seen) < 50_000 and q in seen:
            # Distinct queries (no embedder cache hits) until the template space runs thin.
            q = f"{q} ({rng.choice(TOPICS[topic])})"
            if q in seen:
                continue
        seen.add(q)
        out.append((q, who.identity(rng)))
    return out


def _proposal_block(rng: random.Random, topic: str, who: str) -> str:
    item = {
        "type": rng.choice(["fact", "decision", "preference", "todo", "note"]),
        "title": " ".join(_topic_words(rng, topic, rng.randint(3, 6))).capitalize(),
        "content": text_of_length(rng, topic, _length(rng, 20, 0.4, 8, 60)),
        "tags": _tags(rng, topic),
        "entities": [who, rng.choice(SYSTEMS)],
        "why_store": "stated by the user as something to keep",
        "importance": rng.randint(3, 8),
        "confidence": round(rng.uniform(0.6, 0.95), 2),
    }
    return f"\n<MEMORY_PROPOSALS_JSON>\n{json.dumps({'items': [item]})}\n</MEMORY_PROPOSALS_JSON>"


def synthetic_turns(n: int, *, seed: int = 0, users: int = 100, projects: int = 10,
                    turns_per_session: int = 20, proposal_rate: float = 0.15,
                    start: datetime = EPOCH,
                    session_gap: timedelta = timedelta(hours=1)) -> Iterator[dict[str, Any]]:
    """`n` chat turns as rows of the chat JSONL format (`pipelines.ingest.ChatRow`),
    alternating user/assistant within sessions of `turns_per_session`, round-robin over
    `users`. A fraction `proposal_rate` of assistant turns carry a proposal block. Session
    i starts at `start + i * session_gap`; turns are 30 s apart."""
    if n < 0 or users < 1 or turns_per_session < 2:
        raise ValueError("n >= 0, users >= 1 and turns_per_session >= 2 required")
    rng = random.Random(f"turns:{seed}")
    who = owners(users, projects)
    produced = 0
    session_no = 0
    while produced < n:
        u = session_no % users
        user = who.users[u]
        project = who.projects[u % len(who.projects)]
        session = f"s{seed}-{session_no // users}"
        topic = rng.choice(TOPIC_NAMES)
        at = start + session_gap * session_no
        speaker = PEOPLE[u % len(PEOPLE)]
        for t in range(min(turns_per_session, n - produced)):
            role = "user" if t % 2 == 0 else "assistant"
            words = _length(rng, 22 if role == "user" else 45, 0.55, 4, 200)
            text = text_of_length(rng, topic, words)
            if role == "assistant" and rng.random() < proposal_rate:
                text += _proposal_block(rng, topic, speaker)
            yield {
                "role": role, "text": text, "user_id": user, "project_id": project,
                "session_id": session, "at": _iso(at + timedelta(seconds=30 * t)),
                "turn_id": stable_id("synturn", seed, session_no, t),
                "speaker": speaker if role == "user" else "assistant",
            }
            produced += 1
        session_no += 1


__all__ = [
    "CACHE_CHUNK", "GENERATOR_VERSION", "Owners", "cached_item_vectors", "default_cache_dir", "owners", "sentence",
    "synthetic_item", "synthetic_items", "synthetic_queries", "synthetic_turns", "text_of_length",
]


# -- embedding cache --------------------------------------------------------------------------------

CACHE_CHUNK = 4096  # rows per cache file; a chunk is embedded and saved as one unit


def default_cache_dir() -> "Path":
    import os
    from pathlib import Path

    return Path(os.environ.get("LOCI_BENCH_CACHE", "~/.cache/loci/bench")).expanduser()


def cached_item_vectors(n: int, embedder: Any, *, seed: int = 0, users: int = 20, projects: int = 5,
                        cache_dir: "Path | None" = None, progress: Any = None) -> "np.ndarray":
    """Embeddings of `synthetic_items(n, seed=..)` (embed text = title, content, tags as the
    pipeline embeds them), computed once per chunk of CACHE_CHUNK items and kept on disk,
    keyed by generator version, seed, owners and embedder name. Items are a prefix-stable
    sequence (the first n of a larger set are the set of size n), so one cache serves
    every size."""
    import hashlib
    from pathlib import Path

    import numpy as np

    from pipelines.message_context import embedding_text

    if n < 0:
        raise ValueError("n must be >= 0")
    root = Path(cache_dir or default_cache_dir())
    key = hashlib.sha256(f"{GENERATOR_VERSION}|{seed}|{users}|{projects}|{embedder.name}".encode()).hexdigest()[:16]
    folder = root / f"items-{embedder.name.replace('/', '_')}-s{seed}-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    chunks = -(-n // CACHE_CHUNK)
    parts = []
    items: list[MemoryItem] | None = None
    for c in range(chunks):
        path = folder / f"chunk-{c:05d}.npy"
        if path.is_file():
            parts.append(np.load(path))
            continue
        if items is None:
            items = synthetic_items(chunks * CACHE_CHUNK, seed=seed, users=users, projects=projects)
        texts = [embedding_text(i) for i in items[c * CACHE_CHUNK:(c + 1) * CACHE_CHUNK]]
        vecs = np.ascontiguousarray(embedder.embed(texts), dtype=np.float32)
        tmp = path.with_suffix(".tmp.npy")
        np.save(tmp, vecs)
        tmp.replace(path)
        parts.append(vecs)
        if progress is not None:
            progress(f"embedded items {c * CACHE_CHUNK}..{(c + 1) * CACHE_CHUNK} with {embedder.name}")
    if not parts:
        return np.zeros((0, int(embedder.dim)), dtype=np.float32)
    return np.ascontiguousarray(np.vstack(parts)[:n], dtype=np.float32)
