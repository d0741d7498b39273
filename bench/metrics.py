"""Recall metrics for LoCoMo-format data: evidence-id normalisation, turn-level and
session-level recall@k, and per-category aggregation.

Definitions (from the evaluation data's README):

- **turn-level recall@k**: for one question, the fraction of its evidence dia_ids found
  among the first k DISTINCT source turns of the ranked result (items in rank order, each
  contributing the turns named in its provenance, in order); averaged over questions.
- **session-level recall@k**: the fraction of the question's evidence sessions with at
  least one turn among those same first k distinct turns.
- Evidence quirks: ``'D8:6; D9:17'`` is two ids; ``'D:11:26'`` is ``D11:26``; ``'D30:05'``
  is ``D30:5``. Ids that do not exist in the conversation are dropped; a question left with
  no evidence is skipped (counted, not scored).
- Headline: ``overall_1_4`` = mean over the questions of categories 1-4 (1 multi-hop,
  2 temporal, 3 open-domain, 4 single-hop); category 5 (adversarial) is reported apart.

Everything here is pure Python over plain data, so it is unit-tested without any model.
Bad input raises `MetricError` (a ValueError) with a message naming the problem.
"""

from __future__ import annotations

import json
import os
import platform
import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADLINE_CATEGORIES = ("1", "2", "3", "4")
ALL_CATEGORIES = ("1", "2", "3", "4", "5")
CATEGORY_NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop",
                  "5": "adversarial"}
DEFAULT_KS = (5, 10, 20)

# "D<session>:<turn>" with the quirks seen in the wild: "D:11:26", spaces, leading zeros.
_DIA_ID = re.compile(r"^D\s*:?\s*(\d+)\s*:\s*(\d+)$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[;,\s]+(?=D)", re.IGNORECASE)


class MetricError(ValueError):
    """Bad input to a metric function (wrong type, k < 1, malformed LoCoMo file)."""


# -- evidence ids ------------------------------------------------------------------------------


def normalise_dia_id(raw: object) -> str | None:
    """Canonical ``D<session>:<turn>`` (no leading zeros), or None when `raw` is not a dia_id.

    >>> normalise_dia_id("D:11:26"), normalise_dia_id("D30:05"), normalise_dia_id("D")
    ('D11:26', 'D30:5', None)
    """
    if not isinstance(raw, str):
        return None
    m = _DIA_ID.match(raw.strip())
    if not m:
        return None
    return f"D{int(m.group(1))}:{int(m.group(2))}"


def split_evidence(raw: object) -> list[str]:
    """One evidence entry as written (possibly several ids: ``'D8:6; D9:17'``) -> the raw
    id strings it contains. Non-strings give nothing."""
    if not isinstance(raw, str):
        return []
    return [part.strip() for part in _SEPARATORS.split(raw.strip()) if part.strip()]


def normalise_evidence(evidence: object, known: Iterable[str] | None = None) -> list[str]:
    """A question's evidence list -> distinct canonical ids in first-seen order, unparseable
    ids dropped, and (when `known` is given) ids absent from the conversation dropped."""
    if evidence is None:
        return []
    if isinstance(evidence, str):
        evidence = [evidence]
    if not isinstance(evidence, (list, tuple)):
        raise MetricError(f"evidence must be a list of dia_id strings, got {type(evidence).__name__}")
    known_set = None if known is None else {k for k in (normalise_dia_id(x) for x in known) if k}
    out: dict[str, None] = {}
    for entry in evidence:
        for part in split_evidence(entry):
            norm = normalise_dia_id(part)
            if norm is not None and (known_set is None or norm in known_set):
                out.setdefault(norm, None)
    return list(out)


def session_of(dia_id: str) -> str:
    """``'D12:3'`` -> ``'D12'`` (the session a canonical id belongs to)."""
    norm = normalise_dia_id(dia_id)
    if norm is None:
        raise MetricError(f"not a dia_id: {dia_id!r}")
    return norm.split(":", 1)[0]


# -- ranked turns and per-question recall ---------------------------------------------------------


def ranked_turns(turn_refs_in_rank_order: Iterable[Sequence[str]], k: int | None = None) -> list[str]:
    """Items in rank order (each given as its provenance turn refs) -> the first `k`
    distinct canonical turn ids. Refs that are not dia_ids are ignored (they cannot be
    evidence). k=None keeps them all."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MetricError(f"k must be a positive int, got {k!r}")
    out: dict[str, None] = {}
    for refs in turn_refs_in_rank_order:
        if isinstance(refs, str):
            raise MetricError("each ranked item must be a sequence of turn refs, not a bare string")
        for ref in refs:
            norm = normalise_dia_id(ref)
            if norm is not None and norm not in out:
                out[norm] = None
                if k is not None and len(out) >= k:
                    return list(out)
    return list(out)


def turn_recall(evidence: Sequence[str], retrieved: Sequence[str]) -> float:
    """Fraction of (canonical) evidence ids present in `retrieved`."""
    if not evidence:
        raise MetricError("turn_recall needs at least one evidence id")
    got = set(retrieved)
    return sum(1 for e in evidence if e in got) / len(evidence)


def session_recall(evidence: Sequence[str], retrieved: Sequence[str]) -> float:
    """Fraction of evidence sessions with at least one turn in `retrieved`."""
    if not evidence:
        raise MetricError("session_recall needs at least one evidence id")
    wanted = {session_of(e) for e in evidence}
    got = {session_of(r) for r in retrieved}
    return len(wanted & got) / len(wanted)


# -- aggregation ----------------------------------------------------------------------------------


@dataclass
class RecallAccumulator:
    """Collects per-question recall at several k and reports means per category.

    `add(category, evidence, ranked)` takes canonical evidence ids and the ranked items'
    turn refs; `summary()` gives ``{"turn_recall": {k: {...}}, "session_recall": {...}}``
    where each ``{...}`` has ``overall_1_4``, ``all`` and one entry per category seen
    ("1".."5"), and `counts()` the number of questions scored per category.
    """

    ks: tuple[int, ...] = DEFAULT_KS
    _turn: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    _session: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    skipped: int = 0
    per_question: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in self.ks):
            raise MetricError(f"ks must be positive ints, got {self.ks!r}")
        self.ks = tuple(sorted(set(self.ks)))
        self._turn = {k: defaultdict(list) for k in self.ks}
        self._session = {k: defaultdict(list) for k in self.ks}

    def add(self, category: object, evidence: Sequence[str],
            ranked: Iterable[Sequence[str]], *, key: str | None = None) -> dict[int, float] | None:
        """Score one question; returns {k: turn recall}, or None when it has no evidence
        (skipped)."""
        cat = str(category)
        if not evidence:
            self.skipped += 1
            return None
        top = ranked_turns(ranked, max(self.ks))
        scores = {}
        for k in self.ks:
            prefix = top[:k]
            scores[k] = turn_recall(evidence, prefix)
            self._turn[k][cat].append(scores[k])
            self._session[k][cat].append(session_recall(evidence, prefix))
        if key is not None:
            self.per_question.append({"key": key, "category": cat,
                                      **{f"r@{k}": round(v, 4) for k, v in scores.items()}})
        return scores

    @staticmethod
    def _means(by_cat: Mapping[str, list[float]]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        head = [v for c in HEADLINE_CATEGORIES for v in by_cat.get(c, [])]
        every = [v for vals in by_cat.values() for v in vals]
        out["overall_1_4"] = round(sum(head) / len(head), 4) if head else None
        out["all"] = round(sum(every) / len(every), 4) if every else None
        for cat in sorted(set(ALL_CATEGORIES) | set(by_cat)):
            vals = by_cat.get(cat, [])
            out[cat] = round(sum(vals) / len(vals), 4) if vals else None
        return out

    def summary(self) -> dict[str, dict[str, dict[str, float | None]]]:
        return {
            "turn_recall": {str(k): self._means(self._turn[k]) for k in self.ks},
            "session_recall": {str(k): self._means(self._session[k]) for k in self.ks},
        }

    def merge(self, other: "RecallAccumulator") -> "RecallAccumulator":
        """Add `other`'s questions to this one (same ks): per-split accumulators -> all."""
        if other.ks != self.ks:
            raise MetricError(f"cannot merge recall at k={other.ks} into k={self.ks}")
        for mine, theirs in ((self._turn, other._turn), (self._session, other._session)):
            for k in self.ks:
                for cat, vals in theirs[k].items():
                    mine[k][cat].extend(vals)
        self.skipped += other.skipped
        self.per_question.extend(other.per_question)
        return self

    def counts(self) -> dict[str, int]:
        k0 = self.ks[0]
        out = {cat: len(v) for cat, v in sorted(self._turn[k0].items())}
        out["overall_1_4"] = sum(out.get(c, 0) for c in HEADLINE_CATEGORIES)
        out["skipped_no_evidence"] = self.skipped
        return out


# -- LoCoMo files ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str  # canonical
    raw_dia_id: str
    session: int
    speaker: str
    text: str  # as spoken (no caption)
    caption: str | None
    date: str | None  # the session's date text, as written


@dataclass(frozen=True)
class Question:
    index: int
    question: str
    category: str
    evidence: tuple[str, ...]  # canonical, only ids present in the conversation
    raw_evidence: tuple[str, ...]
    answer: str | None


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def turn_ids(self) -> frozenset[str]:
        return frozenset(t.dia_id for t in self.turns)


_SESSION_KEY = re.compile(r"session_(\d+)")


def parse_locomo(samples: object) -> list[Conversation]:
    """Decoded LoCoMo JSON (a list of samples) -> conversations with canonical ids.
    The sample id is ``sample_id`` or ``locomo-<index>``, as `pipelines.ingest` names the
    user. Raises MetricError when the structure is not LoCoMo's."""
    if not isinstance(samples, list):
        raise MetricError("a LoCoMo file is a JSON list of samples")
    return [_parse_sample(index, sample) for index, sample in enumerate(samples)]


def _parse_sample(index: int, sample: object) -> Conversation:
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise MetricError(f"sample {index}: no 'conversation' object")
    sample_id = str(sample.get("sample_id") or f"locomo-{index}")
    turns = _parse_turns(sample["conversation"])
    questions = _parse_questions(sample_id, sample.get("qa") or [], {t.dia_id for t in turns})
    return Conversation(sample_id=sample_id, turns=tuple(turns), questions=tuple(questions))


def _parse_turns(conv: dict) -> list[Turn]:
    """The turns of every ``session_<n>`` list, in session order."""
    sessions = sorted(
        (int(m.group(1)), key) for key in conv
        if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list)
    )
    turns: list[Turn] = []
    for number, key in sessions:
        for position, t in enumerate(conv[key]):
            if not isinstance(t, dict) or not isinstance(t.get("text"), str):
                continue  # the importer reports and skips these too
            turns.append(_parse_turn(t, number, position, conv.get(f"{key}_date_time")))
    return turns


def _parse_turn(t: dict, number: int, position: int, date: str | None) -> Turn:
    """One turn; without a ``dia_id`` it is named by its place, as the importer names it."""
    raw = str(t.get("dia_id") or f"D{number}:{position + 1}")
    canon = normalise_dia_id(raw) or f"D{number}:{position + 1}"
    return Turn(dia_id=canon, raw_dia_id=raw, session=number,
                speaker=str(t.get("speaker") or ""), text=t["text"],
                caption=t.get("blip_caption") or None, date=date)


def _parse_questions(sample_id: str, qa: object, known: set[str]) -> list[Question]:
    """The ``qa`` list; evidence is kept canonical and only where `known` has the turn."""
    if not isinstance(qa, list):
        raise MetricError(f"sample {sample_id}: 'qa' must be a list")
    questions = []
    for qi, q in enumerate(qa):
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            raise MetricError(f"sample {sample_id} question {qi}: no 'question' text")
        raw_ev = q.get("evidence") or []
        questions.append(Question(
            index=qi, question=q["question"], category=str(q.get("category", "?")),
            evidence=tuple(normalise_evidence(raw_ev, known)),
            raw_evidence=tuple(str(e) for e in (raw_ev if isinstance(raw_ev, list) else [raw_ev])),
            answer=None if q.get("answer") is None else str(q.get("answer")),
        ))
    return questions


def load_locomo(path: str | Path) -> list[Conversation]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise MetricError(f"{path}: cannot read a LoCoMo JSON file ({exc})") from exc
    return parse_locomo(data)


# -- shared measurement helpers ------------------------------------------------------------------------


def percentiles(values_ms: Sequence[float], points: Sequence[float] = (50, 95, 99)) -> dict[str, float | None]:
    """{"p50": .., "p95": .., "p99": .., "mean": .., "max": .., "n": ..} by linear
    interpolation between order statistics (numpy's default); None when empty."""
    vals = sorted(float(v) for v in values_ms)
    out: dict[str, float | None] = {}
    for p in points:
        if not 0 <= p <= 100:
            raise MetricError(f"percentile must be within [0, 100], got {p}")
        if not vals:
            out[f"p{p:g}"] = None
            continue
        pos = (len(vals) - 1) * p / 100
        lo = int(pos)
        hi = min(lo + 1, len(vals) - 1)
        out[f"p{p:g}"] = round(vals[lo] + (vals[hi] - vals[lo]) * (pos - lo), 3)
    out["mean"] = round(sum(vals) / len(vals), 3) if vals else None
    out["max"] = round(vals[-1], 3) if vals else None
    out["n"] = len(vals)
    return out


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on, including how busy the machine was (the load
    average matters on a shared 2-core box)."""
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        load = None
    return {
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "python": sys.version.split()[0],
        "loadavg_1_5_15": load,
    }


def write_json(path: str | Path | None, data: Any) -> Path | None:
    """Write `data` as indented JSON (parents created); None path writes nothing."""
    if path is None:
        return None
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return target


__all__ = [
    "ALL_CATEGORIES", "machine_info", "percentiles", "write_json", "CATEGORY_NAMES", "DEFAULT_KS",
    "HEADLINE_CATEGORIES",
    "Conversation", "MetricError", "Question", "RecallAccumulator", "Turn",
    "load_locomo", "normalise_dia_id", "normalise_evidence", "parse_locomo", "ranked_turns",
    "session_of", "session_recall", "split_evidence", "turn_recall",
]
