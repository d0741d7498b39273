"""The scanner: tokens (plain text / removed proposal) for a text, in batch or streaming mode:
tagged JSON blocks, bare JSON tool calls, narrated calls, and the fences around them."""

from __future__ import annotations

import re

from pipelines.records import ParseError

from .calls import _add_items, _call_items, _items_from
from .json_text import _decode_json, _excerpt
from .narrated import _narrated
from .tokens import _MAX_CONSTRUCT, _Pending, _Plain, _Removed, _Token

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
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*("|\\?\Z)|[{}]', re.DOTALL)
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
