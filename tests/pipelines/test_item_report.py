"""`loci show`'s text of a change held for review beside an item (`item_report.held_change`,
`held_lines`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pipelines.item_report import held_change, held_lines
from pipelines.materialize import HELD_EDIT
from pipelines.records import MemoryItem, Scope

LONG = "The atlas API gateway timeout is 30 seconds, agreed with the platform team after the outage review."


def item(**held: object) -> MemoryItem:
    return MemoryItem(id="m1", tier="stm", type="decision", title="Atlas API timeout", content=LONG,
                      scope=Scope(user_id="lena", project_id="atlas"),
                      metadata={HELD_EDIT: held} if held else {})


def test_a_held_edit_is_shown_old_to_new_with_its_editor() -> None:
    later = (datetime.now(timezone.utc) + timedelta(days=7)).isoformat()
    edited = LONG.replace("30 seconds", "45 seconds")
    held = item(patch={"content": edited}, by="omar", at="2026-11-24T10:00:00+00:00",
                rule_ids=["soft.contradiction"], expires_at=later)
    change = held_change(held)
    assert change == {"kind": "edit", "by": "omar", "at": "2026-11-24T10:00:00+00:00",
                      "rule_ids": ["soft.contradiction"], "changes": {"content": {"old": LONG, "new": edited}}}
    head, content = held_lines({"held_edit": change})
    assert head.startswith("held for review: edit by omar, 2026-11-24 10:00:00 (soft.contradiction)")
    assert "30 seconds" in content and "45 seconds" in content  # the whole of both, not cut at 40


def test_nothing_held_or_a_lapsed_hold_shows_nothing() -> None:
    assert held_change(item()) is None and held_lines({"held_edit": None}) == []
    lapsed = item(patch={"content": "x"}, by="omar", at="2026-11-01T10:00:00+00:00",
                  expires_at="2026-11-08T10:00:00+00:00")
    assert held_change(lapsed) is None
