"""A real slowdown of one path, on purpose: how a team proves its regression gate has teeth (docs/options.md).

``XFERBENCH_TEST_SLOWDOWN="host@8MiB=1.5"`` makes every timed call of an ``host``
case of 8 MiB or more take 1.5x as long: the call runs, then the caller spins for
0.5x the time it took. Several rules are separated by commas; ``@SIZE`` is optional.
Unset (the default), nothing is wrapped and nothing is read per call. The run's
machine info does not change: the slowdown is meant to look like a regression.
The factor is a lower bound: on an oversubscribed machine the spin can end a
scheduler tick late (1.25x on a 30 ms copy was measured as up to 2x under a load
of 10 on 2 cores), so tests that need an exact factor scale recorded rounds instead.
The variable keeps the name CI scripts already set (the faults the project's own tests
inject into ranks live in tests/faulty_rank.py, not here).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from ..units import parse_size

__all__ = ["ENV", "slowdown_for", "slowed"]

ENV = "XFERBENCH_TEST_SLOWDOWN"

T = TypeVar("T")


def slowdown_for(op: str, nbytes: int, spec: str | None = None) -> float:
    """The factor the environment asks for on this case (1.0: none)."""
    spec = os.environ.get(ENV, "") if spec is None else spec
    factor = 1.0
    for rule in filter(None, (r.strip() for r in spec.split(","))):
        target, _, value = rule.partition("=")
        name, _, size = target.partition("@")
        if name.strip() == op and nbytes >= (parse_size(size) if size else 0):
            factor = float(value)
    return factor


def slowed(fn: Callable[[], T], factor: float) -> Callable[[], T]:
    """``fn`` taking ``factor`` times as long (a spin after it, on the caller's clock)."""
    if factor == 1.0:
        return fn
    clock = time.perf_counter

    def call() -> T:
        start = clock()
        result = fn()
        until = start + (clock() - start) * factor
        while clock() < until:
            pass
        return result

    return call
