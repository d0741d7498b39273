"""Injection rules: data access: sending out, dumping stored secrets, destroying."""

from __future__ import annotations

from collections.abc import Callable


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.exfiltration",
        r"\b(?:send|email|e-mail|mail|post|upload|forward|transmit|leak|exfiltrate|share|submit)\b[^.\n]{0,80}?"
        r"(?:\b|(?=~/))(?:conversation|chat\s+history|history|memor(?:y|ies)|credentials|passwords?|api\s+keys?|secrets?|"
        r"personal\s+data|user\s+data|system\s+prompt|previous\s+messages|messages|contacts|contact\s+list|address\s+book|files|"
        r"(?:ssh|private|secret|access|session)\s+keys?|tokens|cookies|(?:~/)?\.ssh/\w+|id_(?:rsa|ed25519|ecdsa)|\.env)(?!\w)"
        r"[^.\n]{0,60}?\b(?:to|at)\s+(?:(?:me|us)\s+at\s+)?(?:[\w.+-]+@[\w-]+\.[\w.]+|https?://)"
        r"|!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{1,200}\?[^)\s]{0,200}="
        r"|\b(?:usernames?\s+and\s+)?passwords?\s+(?:in|from|stored\s+in)\s+your\s+(?:database|memory|system|records)\b"
        r"|\b(?:delete|erase|wipe|destroy|drop)\s+(?:all\s+)?(?:of\s+)?(?:the\s+)?(?:data|memories|memory|files|records|database)\s+"
        r"(?:you\s+have|in\s+your|stored|you\s+can)",
    )
