"""all_gpus_host: every GPU copying to (or from) the host at once, next to one GPU alone: a shared PCIe
switch or root complex shows as a lower aggregate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...measure.cases import Skipped
from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, then_sync
from ...measure.families.concurrent import Concurrent, Planned, cuda_gpus, equal, pattern, require_cuda, streamed
from ...measure.families.numa_nodes import near, numa_node_of
from ...measure.families.scenario import empty_host_cache
from ...measure.hardware.machine import gpu_local_cpus
from ...measure.hardware.probe import pci_bus_id


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = cuda_gpus("all_gpus_host", devices)
    if skip:
        return skip
    if len(gpus) < 2:
        return [Skipped("all_gpus_host-needs-two-accelerators",
                        f"all_gpus_host loads the host link from every GPU at once; it needs two or more, found "
                        f"{len(gpus)} ({', '.join(gpus)}): see bidir and h2d for one GPU")]
    every, one = tuple(gpus), gpus[0]
    return [c for size in sizes for c in (
        Concurrent("all_gpus_host", "h2d_one", "cpu", one, size, (one,)),
        Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", size, every),
        Concurrent("all_gpus_host", "d2h_one", one, "cpu", size, (one,)),
        Concurrent("all_gpus_host", "d2h_all", "all:cuda", "cpu", size, every),
    )]


def prepare(c: Concurrent, sync: Sync) -> Prepared:
    require_cuda(c)
    import torch

    to_device = c.variant.startswith("h2d")
    legs = []
    empty_host_cache()  # a cached pinned block would sit wherever it was first allocated
    for gpu in c.gpus:
        # Each GPU's host buffer on its own node: on 2 sockets, half the GPUs would otherwise
        # cross the socket link and the host link be blamed for it.
        local = gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(gpu))))
        host = near(local, lambda: pattern(c.shape, "cpu", pinned=True) if to_device else torch.empty(c.shape, pin_memory=True))
        device = torch.empty(c.shape, device=gpu) if to_device else pattern(c.shape, gpu)
        legs.append((streamed(gpu), host, device))
    nodes = [numa_node_of(host.data_ptr()) for _, host, _ in legs]
    sync()

    def queue() -> None:
        # Every copy is queued before any is waited for, so they all run at once.
        for stream, host, device in legs:
            with torch.cuda.stream(stream):
                (device.copy_(host, non_blocking=True) if to_device else host.copy_(device, non_blocking=True))

    def check(_: Any) -> None:
        for _stream, host, device in legs:
            equal(device, host, f"{c.id} {device.device}")
    return Prepared(then_sync(sync, queue), check=check, extra={"host_numa_nodes": nodes})


def price(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    direction = c.variant.split("_")[0]
    shared = m.spec.shared_host_GBps
    cap = None if shared is None else shared / len(c.gpus)
    legs = [lambda gpu=gpu: m.copy(f"{direction}_pinned", c.size, gpu, waits=False, stream=direction, cap=cap) for gpu in c.gpus]
    return Prepared(then_sync(sync, *legs))


FAMILY = ScenarioFamily("all_gpus_host", sizes((64 * MiB,), (4 * MiB, 64 * MiB, 256 * MiB)), plan, prepare, price)
