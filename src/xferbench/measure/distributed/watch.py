"""Each rank's host-side deadline and its heartbeat in the rendezvous store: a hung world still says who and writes.

NCCL raises nothing when a peer dies or hangs: the host waits in ``torch.cuda.synchronize``
(or a ``.cpu()``) until NCCL's watchdog ends the process at the process group's timeout, and no
Python code of that rank runs again. So a thread of every rank beats in the store (a counter,
every BEAT_S) and publishes how many steps of the run it has made (a case begun, a round
timed: the same steps on every rank). When a rank makes no step for its case's deadline,
which is shorter than the process group's timeout by WATCHDOG_MARGIN_S, rank 0 tells the
ranks that stopped beating (dead, or frozen whole) from those that beat on but fell behind
(stuck before the collective the others wait in), writes the JSON of the cases that finished
and exits; every other rank waits for that before it exits, because torchrun ends all the
ranks of a node when one of them exits.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["BEAT_S", "STALE_BEATS", "WATCHDOG_MARGIN_S", "WRITTEN", "Watch", "beat_key", "culprits"]

#: How often each rank beats in the store.
BEAT_S = 1.0
#: Beats missed before rank 0 counts a rank as dead (a busy 2-core host may delay one or two).
STALE_BEATS = 3
#: The process group's timeout (NCCL's watchdog) exceeds the host-side deadline by this much: rank 0's time to
#: read the beats, name the ranks and write the JSON before any watchdog acts.
WATCHDOG_MARGIN_S = 30.0
#: The store key rank 0 sets once it has written the JSON of a broken world.
WRITTEN = "xferbench/written"


def beat_key(rank: int) -> str:
    return f"xferbench/beat/{rank}"


def _step_key(rank: int) -> str:
    return f"xferbench/step/{rank}"


def culprits(before: Sequence[int], after: Sequence[int], steps: Sequence[int | None]) -> tuple[str, list[int]]:
    """Which ranks the world waits for, from every rank's beat count read twice STALE_BEATS apart and its steps.

    ``("dead", ranks)``: their beat stopped; ``("behind", ranks)``: they beat on but made fewer steps than the
    furthest rank (the others wait for them inside a collective); ``("stuck", [])``: every rank beats and all
    are at the same step, inside one collective that does not end (a network or GPU hang)."""
    if dead := [r for r, (b, a) in enumerate(zip(before, after, strict=True)) if a <= b]:
        return "dead", dead
    furthest = max((s for s in steps if s is not None), default=0)
    behind = [r for r, s in enumerate(steps) if s is not None and s < furthest]
    return ("behind", behind) if behind else ("stuck", [])


class Watch:
    """This rank's heartbeat and deadline; ``give_up(watch, line)`` runs on the watch's thread when a step overran
    (rank 0: the line names the ranks the world waits for) and is expected not to return (it exits)."""

    def __init__(self, store: Any, rank: int, world_size: int, nodes: Sequence[str],
                 give_up: Callable[[Watch, str], None], clock: Callable[[], float] = time.monotonic,
                 beat_s: float = BEAT_S) -> None:
        self.store, self.rank, self.world_size, self.nodes = store, rank, world_size, list(nodes)
        self.give_up, self.clock, self.beat_s = give_up, clock, beat_s
        self.case = ""
        self.limit_s: float | None = None  # seconds one step may take; None between cases
        self.steps = 0
        self.last = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xferbench-watch", daemon=True)

    def start(self) -> Watch:
        self._publish()
        self._thread.start()
        return self

    def begin(self, case: str, limit_s: float) -> None:
        """A case begins: each of its steps may take ``limit_s``."""
        with self._lock:
            self.case, self.limit_s = case, limit_s
        self.step()

    def step(self) -> None:
        with self._lock:
            self.steps += 1
            self.last = self.clock()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10 * self.beat_s)

    def overran(self) -> bool:
        with self._lock:
            return self.limit_s is not None and self.clock() - self.last > self.limit_s

    def _publish(self) -> None:
        with contextlib.suppress(Exception):  # a store gone (rank 0's host lost) must not end this rank's thread
            self.store.add(beat_key(self.rank), 1)
            self.store.set(_step_key(self.rank), str(self.steps))

    def _run(self) -> None:
        while not self._stop.wait(self.beat_s):
            self._publish()
            if self.overran():
                self.give_up(self, self.verdict() if self.rank == 0 else self.own_line())
                return

    def own_line(self) -> str:
        return (f"rank {self.rank} on {self.nodes[self.rank]}: no progress during {self.case} for {self.limit_s:.0f} s "
                "(a peer died or hung; rank 0 names it)")

    def verdict(self) -> str:
        """One line naming the ranks the world waits for (rank 0, once its deadline passed)."""
        before = self._read(lambda r: int(self.store.add(beat_key(r), 0)))
        time.sleep(STALE_BEATS * self.beat_s)
        after = self._read(lambda r: int(self.store.add(beat_key(r), 0)))
        steps = self._read(lambda r: int(self.store.get(_step_key(r))) if self.store.check([_step_key(r)]) else None)
        before_n = [b if b is not None else 0 for b in before]
        after_n = [a if a is not None else 0 for a in after]
        after_n[self.rank] = before_n[self.rank] + 1  # this thread beats no more while it reads: this rank lives
        kind, ranks = culprits(before_n, after_n, steps)
        named = ", ".join(f"rank {r} on {self.nodes[r]}" for r in ranks)
        if kind == "dead":
            return f"{named} stopped answering during {self.case} (no heartbeat for {STALE_BEATS * self.beat_s:.0f} s)"
        if kind == "behind":
            return (f"{named} stopped making progress during {self.case} (alive, but the other ranks waited "
                    f"{self.limit_s:.0f} s for it in the collective)")
        return (f"every rank is alive and waiting inside {self.case}: the collective made no progress for "
                f"{self.limit_s:.0f} s (a network or GPU hang)")

    def _read(self, read: Callable[[int], int | None]) -> list[int | None]:
        out: list[int | None] = []
        for rank in range(self.world_size):
            try:
                out.append(read(rank))
            except Exception:  # a key never written or the store unreachable: unknown
                out.append(None)
        return out

    def wait_written(self, seconds: float) -> bool:
        """Whether rank 0 said it wrote the JSON within ``seconds``; this rank beats on meanwhile, so that
        rank 0 does not take it for dead."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                if self.store.check([WRITTEN]):
                    return True
            except Exception:  # the store is gone with its host (rank 0's, or torchrun's agent): none will write
                return False
            if time.monotonic() >= deadline:
                return False
            self._publish()
            time.sleep(min(self.beat_s, max(0.0, deadline - time.monotonic())))
