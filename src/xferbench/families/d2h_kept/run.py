"""d2h_kept: ``.to('cpu', non_blocking=True)`` with its results freed and kept (the freed call is the core d2h
family's; the kept one pays a fresh pinned allocation each call, what a caller who keeps the results pays)."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Sequence
from typing import Any

from ...contract import Identity
from ...measure.cases import Skipped, accelerators, no_accelerator
from ...measure.families.base import Prepared, Priced, ScenarioFamily, Sync, sizes, then_sync
from ...measure.families.scenario import Scenario, empty_host_cache

MiB = 2**20
VARIANTS = ("freed", "kept")
#: Results the kept variant holds: the last few, so memory stays small (each round's setup gives them back).
HELD = 4


class KeptCopy(Scenario):
    """A case of this family: its identity says the call users write, ``.to('cpu', non_blocking=True)``."""

    def identity(self) -> Identity:
        return dataclasses.replace(super().identity(), method="to", host_memory="pinned", non_blocking=True)


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[KeptCopy | Skipped]:
    gpus = accelerators(devices)
    if not gpus:
        return [skip for skip in no_accelerator("d2h_kept", devices) if isinstance(skip, Skipped)]
    return [KeptCopy("d2h_kept", v, gpu, "cpu", size, "bytes") for size in sizes for gpu in gpus for v in VARIANTS]


def prepare(s: KeptCopy, sync: Sync) -> Prepared:
    import torch

    n = s.size // 4
    src = torch.ones(n, device=s.src)
    held: deque[Any] = deque(maxlen=HELD)

    def call() -> Any:
        result = src.to("cpu", non_blocking=True)
        if s.variant == "kept":
            held.append(result)  # still referenced: the allocator cannot hand its block to the next call
        sync()
        return result

    def release() -> None:  # untimed, before each round: the kept results go back to the driver (cudaFreeHost)
        held.clear()
        sync()
        empty_host_cache()

    def check(out: Any) -> None:
        if not (out.device.type == "cpu" and out.is_pinned() and out.numel() == n and bool((out == 1).all())):
            raise AssertionError(f"{s.id}: the result is not a pinned host tensor holding the device's values")
    return Prepared(call, setup=release if s.variant == "kept" else None, check=check)


def price(s: KeptCopy, m: Priced, sync: Sync) -> Prepared:
    """The DMA into pinned memory, not waited for, then the synchronize; kept, the host first page-locks the
    result's bytes (pin_memory's cold pin, at pin_GBps)."""
    copy = then_sync(sync, *((lambda: m.pin(s.size),) if s.variant == "kept" else ()),
                     lambda: m.copy("d2h_pinned", s.size, s.src, waits=False))
    return Prepared(copy, setup=sync if s.variant == "kept" else None)


FAMILY = ScenarioFamily("d2h_kept", sizes((64 * MiB,), (MiB, 64 * MiB, 256 * MiB)), plan, prepare, price)
