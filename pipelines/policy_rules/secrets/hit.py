"""A secret detector's hit: a rule id and a span over the original text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretHit:
    rule_id: str
    start: int
    end: int


def _dedupe(hits: list[SecretHit]) -> list[SecretHit]:
    seen: set[tuple[int, int]] = set()
    out = []
    for h in sorted(hits, key=lambda h: (h.start, -(h.end - h.start))):
        if (h.start, h.end) in seen:
            continue
        seen.add((h.start, h.end))
        out.append(h)
    return out
