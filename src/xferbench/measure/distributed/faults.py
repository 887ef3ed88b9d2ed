"""When the world breaks under torchrun: who stopped answering (and only they), and a signal that ends the run.

A rank that sees a collective fail says so in the rendezvous store (which outlives a dead worker: torchrun's
agent holds it). A rank that said nothing is not yet dead: it may still be inside the collective, waiting for
its own error (gloo raises it only at the process group's timeout on some paths). So a silent rank is named
only once its heartbeat (watch.py) stopped too; one that beats on gets until a deadline to say why. Rank 0
names the culprits, or, when rank 0 itself died, the lowest rank that answered does (rank 0's journal keeps
the cases that finished, and that rank says so).

SIGINT and SIGTERM (Ctrl-C, a job's time limit, torchrun ending a node's ranks) become ``Interrupted``, which
the run catches: rank 0 writes the cases that finished, no rank prints a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import signal
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from ...units import first_line
from .watch import BEAT_S, STALE_BEATS, WRITTEN, beat_key

__all__ = ["INTERRUPTED", "Interrupted", "alive_key", "catch_signals", "dead_ranks", "who_broke"]

#: What an interrupted rank leaves as its answer: it was ended from outside, it is no culprit.
INTERRUPTED = "interrupted"


class Interrupted(BaseException):  # BaseException: no ``except Exception`` of the run swallows it
    """SIGINT or SIGTERM reached this rank."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        return 128 + self.signum  # the shell's convention for a process ended by a signal


def catch_signals() -> None:
    """SIGINT and SIGTERM raise Interrupted once, in the main thread; a second one is ignored, so that rank 0
    finishes writing what it has (torchrun kills a rank that takes more than its shutdown timeout anyway)."""
    def handler(signum: int, frame: FrameType | None) -> None:
        for name in (signal.SIGINT, signal.SIGTERM):
            signal.signal(name, signal.SIG_IGN)
        raise Interrupted(signum)

    for name in (signal.SIGINT, signal.SIGTERM):
        signal.signal(name, handler)


def alive_key(case: str, rank: int) -> str:
    return f"xferbench/alive/{case}/{rank}"


def dead_ranks(beats: Callable[[int], int | None], ranks: Sequence[int], clock: Callable[[], float],
               seen: dict[int, tuple[int | None, float]]) -> list[int]:
    """Of ``ranks``, those whose heartbeat has not moved for STALE_BEATS beats, as far as ``seen`` (each rank's
    last beat count and when it moved, kept between calls) can tell yet."""
    now = clock()
    dead = []
    for rank in ranks:
        count = beats(rank)
        last, since = seen.get(rank, (None, now))
        if rank not in seen or count != last:
            seen[rank] = (count, now)
            since = now
        if now - since >= STALE_BEATS * BEAT_S:
            dead.append(rank)
    return dead


def who_broke(store: Any, rank: int, world_size: int, nodes: Sequence[str], case: str, error: BaseException | str,
              timeout_s: float, clock: Callable[[], float] = time.monotonic, poll_s: float = 0.1) -> str | None:
    """One line naming the ranks that stopped answering during ``case``, from the rank that names them (rank 0,
    or the lowest that answered when rank 0 is dead); None from the others, which leave once rank 0 wrote its
    JSON. Bounded: by ``timeout_s`` at most, by STALE_BEATS beats when the silent ranks are dead."""
    said = INTERRUPTED if isinstance(error, Interrupted) else first_line(error) if isinstance(error, BaseException) else error
    with contextlib.suppress(Exception):
        store.set(alive_key(case, rank), said)
    answers, dead = _answers(store, rank, world_size, case, said, clock() + timeout_s, clock, poll_s)
    if rank != 0 and 0 in answers:  # rank 0 lives and names them: stay until it has written the JSON (torchrun
        with contextlib.suppress(Exception):  # ends every rank of a node when one exits)
            store.wait([WRITTEN], dt.timedelta(seconds=timeout_s))
        return None
    answered = [r for r, a in answers.items() if a != INTERRUPTED]
    if rank != min(answered, default=rank) or isinstance(error, Interrupted):
        return None
    silent = [r for r in range(world_size) if r not in answers]
    alive = [r for r in silent if r not in dead]
    if not silent:
        return f"the world broke during {case}, every rank still answering: {said}"
    if not dead:  # never a live rank named for being slow to say so
        return (f"the world broke during {case}; rank(s) {', '.join(map(str, alive))} still alive inside the "
                f"collective, none dead (rank {rank} saw: {said[:160]})")
    named = ", ".join(f"rank {r} on {nodes[r]}" for r in dead)
    tail = f"; rank(s) {', '.join(map(str, alive))} still alive inside the collective" if alive else ""
    kept = "" if rank == 0 else "; rank 0 wrote no JSON: its journal beside --out keeps the cases that finished"
    return f"{named} stopped answering during {case} (rank {rank} saw: {said[:160]}){tail}{kept}"


def _answers(store: Any, rank: int, world_size: int, case: str, said: str, deadline: float,
             clock: Callable[[], float], poll_s: float) -> tuple[dict[int, str], list[int]]:
    """What each rank said in the store about ``case``, and the silent ranks whose heartbeat stopped, once those
    are known (or at ``deadline``): rank 0 waits for every rank, the others for rank 0 only, unless it is dead."""
    def answer(r: int) -> str | None:
        with contextlib.suppress(Exception):
            if store.check([alive_key(case, r)]):
                return str(store.get(alive_key(case, r)), "utf-8", "replace")
        return None

    def beats(r: int) -> int | None:
        with contextlib.suppress(Exception):
            return int(store.add(beat_key(r), 0))
        return None

    seen: dict[int, tuple[int | None, float]] = {}
    answers: dict[int, str] = {rank: said}
    dead: list[int] = []
    waiting_for = list(range(world_size)) if rank == 0 else [0]
    while clock() < deadline:
        answers |= {r: a for r in waiting_for if r not in answers and (a := answer(r)) is not None}
        silent = [r for r in waiting_for if r not in answers]
        dead = dead_ranks(beats, silent, clock, seen)
        if 0 in dead and len(waiting_for) == 1:
            waiting_for = list(range(world_size))  # rank 0 is gone: this rank may be the one to name who is
            continue
        if dead or not silent:  # the culprits are known: a live rank still inside the call is left out, not awaited
            break
        time.sleep(poll_s)
    return answers, dead
