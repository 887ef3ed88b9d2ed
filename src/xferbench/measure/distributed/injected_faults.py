"""Faults injected into the ranks, for the project's own tests only: no user option sets them.

The tests prove that a late, dead, stalled or hung rank is named and never hangs the run; the
ranks are processes the package starts itself (the pytest world's helpers, torchrun's workers),
so these hooks are read from the environment there, and live here, in one module. Unset (always,
outside the tests), each one is a no-op. The slowdown a user may inject to check that a gate has
teeth is another thing: ``XFERBENCH_TEST_SLOWDOWN`` (measure/injected_slowdown.py, docs/options.md).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from ...units import format_size
from .errors import DistributedError
from .operations import DistCase, Operation

__all__ = ["FAULTS", "FAULT_ENV", "HANG_ENV", "SLOW_RANK_ENV", "hang_on_error", "hangs", "injected_fault",
           "injected_oom", "slow_inside", "slow_rank_delay"]

#: Test only: ``RANK:SECONDS`` makes that rank arrive SECONDS late at every round (a sleep before its calls);
#: ``RANK:SECONDS:call``, late into every call of the round (a sleep before each call, inside the timed round);
#: ``RANK:SECONDS:inside``, slow inside each of its torch.distributed calls (a slow launch: slow_inside).
SLOW_RANK_ENV = "XFERBENCH_TEST_SLOW_RANK"
#: Test only: ``RANK:FAULT[:AFTER]`` makes that helper rank fail at the case after the first AFTER (0): FAULTS.
FAULT_ENV = "XFERBENCH_TEST_FAULT"
FAULTS = ("exit-early", "die-mid-run", "stall", "raise", "oom")
#: Test only: set, a collective whose peer is gone hangs instead of raising, as NCCL's do (the host waits in
#: ``torch.cuda.synchronize`` until the watchdog ends the process): proves the host-side deadline on gloo.
HANG_ENV = "XFERBENCH_TEST_NCCL_HANG"
#: The torch.distributed calls the test-only slow rank wraps (``slow_inside``); not isend and irecv, which
#: P2POp (the ring) checks by identity.
WRAPPED = ("broadcast", "all_reduce", "all_gather_into_tensor", "all_gather_single", "reduce_scatter_tensor",
           "reduce_scatter_single", "all_to_all_single", "send", "recv")



def slow_rank_delay(rank: int) -> tuple[float, str]:
    """The test-only extra seconds of ``rank`` (see SLOW_RANK_ENV), and where: "" before every round, "call"
    before every call, "inside" inside every call."""
    text = os.environ.get(SLOW_RANK_ENV, "")
    if not text:
        return 0.0, ""
    slow, seconds, *where = text.split(":") + ([] if text.count(":") else [""])
    try:
        if where not in ([], ["call"], ["inside"]):
            raise ValueError(text)
        return (float(seconds) if int(slow) == rank else 0.0), "".join(where)
    except ValueError:
        raise DistributedError(f"{SLOW_RANK_ENV}={text!r}: write it as RANK:SECONDS[:call|:inside], "
                               "e.g. 2:0.005") from None


def injected_fault(rank: int) -> tuple[str, int] | None:
    """The injected fault of ``rank`` and after how many cases (see FAULT_ENV), or None."""
    text = os.environ.get(FAULT_ENV, "")
    if not text:
        return None
    parts = text.split(":")
    try:
        who, kind, after = int(parts[0]), parts[1], int(parts[2]) if len(parts) > 2 else 0
    except (ValueError, IndexError):
        raise DistributedError(f"{FAULT_ENV}={text!r}: write it as RANK:FAULT[:AFTER], e.g. 1:die-mid-run:2") from None
    if kind not in FAULTS:
        raise DistributedError(f"{FAULT_ENV}={text!r}: the fault is one of {', '.join(FAULTS)}")
    return (kind, after) if who == rank else None


def hangs() -> bool:
    """Whether HANG_ENV asks a collective whose peer is gone to hang, as NCCL's do."""
    return bool(os.environ.get(HANG_ENV))


def hang_on_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, which hangs where it would raise when HANG_ENV is set (a test's fake of NCCL); else ``fn``."""
    if not os.environ.get(HANG_ENV):
        return fn

    def hanging(*args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            while True:  # as the host in torch.cuda.synchronize when an NCCL peer is gone: only a watchdog ends it
                time.sleep(60)
    return hanging


def injected_oom(case: DistCase, rank: int, device: str) -> Operation:
    import torch

    raise torch.OutOfMemoryError(f"injected: rank {rank} could not allocate {format_size(case.nbytes)} ({FAULT_ENV})")


@contextlib.contextmanager
def slow_inside(seconds: float, dist: Any = None) -> Iterator[None]:
    """Every torch.distributed call of this rank sleeps ``seconds`` inside itself before it runs,
    as a slow Python-side launch would (SLOW_RANK_ENV ``RANK:SECONDS:inside``). ``dist`` defaults to torch's."""
    if dist is None:
        import torch.distributed

        dist = torch.distributed
    saved = {name: getattr(dist, name) for name in WRAPPED if hasattr(dist, name)}

    def slowed(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            time.sleep(seconds)
            return real(*args, **kwargs)
        return call

    for name, real in saved.items():
        setattr(dist, name, slowed(real))
    try:
        yield
    finally:
        for name, real in saved.items():
            setattr(dist, name, real)
