"""Item coercion: a ProposedItem from whatever the model wrote, with what had to be fixed or dropped."""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from pipelines.records import (
    ITEM_TYPES,
    LONE_SURROGATE,
    SCOPE_KINDS,
    TIERS,
    ParseError,
    ProposedItem,
    holds_lone_surrogate,
    says_something,
    time_problems,
)

from .json_text import _excerpt

_ALIASES = {
    "topic": "title",
    "name": "title",
    "subject": "title",
    "text": "content",
    "memory": "content",
    "fact": "content",
    "value": "content",
    "body": "content",
    "kind": "type",
    "category": "type",
    "why": "why_store",
    "reason": "why_store",
    "rationale": "why_store",
    "provenance": "provenance_hint",
    "source": "provenance_hint",
    "tag": "tags",
    "labels": "tags",
    "entity": "entities",
    "people": "entities",
}


def coerce_item(raw: Any, form: str = "api") -> tuple[ProposedItem | None, list[ParseError]]:
    """A ProposedItem from whatever the model wrote, plus what had to be fixed or dropped.
    Unknown keys are ignored; wrong types are coerced where meaning is clear."""
    errors: list[ParseError] = []
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        return None, [
            ParseError(form=form, message=f"item is not an object: {type(raw).__name__}", excerpt=_excerpt(repr(raw)))
        ]
    data: dict[str, Any] = {}
    if isinstance(raw.get("source"), str) and "provenance_hint" not in raw and "provenance" not in raw:
        raw = {**raw, "provenance_hint": {"source": raw["source"]}}
        raw.pop("source")
    for key, value in raw.items():
        k = _ALIASES.get(str(key).strip().lower(), str(key).strip().lower())
        if k not in data or data[k] in (None, "", [], {}):
            data[k] = value
    out: dict[str, Any] = {}
    for key in ("title", "content", "why_store"):
        text = _as_text(data.get(key))
        out[key] = text if says_something(text) else ""  # "..." copied from the instruction: nothing
    out["type"] = _as_type(data.get("type"), errors, form, topic=out["title"])
    out["tags"] = _as_list(data.get("tags"))
    out["entities"] = _as_list(data.get("entities"))
    out["importance"] = _as_importance(data.get("importance"), errors, form)
    out["confidence"] = _as_confidence(data.get("confidence"), errors, form)
    for key, allowed in (("tier", TIERS), ("scope", SCOPE_KINDS)):
        out[key] = _as_choice(data.get(key), allowed, key, errors, form)
    for key in ("valid_from", "valid_to"):
        v = data.get(key)
        out[key] = str(v) if isinstance(v, (str, int, float)) and str(v).strip() else None
    problems = time_problems(out["valid_from"], out["valid_to"])
    if problems:  # the item is kept without the window: a bound that is no time holds nothing
        errors.append(ParseError(form=form, message="; ".join(problems) + ": validity window dropped",
                                 excerpt=_excerpt(f"{out['valid_from']}..{out['valid_to']}")))
        out["valid_from"] = out["valid_to"] = None
    out["provenance_hint"] = _as_hint(data.get("provenance_hint"))
    if not out["content"] and out["title"]:
        out["content"] = out["title"]
    if not out["content"]:
        return None, [*errors, ParseError(form=form, message="item without content", excerpt=_excerpt(repr(raw)))]
    if holds_lone_surrogate(out):  # escapes in the model's JSON or Python literals can spell one
        return None, [*errors, ParseError(form=form, message=f"invalid item: {LONE_SURROGATE}",
                                          excerpt=_excerpt(ascii(raw)))]
    try:
        return msgspec.convert(out, ProposedItem), errors
    except msgspec.ValidationError as exc:
        return None, [*errors, ParseError(form=form, message=f"invalid item: {exc}", excerpt=_excerpt(repr(raw)))]


def _as_choice(value: Any, allowed: tuple[str, ...], key: str, errors: list[ParseError], form: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    choice = str(value).strip().lower()
    if choice in allowed:
        return choice
    errors.append(ParseError(form=form, message=f"unknown {key} {str(value)[:40]!r}: ignored"))
    return None


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float, bool)):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        parts = re.split(r"[,;]", value)
    elif isinstance(value, (list, tuple, set)):
        parts = [v if isinstance(v, str) else _as_text(v) for v in value]
    else:
        parts = [_as_text(value)]
    out: list[str] = []
    for p in parts:
        p = p.strip().strip("#").strip()
        if p and p not in out:
            out.append(p[:200])
    return out[:50]


# An untyped item filed under preferences ("memory_save(topic='user-preferences', ...)", as
# the spec's memory_save prompt files them) is a preference.
_PREFERENCE_TOPIC = re.compile(r"\bpreferences?\b", re.IGNORECASE)


def _as_type(value: Any, errors: list[ParseError], form: str, topic: str = "") -> str:
    if value is None or value == "":
        return "preference" if _PREFERENCE_TOPIC.search(topic) else "note"
    t = str(value).strip().lower()
    if t in ITEM_TYPES:
        return t
    if t.endswith("s") and t[:-1] in ITEM_TYPES:  # "preferences", "decisions"
        return t[:-1]
    errors.append(ParseError(form=form, message=f"unknown type {str(value)[:40]!r}: stored as 'note'"))
    return "note"


def _as_importance(value: Any, errors: list[ParseError], form: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        n = round(float(str(value).strip()))
    except (ValueError, OverflowError):
        errors.append(ParseError(form=form, message=f"importance {str(value)[:40]!r} is not a number: ignored"))
        return None
    return max(1, min(10, n))


def _as_confidence(value: Any, errors: list[ParseError], form: str) -> float | None:
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        x = float(text.rstrip("%"))
    except (ValueError, OverflowError):
        errors.append(ParseError(form=form, message=f"confidence {text[:40]!r} is not a number: ignored"))
        return None
    if x != x:  # NaN
        errors.append(ParseError(form=form, message="confidence is NaN: ignored"))
        return None
    # Models write confidence like importance, on a 1-10 scale ("confidence: 8"), or as a
    # percentage ("85", "85%"); a bare 5 read as 5% would sink a confident memory.
    if text.endswith("%") or 10.0 < x <= 100.0:
        x = x / 100.0
    elif 1.0 < x <= 10.0:
        x = x / 10.0
    return max(0.0, min(1.0, x))


def _as_hint(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        try:
            return msgspec.json.decode(msgspec.json.encode(value))  # JSON-safe copy
        except (TypeError, ValueError, msgspec.EncodeError, RecursionError):
            return {str(k): _as_text(v) for k, v in value.items()}
    if isinstance(value, str) and value.strip():
        return {"source_id": value.strip()}
    return {}
