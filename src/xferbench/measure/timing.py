"""Synchronization-correct timing.

The wall clock itself is pytest-benchmark's (``--benchmark-timer``); what this
module adds is the part that makes a wall-clock figure mean anything on an
accelerator: accelerator work is asynchronous, so a call is only done when every
device it touched has been synchronized, and ``torch.cuda.synchronize()`` without
an argument waits for the current device alone.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..contract import SYNC_RULES
from .hardware.devices import DeviceBackend, Wedged, accelerator_index

__all__ = ["BARE_OPS", "CLOCK_SIMULATED", "CLOCK_WALL", "COPY_OPS", "SYNC_EVENT_POLL", "SYNC_PLAIN", "Wedged",
           "copy_deadline", "device_seconds", "event_device", "sync_rule", "synchronized", "wait_or_raise"]

CLOCK_WALL = "wall+sync"
#: The clock of a case timed on the simulated machine (measure/simulate.py): never a measurement.
CLOCK_SIMULATED = "simulated"
#: Families timed bare, with no synchronize around the call: a no-op enqueues nothing
#: (a synchronize would be most of its figure), and ``sync`` *is* the synchronize.
BARE_OPS = ("noop", "sync")
#: Families whose call is one copy on the device's copy engine (or a device memcpy): a profiler
#: records each as a ``Memcpy`` activity.
COPY_OPS = ("h2d", "d2h", "d2d", "peer")

T = TypeVar("T")

#: A copy's deadline (``copy_deadline``): this long at least, plus its bytes at this crawl of a rate.
#: A peer copy moves at 10-900 GB/s; one still queued after its bytes at 0.1 GB/s (170 s for 16 GiB)
#: and half a minute is stuck, not slow.
DEADLINE_FLOOR_S = 30.0
DEADLINE_SLOWEST_BPS = 1e8

#: How each timed call of a case ends (``sync_rule`` in extra_info, contract.SYNC_RULES): a plain synchronize of
#: each device it touched, or an event recorded on each one's stream and its query polled until a deadline
#: (peer copies, which can hang). The two cost the call different fixed times, so a latency (alpha) taken under
#: one is compared only with one taken under the same rule.
SYNC_PLAIN, SYNC_EVENT_POLL = SYNC_RULES


def sync_rule(devices: Sequence[str], deadline: bool) -> str | None:
    """The rule a synchronize of ``devices`` ends each call with, with a ``deadline`` or not (``synchronized``'s
    ``deadline_s``); None when it adds nothing (no accelerator among ``devices``)."""
    return (SYNC_EVENT_POLL if deadline else SYNC_PLAIN) if _indices(devices) else None


def _indices(devices: Sequence[str]) -> tuple[int, ...]:
    return tuple(i for i in map(accelerator_index, devices) if i is not None)


def copy_deadline(nbytes: int) -> float:
    """Seconds a copy of ``nbytes`` may stay queued before it is called wedged."""
    return DEADLINE_FLOOR_S + nbytes / DEADLINE_SLOWEST_BPS


def wait_or_raise(backend: DeviceBackend, index: int, seconds: float) -> None:
    """Synchronize accelerator ``index``, or raise Wedged after ``seconds`` with a one-line reason."""
    if not backend.wait(index, seconds):
        raise Wedged(f"{backend.type}:{index} still had its copy queued after {seconds:.0f} s: a wedged copy "
                     "(peer copies over PCIe with the IOMMU or ACS on can hang); later cases on it are skipped")


def synchronized(fn: Callable[[], T], devices: Sequence[str], backend: DeviceBackend,
                 deadline_s: float | None = None) -> Callable[[], T]:
    """Wrap ``fn`` so that each call returns only once every touched device is idle.

    Each call ends with a synchronize of every accelerator in ``devices``, so the
    next call starts with them idle: the "synchronize before" of one call is the
    "synchronize after" of the one before it, and is not timed twice. Callers
    synchronize once before the first call. Host-only cases get ``fn`` itself, so
    the harness adds nothing to them. With ``deadline_s``, each synchronize gives up after that long
    and raises Wedged (``wait_or_raise``), so a stuck copy fails its case instead of hanging the run.
    """
    if not (indices := _indices(devices)):
        return fn
    sync: Callable[[int], None] = backend.synchronize if deadline_s is None else \
        functools.partial(wait_or_raise, backend, seconds=deadline_s)

    if len(indices) == 1:
        (index,) = indices

        def call_one() -> T:
            result = fn()
            sync(index)
            return result

        return call_one

    def call_all() -> T:
        result = fn()
        for i in indices:
            sync(i)
        return result

    return call_all


def event_device(src: str, dst: str) -> int | None:
    """The accelerator whose stream runs a src -> dst copy: torch queues a copy on
    the source device's stream when both ends are accelerators, else on the one
    accelerator involved."""
    return next(iter(_indices((src, dst))), None)


def device_seconds(
    fn: Callable[[], object], src: str, dst: str, backend: DeviceBackend, repeats: int,
    twin: Callable[[], object] | None = None, copies: bool = False, deadline_s: float | None = None,
) -> tuple[float | None, str | None]:
    """Median device time per call of a copy, and how it was taken (contract.DEVICE_TIME_METHODS);
    (None, None) when no accelerator is involved.

    The copy's own duration, most direct first: the profiler's device activity record of each
    memcpy where ``copies`` says ``fn`` is one and a profiler records them; else events around
    ``repeats`` calls back to back on a held stream (``DeviceBackend.event_seconds``). A blocking
    copy waits for itself inside the call, so events around it time the host's pace (on an H200,
    11.7 µs for a 4 B pinned .to against 2.2 µs non-blocking): it is timed through ``twin``, the
    same copy with non_blocking=True, whose calls queue back to back. ``deadline_s``: as ``synchronized``'s.
    """
    if (index := event_device(src, dst)) is None:
        return None, None
    sync_all = synchronized(_nothing, (src, dst), backend, deadline_s)
    sync_all()
    times, method = (backend.profiled_seconds(fn, index, repeats) if copies else None), "profiler"
    if not times:
        call, method = (fn, "events") if twin is None else (twin, "nonblocking_twin")
        times = backend.event_seconds(call, index, repeats)
    sync_all()
    return (statistics.median(times), method) if times else (None, None)


def _nothing() -> None:
    """What ``synchronized`` wraps to synchronize alone."""
