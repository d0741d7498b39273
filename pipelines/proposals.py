"""Find memory proposals in an assistant's output and return the visible answer without them.

Three forms (a tool call, a tagged JSON block, and narrated calls for models without tools):

- tool call   `memory.propose` in OpenAI/Ollama shape (`{"function": {"name", "arguments"}}`,
              arguments as object or JSON string), `{"name": ..., "arguments": ...}`, the
              seed's `{"action": "memory.propose", "items": [...]}`, and `memory_save` tool
              calls. Passed in `tool_calls`, or written as a bare JSON object in the text
              (also inside a ```json fence), which is then stripped.
- json block  `<MEMORY_PROPOSALS_JSON> [...] </MEMORY_PROPOSALS_JSON>`; a list of items or
              `{"items": [...]}`; several blocks allowed; an unterminated block is stripped
              to the end of the text and reported. The tag in any case, with `-` or a space
              for `_`, PROPOSAL for PROPOSALS, or without _JSON (`<memory-proposals>`).
- narrated    `memory_save(topic=..., content=..., importance=..., tags=[...], type=...)` in
              the text. Parsed with Python's `ast` (quotes, escaped quotes, apostrophes and
              triple quotes handled by the real parser); sloppy forms (`content=Alice's cat`,
              unquoted values) fall back to a key=value splitter. `topic` maps to title.

Never raises: malformed input yields `ParseError` records. Items are coerced leniently
(unknown keys dropped, "7" -> 7, "a, b" -> ["a", "b"]); what is stored is the policy's call.

The scanner emits a token stream (plain text / removed proposal) and a small fold joins the
plain pieces, tidying only the whitespace around what was removed. The streaming filter for
the Ollama proxy runs the same scanner on a growing buffer and holds back anything that
could still become a proposal, so streamed text + `finish()` remainder always equals the
batch result.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pipelines.records import (
    ITEM_TYPES,
    LONE_SURROGATE,
    SCOPE_KINDS,
    TIERS,
    ParsedOutput,
    ParsedProposal,
    ParseError,
    ProposedItem,
    holds_lone_surrogate,
    says_something,
    time_problems,
)

__all__ = ["ProposalStreamFilter", "coerce_item", "parse_assistant_output"]

# The documented tag is MEMORY_PROPOSALS_JSON; models also write it in another case, with `-`
# or a space for `_`, PROPOSAL for PROPOSALS or without _JSON. Each is the same block: never
# shown to the user, governed and landed like the documented one.
_TAG_SEPARATORS = ("", "_", "-", " ")
_TAG_NAMES = frozenset(
    f"memory{a}{proposals}{json}"
    for a in _TAG_SEPARATORS for proposals in ("proposal", "proposals")
    for json in ("", *(f"{b}json" for b in _TAG_SEPARATORS))
)
_TAG_NAME_RX = r"memory[\s_-]?proposals?(?:[\s_-]?json)?"
_TAG_OPEN = re.compile(rf"<\s*{_TAG_NAME_RX}\s*>", re.IGNORECASE)
_TAG_CLOSE = re.compile(rf"<\s*/\s*{_TAG_NAME_RX}\s*>", re.IGNORECASE)
_NARRATED = re.compile(r"(?<![\w.])memory_save\s*\(")
_JSON_START = re.compile(r'\{\s*"')
_NARRATED_NAME = "memory_save"

# A JSON object in the text is a candidate only if its first key can start a tool call.
_CALL_FIRST_KEYS = frozenset(
    {"action", "name", "function", "items", "tool", "tool_name", "type", "id", "arguments", "tool_calls"}
)
_CALL_NAMES = frozenset({"memory.propose", "memory.save"})
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*("|\\?\Z)|[{}]', re.DOTALL)
_MAX_CONSTRUCT = 200_000  # a "call" longer than this is prose, not a proposal
_EXCERPT = 80

_NARRATED_POSITIONAL = ("topic", "content", "importance", "source")
_NARRATED_KEYS = (
    "topic|title|content|text|importance|tags|tag|type|kind|source|confidence|why_store|why|"
    "reason|tier|scope|entities|valid_from|valid_to"
)
_SLOPPY_KEY = re.compile(rf"(?:^|,)\s*({_NARRATED_KEYS})\s*[=:]\s*", re.IGNORECASE)

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


# ---------------------------------------------------------------------- public API


def parse_assistant_output(text: str, tool_calls: list[dict] | None = None) -> ParsedOutput:
    """Split `text` into what the user sees and what the model proposed; never raises."""
    errors: list[ParseError] = []
    if text is None:
        text = ""
    elif not isinstance(text, str):
        errors.append(ParseError(form="api", message=f"text must be a string, got {type(text).__name__}"))
        text = ""
    try:
        tokens, _ = _scan(text, 0, final=True)
        fold = _Fold()
        proposals: list[ParsedProposal] = []
        for tok in tokens:
            fold.add(tok)
            if isinstance(tok, _Removed):
                proposals.extend(tok.proposals)
                errors.extend(tok.errors)
        fold.finish()
        visible = fold.text
    except Exception as exc:  # a bug must not break the chat: keep the text, report it
        return ParsedOutput(
            visible_text=text,
            errors=[*errors, ParseError(form="api", message=f"parser failure: {type(exc).__name__}: {exc}")],
        )
    call_props, call_errors = _parse_tool_calls(tool_calls)
    return ParsedOutput(visible_text=visible, proposals=[*call_props, *proposals], errors=[*call_errors, *errors])


class ProposalStreamFilter:
    """Streaming version for the Ollama proxy.

    `feed(chunk)` returns the text that is safe to show now: anything that may be the
    start of a `<MEMORY_PROPOSALS_JSON>` block, a `memory_save(` call or a tool-call JSON
    object (and a fence or trailing whitespace that may belong to it) is held back until
    resolved. `finish()` returns the remaining visible text and the parse of the whole
    output; the concatenation of all returned text equals `ParsedOutput.visible_text`.
    """

    def __init__(self, tool_calls: list[dict] | None = None) -> None:
        self._buf = ""
        self._pos = 0
        self._fold = _Fold()
        self._emitted = 0
        self._proposals: list[ParsedProposal] = []
        self._errors: list[ParseError] = []
        self._tool_calls = tool_calls
        self._finished: tuple[str, ParsedOutput] | None = None
        self._broken = False

    def feed(self, chunk: str) -> str:
        if self._finished is not None:
            return ""
        if chunk is None:
            return ""
        if isinstance(chunk, bytes):
            chunk = chunk.decode("utf-8", errors="replace")
        elif not isinstance(chunk, str):
            chunk = str(chunk)
        self._buf += chunk
        if self._broken:
            return ""
        try:
            tokens, self._pos = _scan(self._buf, self._pos, final=False)
            self._absorb(tokens)
        except Exception as exc:  # hold everything; finish() falls back to the batch parse
            self._broken = True
            self._errors.append(ParseError(form="api", message=f"stream parser failure: {exc}"))
            return ""
        return self._emit(self._fold.committed())

    def finish(self) -> tuple[str, ParsedOutput]:
        if self._finished is not None:
            return "", self._finished[1]
        if self._broken:
            parsed = parse_assistant_output(self._buf, self._tool_calls)
            parsed = msgspec.structs.replace(parsed, errors=[*self._errors, *parsed.errors])
        else:
            try:
                tokens, self._pos = _scan(self._buf, self._pos, final=True)
                self._absorb(tokens)
                self._fold.finish()
                call_props, call_errors = _parse_tool_calls(self._tool_calls)
                parsed = ParsedOutput(
                    visible_text=self._fold.text,
                    proposals=[*call_props, *self._proposals],
                    errors=[*call_errors, *self._errors],
                )
            except Exception:
                parsed = parse_assistant_output(self._buf, self._tool_calls)
        visible = parsed.visible_text
        already = visible[: self._emitted]
        # The emitted text is always a prefix of the final text; if a bug ever broke that,
        # we must not repeat what was shown, so only the tail past it is returned.
        remaining = visible[self._emitted :] if len(already) == self._emitted else ""
        self._finished = (remaining, parsed)
        return remaining, parsed

    def _absorb(self, tokens: list[_Token]) -> None:
        for tok in tokens:
            self._fold.add(tok)
            if isinstance(tok, _Removed):
                self._proposals.extend(tok.proposals)
                self._errors.extend(tok.errors)

    def _emit(self, committed: str) -> str:
        out = committed[self._emitted :]
        self._emitted = max(self._emitted, len(committed))
        return out


# ---------------------------------------------------------------------- tokens and fold


@dataclass(slots=True)
class _Plain:
    text: str


@dataclass(slots=True)
class _Removed:
    proposals: list[ParsedProposal] = field(default_factory=list)
    errors: list[ParseError] = field(default_factory=list)


_Token = _Plain | _Removed


class _Fold:
    """Joins plain pieces; where something was removed, the whitespace on both sides is
    merged: at most one blank line, a space between words, nothing before punctuation,
    the indentation of the following line kept. Text far from a removal is untouched, and
    text without removals comes back byte for byte."""

    def __init__(self) -> None:
        self.text = ""
        self._pending = False  # a removal waits for the next non-blank text
        self._left_ws = ""
        self._right_ws = ""

    def add(self, tok: _Token) -> None:
        if isinstance(tok, _Removed):
            if self._pending:  # back-to-back removals: one gap, as wide as the widest
                self._left_ws = max(self._left_ws, self._right_ws, key=lambda w: w.count("\n"))
                self._right_ws = ""
            else:
                core = self.text.rstrip()
                self._left_ws = self.text[len(core) :]
                self.text = core
                self._right_ws = ""
                self._pending = True
            return
        piece = tok.text
        if not piece:
            return
        if not self._pending:
            self.text += piece
            return
        body = piece.lstrip()
        self._right_ws += piece[: len(piece) - len(body)]
        if not body:
            return
        self.text += self._separator(body) + body
        self._pending = False

    def _separator(self, body: str) -> str:
        newlines = min(2, max(self._left_ws.count("\n"), self._right_ws.count("\n")))
        if not self.text:
            newlines = 0
        indent = self._right_ws.rsplit("\n", 1)[1] if "\n" in self._right_ws else ""
        if newlines:
            return "\n" * newlines + indent
        if not self.text:
            return indent
        return "" if body[0] in ".,;:!?)]}" else " "

    def committed(self) -> str:
        """The prefix no later token can change."""
        return self.text if self._pending else self.text.rstrip()

    def finish(self) -> None:
        if self._pending:
            self._pending = False
            self._left_ws = self._right_ws = ""


# ---------------------------------------------------------------------- scanner


class _Pending(Exception):
    """More text is needed to decide (streaming only)."""


def _scan(text: str, pos: int, *, final: bool) -> tuple[list[_Token], int]:
    """Tokens for text[pos:]. In streaming mode (final=False) it stops before anything
    undecided and returns where it stopped; everything before that is final."""
    tokens: list[_Token] = []
    plain_start = i = pos
    finders = {
        "tag": _TAG_OPEN,
        "close": _TAG_CLOSE,
        "narrated": _NARRATED,
        "json": _JSON_START,
    }
    next_hit: dict[str, re.Match[str] | None] = {}
    while True:
        for kind, rx in finders.items():
            hit = next_hit.get(kind, False)
            if hit is False or (hit is not None and hit.start() < i):
                next_hit[kind] = rx.search(text, i)
        live = [(m.start(), kind, m) for kind, m in next_hit.items() if m is not None]
        if not live:
            break
        start, kind, m = min(live, key=lambda t: (t[0], t[1]))
        try:
            outcome = _construct(text, kind, m, final)
        except _Pending:
            cut = _fence_hold(text, plain_start, start)
            _flush(tokens, text, plain_start, cut)
            return tokens, cut
        if outcome is None:  # not a proposal after all: keep scanning inside it
            i = start + 1
            continue
        end, removed = outcome
        if removed is None:  # a complete non-proposal construct (plain JSON): skip over it
            i = max(end, start + 1)
            continue
        try:
            wrap_start, wrap_end = _fence_wrap(text, plain_start, start, end, final)
        except _Pending:
            cut = _fence_hold(text, plain_start, start)
            _flush(tokens, text, plain_start, cut)
            return tokens, cut
        _flush(tokens, text, plain_start, wrap_start)
        tokens.append(removed)
        plain_start = i = wrap_end
    if final:
        _flush(tokens, text, plain_start, len(text))
        return tokens, len(text)
    cut = _hold_point(text, plain_start)
    _flush(tokens, text, plain_start, cut)
    return tokens, cut


def _flush(tokens: list[_Token], text: str, start: int, end: int) -> None:
    if end > start:
        tokens.append(_Plain(text[start:end]))


def _construct(text: str, kind: str, m: re.Match[str], final: bool) -> tuple[int, _Removed | None] | None:
    if kind == "tag":
        return _tag_block(text, m, final)
    if kind == "close":
        err = ParseError(form="json_block", message="closing </MEMORY_PROPOSALS_JSON> without an opening tag")
        return m.end(), _Removed(errors=[err])
    if kind == "narrated":
        return _narrated(text, m, final)
    return _json_object(text, m, final)


# -- <MEMORY_PROPOSALS_JSON> blocks


def _tag_block(text: str, m: re.Match[str], final: bool) -> tuple[int, _Removed]:
    close = _TAG_CLOSE.search(text, m.end())
    if close is None:
        if not final:
            raise _Pending
        body = text[m.end() :]
        removed = _parse_block_body(body)
        removed.errors.insert(
            0,
            ParseError(
                form="json_block",
                message="unterminated <MEMORY_PROPOSALS_JSON> block: stripped to the end of the text",
                excerpt=_excerpt(body),
            ),
        )
        return len(text), removed
    return close.end(), _parse_block_body(text[m.end() : close.start()])


def _parse_block_body(body: str) -> _Removed:
    removed = _Removed()
    content = _strip_fences(body.strip())
    if not content:
        return removed
    value, err = _decode_json(content)
    if err is not None:
        lines = [ln for ln in content.splitlines() if ln.strip()]
        decoded = [_decode_json(ln) for ln in lines] if len(lines) > 1 else []
        if decoded and all(e is None for _, e in decoded):
            value, err = [v for v, _ in decoded], None
    if err is not None:
        removed.errors.append(
            ParseError(form="json_block", message=f"invalid JSON in block: {err}", excerpt=_excerpt(content))
        )
        return removed
    raw_items, errs = _items_from(value, "json_block")
    removed.errors.extend(errs)
    _add_items(removed, raw_items, "json_block")
    return removed


def _strip_fences(s: str) -> str:
    m = re.fullmatch(r"```[\w+.-]*[ \t]*\n?(.*?)\n?[ \t]*```", s, re.DOTALL)
    return m.group(1).strip() if m else s


# -- bare JSON tool calls in the text


def _json_object(text: str, m: re.Match[str], final: bool) -> tuple[int, _Removed | None] | None:
    start = m.start()
    key = re.match(r'\{\s*"((?:[^"\\]|\\.)*)("?)', text[start : start + 200])
    if key is None or not key.group(2):
        if not final and len(text) - start < 200:
            raise _Pending  # the first key is still arriving
        return None
    if key.group(1) not in _CALL_FIRST_KEYS:
        return None
    end = _json_end(text, start)
    if end is None:
        if not final and len(text) - start < _MAX_CONSTRUCT:
            raise _Pending
        return None
    value, err = _decode_json(text[start:end])
    if err is not None or not isinstance(value, dict):
        return end, None
    items, errors = _call_items(value, "tool_call")
    if items is None:
        return end, None
    removed = _Removed(errors=errors)
    _add_items(removed, items, "tool_call")
    return end, removed


def _json_end(text: str, start: int) -> int | None:
    depth = 0
    for tok in _JSON_TOKEN.finditer(text, start):
        t = tok.group()
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return tok.end()
        elif tok.group(1) != '"':
            return None  # a string runs to the end of the text
        if tok.end() - start > _MAX_CONSTRUCT:
            return None
    return None


# -- narrated memory_save(...)


def _narrated(text: str, m: re.Match[str], final: bool) -> tuple[int, _Removed] | None:
    open_paren = m.end() - 1
    end, strict = _call_end(text, open_paren, final)
    if end is None:
        return None
    call = text[m.start() : end]
    kwargs, is_call = _parse_call(call, strict)
    if not is_call:
        return None
    removed = _Removed()
    if not strict and not call.rstrip().endswith(")"):
        removed.errors.append(
            ParseError(form="narrated", message="unterminated memory_save(...) call", excerpt=_excerpt(call))
        )
    if not kwargs.get("content") and not kwargs.get("topic") and not kwargs.get("title"):
        removed.errors.append(
            ParseError(form="narrated", message="memory_save(...) without content", excerpt=_excerpt(call))
        )
        return end, removed
    _add_items(removed, [kwargs], "narrated")
    return end, removed


def _call_end(text: str, open_paren: int, final: bool) -> tuple[int | None, bool]:
    """(end, strict): end just past the matching ")" found by a Python-like, quote-aware
    scan (strict=True); or, when a one-line string breaks (an apostrophe inside single
    quotes), the end of the sloppy call on that line (strict=False)."""
    n = len(text)
    depth = 0
    i = open_paren
    while i < n:
        if i - open_paren > _MAX_CONSTRUCT:
            return None, True
        c = text[i]
        if c in "\"'":
            triple = text[i : i + 3]
            if triple in ('"""', "'''"):
                close = text.find(triple, i + 3)
                if close < 0:
                    break
                i = close + 3
                continue
            j = _string_end(text, i, c, final)
            if j is None:
                break
            if text[j] == "\n":
                return _sloppy_end(text, open_paren, final), False
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1, True
        i += 1
    if not final:
        if n - open_paren > _MAX_CONSTRUCT:
            return None, True
        raise _Pending
    return _sloppy_end(text, open_paren, final), False


def _string_end(text: str, i: int, quote: str, final: bool) -> int | None:
    """Index of the quote closing the one-line string opened at i, or of the newline that
    breaks it; None at the end of the text. A quote closes the string only when what
    follows can follow an argument (`,` `)` `]` `}` `:` or the end of the line), so an
    apostrophe in `content='Alice's cat'` stays inside, as the writer meant."""
    n = len(text)
    j = i + 1
    while j < n:
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "\n":
            return j
        if ch == quote:
            k = j + 1
            while k < n and text[k] in " \t":
                k += 1
            if k >= n:
                if not final:
                    raise _Pending
                return j
            if text[k] in ",)]}:\r\n":
                return j
        j += 1
    return None


def _sloppy_end(text: str, open_paren: int, final: bool) -> int:
    line_end = text.find("\n", open_paren)
    if line_end < 0:
        if not final:
            raise _Pending
        line_end = len(text)
    line = text[open_paren:line_end]
    keys = list(_SLOPPY_KEY.finditer(line, 1))
    after = keys[-1].end() if keys else 1
    quoted = after < len(line) and line[after] in "\"'"
    for close in [k.start() for k in re.finditer(r"\)", line) if k.start() >= after]:
        before = line[:close].rstrip()
        if not quoted or before.endswith(("'", '"')):
            return open_paren + close + 1
    return line_end


def _parse_call(call: str, strict: bool) -> tuple[dict[str, Any], bool]:
    """(kwargs, is_call). A mention like `memory_save(topic, content)` is not a call."""
    if strict or call.rstrip().endswith(")"):
        try:
            node = ast.parse(call.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            node = None
        if isinstance(node, ast.Call):
            kwargs: dict[str, Any] = {}
            literal = False
            for idx, arg in enumerate(node.args[: len(_NARRATED_POSITIONAL)]):
                ok, value = _literal(arg)
                if ok:
                    kwargs[_NARRATED_POSITIONAL[idx]] = value
                    literal = True
            for kw in node.keywords:
                if kw.arg is None:
                    continue
                ok, value = _literal(kw.value)
                if ok:
                    kwargs[kw.arg] = value
                    literal = True
                elif isinstance(kw.value, ast.Name):
                    kwargs[kw.arg] = kw.value.id  # topic=security: an unquoted word
            return kwargs, literal or bool(node.keywords)
    return _sloppy_kwargs(call)


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None
    if value is Ellipsis:
        return False, None
    return True, value


def _sloppy_kwargs(call: str) -> tuple[dict[str, Any], bool]:
    open_paren = call.find("(")
    inner = call[open_paren + 1 :].rstrip()
    if inner.endswith(")"):
        inner = inner[:-1]
    keys = list(_SLOPPY_KEY.finditer(inner))
    if not keys:
        return {}, False
    kwargs: dict[str, Any] = {}
    for k, nxt in zip(keys, [*keys[1:], None]):
        raw = inner[k.end() : nxt.start() if nxt else len(inner)].strip().rstrip(",").strip()
        kwargs[k.group(1).lower()] = _unquote(raw)
    return kwargs, True


def _unquote(raw: str) -> Any:
    for q in ('"""', "'''", '"', "'"):
        if len(raw) >= 2 * len(q) and raw.startswith(q) and raw.endswith(q):
            inner = raw[len(q) : -len(q)]
            return inner.replace("\\" + q[0], q[0]).replace("\\\\", "\\")
    if raw.startswith("[") and raw.endswith("]"):
        try:
            return ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            return [p.strip().strip("'\"") for p in raw[1:-1].split(",") if p.strip()]
    return raw.strip("'\"")


# -- fences around a removed construct


_FENCE_OPEN = re.compile(r"(?:^|\n)([ \t]*```[\w+.-]*[ \t]*\r?\n[ \t]*)\Z")
_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)


def _opens_block(text: str, fence_at: int) -> bool:
    """A ``` line opens a block when an even number of fence lines precede it."""
    return len(_FENCE_LINE.findall(text, 0, fence_at)) % 2 == 0


def _fence_wrap(text: str, plain_start: int, start: int, end: int, final: bool) -> tuple[int, int]:
    """Extend [start, end) over a ``` fence or `backticks` that wrap only the construct."""
    before = text[plain_start:start]
    block = _FENCE_OPEN.search(before)
    after = text[end:]
    if block is not None and _opens_block(text, plain_start + block.start(1)):
        closing = re.match(r"[ \t]*\r?\n?[ \t]*```[ \t]*(?=\r?\n|\Z)", after)
        if closing is not None and (final or len(after) > closing.end()):
            return plain_start + block.start(1), end + closing.end()
        if not final and re.fullmatch(r"[ \t]*\r?\n?[ \t]*(?:`{1,3}[ \t]*)?", after):
            raise _Pending
        return start, end
    if before.endswith("`") and not before.endswith("``"):
        if after.startswith("`") and not after.startswith("``"):
            return start - 1, end + 1
        if not final and after == "":
            raise _Pending
    return start, end


def _fence_hold(text: str, plain_start: int, start: int) -> int:
    """Where to stop emitting before an undecided construct at `start`: before a fence
    opener or backtick that would be removed with it."""
    before = text[plain_start:start]
    block = _FENCE_OPEN.search(before)
    if block is not None and _opens_block(text, plain_start + block.start(1)):
        return plain_start + block.start(1)
    if before.endswith("`"):
        return start - 1
    return start


_PARTIAL_TAG = re.compile(r"<\s*/?\s*([A-Za-z_\s-]*)\Z")
_PARTIAL_NARRATED = re.compile(r"(?<![\w.])(m[a-z_]*\s*)\Z")
_PARTIAL_JSON = re.compile(r"\{\s*\Z")
_TRAILING_FENCE = re.compile(r"(?:(?:^|\n)([ \t]*`{1,3}(?:(?<=```)[\w+.-]*[ \t]*\r?\n?[ \t]*)?)|(?<!`)(`))\Z")


def _may_become_tag(name: str) -> bool:
    """Whether a tag's name cut short (`memory_prop`, `MEMORY-PROPOSALS `) may still
    become a proposal tag: the start of one of its spellings, or a whole one before `>`."""
    said = re.sub(r"\s", " ", name.lower())
    whole = said.rstrip()
    return any(spelling.startswith(said) for spelling in _TAG_NAMES) or (whole != said and whole in _TAG_NAMES)


def _hold_point(text: str, plain_start: int) -> int:
    """In streaming mode, the start of a tail that could still become (or wrap) a
    construct: a partial tag or call name, an opening brace, a fence opener."""
    end = len(text)
    tail = text[plain_start:end]
    cut = end
    m = _PARTIAL_TAG.search(tail)
    if m and _may_become_tag(m.group(1)):
        cut = plain_start + m.start()
    else:
        m = _PARTIAL_NARRATED.search(tail)
        if (
            m
            and _NARRATED_NAME.startswith(m.group(1).rstrip())
            and (m.group(1).rstrip() == _NARRATED_NAME or not m.group(1).endswith((" ", "\t", "\n")))
        ):
            cut = plain_start + m.start()
        else:
            m = _PARTIAL_JSON.search(tail)
            if m:
                cut = plain_start + m.start()
    fence = _TRAILING_FENCE.search(text[plain_start:cut])
    if fence is not None:
        cut = plain_start + (fence.start(1) if fence.group(1) is not None else fence.start(2))
    return max(plain_start, cut)


# ---------------------------------------------------------------------- tool calls


def _parse_tool_calls(tool_calls: Any) -> tuple[list[ParsedProposal], list[ParseError]]:
    if tool_calls is None:
        return [], []
    if isinstance(tool_calls, dict):
        tool_calls = [tool_calls]
    if not isinstance(tool_calls, (list, tuple)):
        return [], [ParseError(form="tool_call", message=f"tool_calls must be a list, got {type(tool_calls).__name__}")]
    props: list[ParsedProposal] = []
    errors: list[ParseError] = []
    for call in tool_calls:
        if not isinstance(call, dict):
            errors.append(
                ParseError(form="tool_call", message="tool call is not an object", excerpt=_excerpt(repr(call)))
            )
            continue
        try:
            items, errs = _call_items(call, "tool_call")
        except Exception as exc:  # odd shapes must not break the turn
            errors.append(ParseError(form="tool_call", message=f"unreadable tool call: {exc}"))
            continue
        errors.extend(errs)
        if items is None:
            continue
        removed = _Removed()
        _add_items(removed, items, "tool_call")
        props.extend(removed.proposals)
        errors.extend(removed.errors)
    return props, errors


def _call_items(call: dict, form: str) -> tuple[list[Any] | None, list[ParseError]]:
    """Items of a memory.propose / memory_save call in any of the accepted shapes, or None
    when `call` is some other tool."""
    errors: list[ParseError] = []
    fn = call.get("function")
    if isinstance(fn, dict):
        name, args = fn.get("name"), fn.get("arguments", fn.get("parameters"))
    else:
        name = call.get("action") or call.get("name") or call.get("tool") or call.get("tool_name")
        args = call.get("arguments", call.get("parameters", call.get("args")))
        if args is None:
            args = {k: v for k, v in call.items() if k not in ("action", "name", "tool", "tool_name", "id", "type")}
    if not isinstance(name, str) or name.strip().lower().replace("_", ".") not in _CALL_NAMES:
        return None, []
    if isinstance(args, str):
        decoded, err = _decode_json(args) if args.strip() else ({}, None)
        if err is not None:
            return [], [ParseError(form=form, message=f"arguments are not valid JSON: {err}", excerpt=_excerpt(args))]
        args = decoded
    if args is None:
        args = {}
    items, errs = _items_from(args, form)
    errors.extend(errs)
    if not items and not errs:
        errors.append(ParseError(form=form, message=f"{name} call without items"))
    return items, errors


def _items_from(value: Any, form: str) -> tuple[list[Any], list[ParseError]]:
    if isinstance(value, list):
        return value, []
    if isinstance(value, dict):
        if "items" in value:
            inner = value["items"]
            if isinstance(inner, list):
                return inner, []
            if isinstance(inner, (dict, str)):
                return [inner], []
            return [], [ParseError(form=form, message="'items' is not a list")]
        if isinstance(value.get("function"), dict) or "action" in value:
            items, errs = _call_items(value, form)
            return (items or []), errs
        return [value], []
    if isinstance(value, str) and value.strip():
        return [value], []
    return [], [ParseError(form=form, message=f"expected a list of items, got {type(value).__name__}")]


def _add_items(removed: _Removed, raw_items: Iterable[Any], form: str) -> None:
    for raw in raw_items:
        item, errs = coerce_item(raw, form)
        removed.errors.extend(errs)
        if item is not None:
            removed.proposals.append(ParsedProposal(form=form, item=item))


# ---------------------------------------------------------------------- item coercion


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


# ---------------------------------------------------------------------- JSON helpers


def _decode_json(s: str) -> tuple[Any, str | None]:
    """Strict JSON, then the usual model slips: trailing commas, Python literals."""
    try:
        return json.loads(s), None
    except (ValueError, RecursionError) as exc:
        first = str(exc)[:120]
    try:
        return json.loads(re.sub(r",\s*([}\]])", r"\1", s)), None
    except (ValueError, RecursionError):
        pass
    try:
        pythonish = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", s)))
        value = ast.literal_eval(pythonish)
        if isinstance(value, (dict, list)):
            return value, None
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        pass
    return None, first


def _excerpt(s: str) -> str:
    s = " ".join(s.split())
    return s if len(s) <= _EXCERPT else s[: _EXCERPT - 1] + "…"
