"""JSON as models write it (trailing commas, Python literals) and the excerpts errors quote."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_EXCERPT = 80
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
