"""pin_memory: is pinning worth it? ``t.pin_memory()`` cold and cached, pin-then-move against a reused
pinned buffer, and the DMA from a tensor pinned once (the break-even)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...measure.families import scenario
from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.scenario import Scenario, plan_on_gpus


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    src = torch.ones(s.size // 4)
    dst = torch.device(s.dst)
    reused = torch.empty_like(src).pin_memory()
    calls: dict[str, Callable[[], Any]] = {
        # Cold: the host cache is emptied before each round, so pin_memory() page-locks fresh
        # memory (cudaHostAlloc), what the first pin of a size costs.
        "pin_cold": src.pin_memory,
        # Cached: the caching host allocator still holds the block the previous call freed, so
        # this is a memcpy into already page-locked memory, what a loop that pins each batch pays.
        "pin_cached": src.pin_memory,
        "to": synced(lambda: src.to(dst), sync),
        "pin_cached_then_to": synced(lambda: src.pin_memory().to(dst, non_blocking=True), sync),
        # The realistic reuse: stage into one pinned buffer, then a fast DMA.
        "reused_pinned_to": synced(lambda: reused.copy_(src).to(dst, non_blocking=True), sync),
        # What each reuse of a tensor pinned once costs: the DMA alone. pin_cold / (to - pinned_to) is
        # the number of reuses that pays for pinning it (the break-even).
        "pinned_to": synced(lambda: reused.to(dst, non_blocking=True), sync),
    }

    def cold() -> None:
        sync()
        scenario.empty_host_cache()
    return Prepared(calls[s.variant], setup=cold if s.variant == "pin_cold" else None)


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.size

    def pinned_then_to() -> None:  # a memcpy into a pinned block (cached or reused), then a non_blocking DMA
        m.host_copy(n)
        m.copy("h2d_pinned", n, s.dst, waits=False)

    def pin_cold() -> None:  # page-locks fresh memory, then copies into it
        m.pin(n)
        m.host_copy(n)

    calls: dict[str, Callable[[], None]] = {
        "pin_cold": pin_cold,
        "pin_cached": lambda: m.host_copy(n),
        "to": then_sync(sync, lambda: m.copy("h2d_pageable", n, s.dst, waits=True)),
        "pin_cached_then_to": then_sync(sync, pinned_then_to),
        "reused_pinned_to": then_sync(sync, pinned_then_to),
        "pinned_to": then_sync(sync, lambda: m.copy("h2d_pinned", n, s.dst, waits=False)),
    }
    return Prepared(calls[s.variant], setup=sync if s.variant == "pin_cold" else None)


FAMILY = ScenarioFamily("pin_memory", sizes((MiB, 64 * MiB), (2**16, MiB, 16 * MiB, 64 * MiB, 256 * MiB)),
                        plan_on_gpus("pin_memory", ("pin_cold", "pin_cached", "to", "pin_cached_then_to",
                                                    "reused_pinned_to", "pinned_to"), "bytes"),
                        prepare, price)
