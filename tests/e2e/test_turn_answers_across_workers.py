"""An assistant turn posted to /v1/turns is judged with the user turn it answers, whichever
`loci serve` worker (or a restarted one) lands it: Iris says "the town is Greyhaven now, not
Ashford" to one worker, the assistant's proposal "The town is called Greyhaven" reaches
another. Broken before: the chat's latest user turn was kept in the worker's memory, so the
other worker judged the proposal without her words (it replaced nothing and Ashford stayed
current), or with an older turn of hers it had seen itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from litestar.testing import TestClient

from online.app import create_app
from pipelines.embedders import HashEmbedder
from tests.assets.support import make_settings
from tests.e2e.chat import turn

IRIS = {"user_id": "iris", "project_id": "saltmarsh", "session_id": "s4"}
SETTING = {"type": "fact", "title": "Setting", "content": "The story is set in the coastal town of Ashford."}
RENAMED = {"type": "fact", "title": "Town name", "content": "The town is called Greyhaven."}


def proposing(item: dict) -> str:
    return f"Noted.\n<MEMORY_PROPOSALS_JSON>[{json.dumps(item)}]</MEMORY_PROPOSALS_JSON>"


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[TestClient]]:
    """Two workers of one data directory (each its own service), started in turn."""
    settings = make_settings(tmp_path)
    with ExitStack() as stack:
        yield [stack.enter_context(TestClient(create_app(settings, embedder=HashEmbedder(settings.embedder_dim),
                                                         check_interval_ms=0)))
               for _ in range(2)]


def test_the_proposal_is_judged_with_the_turn_it_answers_on_another_worker(workers: list[TestClient]) -> None:
    first, second = workers
    turn(second, IRIS, "user", "My novel is set in the coastal town of Ashford.")  # the second saw this one
    (setting,) = turn(first, IRIS, "assistant", proposing(SETTING))["proposals"]
    turn(first, IRIS, "user", "Change of plan: the town is Greyhaven now, not Ashford.")
    (renamed,) = turn(second, IRIS, "assistant", proposing(RENAMED))["proposals"]
    assert renamed["action"] == "accept" and renamed["supersedes"] == [setting["item_id"]], renamed
