"""`loci show`'s text of a change held for review beside an item (`item_report.held_change`,
`held_lines`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgspec

from pipelines.item_report import (
    as_read,
    change_log,
    earlier_lines,
    earlier_versions,
    held_change,
    held_lines,
    history_as_read,
    history_rows,
    inbox_notes,
    shown_at,
)
from pipelines.materialize import HELD_EDIT, is_tombstone
from pipelines.records import Link, MemoryItem, Scope

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


def test_a_correction_shows_the_claims_it_replaced_with_who_stated_them_and_when() -> None:
    """"When did this change and who changed it?" is asked of the current claim: a
    correction is a new item, so `loci show` of it lists the chain it replaced (newest
    first), each with its author and time, stored or not consolidated yet; a link loop ends."""
    def claim(id_: str, content: str, *replaced: str) -> MemoryItem:
        return MemoryItem(id=id_, tier="stm", type="decision", title="Queue", content=content,
                          scope=Scope(user_id="mira", project_id="harbor"),
                          links=[Link(rel="supersedes", to=r) for r in replaced])

    first = claim("q1", "Harbor uses RabbitMQ.", "q3")  # a loop back to the newest: walked once
    second = claim("q2", "Harbor uses Kafka.", "q1")
    newest = claim("q3", "Harbor uses NATS.", "q2")
    stored = {"q1": [{"action": "create", "actor": "mira", "at": "2026-11-08T23:40:00+00:00", "inbox_seq": 9,
                      "requested_at": "2026-11-08T23:40:00+00:00", "details": {}}]}
    earlier = earlier_versions(newest, {"q1": first, "q2": second}.get, lambda i: stored.get(i, []), [])
    assert [(e["id"], e["by"]) for e in earlier] == [("q2", None), ("q1", "mira")]
    lines = earlier_lines({"earlier": earlier})
    assert lines[1].startswith("2026-11-08 23:40:00  mira") and "Harbor uses RabbitMQ." in lines[1]
    assert earlier_lines({"earlier": earlier}, "Asia/Tokyo")[1].startswith("2026-11-09 08:40:00  mira")


def test_times_are_shown_on_the_readers_clock() -> None:
    assert shown_at("2026-06-23T01:00:30+00:00", "America/New_York") == "2026-06-22 21:00:30"  # EDT
    assert shown_at("2026-12-23T01:00:30+00:00", "America/New_York") == "2026-12-22 20:00:30"  # EST
    assert shown_at("2026-06-23 01:00:30", "Asia/Tokyo") == "2026-06-23 10:00:30"  # no offset: UTC's
    assert shown_at(None) == "-" and shown_at("not a time") == "not a time"


def test_an_edit_not_consolidated_yet_says_what_each_field_was_and_became() -> None:
    """Before the next consolidation stores it as a revision, `loci show` and the browser card
    list an applied edit as old -> new from the item as last stored (two edits in a row: each
    from the one before), a held one as held, and another event as before."""
    stored = {"content": "Harbor code is indented with 2 spaces.", "confidence": 0.9}
    events = [
        {"kind": "memory.update", "payload": {"patch": {"content": "Harbor code is indented with 4 spaces."}}},
        {"kind": "memory.update", "payload": {"patch": {"content": "Harbor code uses tabs.", "confidence": 0.9}}},
        {"kind": "memory.palace.assign", "payload": {"domain": "harbor", "room": "style", "shelf": "code"}},
    ]
    first, second, moved = inbox_notes(events, stored)
    assert first.startswith("content: ") and "2 spaces" in first and "4 spaces" in first, first
    assert "4 spaces" in second and "tabs" in second and "confidence" not in second, second
    assert moved == "moved to harbor/style/code"
    assert inbox_notes(events[:1], None) == ["changed content"]  # nothing stored to compare with
    (reviewer,) = inbox_notes([{"kind": "memory.update", "payload": {**events[0]["payload"], "as_reviewer": True}}],
                              stored)
    assert "4 spaces" in reviewer and reviewer.endswith("(a correction by the reviewer who approved it)"), reviewer


def test_a_retracted_item_reads_as_its_tombstone_with_who_and_when_only() -> None:
    rejected = msgspec.structs.replace(item(), type="todo", validation="retracted", metadata={
        "review": {"decision": "reject", "by": "omar", "at": "2026-11-24T10:00:00+00:00", "note": "30 seconds?"}})
    shown = as_read(rejected)
    assert is_tombstone(shown) and shown.id == "m1" and shown.scope.user_id == "lena"
    assert "30 seconds" not in msgspec.json.encode(shown).decode() and shown.title == ""
    assert shown.metadata["review"] == {"decision": "reject", "by": "omar", "at": "2026-11-24T10:00:00+00:00"}
    live = item()
    assert as_read(shown) is shown and as_read(live) is live  # a tombstone, or a live item, as it is
    edit = {"kind": "memory.update", "payload": {"patch": {"content": LONG, "validation": "retracted"}, "note": LONG}}
    history = ([{"snapshot": msgspec.to_builtins(rejected)}],
               [{"action": "retract", "actor": "lena", "details": {"fields": ["content"]}}], [edit])
    assert history_as_read(rejected, *history) == ([], [{"action": "retract", "actor": "lena"}], [
        {"kind": "memory.update", "payload": {"patch": {"content": None, "validation": "retracted"}}}])
    assert history_as_read(live, *history) == history


def _review_history(final: MemoryItem) -> tuple[list[dict], list[dict]]:
    """An item created by lena, an edit by omar held beside it, approved by priya with a note."""
    created = msgspec.to_builtins(item())
    held = {**created, "metadata": {HELD_EDIT: {"patch": {"content": "45 seconds"}, "by": "omar",
                                                "rule_ids": ["soft.contradiction"]}}}
    approved = {**msgspec.to_builtins(final), "metadata": {"review": {
        "decision": "approve", "by": "priya", "edit_by": "omar", "note": "agreed with the platform team"}}}
    revisions = [{"snapshot": snap, "reason": reason} for snap, reason in
                 ((created, "create"), (held, "update"), (approved, "review_approve"))]
    events = [{"action": action, "actor": actor, "inbox_seq": seq, "at": f"2026-11-2{seq}T10:00:00+00:00",
               "details": {}} for action, actor, seq in
              (("create", "lena", 1), ("update", "omar", 2), ("update", None, 3), ("update", "priya", 4))]
    return revisions[:2] + [{"snapshot": held, "reason": "promote_type"}] + revisions[2:], events


def test_a_held_edit_and_its_review_read_as_who_decided_whose_change_and_why() -> None:
    final = msgspec.structs.replace(item(), content="45 seconds", validation="verified")
    revisions, events = _review_history(final)
    notes = [row["note"] for row in history_rows({"revisions": revisions, "events": events})]
    assert notes[1] == "held for review (soft.contradiction): content -> '45 seconds'"
    assert notes[3].endswith("approved by priya (the edit by omar): 'agreed with the platform team'"), notes[3]
    assert "metadata" not in notes[1] + notes[3]  # no JSON blob of the hold or the review


def test_a_change_log_leaves_the_pipeline_out_and_a_forgotten_items_words_out() -> None:
    final = msgspec.structs.replace(item(), content="45 seconds", validation="verified")
    revisions, events = _review_history(final)
    log = change_log(final, revisions, events)
    assert [(e["by"], e["content"]) for e in log] == [("lena", LONG), ("omar", LONG), ("priya", "45 seconds")]
    assert "agreed with the platform team" in log[2]["change"]
    forgotten = msgspec.structs.replace(final, validation="retracted")
    withheld = change_log(forgotten, revisions, events)
    assert [sorted(e) for e in withheld] == [["action", "at", "by", "seq"]] * 3
    assert "45 seconds" not in str(withheld) and "platform" not in str(withheld)
    assert change_log(forgotten, revisions, events, whole=True) == log  # a full backup keeps it all


def test_a_replaced_claim_edited_since_it_was_written_is_dated_by_its_last_words() -> None:
    """Replaced as it last read ("45 seconds", omar's edit approved by priya), it was stated by
    omar on the day of the approval, not by lena when she first wrote another value; a
    later edit by someone else is theirs, the approval's `edit_by` kept in its metadata
    notwithstanding."""
    final = msgspec.structs.replace(item(), id="m1", content="45 seconds", validation="verified")
    revisions, events = _review_history(final)
    newest = msgspec.structs.replace(item(), id="m2", content="60 seconds", links=[Link(rel="supersedes", to="m1")])
    (earlier,) = earlier_versions(newest, {"m1": final}.get, lambda i: events, [], lambda i: revisions)
    assert (earlier["by"], earlier["at"][:10]) == ("omar", "2026-11-24"), earlier
    (first_only,) = earlier_versions(newest, {"m1": final}.get, lambda i: events, [])
    assert first_only["by"] == "lena"  # without the revisions: its first change, as before
    later = {**revisions[-1]["snapshot"], "content": "50 seconds"}
    (edited,) = earlier_versions(newest, {"m1": final}.get, lambda i: [*events, {
        "action": "update", "actor": "lena", "inbox_seq": 5, "at": "2026-11-25T10:00:00+00:00", "details": {}}],
        [], lambda i: [*revisions, {"snapshot": later, "reason": "update"}])
    assert (edited["by"], edited["at"][:10]) == ("lena", "2026-11-25")
