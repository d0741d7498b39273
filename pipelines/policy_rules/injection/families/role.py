"""Injection rules: a new role, persona or mode for the assistant."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.policy_rules.injection.vocabulary import _INSTR


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.role_hijack",
        r"\byou\s+are\s+(?:now|henceforth|hereby|from\s+now\s+on|no\s+longer)\b\s*,?\s+"
        r"(?:(?:a|an|the|my|called|named|known|acting|operating|going|free|unrestricted|"
        r"unfiltered|uncensored|jailbroken|evil|dan|developer|able\s+to\s+ignore|not\s+bound|"
        r"not\s+restricted|not\s+an?|allowed|required|forced|obligated|programmed|"
        r"only\s+allowed|bound|restricted|in\s+(?:developer|god|dan|jailbreak|unrestricted|debug|admin)\s+mode)\b|(?-i:[A-Z]{2,})\b)",
    )
    add(
        "hard.injection.role_hijack",
        r"\bfrom\s+now\s+on\b[^.\n]{0,40}?\byou\s+(?:will|must|shall|should|are|have\s+to|need\s+to|"
        r"may\s+only|can\s+only|only|always|never)\b",
    )
    add(
        "hard.injection.role_hijack",
        r"\byou\s+(?:have\s+been|were\s+just|just\s+got|are\s+being)\s+(?:carefully\s+)?(?:reprogrammed|re-?programmed|"
        r"jailbroken|freed|unlocked|upgraded|updated\s+with\s+new|given\s+(?:a\s+)?(?:new|system)\s+"
        r"(?:upgrade|instructions|directives|update|mission|role)|reset|rebooted|liberated)\b",
    )
    add(
        "hard.injection.role_hijack",
        r"\bdo\s+anything\s+now\b|\b(?:developer|god|jailbreak|dan|unrestricted|unfiltered|evil|"
        r"sudo|debug|admin)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|on|engaged|unlocked)\b|"
        r"\b(?:enable|activate|enter|switch\s+to|turn\s+on)\s+(?:developer|god|jailbreak|dan|"
        r"unrestricted|unfiltered|evil|sudo)\s+mode\b",
    )
    add(
        "hard.injection.role_hijack",
        r"\b(?:you|it|the\s+(?:ai|assistant|bot|model|chatbot))\s+(?:are|is|will\s+be)\s+(?:no\s+longer|not)\s+"
        r"(?:restricted|bound|limited|constrained|governed)\s+by\s+(?:the\s+|any\s+|its\s+|your\s+|openai'?s?\s+)?"
        rf"(?:\w+\s+)?{_INSTR}",
    )
    add(
        "hard.injection.role_hijack",
        r"\b(?:act|behave|respond|answer|pretend|roleplay|role-play|function)\s+(?:as|like)\s+(?:if\s+you\s+(?:are|were)\s+)?"
        r"(?:an?\s+)?(?:dan\b|unrestricted|unfiltered|uncensored|jailbroken|evil|ai\s+(?:without|with\s+no)|"
        r"(?:python|linux|bash|sql|javascript|unix|windows)\s+(?:interpreter|terminal|console|shell))"
        r"|\bas\s+if\s+you\s+were\s+an?\s+(?:python|linux|bash|sql|javascript|unix)\s+(?:interpreter|terminal|console|shell)",
    )
    add(
        "hard.injection.role_hijack",
        r"\b(?:unrestricted|unfiltered|uncensored|jailbroken|rogue)\s+(?:ai|bot|chatbot|assistant|model|version\s+of\s+you)\b"
        r"|\bthe\s+(?:assistant|ai|bot|model|chatbot)\s+is\s+(?:now\s+)?(?:in\s+error|offline|disabled|deactivated|replaced|down)\b",
    )
    add(
        "hard.injection.role_hijack",
        r"\byou\s+(?:must|will|shall)\s+(?:now\s+)?(?:obey|follow|comply\s+with)\s+(?:only\s+)?(?:me|my|these|the\s+following|every|all)\b",
    )
