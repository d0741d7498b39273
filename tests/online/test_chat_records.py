"""The chat records' slot count (`online.chat_records.filled`): whatever this process saw last
(none, too few, too many: another process wrote since), the inbox's count is read, and a
retried user turn adds no record."""

from __future__ import annotations

import random
from pathlib import Path

from online import chat_records
from online.state import MemoryService
from pipelines.records import Identity
from pipelines.settings import Settings


def test_the_latest_user_turn_is_counted_right_from_any_stale_start(tmp_path: Path) -> None:
    svc = MemoryService(Settings(embedder="hash", data_dir=str(tmp_path)), check_interval_ms=0)
    who, rng = Identity(user_id="lea", session_id="s1"), random.Random(7)
    place = ("asked", who.user_id, who.project_id, who.session_id)
    try:
        for n in range(1, 50):
            chat_records.record_asked(svc, who, f"turn-{n}")
            chat_records._SEEN[place] = rng.choice([0, n - 1, n, n + 1, rng.randint(0, 200)])
            assert chat_records.filled(svc, *place) == n
            assert chat_records.last_asked(svc, who) == f"turn-{n}"
        chat_records.record_asked(svc, who, "turn-49")  # a retry
        assert chat_records.filled(svc, *place) == 49
    finally:
        svc.close()
