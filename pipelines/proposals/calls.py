"""Tool calls: the items of `memory.propose` / `memory_save` calls in any of the accepted shapes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipelines.records import ParsedProposal, ParseError

from .coerce import coerce_item
from .json_text import _decode_json, _excerpt
from .tokens import _Removed

_CALL_NAMES = frozenset({"memory.propose", "memory.save"})
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
