"""Injection rules: the system prompt: fake headers, chat-template tokens, disclosure requests."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.policy_rules.injection.vocabulary import _DISCLOSE


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.system_prompt",
        r"\bsystem\s*(?:prompt|message|instruction|override|note)(?:\s+from\s+(?:the\s+)?[\w.-]+)?\s*:|^\s*#*\s*system\s*:|"
        r"<\|?\s*(?:im_start|im_end|endoftext|system|eot_id|start_header_id|end_header_id|begin_of_text)\s*\|?>|"
        r"\[/?(?:INST|SYS)\]|<</?SYS>>",
    )
    add(
        "hard.injection.system_prompt",
        rf"\b{_DISCLOSE}\b[^.\n?!]{{0,60}}?\byour\s+(?:[\w'’]+\s+){{0,3}}?(?:instructions?|instruction\s+sequence|"
        r"prompt(?:s|ing)?|system\s+prompt|pre-?prompt|guidelines|directives|programming|parameters|"
        r"rules|configuration|initial\s+\w+)\b",
    )
    add(
        "hard.injection.system_prompt",
        rf"\b{_DISCLOSE}\b[^.\n?!]{{0,40}}?\b(?:the\s+)?(?:instructions?|text|words?|contents?)\s+(?:in|of|from|above)\s+"
        r"(?:the|your|this)\s+(?:system\s+|initial\s+|original\s+)?prompt\b"
        r"|\b(?:your|the)\s+(?:prompt|instructions)\s+so\s+far\b"
        r"|\brepeat\s+(?:everything|all|the\s+(?:text|words|lines))\s+(?:above|before)\b"
        r"|\bwhat\s+(?:are|were|is)\s+your\s+(?:initial\s+|original\s+|system\s+|exact\s+|underlying\s+)*(?:instructions|rules|prompt)\b"
        r"|\byour\s+(?:initial|original|system|hidden|secret|previous)\s+(?:instructions|prompt)\s+(?:are|were|is|was|say|said)\b"
        r"|\b(?:respond|reply|answer)\s+with\s+(?:every|all|each)\s+(?:of\s+the\s+)?instructions?\b",
    )
    add(
        "hard.injection.system_prompt",
        r"\b(?:what\s+is|what's|tell\s+me|reveal|give\s+me|share|print|output)\s+(?:me\s+)?the\s+"
        r"(?:secret\s+)?(?:password|passcode|access\s+code|pass\s?phrase|secret\s+(?:word|phrase|code|key))\b"
        r"|\bthe\s+system\s+is\s+(?:now\s+)?in\s+[\w\s]{1,30}?\s+mode\b"
        r"|\b(?:this|the|your)\s+(?:system\s+)?prompt\s+(?:has\s+been|is|was)\s+(?:\w+\s+){0,2}?(?:hijacked|injected|compromised|overridden|replaced)\b",
    )
