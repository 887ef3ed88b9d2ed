"""Who broke the world, named alone: a silent rank is named only once its heartbeat stopped (a live rank still inside
the collective is never named), rank 0's own death is named by the lowest survivor, and a signal is no culprit."""

import signal

import pytest

from xferbench.measure.distributed import faults
from xferbench.measure.distributed.faults import INTERRUPTED, Interrupted, alive_key, catch_signals, who_broke
from xferbench.measure.distributed.watch import WRITTEN, beat_key

NODES = ["node0", "node0", "node1", "node1"]
CASE = "all_gather-256KiB-float32-gloo-x4"


class Store:
    """The rendezvous store as torchrun's agent holds it, on a fake clock: a live rank's heartbeat moves with the
    clock, a dead one's stands still; ``answers`` are set at the time given."""

    def __init__(self, now: list[float], dead: set[int], answers: dict[int, tuple[float, str]]) -> None:
        self.now, self.dead, self.answers = now, dead, answers
        self.data: dict[str, bytes] = {}

    def _due(self) -> None:
        for rank, (at, said) in self.answers.items():
            if self.now[0] >= at:
                self.data.setdefault(alive_key(CASE, rank), said.encode())

    def set(self, key: str, value: str) -> None:
        self.data[key] = value.encode()

    def check(self, keys: list[str]) -> bool:
        self._due()
        return all(k in self.data for k in keys)

    def get(self, key: str) -> bytes:
        self._due()
        return self.data[key]

    def add(self, key: str, amount: int) -> int:
        rank = int(key.rsplit("/", 1)[1])
        assert key == beat_key(rank) and amount == 0
        return 7 if rank in self.dead else int(self.now[0])  # beats once a second while alive

    def wait(self, keys: list[str], timeout) -> None:
        assert keys == [WRITTEN]


@pytest.fixture
def now(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(faults.time, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    return clock


def broke(now, rank, dead, answers, timeout_s=30.0, error="Connection closed by peer"):
    store = Store(now, dead, answers)
    line = who_broke(store, rank, 4, NODES, CASE, RuntimeError(error) if isinstance(error, str) else error,
                     timeout_s, clock=lambda: now[0])
    return line, now[0]


def test_a_killed_rank_is_named_alone_while_a_live_one_is_still_inside_the_call(now):
    """kill -9 of rank 3: rank 2 answers at once, rank 1 (node0, healthy) only after 12 s, still beating meanwhile;
    the old 4 s wait named it too. Named: rank 3 alone, as soon as its heartbeat has been still for 3 beats."""
    line, took = broke(now, 0, {3}, {2: (0.0, "Connection reset by peer"), 1: (12.0, "Connection closed")})
    assert line is not None and line.startswith(f"rank 3 on node1 stopped answering during {CASE} (rank 0 saw: ")
    assert "rank 1" not in line.split(" (")[0]
    assert "rank(s) 1 still alive inside the collective" in line
    assert 3.0 <= took < 4.0  # bounded by the heartbeat, not by the process group's timeout


def test_a_live_rank_that_never_answers_is_not_named(now):
    line, took = broke(now, 0, set(), {1: (0.0, "x"), 2: (0.0, "y")}, timeout_s=20.0)
    assert line is not None and line.startswith(f"the world broke during {CASE}; rank(s) 3 still alive")
    assert took == pytest.approx(20.0, abs=0.2)  # the deadline, not for ever


def test_an_interrupted_rank_is_no_culprit(now):
    """torchrun ends node1's ranks with SIGTERM once rank 3 died: rank 2 was interrupted, rank 3 is the one."""
    line, _ = broke(now, 0, {3}, {1: (0.0, "x"), 2: (0.5, INTERRUPTED)})
    assert line is not None and line.startswith("rank 3 on node1 stopped answering")


def test_rank_0_killed_is_named_by_the_lowest_survivor(now):
    """rank 0 is kill -9ed; rank 1 was ended by its node's torchrun (interrupted); rank 2 is the lowest rank that
    answered on its own, so it names rank 0 and says the journal keeps what finished; rank 3 says nothing."""
    answers = {1: (0.0, INTERRUPTED), 2: (0.0, "Connection closed"), 3: (0.0, "Connection closed")}
    line, _ = broke(now, 2, {0}, answers)
    assert line is not None and line.startswith(f"rank 0 on node0 stopped answering during {CASE} (rank 2 saw:")
    assert line.endswith("rank 0 wrote no JSON: its journal beside --out keeps the cases that finished")
    now[0] = 0.0
    assert broke(now, 3, {0}, answers)[0] is None


def test_a_rank_other_than_0_waits_for_rank_0_to_write(now):
    assert broke(now, 2, {3}, {0: (1.0, "x")})[0] is None


def test_a_signal_raises_once_and_the_second_is_ignored():
    before = {name: signal.getsignal(name) for name in (signal.SIGINT, signal.SIGTERM)}
    try:
        catch_signals()
        with pytest.raises(Interrupted) as stop:
            signal.raise_signal(signal.SIGTERM)
        assert stop.value.exit_status == 143 and str(stop.value) == "SIGTERM"
        signal.raise_signal(signal.SIGINT)  # ignored now: rank 0 is writing what finished
    finally:
        for name, handler in before.items():
            signal.signal(name, handler)
