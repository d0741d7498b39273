"""A curated claim its author said otherwise of in a later turn no memory was kept of
(`episodic.said_later_otherwise`), and how the block and the catalog mark it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import msgspec
import pytest

from pipelines.materialize import message_item_id
from pipelines.recall.episodic import said_later_otherwise
from pipelines.recall.render import SAID_LATER_NOTE, Entry, catalog_entry, estimate_tokens, format_entry, pack_injection
from pipelines.records import MemoryItem, Provenance, Scope

NOW = datetime(2026, 11, 29, 12, tzinfo=timezone.utc)
SWIM = "Leo's swimming lessons are on Thursdays at 5pm."


def at(days: float) -> str:
    return (NOW - timedelta(days=days)).isoformat()


def claim(content: str = SWIM, days: float = 9, user: str = "maya", id_: str = "mem_swim", **more) -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type="fact", title="Swim schedule", content=content,
                      scope=Scope(kind="project", user_id=user, project_id="home"),
                      provenance=Provenance(source_kind="chat", source_id=f"turn_{id_}", created_at=at(days)),
                      created_at=at(days), updated_at=at(days), **more)


def turn(text: str, days: float = 2, user: str = "maya", role: str = "user", id_: str = "msg_later",
         speaker: str | None = None) -> MemoryItem:
    return MemoryItem(id=id_, tier="stm", type="message", title=speaker or role, content=text,
                      scope=Scope(kind="user", user_id=user, project_id="home"),
                      provenance=Provenance(source_kind="chat", source_id=id_, created_at=at(days)),
                      valid_from=at(days), created_at=at(days), metadata={"role": role})


@pytest.mark.parametrize(("text", "marked"), [
    ("Actually swim is back to Tuesdays at 5pm.", True),
    ("Swim moved to Tuesdays.", True),
    ("Leo's swimming lessons are on Tuesdays at 5pm from now on.", True),
    ("Is swim still on Thursdays?", False),  # asks, says nothing
    ("Is swim back to Tuesdays?", False),
    ("Swim was great today, Leo loved it.", False),  # no other value
    ("Leo has football on Tuesdays now.", False),  # another thing, on another day
    ("Swim is on Thursdays at 5pm, see you there.", False),  # says the same
    ("Swim is at 6pm now.", True),
    ("Leo stopped swimming lessons.", True),  # an ending
    ("This week swim is on Friday instead.", False),  # one occasion, beside the habit
    ("No swim this Thursday, Leo is sick.", False),
    ("Actually Leo's piano lessons are on Tuesdays.", False),  # the words of another thing
    ("Leo's swim teacher is now Ana.", False),
    # the subject in other words: a word of the title its content repeats ("swim"), values of one sort
    ("Actually his swim class is on Tuesdays now.", True),
    ("The swim class is at 6pm now.", True),
    ("Swimming moved to Tuesdays.", True),
    ("Actually Leo's piano class is on Tuesdays now.", False),
    ("Swim gear is in the blue bag now.", False),
])
def test_what_a_later_turn_of_its_author_says(text: str, marked: bool) -> None:
    later = turn(text)
    assert said_later_otherwise([claim()], [later]) == ({"mem_swim": [later]} if marked else {})


def test_only_its_author_or_approver_later_in_their_own_voice() -> None:
    back = "Actually swim is back to Tuesdays at 5pm."
    assert said_later_otherwise([claim()], [turn(back, days=12)]) == {}  # before the claim was stored
    assert said_later_otherwise([claim()], [turn(back, role="assistant")]) == {}  # the model's guess
    assert said_later_otherwise([claim()], [turn(back, user="tom")]) == {}  # another member
    assert said_later_otherwise([claim()], [turn(back, speaker="Sam")]) == {}  # an imported speaker
    forgotten = msgspec.structs.replace(turn(back), validation="retracted")
    assert said_later_otherwise([claim()], [forgotten]) == {}  # forgotten: never quoted
    approved = claim(metadata={"review": {"decision": "approve", "by": "tom", "at": at(8)}})
    tom = turn(back, user="tom")
    assert said_later_otherwise([approved], [tom]) == {"mem_swim": [tom]}


def test_a_turn_kept_as_memory_marks_nothing() -> None:
    back = turn("Actually swim is back to Tuesdays at 5pm.", id_=message_item_id("turn_mem_new"))
    kept = claim("Leo's swimming lessons are back on Tuesdays at 5pm.", days=2, id_="mem_new")
    # the turn the newer claim was said in (its evidence), among the claims or the pool
    assert said_later_otherwise([claim()], [back], [kept]) == {}
    assert said_later_otherwise([claim(), kept], [back]) == {}
    # a turn restating a claim stored after it: that claim is the change, kept
    other = turn("Actually swim is back to Tuesdays at 5pm.", days=2.5)
    assert said_later_otherwise([claim()], [other], [kept]) == {}
    assert said_later_otherwise([], [other]) == {} and said_later_otherwise([claim()], []) == {}


def test_the_block_and_the_catalog_mark_it() -> None:
    later = [turn("Actually swim is back to Tuesdays at 5pm.")]
    text = format_entry(claim(), said_later=later, now=NOW)
    header, _, body = text.partition("\n")
    assert header.endswith(" | SAID_LATER=msg_later]"), header
    assert ('(Said otherwise later, on 2026-11-27, by the user: "Actually swim is back to Tuesdays at 5pm." '
            "- not yet confirmed.)") in body
    block, keys = pack_injection([Entry("mem_swim", text)], 1000)
    assert keys == ["mem_swim"] and SAID_LATER_NOTE in block
    # the packing's counted size holds the note: a budget of exactly the block fits it
    assert pack_injection([Entry("mem_swim", text)], estimate_tokens(block))[1] == ["mem_swim"]
    assert SAID_LATER_NOTE not in pack_injection([Entry("mem_swim", format_entry(claim(), now=NOW))], 1000)[0]
    entry = catalog_entry(claim(), 0.5, said_later=later, now=NOW)
    assert entry["said_later"]["turns"] == ["msg_later"] and "not yet confirmed" in entry["said_later"]["note"]
    assert "said_later" not in catalog_entry(claim(), 0.5, now=NOW)
