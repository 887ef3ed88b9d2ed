"""Fakes that stand in for a GPU runtime and for pytest-benchmark's fixture."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from xferbench.measure.devices import poll


class FakeBackend:
    """A device backend with ``gpus`` CUDA devices that records every call made of it."""

    simulated = False

    def __init__(self, gpus: int = 0, *, type: str = "cuda", peer: bool = True,
                 free: int = 80 * 2**30, total: int = 80 * 2**30, event_s: float = 1e-5,
                 profile_s: float | None = None, stuck: bool = False) -> None:
        self.type = type if gpus else None
        self.gpus = gpus
        self.peer = peer
        self.free, self.total = free, total
        self.event_s = event_s
        self.profile_s = profile_s
        self.stuck = stuck  # a wedged copy: every wait's query answers "not done" until its deadline
        self.calls: list[tuple[Any, ...]] = []

    def device_count(self) -> int:
        return self.gpus

    def synchronize(self, index: int) -> None:
        self.calls.append(("synchronize", index))

    def wait(self, index: int, seconds: float) -> bool:
        """The real deadline loop (devices.poll) over a query that never completes when ``stuck``."""
        self.calls.append(("wait", index, seconds))
        return poll(lambda: not self.stuck, seconds)

    def device_name(self, index: int) -> str:
        return f"Fake GPU {index}"

    def memory_info(self, index: int) -> tuple[int, int] | None:
        return self.free, self.total

    def can_access_peer(self, src: int, dst: int) -> bool:
        return self.peer and src != dst

    def empty_cache(self) -> None:
        self.calls.append(("empty_cache",))

    def event_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        self.calls.append(("events", index, repeats))
        for _ in range(repeats):
            fn()
        return [self.event_s] * repeats

    def profiled_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """The profiler's per-copy times (``profile_s`` each), or None when it has none."""
        self.calls.append(("profiled", index, repeats))
        if self.profile_s is None:
            return None
        for _ in range(repeats):
            fn()
        return [self.profile_s] * repeats

    def tensor_device(self, device: str) -> str:
        return device

    def pin_memory(self, tensor: Any) -> Any:
        self.calls.append(("pin_memory",))
        return tensor

    @contextlib.contextmanager
    def timed(self, case: Any, op: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
        self.calls.append(("timed", case.op))
        yield op

    def syncs(self) -> list[int]:
        """The devices synchronized, in order, with or without a deadline."""
        return [call[1] for call in self.calls if call[0] in ("synchronize", "wait")]


class Stats:
    """Like pytest-benchmark's: per-iteration times of each round, statistics derived."""

    def __init__(self, median: float) -> None:
        self.data = [median]

    @property
    def median(self) -> float:
        return sorted(self.data)[len(self.data) // 2]


class FakeBenchmark:
    """Calls the function a fixed number of times, like ``benchmark(fn)`` does."""

    def __init__(self, calls: int = 5, median: float = 1e-3) -> None:
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None
        self.calls = calls
        self.stats = type("Metadata", (), {"stats": Stats(median), "iterations": 1})()

    def pedantic(self, target: Callable[[], Any], setup: Callable[[], Any] | None = None,
                 teardown: Callable[[], Any] | None = None, rounds: int = 1, warmup_rounds: int = 0,
                 iterations: int = 1) -> Any:
        """Makes as many calls as pytest-benchmark's pedantic does."""
        self.pedantic_rounds = rounds
        result = None
        for _ in range(warmup_rounds + rounds):
            if setup:
                setup()
            for _ in range(iterations):
                result = target()
            if teardown:
                teardown()
        if iterations > 1:
            result = target()
        return result

    def __call__(self, fn: Callable[[], Any]) -> Any:
        result = None
        for _ in range(self.calls):
            result = fn()
        return result
