"""Times said as words and numbers that say which one, over HTTP (a team's project notes).

Tom keeps "The team standup is at 10am."; Raj's "The team standup is at noon." under
another title is held as contradicting it (was: accepted, "noon" read as no time; so with
"midnight" against "2am"). "The 4.2 release ships on Friday." / "... on Monday." is one
release on two days: held (was: accepted, "the 4.2 release" read as a count of releases, so
"release" named nothing of the subject). "We ship 2 releases a month." beside "We ship
release notes with the 4.2 release." is accepted (was: held, a count of 2 releases against
"4.2 releases"); "the 4.3 release" is another release than "the 4.2 release": accepted.
"""

from __future__ import annotations

import pytest

TOM = {"user_id": "tom", "project_id": "atlas", "session_id": "t1", "org_id": "acme"}
RAJ = {"user_id": "raj", "project_id": "atlas", "session_id": "r1", "org_id": "acme"}


def propose(client, who: dict, title: str, content: str) -> dict:
    item = {"type": "decision", "title": title, "content": content, "why_store": "team", "confidence": 0.9,
            "scope": "project"}
    resp = client.post("/v1/tools", json={"action": "memory.propose", "args": {"items": [item]}, "identity": who})
    assert resp.status_code == 200, resp.text
    return resp.json()["result"]["proposals"][0]


@pytest.mark.parametrize(("tom", "raj", "held"), [
    (("Team standup", "The team standup is at 10am."), ("Standup time", "The team standup is at noon."), True),
    (("Nightly deploys", "Nightly deploys run at 2am."), ("Deploy window", "Nightly deploys run at midnight."), True),
    (("4.2 release", "The 4.2 release ships on Friday."), ("Release date", "The 4.2 release ships on Monday."), True),
    (("4.2 release", "The 4.2 release ships on Friday."), ("Next release", "The 4.3 release ships on Monday."), False),
    (("Release cadence", "We ship 2 releases a month."),
     ("Release notes", "We ship release notes with the 4.2 release."), False),
])
def test_a_teammates_note_is_held_only_when_it_says_otherwise(service, tom, raj, held: bool) -> None:
    client, _ = service
    first = propose(client, TOM, *tom)
    assert first["action"] == "accept", first
    second = propose(client, RAJ, *raj)
    if held:
        assert second["action"] == "quarantine" and first["item_id"] in " ".join(second["reasons"]), second
    else:
        assert second["action"] == "accept", second
