"""copy_kind: a contiguous same-dtype move (one DMA or memcpy) against a strided source or a
dtype-converting ``.to()`` (a kernel, or a host-side copy first)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, synced, then_sync
from ...measure.families.concurrent import Concurrent, Planned, cuda_gpus, equal, pattern, require_cuda

#: copy_kind variants: host to device, and within one device.
COPY_KINDS_H2D = ("memcpy", "strided", "convert", "convert_nonblocking")
COPY_KINDS_D2D = ("memcpy", "strided", "convert")


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = cuda_gpus("copy_kind", devices, host=False)
    to_device = COPY_KINDS_H2D if "cpu" in devices else ()  # host to device where the host is measured
    return skip + [Concurrent("copy_kind", v, src, g, size, (g,)) for size in sizes for g in gpus
                   for src, variants in (("cpu", to_device), (g, COPY_KINDS_D2D)) for v in variants]


def prepare(c: Concurrent, sync: Sync) -> Prepared:
    require_cuda(c)
    import torch

    gpu = torch.device(c.gpus[0])
    on_host = c.src == "cpu"
    where = "cpu" if on_host else c.src
    if c.variant == "strided":
        # Every other column of a twice-as-wide buffer: not dense, so no single memcpy can move it.
        rows, cols = c.shape
        src = pattern((rows, 2 * cols), where, pinned=on_host)[:, ::2]
    else:
        src = pattern(c.shape, where, pinned=on_host)
    half = torch.float16
    calls: dict[str, Callable[[], Any]] = {
        "memcpy": (lambda: src.to(gpu)) if on_host else src.clone,
        # Host: torch first makes the view contiguous in pageable host memory, then copies it.
        # Device: one elementwise copy kernel instead of a memcpy.
        "strided": lambda: src.to(gpu) if on_host else src.contiguous(),
        # Blocking: converted on the CPU, then the (pageable) result is copied; non_blocking:
        # copied as float32, then converted on the GPU by a kernel.
        "convert": lambda: src.to(gpu, half),
        "convert_nonblocking": lambda: src.to(gpu, half, non_blocking=True),
    }

    def check(result: Any) -> None:
        if result.device != gpu or tuple(result.shape) != tuple(src.shape):
            raise AssertionError(f"{c.id}: got {tuple(result.shape)} on {result.device}")
        equal(result, src, c.id)
    return Prepared(synced(calls[c.variant], sync), check=check)


def price(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu, n = c.gpus[0], c.size
    if c.src == "cpu":
        calls: dict[str, tuple[Callable[[], None], ...]] = {
            "memcpy": (lambda: m.copy("h2d_pinned", n, gpu, waits=True),),
            # made contiguous (or converted) on the host into pageable memory, then copied from there
            "strided": (lambda: m.host_copy(n), lambda: m.copy("h2d_pageable", n, gpu, waits=True)),
            "convert": (lambda: m.host_copy(n // 2), lambda: m.copy("h2d_pageable", n // 2, gpu, waits=True)),
            "convert_nonblocking": (lambda: m.copy("h2d_pinned", n, gpu, waits=False), lambda: m.kernel(n // 2, gpu)),
        }
    else:
        calls = {
            "memcpy": (lambda: m.copy("d2d", n, gpu, waits=False),),
            "strided": (lambda: m.kernel(n, gpu),),
            "convert": (lambda: m.kernel(n // 2, gpu),),
        }
    return Prepared(then_sync(sync, *calls[c.variant]))


FAMILY = ScenarioFamily("copy_kind", sizes((64 * MiB,), (MiB, 16 * MiB, 256 * MiB)), plan, prepare, price)
