"""`online.balance`: the workers of `loci serve --workers N` keep their clients spread."""

from __future__ import annotations

from pathlib import Path

from online.balance import WINDOW_S, WorkerBalance, create_balance_file


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_worker_asks_a_client_to_move_only_while_it_holds_two_more_than_another(tmp_path: Path) -> None:
    path, clock = create_balance_file(tmp_path), Clock()
    a = WorkerBalance(path, heartbeat=False, clock=clock, pid=101)
    b = WorkerBalance(path, heartbeat=False, clock=clock, pid=102)
    assert (a.slot, b.slot) == (0, 1)
    assert not a.served(("127.0.0.1", 5001))  # one client: nowhere better to go
    assert a.served(("127.0.0.1", 5002))  # two against none: the second moves
    assert not a.served(("127.0.0.1", 5001))  # it is not counted while it reconnects
    assert not b.served(("127.0.0.1", 5003))
    assert not a.served(("127.0.0.1", 5004))  # two against one
    assert a.served(("127.0.0.1", 5005))  # three against one
    assert a.others(clock.now) == [1] and b.others(clock.now) == [2]

    clock.now += 3 * WINDOW_S + 1  # b stopped beating: a worker gone, not an idle one
    assert not a.served(("127.0.0.1", 5001)) and not a.served(("127.0.0.1", 5006))
    assert a.others(clock.now) == []
    c = WorkerBalance(path, heartbeat=False, clock=clock, pid=103)
    assert c.slot == 1  # a new worker takes the gone one's slot
    for x in (a, b, c):
        x.close()
