"""bidir: host-to-device and device-to-host at the same time on two streams of one GPU, next to each alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, then_sync
from ...measure.families.concurrent import Concurrent, Planned, cuda_gpus, equal, pattern, require_cuda, streamed


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = cuda_gpus("bidir", devices)
    return skip + [c for size in sizes for g in gpus for c in (
        Concurrent("bidir", "h2d", "cpu", g, size, (g,)),
        Concurrent("bidir", "d2h", g, "cpu", size, (g,)),
        Concurrent("bidir", "h2d+d2h", "cpu", g, size, (g,)),
    )]


def prepare(c: Concurrent, sync: Sync) -> Prepared:
    require_cuda(c)
    import torch

    gpu = c.gpus[0]
    host_src, dev_src = pattern(c.shape, "cpu", pinned=True), pattern(c.shape, gpu)
    dev_dst, host_dst = torch.empty_like(dev_src), torch.empty_like(host_src).pin_memory()
    up, down = streamed(gpu), streamed(gpu)
    sync()  # buffers made on the default stream are complete before the side streams read them

    def h2d() -> None:
        with torch.cuda.stream(up):
            dev_dst.copy_(host_src, non_blocking=True)

    def d2h() -> None:
        with torch.cuda.stream(down):
            host_dst.copy_(dev_src, non_blocking=True)

    parts = {"h2d": (h2d,), "d2h": (d2h,), "h2d+d2h": (h2d, d2h)}[c.variant]

    def check(_: Any) -> None:
        if h2d in parts:
            equal(dev_dst, host_src, f"{c.id} host to device")
        if d2h in parts:
            equal(host_dst, dev_src, f"{c.id} device to host")
    return Prepared(then_sync(sync, *parts), check=check)


def price(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu = c.gpus[0]
    up, down = ("h2d", "d2h") if m.spec.duplex else ("copy", "copy")  # one engine: the copies take turns
    parts = {
        "h2d": lambda: m.copy("h2d_pinned", c.size, gpu, waits=False, stream=up),
        "d2h": lambda: m.copy("d2h_pinned", c.size, gpu, waits=False, stream=down),
    }
    return Prepared(then_sync(sync, *(parts[v] for v in c.variant.split("+"))))


# Sizes are one payload (one GPU, one direction).
FAMILY = ScenarioFamily("bidir", sizes((64 * MiB,), (4 * MiB, 64 * MiB, 256 * MiB)), plan, prepare, price)
