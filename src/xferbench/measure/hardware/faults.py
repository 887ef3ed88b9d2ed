"""Minor page faults per call: what explains a host allocation's cost.

glibc serves an allocation above its mmap threshold (128 KiB, raised on the fly up to
32 MiB as mmapped blocks are freed) with a fresh mmap, so every call page-faults its
whole destination in: a minor fault per 4 KiB page (fewer with transparent huge pages).
A call that reuses memory already touched faults nothing. The count comes from
``getrusage(RUSAGE_SELF).ru_minflt``, every thread of the process together (torch's
intra-op threads fault in parallel).
"""

from __future__ import annotations

import resource
from collections.abc import Callable
from typing import Any

__all__ = ["FAULT_BUDGET_S", "after_timing", "fault_calls", "faults_per_call", "minor_faults"]

#: Seconds of calls to spend counting faults per case, at most (outside the timed region).
FAULT_BUDGET_S = 0.05
#: Calls counted at least and at most: a stray fault of the interpreter weighs 1/100 at most on a
#: small call; a call slower than the budget is counted once (its faults number in the thousands).
_FEWEST, _MOST = 1, 100


def minor_faults() -> int:
    """Minor page faults of this process so far, every thread together."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def fault_calls(median_s: float | None) -> int:
    """How many calls to count faults over, for a call that takes ``median_s``."""
    return max(_FEWEST, min(_MOST, int(FAULT_BUDGET_S / median_s))) if median_s else _FEWEST


def faults_per_call(call: Callable[[], Any], calls: int, setup: Callable[[], Any] | None = None,
                    teardown: Callable[[], Any] | None = None) -> float:
    """Minor faults per call of ``call`` over ``calls`` calls; ``setup`` and ``teardown``
    run around each call and their faults are not counted."""
    if setup is None and teardown is None:
        before = minor_faults()
        for _ in range(calls):
            call()
        return (minor_faults() - before) / calls
    counted = 0
    for _ in range(calls):
        if setup is not None:
            setup()
        before = minor_faults()
        result = call()
        counted += minor_faults() - before
        del result  # freed before teardown, as the timed loop frees it
        if teardown is not None:
            teardown()
    return counted / calls


def after_timing(benchmark: Any, call: Callable[[], Any], setup: Callable[[], Any] | None = None,
                 teardown: Callable[[], Any] | None = None) -> float:
    """Faults per call of ``call``, counted on calls of their own right after ``benchmark`` timed it
    (the same steady state): counting inside the timed loop would add a Python frame to each call."""
    stats = getattr(getattr(benchmark, "stats", None), "stats", None)
    return faults_per_call(call, fault_calls(getattr(stats, "median", None)), setup, teardown)
