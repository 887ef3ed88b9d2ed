"""d2h_kept: ``.to('cpu', non_blocking=True)`` with its results freed and kept (the freed call is the core d2h
family's; a kept one pays a fresh pinned allocation on a first pass, not once the results before were dropped),
giving a kept result back timed, and the pageable ``.cpu()`` freed and kept."""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ...contract import Identity
from ...measure.cases import Skipped, accelerators, no_accelerator
from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, then_sync
from ...measure.families.scenario import Scenario, empty_host_cache

VARIANTS = ("freed", "kept", "kept_again", "release", "cpu_freed", "cpu_kept")
#: Results the kept variants hold: the last few, so memory stays small (each round's setup gives them back).
HELD = 4


class KeptCopy(Scenario):
    """A case of this family: its identity says the call users write, ``.to('cpu', non_blocking=True)`` or
    ``.cpu()``."""

    @property
    def pinned(self) -> bool:
        return not self.variant.startswith("cpu")

    def identity(self) -> Identity:
        return dataclasses.replace(super().identity(), method="to" if self.pinned else "cpu", non_blocking=self.pinned,
                                   host_memory="pinned" if self.pinned else "pageable")


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[KeptCopy | Skipped]:
    gpus = accelerators(devices)
    if not gpus:
        return [no_accelerator("d2h_kept", devices)]
    return [KeptCopy("d2h_kept", v, gpu, "cpu", size, "bytes") for size in sizes for gpu in gpus for v in VARIANTS]


def _held_bytes(make: Callable[[], Any]) -> int | None:
    """Pinned memory one result of ``make`` holds: what torch's caching host allocator allocated for it (its block,
    a power of two); None where torch does not say (no CUDA)."""
    import torch

    if not torch.cuda.is_available() or not hasattr(torch.cuda, "host_memory_stats"):
        return None
    before = torch.cuda.host_memory_stats().get("allocated_bytes.current", 0)
    result = make()
    held = int(torch.cuda.host_memory_stats().get("allocated_bytes.current", 0) - before)
    del result
    return held


def prepare(s: KeptCopy, sync: Sync) -> Prepared:
    import torch

    n = s.size // 4
    src = torch.ones(n, device=s.src)
    held: deque[Any] = deque(maxlen=HELD)

    def call() -> Any:
        result = src.to("cpu", non_blocking=True) if s.pinned else src.cpu()
        if s.variant not in ("freed", "cpu_freed"):
            held.append(result)  # still referenced: the allocator cannot hand its block to the next call
        sync()
        return result

    def give_back() -> None:  # the kept results and the cached blocks go back to the driver (cudaFreeHost)
        held.clear()
        sync()
        empty_host_cache()

    def pinned_afresh() -> None:
        give_back()
        call()

    def check(out: Any) -> None:
        if not (out.device.type == "cpu" and out.is_pinned() == s.pinned and out.numel() == n and bool((out == 1).all())):
            raise AssertionError(f"{s.id}: the result is not a host tensor holding the device's values")
    # kept, first pass: everything given back first, so each call pins fresh memory; a second pass (kept_again) and
    # .cpu() kept: the results before dropped, their memory cached (by torch, or by malloc) for the next call;
    # release (timed): one kept result given back, pinned afresh before each round.
    setup = {"kept": give_back, "kept_again": held.clear, "cpu_kept": held.clear, "release": pinned_afresh}.get(s.variant)
    extra = {"held_bytes": _held_bytes(call) if s.pinned else s.size} if setup is not None else {}
    return Prepared(give_back if s.variant == "release" else call, setup=setup, extra=extra,
                    check=(lambda _: None) if s.variant == "release" else check)


def price(s: KeptCopy, m: Priced, sync: Sync) -> Prepared:
    """The DMA into pinned memory, not waited for, then the synchronize; kept on a first pass, the host first
    page-locks the result's block (a power of two, at ``pin_GBps``); giving it back costs the block at
    ``unpin_GBps``. ``.cpu()``: the pageable path, waited for, freed or kept alike (fresh pages are not priced)."""
    block = 1 << (s.size - 1).bit_length()  # the caching host allocator's block
    copy = then_sync(sync, *((lambda: m.pin(block),) if s.variant in ("kept", "release") else ()),
                     lambda: m.copy("d2h_pinned" if s.pinned else "d2h_pageable", s.size, s.src, waits=not s.pinned))
    held = {"held_bytes": block if s.pinned else s.size} if s.variant not in ("freed", "cpu_freed") else {}
    if s.variant == "release":
        return Prepared(lambda: m.backend.issue(block / (m.spec.unpin_GBps * 1e9), None, 0.0, False), setup=copy, extra=held)
    return Prepared(copy, setup=sync if held else None, extra=held)


FAMILY = ScenarioFamily("d2h_kept", sizes((64 * MiB,), (MiB, 64 * MiB, 256 * MiB)), plan, prepare, price)
