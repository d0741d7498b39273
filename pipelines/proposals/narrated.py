"""Narrated calls: `memory_save(topic=..., content=...)` written in the text, read with Python's
`ast`, or, when a one-line string breaks, with a key=value splitter."""

from __future__ import annotations

import ast
import re
from typing import Any

from pipelines.records import ParseError

from .calls import _add_items
from .json_text import _excerpt
from .tokens import _MAX_CONSTRUCT, _Pending, _Removed

_NARRATED_POSITIONAL = ("topic", "content", "importance", "source")
_NARRATED_KEYS = (
    "topic|title|content|text|importance|tags|tag|type|kind|source|confidence|why_store|why|"
    "reason|tier|scope|entities|valid_from|valid_to"
)
_SLOPPY_KEY = re.compile(rf"(?:^|,)\s*({_NARRATED_KEYS})\s*[=:]\s*", re.IGNORECASE)

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
