"""Faults injected into the ranks of the tests' worlds, from the tests alone: no code of the package reads them.

``python -m faulty_rank ARGS`` is ``python -m xferbench.distributed ARGS`` (a torchrun rank, or a helper rank of
the pytest world) with the faults its environment names patched in first. The tests start their worlds with it:
``launch``/``start_ranks`` give torchrun ``-m faulty_rank``; ``inject`` (or ``-p faulty_rank`` for a pytest session
of its own) makes the pytest world start its helpers so. Unset, each fault is nothing and the rank is the package's.

- FAULT_ENV ``RANK:KIND[:AFTER]``: that rank fails at the case after its first AFTER (0) cases: ``exit-early`` (a
  helper that exits 3 before joining), ``die-mid-run`` (exit 4), ``stall`` (hangs), ``raise``, ``oom`` (its
  buffers cannot be allocated). Under torchrun only ``die-mid-run`` and ``stall``, before the case begins.
- SLOW_RANK_ENV ``RANK:SECONDS[:call|:inside]``: that rank arrives SECONDS late at every round (a sleep before the
  round), late into every call (``call``: a sleep before each call, inside the timed round) or slow inside each
  call (``inside``: a slow launch).
- HANG_ENV: a collective whose peer is gone hangs instead of raising, as NCCL's do (the host waits in
  ``torch.cuda.synchronize`` until the watchdog ends the process): proves the host-side deadline on gloo.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from xferbench.measure.distributed import pytest_world, torchrun, watch, world
from xferbench.measure.distributed.operations import DistCase, Operation
from xferbench.units import format_size

SLOW_RANK_ENV = "XFERBENCH_TEST_SLOW_RANK"
FAULT_ENV = "XFERBENCH_TEST_FAULT"
HANG_ENV = "XFERBENCH_TEST_NCCL_HANG"
FAULTS = ("exit-early", "die-mid-run", "stall", "raise", "oom")
TESTS = Path(__file__).resolve().parent


def inject(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """The pytest world of this test starts its helper ranks with these variables and ``-m faulty_rank``."""
    monkeypatch.setattr(pytest_world, "ENTRY", "faulty_rank")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def pytest_configure(config: pytest.Config) -> None:
    """``-p faulty_rank``: this session's pytest world starts its helper ranks with ``-m faulty_rank``."""
    pytest_world.ENTRY = "faulty_rank"


@contextlib.contextmanager
def running_world(backend: str = "gloo", timeout_s: float = 60.0) -> Iterator[pytest_world.World]:
    """A started World that is always closed."""
    w = pytest_world.World(backend, timeout_s)
    try:
        w.start()
        yield w
    finally:
        w.close()


def slow_rank_delay(rank: int) -> tuple[float, str]:
    """The extra seconds of ``rank`` (SLOW_RANK_ENV), and where: "" before every round, "call" before every call,
    "inside" inside every call."""
    text = os.environ.get(SLOW_RANK_ENV, "")
    if not text:
        return 0.0, ""
    slow, seconds, *where = text.split(":") + ([] if text.count(":") else [""])
    try:
        if where not in ([], ["call"], ["inside"]):
            raise ValueError(text)
        return (float(seconds) if int(slow) == rank else 0.0), "".join(where)
    except ValueError:
        raise ValueError(f"{SLOW_RANK_ENV}={text!r}: write it as RANK:SECONDS[:call|:inside], e.g. 2:0.005") from None


def injected_fault(rank: int) -> tuple[str, int] | None:
    """The fault of ``rank`` and after how many cases (FAULT_ENV), or None."""
    text = os.environ.get(FAULT_ENV, "")
    if not text:
        return None
    parts = text.split(":")
    who, kind, after = int(parts[0]), parts[1], int(parts[2]) if len(parts) > 2 else 0
    if kind not in FAULTS:
        raise ValueError(f"{FAULT_ENV}={text!r}: the fault is one of {', '.join(FAULTS)}")
    return (kind, after) if who == rank else None


def hang_on_error(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, which hangs where it would raise (a fake of NCCL's collectives)."""
    def hanging(*args: Any) -> Any:
        try:
            return fn(*args)
        except Exception:
            while True:  # as the host in torch.cuda.synchronize when an NCCL peer is gone: only a watchdog ends it
                time.sleep(60)
    return hanging


def late(seconds: float, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, after a sleep of ``seconds``."""
    def call(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return fn(*args, **kwargs)
    return call


def _members(case: DistCase) -> tuple[int, ...]:
    return case.pair if case.point_to_point else tuple(range(case.world_size))


def _out_of_memory(case: DistCase, rank: int, device: str) -> Operation:
    import torch

    raise torch.OutOfMemoryError(f"injected: rank {rank} could not allocate {format_size(case.nbytes)} ({FAULT_ENV})")


def _fail(kind: str, rank: int) -> None:
    """A fault that ends or hangs the rank, or raises."""
    if kind == "die-mid-run":
        os._exit(4)  # a rank killed in the middle of the run
    if kind == "stall":
        time.sleep(10**6)  # a rank that hangs (its host stuck, or a wedged GPU): only a deadline ends the run
    if kind == "raise":
        raise RuntimeError(f"injected failure of rank {rank} ({FAULT_ENV})")


def _patch_faults(rank: int, helper: bool) -> None:
    fault = injected_fault(rank)
    if fault is None:
        return
    kind, after = fault
    if kind == "exit-early" and helper:
        pytest_world.join = lambda *args, **kwargs: sys.exit(3)  # a helper that dies before joining
    cases = [0]
    if helper:  # the pytest world: at the case the coordinator hands over
        real_run = pytest_world.run_on_rank

        def run(*args: Any, **kwargs: Any) -> Any:
            cases[0] += 1
            if cases[0] - 1 != after:
                return real_run(*args, **kwargs)
            _fail(kind, rank)
            built = world.operation
            world.operation = _out_of_memory if kind == "oom" else built
            try:
                return real_run(*args, **kwargs)
            finally:
                world.operation = built
        pytest_world.run_on_rank = run
    else:  # torchrun: before the case begins (its heartbeat's steps are those of the cases before)
        real_begin = watch.Watch.begin

        def begin(self: watch.Watch, case: str, limit_s: float) -> None:
            cases[0] += 1
            if cases[0] - 1 == after:
                _fail(kind, rank)
            real_begin(self, case, limit_s)
        watch.Watch.begin = begin  # type: ignore[method-assign]


def _patch_slow(rank: int) -> None:
    delay, where = slow_rank_delay(rank)
    if not delay:
        return
    if where == "call":  # before each call, outside the time inside it (the call timer's bracket)
        real_timer = world._call_timer

        def timer(case: DistCase) -> Any:
            made = real_timer(case)
            if rank in _members(case):
                made.around = late(delay, made.around)
            return made
        world._call_timer = timer
        return
    if where == "inside":  # each call sleeps inside itself before it runs, as a slow launch would
        real_build = world.operation

        def build(case: DistCase, rank_: int, device: str) -> Operation:
            made = real_build(case, rank_, device)
            return Operation(made.reset, late(delay, made.call), made.check, made.sync) if rank in _members(case) else made
        world.operation = build
        return
    for module in (torchrun, pytest_world):  # before every round: its steps begin each round
        real_run = module.run_on_rank

        def run(case: DistCase, *args: Any, real: Any = real_run, **kwargs: Any) -> Any:
            step = kwargs.get("progress") or (lambda: None)
            if rank in _members(case):
                kwargs["progress"] = late(delay, step)
            return real(case, *args, **kwargs)
        module.run_on_rank = run


def _patch_hang() -> None:
    if not os.environ.get(HANG_ENV):
        return
    real_exchange, real_build = world.exchange, world.operation
    world.exchange = lambda device, size: hang_on_error(real_exchange(device, size))

    def build(case: DistCase, rank: int, device: str) -> Operation:
        made = real_build(case, rank, device)
        return Operation(made.reset, hang_on_error(made.call), made.check, hang_on_error(made.sync))
    world.operation = build


def main(argv: list[str]) -> int:
    helper = "--worker" in argv
    rank = int(argv[argv.index("--rank") + 1]) if helper else int(os.environ.get("RANK", "0"))
    _patch_hang()
    _patch_slow(rank)
    _patch_faults(rank, helper)
    return torchrun.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
