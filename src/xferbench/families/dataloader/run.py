"""dataloader: a ``torch.utils.data.DataLoader`` feeding the GPU. ``pin_memory`` off and on, ``num_workers`` 0 and
2, and ``.to(device, non_blocking=False/True)`` in the loop, on image batches (N x 3 x 224 x 224 uint8) and token
batches (8 x 2048 int64); the loader alone to the host; worker start-up and a fresh iterator's first batch."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
from collections.abc import Sequence
from typing import Any

from ...contract import Identity
from ...measure.cases import Skipped, accelerators
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes
from ...measure.families.scenario import IMAGE, Scenario

#: What one sample of each kind of batch is: its shape and dtype (a batch stacks ``size`` of them).
SAMPLES = {"images": (IMAGE, "uint8"), "tokens": ((2048,), "int64")}
#: Sequences of 2048 tokens per token batch, in every profile: 128 KiB, small enough for the quick one.
TOKEN_BATCHES = (8,)
#: Distinct samples the dataset holds (preallocated, untimed): a batch stacks copies of them, as collation does.
POOL = 64
WORKERS = (0, 2)
#: Untimed batches a steady case pulls before timing: the workers' start-up and every batch they prefetched
#: (``prefetch_factor`` 2 each) come out of the timed rounds.
WARM_BATCHES = 2 * 2 * max(WORKERS) + 2
#: The loader alone, to the host: steady state per worker count, then a fresh iterator's first batch.
HOST_CASES = (("steady", 0), ("steady", 2), ("first", 0), ("first", 2))
#: A dataset this long never ends during a case, so a steady case never restarts its iterator (and its workers).
ENDLESS = 2**40


@dataclasses.dataclass(frozen=True)
class Batch(Scenario):
    """A case of this family: a scenario whose identity says its batch (shape, dtype) and loop."""

    workers: int = 0
    pinned: bool = False  # DataLoader(pin_memory=True)
    non_blocking: bool = False  # .to(device, non_blocking=True)
    phase: str = "steady"  # "steady": next() in steady state; "startup": iter() alone; "first": iter() + next()

    @property
    def sample(self) -> tuple[int, ...]:
        return SAMPLES[self.unit][0]

    @property
    def size_label(self) -> str:
        return f"{self.size}images" if self.unit == "images" else f"{self.size}x{self.sample[0]}tokens"

    @property
    def nbytes(self) -> int:
        return self.size * math.prod(self.sample) * (1 if self.dtype == "uint8" else 8)

    def identity(self) -> Identity:
        memory = None if self.dst == "cpu" else "pinned" if self.pinned else "pageable"
        return Identity(self.op, self.variant, self.src, self.dst, self.nbytes, self.dtype, (self.size, *self.sample),
                        host_memory=memory, non_blocking=self.non_blocking, variant=self.variant)


def batch(unit: str, size: int, dst: str, phase: str, workers: int, pinned: bool = False,
          non_blocking: bool = False) -> Batch:
    """The case, its variant naming the loop: ``w2-pinned-nonblocking``, ``first-w0`` (to the host)."""
    parts = [] if phase == "steady" else [phase]
    parts.append(f"w{workers}")
    if dst != "cpu":
        parts += ["pinned" if pinned else "pageable", "nonblocking" if non_blocking else "blocking"]
    return Batch("dataloader", "-".join(parts), "cpu", dst, size, unit, SAMPLES[unit][1], workers, pinned,
                 non_blocking, phase)


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Batch | Skipped]:
    batches = [("images", n) for n in sizes] + [("tokens", n) for n in TOKEN_BATCHES]
    planned: list[Batch | Skipped] = [batch(unit, n, "cpu", phase, w) for unit, n in batches
                                      for phase, w in HOST_CASES]
    # Starting the workers (iter(): a fork each) does not depend on the batch: timed once, with the first one.
    planned.insert(2, batch(*batches[0], "cpu", "startup", 2))
    gpus = accelerators(devices)
    if not gpus:  # pin_memory needs an accelerator (torch ignores it, with a warning, without one)
        planned.append(Skipped("dataloader-gpu-half", "dataloader's pin_memory and .to(device) cases need an "
                                                      f"accelerator; the devices measured are: {', '.join(devices)}"))
    planned += [batch(unit, n, d, "steady", w, pinned, non_blocking) for unit, n in batches for d in gpus
                for w in WORKERS for pinned in (False, True) for non_blocking in (False, True)]
    return planned


class Samples:
    """A map-style dataset of preallocated samples, endless (``ENDLESS`` long): ``__getitem__`` returns one of
    ``POOL`` tensors made once, so a batch's cost is the loader's (sampling, collation, transport), no decoding."""

    def __init__(self, b: Batch) -> None:
        import torch

        shape, dtype = SAMPLES[b.unit]
        high = 256 if b.unit == "images" else 50_000  # pixel values; a tokenizer's vocabulary
        self.pool = list(torch.randint(0, high, (min(POOL, b.size), *shape), dtype=getattr(torch, dtype)))

    def __len__(self) -> int:
        return ENDLESS

    def __getitem__(self, index: int) -> Any:
        return self.pool[index % len(self.pool)]


def loader(b: Batch) -> Any:
    """The DataLoader of ``b``; workers are forked (the start method that shares the dataset without pickling
    it, and the only one whose start-up is the fork alone)."""
    from torch.utils.data import DataLoader

    from ...measure.transfers import CannotRun

    if b.workers and "fork" not in multiprocessing.get_all_start_methods():
        raise CannotRun(f"{b.id}: DataLoader workers here need the fork start method, which this platform lacks")
    # Map-style by its two methods: subclassing torch's Dataset would import torch with the plan.
    dataset: Any = Samples(b)
    return DataLoader(dataset, batch_size=b.size, num_workers=b.workers, pin_memory=b.pinned,
                      multiprocessing_context="fork" if b.workers else None)


def shut_down(iterator: Any) -> None:
    """End ``iterator``'s worker processes (and pin-memory thread) now, joined: not whenever it is collected."""
    stop = getattr(iterator, "_shutdown_workers", None)  # a multiprocessing iterator's; torch calls it from __del__
    if stop is not None:
        stop()


def prepare(b: Batch, sync: Sync) -> Prepared:
    import torch

    data, dst = loader(b), torch.device(b.dst)
    live: list[Any] = []  # the iterator alive now (its workers), shut down by the teardown and by close

    def close() -> None:
        while live:
            shut_down(live.pop())

    def check(out: Any) -> None:
        if not (out.device == dst and tuple(out.shape) == (b.size, *b.sample) and str(out.dtype) == f"torch.{b.dtype}"):
            raise AssertionError(f"dataloader gave {out.dtype} {tuple(out.shape)} on {out.device}, not "  # survives -O
                                 f"{b.dtype} {(b.size, *b.sample)} on {dst}")

    def to_device(got: Any) -> Any:
        out = got.to(dst, non_blocking=b.non_blocking)
        sync()  # the batch is ready on the device
        return out

    if b.phase == "steady":
        live.append(iter(data))
        try:
            for _ in range(WARM_BATCHES):
                next(live[0])
        except BaseException:
            close()
            raise
        return Prepared(lambda: to_device(next(live[0])), check=check, close=close)

    def start() -> Any:  # iter(): with workers, forks them (and starts the pin-memory thread)
        live.append(iter(data))
        return live[-1]

    def first() -> Any:
        return to_device(next(start()))
    return Prepared(start if b.phase == "startup" else first, teardown=close, close=close,
                    check=lambda out: None if b.phase == "startup" else check(out))


def price(b: Batch, m: Priced, sync: Sync) -> Prepared:
    """Collation writes the batch on the host (``host_copy_GBps``); pin_memory copies it into a cached pinned block
    (the same rate); then the copy on the pinned or pageable path, and a synchronize. Without workers the main
    process does all of it in turn. With workers, collation is shared among them and pinning runs on the
    pin-memory thread, beside the main loop: in steady state a batch comes every max(what they take, the main
    loop's copy and synchronize)."""
    n, spec = b.nbytes, m.spec
    path = "h2d_pinned" if b.pinned else "h2d_pageable"
    stage = n / (spec.host_copy_GBps * 1e9)

    def copy() -> None:
        m.copy(path, n, b.dst, waits=not (b.pinned and b.non_blocking))
        sync()

    if b.workers == 0:
        def call() -> None:
            m.host_copy(n)  # collation
            if b.pinned:
                m.host_copy(n)
            copy()
    else:
        own = spec.launch_us * 1e-6 + spec.paths[path].seconds(n) + spec.sync_us * 1e-6
        behind = max(stage / b.workers, stage if b.pinned else 0.0) - own

        def call() -> None:
            if behind > 0:  # the main loop waits for the workers' (or the pin thread's) next batch
                m.backend.issue(behind, None, 0.0, False)
            copy()
    return Prepared(call)


FAMILY = ScenarioFamily("dataloader", sizes((32,), (64, 256)), plan, prepare, price)
