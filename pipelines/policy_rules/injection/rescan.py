"""Scanning again what a layer decoded (`encoded`) or undid (`obfuscation`)."""

from __future__ import annotations

from pipelines.policy_rules.injection.hit import InjectionHit


def find_injections_normalised(norm: str, *, decode: bool = True) -> list[InjectionHit]:
    """`find.find_injections_normalised`, imported when called: `find` imports the layers
    that call this."""
    from pipelines.policy_rules.injection.find import find_injections_normalised

    return find_injections_normalised(norm, decode=decode)
