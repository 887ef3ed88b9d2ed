"""How each rank times a case: its rounds, and its time inside each call (the clock that names a late rank).

Every rank times every round itself; after each round the ranks exchange their times (outside the
timed region). Inside the round, each call is timed too, on the clock that shows who waited for whom:
the host's on gloo (a call returns when it is done), CUDA events on a GPU, and on nccl the collective's
own time on the rank's NCCL stream, which torch records when TORCH_NCCL_ENABLE_TIMING is set (``join``
sets it): a rank that launches late, whether before its call or inside it (a slow Python-side launch),
runs the shortest kernel, since its peers' kernels were already waiting for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

__all__ = ["ENABLE_TIMING_ENV", "CallTimer", "CudaCallTimer", "NcclCallTimer", "timed_rounds"]

#: torch's switch for timing each NCCL work on NCCL's own stream (read when the process group is made).
ENABLE_TIMING_ENV = "TORCH_NCCL_ENABLE_TIMING"


class CallTimer:
    """This rank's time inside its calls, call by call, by the host's clock: a gloo call returns when it is done.

    The late rank's own call is the short one (the others wait for it inside the collective), so
    the time inside the calls names a rank late into every call of a round, where the round's
    time, the same on every rank, cannot; no clock shared between hosts is needed."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.inside = 0.0
        self.rounds: list[list[float]] = []  # each round's per-call time inside the calls, of every rank

    def around(self, call: Callable[[], object]) -> None:
        start = self.clock()
        call()
        self.inside += self.clock() - start

    def take(self) -> float:
        """Seconds inside the calls since the last take (after the round's sync)."""
        inside, self.inside = self.inside, 0.0
        return inside

    def per_rank(self) -> list[list[float]]:
        """[rank][round] per-call seconds inside the calls."""
        return [list(ranks) for ranks in zip(*self.rounds, strict=True)]


class CudaCallTimer(CallTimer):
    """The same on a GPU: a CUDA event pair on the rank's current stream around each call (the stream waits for
    NCCL's own, so the pair brackets the collective), read after the round's sync."""

    def __init__(self, cuda: Any) -> None:
        super().__init__()
        self.cuda = cuda
        self.pairs: list[tuple[Any, Any]] = []
        self.used = 0

    def around(self, call: Callable[[], object]) -> None:
        if self.used == len(self.pairs):  # made once per case, reused every round
            self.pairs.append((self.cuda.Event(enable_timing=True), self.cuda.Event(enable_timing=True)))
        start, end = self.pairs[self.used]
        self.used += 1
        start.record()
        call()
        end.record()

    def take(self) -> float:
        used, self.used = self.used, 0
        return sum(start.elapsed_time(end) for start, end in self.pairs[:used]) / 1e3


def timed_rounds(call: Callable[[], object], rounds: int, iterations: int, warmup: int,
                 gather: Callable[[float], list[float]], clock: Callable[[], float] = time.perf_counter,
                 sync: Callable[[], None] = lambda: None, progress: Callable[[], None] = lambda: None,
                 timer: CallTimer | None = None) -> list[list[float]]:
    """Every rank's per-call seconds of every round, as ``[rank][round]``.

    Each rank reads its own clock around ``iterations`` calls and one ``sync`` of its device;
    ``gather`` then shares the figure with every rank, outside the timed region, and doubles
    as the line-up of the ranks before the next round. So a rank's time is its time inside
    the calls, its wait for late peers included: a rank that arrives late waits least.
    ``progress`` is told of each step (see watch.py). ``timer`` times each call too: after
    each round the ranks share its per-call time inside the calls (``timer.rounds``).
    """
    timer = timer or CallTimer()  # its own clock: a test's fake clock times the rounds alone
    for _ in range(warmup):
        call()
    sync()
    gather(0.0)  # line up before the first round
    progress()
    per_round = []
    for _ in range(rounds):
        start = clock()
        for _ in range(iterations):
            timer.around(call)
        sync()  # once a round, as nccl-tests does: K calls queue back to back on the device
        per_round.append(gather((clock() - start) / iterations))
        timer.rounds.append(gather(timer.take() / iterations))
        progress()
    return [list(ranks) for ranks in zip(*per_round, strict=True)]


class NcclCallTimer(CudaCallTimer):
    """On nccl: each call's collective as NCCL's stream ran it (the handle's ``_get_duration``, in ms, from the
    events torch records around the kernel on that stream). The event pair on the current stream cannot tell a
    rank slow inside its own call: its stream idles while its host sleeps, so the pair brackets the delay there
    and the wait for it elsewhere alike. A round where some call gave no such time falls back to the pair."""

    def __init__(self, cuda: Any) -> None:
        super().__init__(cuda)
        self.works: list[Any] = []

    def around(self, call: Callable[[], object]) -> None:
        works: list[object] = []
        super().around(lambda: works.append(call()))
        self.works.append(works[0])

    def take(self) -> float:
        works, self.works = self.works, []
        pairs = super().take()
        try:
            return sum(float(work._get_duration()) for work in works) / 1e3
        except Exception:  # no handle (None), timing off (torch raises RuntimeError), or an older torch
            return pairs
