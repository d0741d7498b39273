"""Injection rules: fake delimiters that pretend the trusted context ended or a new one began."""

from __future__ import annotations

from collections.abc import Callable


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.fake_delimiter",
        r"(?:%%%|###|===|\*\*\*|>>>|<<<|\[\[)\s*(?:end|begin|start|stop)\b[^\n]{0,60}?"
        r"\b(?:instructions?|prompt|input|ambiguity|buffer|passphrase|context|system|user|text|"
        r"conversation|data|document)\b",
    )
    add(
        "hard.injection.fake_delimiter",
        r"(?-i:\b(?:END|BEGIN|START|STOP)\s+(?:OF\s+)?(?:THE\s+)?(?:[A-Z]+\s+){0,2}"
        r"(?:INPUT|INSTRUCTIONS|PROMPT|BUFFER|PASSPHRASE|CONVERSATION|CONTEXT|CODE|PASSWORD|DATA)\b)"
        r"|(?-i:^\s*(?:NEW\s+|SYSTEM\s+|ADMIN\s+)?INSTRUCTIONS?\s*:)",
    )
    add(
        "hard.injection.fake_delimiter",
        r"\b(?:the\s+)?(?:above|previous|preceding)\s+(?:was|is)\s+(?:just\s+)?(?:an?\s+)?(?:example|test|"
        r"simulation|sample|untrusted)\b[^.\n]{0,40}\b(?:input|prompt|instructions?|conversation)",
    )
