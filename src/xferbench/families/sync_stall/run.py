"""sync_stall: ``.item()``, ``.cpu()``, ``.tolist()``, ``str(t)`` behind queued GPU work, and the
non_blocking copy completed by an event that does not wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced
from ...measure.families.scenario import Scenario, plan_on_gpus, sleep_cycles

#: Work queued on the GPU before a synchronizing call, in seconds.
STALL_SECONDS = 2e-3


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    t = torch.ones(s.size // 4, device=s.src)
    cycles = sleep_cycles(s.src, STALL_SECONDS)
    pinned = torch.empty_like(t, device="cpu").pin_memory()
    event = torch.cuda.Event()
    stream = torch.cuda.current_stream(t.device)  # the copy's stream, whatever the current device

    def queue_work() -> None:
        sync()
        with torch.cuda.device(t.device):
            torch.cuda._sleep(cycles)  # returns at once; the GPU stays busy for STALL_SECONDS

    calls: dict[str, Callable[[], Any]] = {
        "item": lambda: t[0].item(),
        "cpu": t.cpu,
        "tolist": t.tolist,
        "str": lambda: str(t),
        # The copy is queued behind the work and the call returns at once; completion is
        # observed later through the event (teardown, untimed), so the host was free.
        "nonblocking_event": lambda: (pinned.copy_(t, non_blocking=True), event.record(stream))[0],
    }
    return Prepared(calls[s.variant], setup=queue_work, teardown=synced(event.synchronize, sync),
                    extra={"queued_seconds": STALL_SECONDS})


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    def queue_work() -> None:
        sync()
        m.queue(s.src, STALL_SECONDS)

    def call() -> None:
        if s.variant == "nonblocking_event":  # queued behind the work; the host returns after the launch and the record
            m.copy("d2h_pinned", s.size, s.src, waits=False)
            m.dispatch()
        else:  # item reads one float32 element, the others the whole tensor, into pageable memory
            m.copy("d2h_pageable", 4 if s.variant == "item" else s.size, s.src, waits=True)
    return Prepared(call, setup=queue_work, teardown=sync, extra={"queued_seconds": STALL_SECONDS})


FAMILY = ScenarioFamily("sync_stall", sizes((4,), (4, MiB)),
                        plan_on_gpus("sync_stall", ("item", "cpu", "tolist", "str", "nonblocking_event"), "bytes",
                                     to_host=True),
                        prepare, price)
