"""Proposal parsing: the three forms, stripping from the visible text, malformed input,
and the streaming filter (a block split at every possible point)."""

from __future__ import annotations

import json

import pytest

from pipelines.proposals import ProposalStreamFilter, coerce_item, parse_assistant_output


def stream(text: str, chunks: list[str]) -> tuple[str, object]:
    f = ProposalStreamFilter()
    shown = "".join(f.feed(c) for c in chunks)
    rest, parsed = f.finish()
    return shown + rest, parsed


# ---------------------------------------------------------------------- json block


def test_json_block_list_is_parsed_and_stripped():
    text = (
        "DuckDB is the warehouse.\n\n<MEMORY_PROPOSALS_JSON>\n"
        '[{"type": "decision", "title": "Warehouse", "content": "Use DuckDB", "tags": ["db"],'
        ' "why_store": "architecture choice", "importance": 8}]\n'
        "</MEMORY_PROPOSALS_JSON>"
    )
    out = parse_assistant_output(text)
    assert out.visible_text == "DuckDB is the warehouse."
    assert [p.form for p in out.proposals] == ["json_block"]
    item = out.proposals[0].item
    assert (item.type, item.title, item.content, item.tags, item.importance) == (
        "decision",
        "Warehouse",
        "Use DuckDB",
        ["db"],
        8,
    )
    assert out.errors == []


def test_json_block_items_object_several_blocks_and_text_between():
    text = (
        'First. <MEMORY_PROPOSALS_JSON>{"items": [{"title": "A", "content": "alpha"}]}'
        "</MEMORY_PROPOSALS_JSON> Middle text.\n<memory_proposals_json>```json\n"
        '[{"title": "B", "content": "beta"}]\n```</MEMORY_PROPOSALS_JSON>\nLast.'
    )
    out = parse_assistant_output(text)
    assert [p.item.content for p in out.proposals] == ["alpha", "beta"]
    assert out.visible_text == "First. Middle text.\nLast."


def test_unterminated_block_is_stripped_to_end_and_reported():
    out = parse_assistant_output('Answer.\n<MEMORY_PROPOSALS_JSON>[{"title": "x", "content": ')
    assert out.visible_text == "Answer."
    assert out.proposals == []
    assert any("unterminated" in e.message for e in out.errors)
    assert all(e.form == "json_block" for e in out.errors)


def test_invalid_json_in_block_is_an_error_not_an_exception():
    out = parse_assistant_output("Hi <MEMORY_PROPOSALS_JSON>{not json at all]</MEMORY_PROPOSALS_JSON> there")
    assert out.visible_text == "Hi there"
    assert out.proposals == []
    assert len(out.errors) == 1 and "invalid JSON" in out.errors[0].message


def test_lenient_json_trailing_comma_and_python_literals():
    out = parse_assistant_output(
        "<MEMORY_PROPOSALS_JSON>[{'title': 'T', 'content': 'C', 'tags': ['x',],},]</MEMORY_PROPOSALS_JSON>"
    )
    assert [(p.item.title, p.item.tags) for p in out.proposals] == [("T", ["x"])]


def test_stray_closing_tag_removed_and_reported():
    out = parse_assistant_output("Done.</MEMORY_PROPOSALS_JSON>")
    assert out.visible_text == "Done."
    assert out.errors and "without an opening" in out.errors[0].message


# ---------------------------------------------------------------------- tool calls


def test_tool_calls_openai_ollama_and_seed_shapes():
    calls = [
        {"function": {"name": "memory.propose", "arguments": json.dumps({"items": [{"title": "a", "content": "A"}]})}},
        {"function": {"name": "memory.propose", "arguments": {"items": [{"title": "b", "content": "B"}]}}},
        {"name": "memory.propose", "arguments": {"items": [{"topic": "c", "text": "C"}]}},
        {"action": "memory.propose", "items": [{"title": "d", "content": "D"}]},
        {"function": {"name": "memory_save", "arguments": {"topic": "e", "content": "E", "importance": 9}}},
        {"function": {"name": "web.search", "arguments": "{}"}},
    ]
    out = parse_assistant_output("Visible answer.", tool_calls=calls)
    assert out.visible_text == "Visible answer."
    assert [p.item.content for p in out.proposals] == ["A", "B", "C", "D", "E"]
    assert {p.form for p in out.proposals} == {"tool_call"}
    assert out.proposals[2].item.title == "c"
    assert out.proposals[4].item.importance == 9
    assert out.errors == []


def test_tool_call_with_broken_arguments_is_reported():
    out = parse_assistant_output("", tool_calls=[{"function": {"name": "memory.propose", "arguments": "{oops"}}, 7])
    assert out.proposals == []
    assert len(out.errors) == 2
    assert {e.form for e in out.errors} == {"tool_call"}


def test_bare_tool_call_json_in_fence_is_stripped():
    text = (
        "Here you go.\n\n```json\n"
        '{"action": "memory.propose", "items": '
        '[{"type": "fact", "title": "Port", "content": "Service runs on 8765"}]}\n'
        "```\n\nAnything else?"
    )
    out = parse_assistant_output(text)
    assert out.visible_text == "Here you go.\n\nAnything else?"
    assert [(p.form, p.item.content) for p in out.proposals] == [("tool_call", "Service runs on 8765")]


def test_other_json_in_text_is_left_alone():
    text = 'Config:\n```json\n{"name": "loci", "port": 8765}\n```\nand {"items": 3} too.'
    out = parse_assistant_output(text)
    assert out.visible_text == text
    assert out.proposals == []


# ---------------------------------------------------------------------- narrated


@pytest.mark.parametrize(
    ("call", "title", "content"),
    [
        ("memory_save(topic='family', content='Lee has Monday off', importance=7)", "family", "Lee has Monday off"),
        (
            'memory_save(topic="pets", content="Alice\'s cat is called \\"Tom\\"")',
            "pets",
            'Alice\'s cat is called "Tom"',
        ),
        ("memory_save(topic='pets', content='Alice's cat is called \"Tom\"')", "pets", 'Alice\'s cat is called "Tom"'),
        ('memory_save(topic="notes", content="""line one\nline two""")', "notes", "line one\nline two"),
        (
            "memory_save(topic=security, content=prod API key rotates every 90 days, importance=9)",
            "security",
            "prod API key rotates every 90 days",
        ),
        ("memory_save('travel', 'Flight to Oslo on May 3', 6)", "travel", "Flight to Oslo on May 3"),
    ],
)
def test_narrated_forms(call, title, content):
    out = parse_assistant_output(f"Got it. {call} Anything else?")
    assert out.visible_text == "Got it. Anything else?"
    assert [(p.form, p.item.title, p.item.content) for p in out.proposals] == [("narrated", title, content)]


def test_narrated_keeps_tags_type_importance():
    out = parse_assistant_output(
        "memory_save(topic='t', content='c', importance='8', tags=['a', 'b'], type='preference')"
    )
    item = out.proposals[0].item
    assert (item.importance, item.tags, item.type, item.title) == (8, ["a", "b"], "preference", "t")
    assert out.visible_text == ""


@pytest.mark.parametrize(("call", "kind"), [
    ("memory_save(topic='user-preferences', content='Always answer in French.')", "preference"),
    ("memory_save(topic='Preferences', content='Keep answers short.')", "preference"),
    ("memory_save(topic='deploys', content='We deploy on Fridays.', type='decisions')", "decision"),
    ("memory_save(topic='deploys', content='We deploy on Fridays.')", "note"),
])
def test_an_untyped_item_filed_under_preferences_is_a_preference(call, kind):
    (proposal,) = parse_assistant_output(call).proposals
    assert proposal.item.type == kind


def test_mention_of_memory_save_is_not_a_proposal():
    text = "Call memory_save(topic, content) to store a fact; agent.memory_save(x) is a method."
    out = parse_assistant_output(text)
    assert out.visible_text == text
    assert out.proposals == [] and out.errors == []


def test_narrated_without_content_is_stripped_and_reported():
    out = parse_assistant_output("Ok. memory_save(importance=3)")
    assert out.visible_text == "Ok."
    assert out.proposals == []
    assert "without content" in out.errors[0].message


def test_unterminated_narrated_call_on_last_line():
    out = parse_assistant_output("Ok.\nmemory_save(topic='x', content='unfinished")
    assert out.visible_text == "Ok."
    assert [p.item.content for p in out.proposals] == ["unfinished"]
    assert any("unterminated" in e.message for e in out.errors)


def test_inline_code_wrapper_is_removed_with_the_call():
    out = parse_assistant_output('Saved: `memory_save(content="x")`.')
    assert out.visible_text == "Saved:."
    assert out.proposals[0].item.content == "x"


def test_all_three_forms_together():
    text = (
        "The answer is 42.\n"
        "memory_save(topic='answer', content='It is 42')\n"
        '<MEMORY_PROPOSALS_JSON>[{"title": "q", "content": "question asked"}]</MEMORY_PROPOSALS_JSON>\n'
        '{"action": "memory.propose", "items": [{"content": "from json"}]}\n'
        "Bye."
    )
    out = parse_assistant_output(text, tool_calls=[{"name": "memory.propose", "arguments": {"items": ["from tool"]}}])
    assert out.visible_text == "The answer is 42.\nBye."
    assert [p.item.content for p in out.proposals] == ["from tool", "It is 42", "question asked", "from json"]
    assert [p.form for p in out.proposals] == ["tool_call", "narrated", "json_block", "tool_call"]


# ---------------------------------------------------------------------- visible text


def test_text_without_proposals_is_returned_byte_for_byte():
    text = "  Indented start\n\n\n```python\nx = {'a': 1}\n```\n  trailing spaces  \n"
    assert parse_assistant_output(text).visible_text == text


def test_whitespace_is_tidied_only_around_removals():
    text = "Para one.\n\n<MEMORY_PROPOSALS_JSON>[]</MEMORY_PROPOSALS_JSON>\n\n    indented code\nEnd."
    assert parse_assistant_output(text).visible_text == "Para one.\n\n    indented code\nEnd."


@pytest.mark.parametrize("bad", [None, 42, b"bytes"])
def test_non_string_text_gives_error_record(bad):
    out = parse_assistant_output(bad)  # type: ignore[arg-type]
    assert out.proposals == []
    if bad is None:
        assert out.visible_text == "" and out.errors == []
    else:
        assert out.errors and out.errors[0].form == "api"


# ---------------------------------------------------------------------- coercion


def test_coerce_item_lenient_types_and_reports():
    item, errors = coerce_item(
        {
            "topic": "T",
            "text": "body",
            "tags": "a, #b; a",
            "importance": "12",
            "confidence": "85%",
            "type": "weird",
            "unknown_key": 1,
            "provenance": "turn_7",
        },
        "json_block",
    )
    assert item is not None
    assert (item.title, item.content, item.tags, item.importance, item.confidence, item.type) == (
        "T",
        "body",
        ["a", "b"],
        10,
        0.85,
        "note",
    )
    assert item.provenance_hint == {"source_id": "turn_7"}
    assert any("unknown type" in e.message for e in errors)


@pytest.mark.parametrize("given, read", [
    ("85%", 0.85), ("85", 0.85), (85, 0.85), ("5%", 0.05),  # percentages
    (8, 0.8), ("5", 0.5), ("10", 1.0),  # a 1-10 scale, like importance
    (0.7, 0.7), ("1", 1.0), (250, 1.0), (-3, 0.0),  # a fraction; out of range is clipped
])
def test_coerce_item_reads_confidence_on_the_scale_it_was_written(given, read):
    item, errors = coerce_item({"content": "c", "confidence": given})
    assert item is not None and errors == []
    assert item.confidence == pytest.approx(read)


def test_coerce_item_tier_and_scope_are_validated():
    item, errors = coerce_item({"content": "c", "tier": "LTM", "scope": "User"})
    assert (item.tier, item.scope, errors) == ("ltm", "user", [])
    item, errors = coerce_item({"content": "c", "tier": "forever", "scope": 3})
    assert (item.tier, item.scope) == (None, None)
    assert [e.message.split()[1] for e in errors] == ["tier", "scope"]


def test_coerce_item_rejects_unusable():
    assert coerce_item(3)[0] is None
    assert coerce_item({"tags": ["x"]})[0] is None
    item, errors = coerce_item({"content": "c", "importance": "high", "confidence": "nan"})
    assert item is not None and item.importance is None and item.confidence is None
    assert len(errors) == 2


# ---------------------------------------------------------------------- streaming

_STREAM_TEXT = (
    "Before the block.\n\n```json\n"
    '{"action": "memory.propose", "items": [{"title": "A", "content": "alpha"}]}\n'
    "```\n"
    'Middle <MEMORY_PROPOSALS_JSON>[{"title": "B", "content": "beta"}]</MEMORY_PROPOSALS_JSON> text. '
    "memory_save(topic='c', content='Alice's gamma') end."
)


def test_stream_every_split_point_matches_batch():
    batch = parse_assistant_output(_STREAM_TEXT)
    assert [p.item.content for p in batch.proposals] == ["alpha", "beta", "Alice's gamma"]
    for cut in range(len(_STREAM_TEXT) + 1):
        shown, parsed = stream(_STREAM_TEXT, [_STREAM_TEXT[:cut], _STREAM_TEXT[cut:]])
        assert shown == batch.visible_text, cut
        assert parsed.proposals == batch.proposals


def test_stream_char_by_char_never_shows_a_block():
    f = ProposalStreamFilter()
    shown = []
    for ch in _STREAM_TEXT:
        out = f.feed(ch)
        shown.append(out)
        sofar = "".join(shown)
        assert "MEMORY_PROPOSALS" not in sofar
        assert "memory_save" not in sofar
        assert "memory.propose" not in sofar
        assert "```" not in sofar
    rest, parsed = f.finish()
    assert "".join(shown) + rest == parse_assistant_output(_STREAM_TEXT).visible_text
    assert len(parsed.proposals) == 3


def test_stream_shows_plain_text_promptly():
    f = ProposalStreamFilter()
    assert f.feed("Hello there, ") == "Hello there,"
    assert f.feed("friend. <MEMO") == " friend."
    assert f.feed("RY_PROPOSALS_JSON>[]</MEMORY_PROPOSALS_JSON> bye") == " bye"
    rest, parsed = f.finish()
    assert rest == "" and parsed.visible_text == "Hello there, friend. bye"


def test_stream_unterminated_block_reported_at_finish():
    shown, parsed = stream("", ["Intro <MEMORY_PROPOSALS_JSON>[{", '"title": "x"'])
    assert shown == "Intro"
    assert any("unterminated" in e.message for e in parsed.errors)


def test_stream_finish_is_idempotent_and_feed_after_finish_is_ignored():
    f = ProposalStreamFilter()
    f.feed("abc")
    first = f.finish()
    assert f.finish()[1] == first[1]
    assert f.feed("more") == ""
