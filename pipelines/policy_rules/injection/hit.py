"""An injection detector's hit: a rule id and a span over the normalised text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class InjectionHit:
    rule_id: str
    start: int
    end: int
