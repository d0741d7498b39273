"""What one recall asks: the filters (one struct from the API down to the corpus masks) and
the validated request the engine's stages share."""

from __future__ import annotations

import re
import time
from typing import Any

import msgspec

from pipelines.records import ITEM_TYPES, SCOPE_KINDS, TIERS, Identity, parse_time

from .dates import without_said_when
from .lexical import QUERY_FILLERS, tokenize

MODES = ("inject", "catalog", "hybrid", "auto")  # `deliver`: what each returns
TAG_MATCHES = ("all", "any")


class RecallError(ValueError):
    """Bad recall input (query, identity, mode, k, filters) or misconfiguration
    (embedder/corpus dimension mismatch)."""


class RecallFilters(msgspec.Struct, frozen=True, kw_only=True):
    """Narrowing of what a caller may see: tags (all or any of them), tier, item type and
    scope kind. Applied to the visibility masks before anything is scored."""

    tags: tuple[str, ...] = ()
    tier: str | None = None
    type: str | None = None
    scope: str | None = None
    tag_match: str = "all"

    def check(self) -> "RecallFilters":
        if any(not isinstance(t, str) for t in self.tags):
            raise RecallError("tags must be strings")
        for name, value, allowed in (("tier", self.tier, TIERS), ("type", self.type, ITEM_TYPES),
                                     ("scope", self.scope, SCOPE_KINDS)):
            if value is not None and value not in allowed:
                raise RecallError(f"{name} must be one of {allowed}, not {value!r}")
        if self.tag_match not in TAG_MATCHES:
            raise RecallError(f"tag_match must be 'all' or 'any', not {self.tag_match!r}")
        return self

    @classmethod
    def of(cls, tags: Any = (), **kw: Any) -> "RecallFilters":
        tags = (tags,) if isinstance(tags, str) else tuple(tags or ())
        return cls(tags=tags, **kw).check()


# "What do you know about me?", "Tell me about myself", "Who am I?", or just "me" (what a
# chat's recall intent leaves of "what do you remember about me").
_ABOUT_SELF = re.compile(
    r"^\W*(?:me|myself)\W*$"
    r"|\babout\s+(?:me|myself)\b(?!\s+(?:and|or|&|to|from|with|in|on|at|for)\b)"
    r"|\bwho\s+am\s+i\b|\bdescribe\s+me\b|\bmy\s+profile\b",
    re.IGNORECASE,
)


def asks_about_self(query: str) -> bool:
    """The caller asks what is known about them: recall lists their own memories (their
    user scope), since such a question shares no word with any of them. One that names a
    kind of memory ("what do you know about my preferences?") asks for that kind
    (`asked_types`), as "What do I prefer?" does: not for everything they said."""
    return _ABOUT_SELF.search(query) is not None and not asked_types(query)


# "What did I tell you about penicillin?", "Did I ever mention my sister?", "What have I
# said about the move?", "remind me what I told you": the caller asks what they said
# themselves. Only "I": "we" is the caller and the assistant, and LoCoMo's questions,
# asked of two other people's talk ("What did Caroline say ..."), never fire it.
_ASKS_WHAT_I_SAID = re.compile(
    r"\b(?:did|do|have|had)\s+i\s+(?:ever\s+|already\s+|just\s+|once\s+|really\s+|not\s+)?"
    r"(?:tell|told|say|said|mention|mentioned|share|shared|write|wrote|written|note|noted|explain|explained)\b"
    r"|\b(?:what|when|that|as|where|how|it|everything|anything)\s+i\s+(?:\w+\s+)?(?:told|said|mentioned|shared|wrote)\b",
    re.IGNORECASE)


def asks_what_i_said(query: str) -> bool:
    """The caller asks what they themselves said ("What did I tell you about penicillin?"):
    their own turns are the answer, before another speaker's echo of them ("Got it, you're
    allergic to penicillin")."""
    return _ASKS_WHAT_I_SAID.search(query) is not None


# "What did we decide?", "List our decisions", "Any open todos?", "What rules do we have?":
# a question that asks for a kind of memory, not about a subject, shares no word with the
# memories it asks for, so recall lists the visible curated memories of that type.
_ASKED_TYPES = {
    "decision": re.compile(r"^(?:decid(?:e|ed|es|ing)|decisions?|agree|agreed)$"),
    "todo": re.compile(r"^(?:todos?|tasks?|actions?)$"),
    "constraint": re.compile(r"^(?:constraints?|rules?)$"),
    "preference": re.compile(r"^(?:preferences?|prefer|preferred)$"),
    "fact": re.compile(r"^facts?$"),
}
# Words such a question says besides the type ("list all our open decisions so far").
_LISTING_WORDS = frozenset({
    "list", "show", "give", "all", "every", "open", "current", "made", "make", "makes", "making", "taken",
    "take", "took", "reached", "settled", "far", "yet", "ever", "recent", "recently", "latest", "pending",
    "outstanding", "remaining", "still", "left", "agree", "agreed", "important", "key", "main", "team",
    "project", "summary", "summarize", "summarise", "overview", "got", "today", "done", "follow", "items"})


def asked_types(query: str) -> tuple[str, ...]:
    """The item types a question asks for as a kind, or () when it names no type or also
    names a subject ("what did we decide about the API?"). Read from its words with the
    recall fillers ("Do you remember what we decided?": "decided" is one); when it was
    said ("what did we decide yesterday?") is no subject."""
    toks = tokenize(without_said_when(query))
    types = [t for t, word in _ASKED_TYPES.items() if any(word.match(w) for w in toks)]
    if not types or _names_a_subject(toks):
        return ()
    return tuple(types)


# Words of a question about what was said then ("what did we talk about yesterday?").
_TALK_WORDS = frozenset({"talk", "talked", "discuss", "chat", "chatted", "happened", "happen", "told",
                         "tell", "say", "said", "ask", "asked", "conversation", "conversations", "covered"})


def asks_what_was_said(query: str) -> bool:
    """The question asks what was said at a time it names and names no subject ("what did
    we talk about yesterday?", "what did we decide last week?"): each thing said then
    answers it, as each decision answers "what did we decide?" (`asked_types`)."""
    rest = without_said_when(query)
    return rest != query and not _names_a_subject([w for w in tokenize(rest) if w not in _TALK_WORDS])


# A question about the conversation with the assistant itself: "what did I tell you ...",
# "what did we decide ...", "what have you said ..." (not "what did John do ...").
_ASKS_OUR_CONVERSATION = re.compile(
    r"\b(?:did|do|have|had)\s+(?:i|we|you)\b|\b(?:i|we|you)\s+(?:told|said|mentioned|talked|discussed|decided)\b",
    re.IGNORECASE)


def subject_text(query: str) -> str:
    """The words a question searches with. One about our own conversation at a time ("what
    did I tell you about my sister last month?") places the conversation with its time
    words, not what it was about: "month" is no word of the sister's wedding (it found "the
    rent is 1520 euros a month" first), and what was said then is found by the day it was
    said (`dates.said_dates`). One about someone's doings keeps them: "What did John
    volunteer at last weekend?" may be answered by a turn saying "last weekend"."""
    if not _ASKS_OUR_CONVERSATION.search(query):
        return query
    rest = without_said_when(query)
    return rest if rest.strip() else query


def _names_a_subject(toks: list[str]) -> bool:
    return any(not any(word.match(w) for word in _ASKED_TYPES.values())
               and w not in _LISTING_WORDS and w not in QUERY_FILLERS for w in toks)


# Where a question asks one more thing: "..., and what's her dog called?", "... and how many
# years was he ...?" (a wh-word after "and"/"also"/"plus"), or a second question after a "?".
_ANOTHER_PART = re.compile(
    r"(?:\s*[,;]\s*|\s+)(?:and|also|plus)\s+(?=(?:what|what's|where|where's|when|who|who's|whom|whose|"
    r"which|why|how)\b)|(?<=\?)\s+",
    re.IGNORECASE,
)


def question_parts(question: str) -> list[str]:
    """The parts of a question that asks several things ("Where does Maya live and what's
    her dog called?": "Where does Maya live", "what's her dog called"), or [] when it asks
    one. "Who went and why?" asks one thing: a part needs a word of its own to search with."""
    parts = [p.strip(" ,;?") for p in _ANOTHER_PART.split(question.strip())]
    parts = [p for p in parts if p and tokenize(p) and any(t not in QUERY_FILLERS for t in tokenize(p))]
    return parts if len(parts) > 1 else []


def parse_now(now: str | None) -> float:
    """POSIX seconds of `now` (ISO-8601, naive = UTC), or the current time when None."""
    if now is None:
        return time.time()
    dt = parse_time(now)
    if dt is None:
        raise RecallError(f"now must be an ISO-8601 timestamp, got {now!r}")
    return dt.timestamp()


def check_request(query: Any, identity: Any, mode: Any, k: Any) -> None:
    if not isinstance(query, str):
        raise RecallError(f"query must be a string, got {type(query).__name__}")
    if not isinstance(identity, Identity):
        raise RecallError("identity must be a pipelines.records.Identity")
    if mode not in MODES:
        raise RecallError(f"mode must be one of {MODES}, not {mode!r}")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise RecallError(f"k must be a positive integer, not {k!r}")


__all__ = ["MODES", "RecallError", "RecallFilters", "asked_types", "asks_about_self", "asks_what_i_said",
           "check_request", "parse_now", "question_parts"]
