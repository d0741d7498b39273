"""Recognising recall requests: a user asking to remember, or a model calling a memory tool.

Two paths:
- `parse_memory_tool_call`: a model's tool call to `memory.search`, `memory.read`,
  `memory.palace.list` or `memory.palace.get` (OpenAI and Ollama shapes; arguments as a dict
  or a JSON string; `memory_search`-style names too, since OpenAI function names cannot
  contain dots). Any other tool returns None; a memory call with bad arguments raises
  `ToolCallError`.
- `detect_recall_intent`: recall phrasing in plain text ("what do we know about X",
  "recall ...", "as we decided earlier", "from memory", "do you remember ...", "what did I
  say about ...", "remind me what ..."). Patterns are anchored to request forms so ordinary
  uses of the words ("remember to ...", "a product recall", "16 GB of memory") do not fire.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import msgspec

_END = r"(?P<q>[^?!.\n]*(?:\.(?=\w)[^?!.\n]*)*)"  # up to the end of the sentence
_SENT = r"(?:^|(?<=[.!?\n])\s*|(?<=[,;:])\s*)"  # sentence (or clause) start
_WHO = r"(?:we|you|i|they|he|she)"
# After a bare sentence-initial "recall", words that show it is the noun or the maths/prose
# verb ("Recall that f is continuous", "Recall of the model is 0.8"), not a request.
_NOT_OBJECT = (r"(?:that|of|is|was|are|were|and|or|rate|rates|score|scores|has|had|at|"
               r"improved|dropped|went|value|values|metric|metrics|curve|vs|versus|"
               r"how\s+to)\b")


@dataclass(frozen=True)
class RecallIntent:
    query: str  # what to search for (may be the whole text when nothing narrower is found)
    trigger: str  # which phrasing matched
    span: str  # the matched text


_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("know_about", re.compile(
        rf"\bwhat\s+(?:do|did|does)\s+{_WHO}\s+(?:already\s+|actually\s+)?know\s+"
        rf"(?:about|of|regarding|on)\s+{_END}", re.I)),
    ("recall", re.compile(
        rf"{_SENT}(?:(?:please|so|ok(?:ay)?|now)[,\s]+)*"
        rf"(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|do\s+you\s+|let'?s\s+|let\s+us\s+)?"
        rf"recall\s+(?!{_NOT_OBJECT}|[@=\d])(?:(?:the\s+|any\s+|your\s+|our\s+)?(?:memory|memories|notes?)\s+"
        rf"(?:about|on|of|regarding|for)\s+|(?:everything|anything)\s+(?:about|on|regarding)\s+"
        rf"|about\s+)?{_END}", re.I)),
    ("remember", re.compile(
        rf"\b(?:do|can|could|don't|do\s+not)\s+you\s+(?:still\s+|even\s+)?remember\s+"
        rf"(?:about\s+)?{_END}", re.I)),
    ("remember_when", re.compile(
        rf"{_SENT}remember\s+(?P<lead>when|what|how|where|who|the\s+time|that\s+time)\s+{_END}",
        re.I)),
    ("what_did_say", re.compile(
        rf"\bwhat\s+(?:did|have|had)\s+{_WHO}\s+(?:ever\s+|already\s+)?"
        rf"(?:say|said|decide|decided|discuss|discussed|agree|agreed|mention|mentioned|"
        rf"conclude|concluded|choose|chose|pick|picked|note|noted|tell\s+you|told\s+you|"
        rf"write|wrote|settle|settled)"
        rf"(?:\s+(?:about|on|regarding|for|with|concerning)\s+{_END}|\s*(?P<q2>[^?!.\n]*))", re.I)),
    ("did_we", re.compile(
        rf"\b(?:did|have|had)\s+(?:we|i|you)\s+(?:ever\s+|already\s+)?"
        rf"(?:decide|decided|discuss|discussed|agree|agreed|talk|talked|mention|mentioned|"
        rf"settle|settled)\s+(?:about|on|regarding|whether|if|that|to)?\s*{_END}", re.I)),
    ("remind_me", re.compile(
        rf"\bremind\s+me\s+(?:again\s+)?(?:of|about|what|how|when|where|who|which|why|whether)"
        rf"\s+{_END}", re.I)),
    ("search_memory", re.compile(
        rf"\b(?:search|check|look\s+(?:up|in|through)|query|consult)\s+(?:in\s+)?"
        rf"(?:your|our|the)\s+memor(?:y|ies)\s+(?:for|about|on|regarding)\s+{_END}", re.I)),
    ("from_memory", re.compile(
        rf"(?:{_SENT}from\s+(?:your\s+|our\s+)?memory\s*[,:\-–]\s*{_END}"
        rf"|\b(?:from|in)\s+(?:your|our)\s+memor(?:y|ies)\b)", re.I)),
    ("as_decided", re.compile(
        r"\bas\s+(?:we|you|i)\s+(?:(?:had|have)\s+)?(?:decided|discussed|agreed|said|"
        r"mentioned|noted|established|settled)\s*(?:on\s+)?"
        r"(?:earlier|before|previously|last\s+time|yesterday|the\s+other\s+day)\b", re.I)),
    ("last_time", re.compile(
        r"\blast\s+time\s+(?:we|i|you)\s+(?:talked|spoke|discussed|met|chatted)\b", re.I)),
]

_LEADING = re.compile(r"^(?:about|of|on|regarding|the\s+fact\s+that|that)\s+", re.I)
_TRIM = " \t\r\n,;:-–—\"'`"


def _clean(q: str | None) -> str:
    q = (q or "").strip(_TRIM)
    q = _LEADING.sub("", q)
    return re.sub(r"\s+", " ", q).strip(_TRIM)


def _sentence_around(text: str, start: int, end: int) -> str:
    """The sentence holding text[start:end], with the matched phrase removed."""
    left = max(text.rfind(c, 0, start) for c in ".!?\n") + 1
    rights = [i for i in (text.find(c, end) for c in ".!?\n") if i != -1]
    right = min(rights) if rights else len(text)
    return _clean(text[left:start] + " " + text[end:right])


def detect_recall_intent(text: str) -> RecallIntent | None:
    """The first recall request in `text`, with the query it asks about, or None."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        return None
    best: tuple[int, str, re.Match[str]] | None = None
    for name, pattern in _PATTERNS:
        m = pattern.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), name, m)
    if best is None:
        return None
    _, name, m = best
    groups = m.groupdict()
    query = _clean(groups.get("q") or groups.get("q2"))
    if groups.get("lead") and query:
        query = _clean(f"{groups['lead']} {query}")
    if not query:
        query = _sentence_around(text, m.start(), m.end())
    if not query:
        query = _clean(text)
    return RecallIntent(query=query, trigger=name, span=m.group(0).strip())


# -- tool calls ------------------------------------------------------------------------------


class ToolCallError(ValueError):
    """A memory.* tool call whose arguments are malformed or invalid."""


class SearchArgs(msgspec.Struct, frozen=True, kw_only=True):
    query: str
    k: int | None = None
    tags: list[str] = []
    tier: str | None = None
    type: str | None = None
    scope: str | None = None
    mode: str | None = None


class ReadArgs(msgspec.Struct, frozen=True, kw_only=True):
    ids: list[str]


class PalaceListArgs(msgspec.Struct, frozen=True, kw_only=True):
    path: str = ""  # "", "domain", "domain/room" or "domain/room/shelf"


class PalaceGetArgs(msgspec.Struct, frozen=True, kw_only=True):
    location: str  # "domain/room/shelf/card"


@dataclass(frozen=True)
class ToolRequest:
    name: str  # canonical dotted name, e.g. "memory.search"
    arguments: SearchArgs | ReadArgs | PalaceListArgs | PalaceGetArgs
    call_id: str | None = None


RECALL_TOOLS = ("memory.search", "memory.read", "memory.palace.list", "memory.palace.get")
MAX_K = 100
MAX_IDS = 100


def canonical_tool_name(name: str) -> str:
    """'memory_palace_list', 'Memory.Palace-List' -> 'memory.palace.list'."""
    return re.sub(r"[_\-/\s]+", ".", name.strip().lower())


def tool_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict (given as one, or as JSON text); `ToolCallError`
    when they are neither."""
    return _arguments(raw)


def _arguments(raw: Any) -> dict[str, Any]:
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolCallError(f"tool arguments are not valid JSON: {exc.msg}") from exc
    if not isinstance(raw, dict):
        raise ToolCallError(f"tool arguments must be a JSON object, got {type(raw).__name__}")
    return raw


def _str_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [p for p in (s.strip() for s in value.split(",")) if p]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ToolCallError(f"{what} must be a list of non-empty strings")
    return [v.strip() for v in value]


def _search_args(args: dict[str, Any]) -> SearchArgs:
    query = args.get("query", args.get("q"))
    if not isinstance(query, str) or not query.strip():
        raise ToolCallError("memory.search needs a non-empty 'query' string")
    k = args.get("k", args.get("limit"))
    if k is not None:
        if isinstance(k, str) and k.strip().isdigit():
            k = int(k)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ToolCallError(f"memory.search 'k' must be an integer in 1..{MAX_K}")
    for key in ("tier", "type", "scope", "mode"):
        if args.get(key) is not None and not isinstance(args[key], str):
            raise ToolCallError(f"memory.search '{key}' must be a string")
    return SearchArgs(query=query.strip(), k=k, tags=_str_list(args.get("tags"), "tags"),
                      tier=args.get("tier") or None, type=args.get("type") or None,
                      scope=args.get("scope") or None, mode=args.get("mode") or None)


def _read_args(args: dict[str, Any]) -> ReadArgs:
    ids = _str_list(args.get("ids", args.get("id")), "ids")
    if not ids:
        raise ToolCallError("memory.read needs 'ids' (a list of memory ids)")
    if len(ids) > MAX_IDS:
        raise ToolCallError(f"memory.read takes at most {MAX_IDS} ids")
    return ReadArgs(ids=list(dict.fromkeys(ids)))


def _palace_list_args(args: dict[str, Any]) -> PalaceListArgs:
    path = args.get("path")
    if path is None:
        parts = [args.get(key) for key in ("domain", "room", "shelf")]
        if any(p is not None and not isinstance(p, str) for p in parts):
            raise ToolCallError("memory.palace.list domain/room/shelf must be strings")
        path = "/".join(p.strip("/") for p in parts if p)
    if not isinstance(path, str):
        raise ToolCallError("memory.palace.list 'path' must be a string")
    return PalaceListArgs(path=path.strip().strip("/"))


def _palace_get_args(args: dict[str, Any]) -> PalaceGetArgs:
    location = args.get("location", args.get("path"))
    if not isinstance(location, str) or not location.strip("/ "):
        raise ToolCallError("memory.palace.get needs a 'location' string")
    return PalaceGetArgs(location=location.strip().strip("/"))


_BUILDERS = {"memory.search": _search_args, "memory.read": _read_args,
             "memory.palace.list": _palace_list_args}


def _build(name: str, args: dict[str, Any]):
    return _BUILDERS.get(name, _palace_get_args)(args)


def parse_memory_tool_call(call: dict[str, Any]) -> ToolRequest | None:
    """A recall tool call as a typed request; None for any other tool."""
    if not isinstance(call, dict):
        raise ToolCallError(f"a tool call must be an object, got {type(call).__name__}")
    fn = call.get("function", call)
    if not isinstance(fn, dict):
        raise ToolCallError("tool call 'function' must be an object")
    name = fn.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallError("tool call has no function name")
    canonical = canonical_tool_name(name)
    if canonical not in RECALL_TOOLS:
        return None
    args = _arguments(fn.get("arguments", fn.get("parameters")))
    call_id = call.get("id")
    return ToolRequest(name=canonical, arguments=_build(canonical, args),
                       call_id=call_id if isinstance(call_id, str) else None)
