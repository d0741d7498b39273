"""Injection rules: claims that a check passed or that the writer has authority."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.policy_rules.injection.vocabulary import _VERDICT_OK


def add_rules(add: Callable[..., None]) -> None:
    add(
        "hard.injection.authority_claim",
        r"\b(?:entere?d?s?|input|provided|given|typed|supplied|said|submitted|registered|found|accepted|received)\b"
        r"[^.\n]{0,30}?\b(?:the\s+)?(?:correct|right|valid)\s+(?:password|passcode|pass\s?phrase|access\s+code|code|credentials|pin)\b"
        r"|\b(?:correct|right|valid)\s+(?:password|passcode|pass\s?phrase|access\s+code)\s+(?:has\s+been\s+|was\s+|is\s+)?"
        r"(?:\w+\s+)?(?:entered|provided|input|given|typed|supplied|found|registered|accepted|received)\b"
        r"|^\W{0,3}(?:the\s+)?(?:above\s+)?(?:correct|right)\s+(?:password|access\s+code|passcode)\b"
        r"|\b(?:pass\s?phrase|password|passcode|code|phrase)\s+that\s+grants\s+access\b"
        r"|\b(?:safe|safety|security|content)\s+(?:mode|filters?|checks?)\s+(?:is\s+|are\s+)?(?:now\s+)?"
        r"(?:off|disabled|deactivated|removed|lifted|bypassed)\b"
        r"|\b(?:i\s+am|i'm|this\s+is)\s+(?:your\s+(?:developer|creator|administrator|admin|owner|operator|"
        r"programmer|maker)|(?:an?\s+|the\s+)?(?:openai|anthropic)\s+(?:administrator|developer|employee|engineer))\b",
    )
    # An access verdict standing on its own ("Access granted.") claims that a check passed;
    # asking for one to be said, translated or produced is the same hijack by other means;
    # so is swapping a refusal word for an approval word. "Access granted to Bob for the
    # repo" is a fact and does not match.
    add(
        "hard.injection.authority_claim",
        rf"(?:^|[.!?]\s+|[\"'\[(<„«]\s*)\W{{0,3}}{_VERDICT_OK}\b\W{{0,3}}(?:now\W{{0,3}})?(?=$|[.!?\"'\])<\n])",
    )
    add(
        "hard.injection.authority_claim",
        r"\b(?:say|saying|says|utter|output|print|write|type|answer|respond|reply|use|translate|translation\s+of|spell|"
        r"another\s+way\s+of\s+saying|opposite\s+of|antonym\s+of)\b(?:\s+(?:with|the\s+(?:words?|phrase)|only|just|back))*"
        rf"\s*[:\"'\[(„«]*\s*{_VERDICT_OK}\b"
        r"|\b(?:opposite|antonym|reverse)\s+of\s+[\"'\[(„«]*\s*(?:access|entry|authori[sz]ation|authentication|login|permission)\s+"
        r"(?:is\s+|was\s+)?(?:denied|refused|rejected)\b"
        r"|\b(?:switch|swap|replace|change|substitute|exchange)\s+(?:the\s+words?\s+)?[\"']?(?:denied|rejected|refused|deny)[\"']?\s+"
        r"(?:with|to|into|for|by)\s+(?:the\s+words?\s+)?[\"']?(?:granted|approved|accepted|allowed)\b",
    )
