"""A held forget whose round's turns cannot be linked to it says so (`MemoryCalls.link_held`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from online.proxy.tool_calls import MemoryCalls
from online.tools import ToolError
from pipelines.records import Identity


class _DecidedMeanwhile:
    """A dispatcher whose memory.forget refuses: the held forget was decided meanwhile."""

    def dispatch(self, action: str, args: dict[str, Any], identity: Identity) -> dict[str, Any]:
        raise ToolError(404, f"memory.forget: no item {args['id']!r} visible to you")


def test_a_round_not_linked_to_its_held_forget_is_named_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Broken: the refusal was filed among the model's ignored tool calls (its forget ran,
    and was held) and logged nowhere, so an approval leaving the round's turns recallable
    went unnoticed."""
    calls = MemoryCalls(None, Identity(user_id="jon"), tz=None, own_words=False,  # type: ignore[arg-type]
                        offers_changes=True)
    calls.tools = _DecidedMeanwhile()  # type: ignore[assignment]
    calls.held.append("mem_offsite")
    with caplog.at_level(logging.WARNING, logger="loci.proxy"):
        calls.link_held(["turn_ask", "turn_ack"])
    assert calls.ignored_calls == []
    (unlinked,) = calls.unlinked
    assert "mem_offsite" in unlinked and "turn_ask" in unlinked and "no item 'mem_offsite'" in unlinked, unlinked
    assert any("mem_offsite" in r.getMessage() and "not linked" in r.getMessage() for r in caplog.records)
