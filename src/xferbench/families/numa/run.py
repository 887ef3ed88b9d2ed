"""numa: pinned copies with the host buffer on the GPU's NUMA node against one on the farthest other node (placed
by allocating and filling it with every thread of the process bound to that node's CPUs and its memory preferred
there, and checked page by page: ``spilled`` where a page sits elsewhere)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, index, sizes, synced, then_sync
from ...measure.families.concurrent import Concurrent, NotPlaceable, Planned, cuda_gpus, equal, pattern, require_cuda
from ...measure.families.numa_nodes import bound_to, distance, landed, numa_cpus, page_nodes
from ...measure.families.scenario import empty_host_cache
from ...measure.hardware.machine import gpu_local_cpus
from ...measure.hardware.probe import pci_bus_id


def plan(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = cuda_gpus("numa", devices)
    return skip + [
        Concurrent("numa", f"{direction}_{where}", *(("cpu", g) if direction == "h2d" else (g, "cpu")), size, (g,))
        for size in sizes for g in gpus for direction in ("h2d", "d2h") for where in ("local", "remote")]


def placed(where: str, home: int | None, node: int | None, pages: dict[int, int]) -> dict[str, Any]:
    """What a buffer asked for on ``node`` records (``numa.landed``), and the SLIT distance from the GPU's node
    (``home``) to the one holding most of it."""
    said = landed(pages, node, "gpu_node" if where == "local" else "remote_node")
    on = said.get("host_numa_node")
    return said | {"numa_distance": distance(home, on) if home is not None and on is not None else None}


def prepare(c: Concurrent, sync: Sync) -> Prepared:
    require_cuda(c)
    import torch

    gpu = c.gpus[0]
    direction, where = c.variant.split("_")
    local = gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(gpu))))
    home, node, cpus = numa_cpus(local, set(os.sched_getaffinity(0)), where)
    with bound_to(cpus, node):
        empty_host_cache()  # a cached pinned block would sit wherever it was first allocated
        host = torch.empty(c.shape, pin_memory=True)  # cudaHostAlloc places the pages from this thread
        host.copy_(pattern(c.shape, "cpu"))
    device = pattern(c.shape, gpu) if direction == "d2h" else torch.empty(c.shape, device=gpu)
    sync()
    dst, src = (device, host) if direction == "h2d" else (host, device)
    call = synced(lambda: dst.copy_(src, non_blocking=True), sync)

    def check(_: Any) -> None:
        equal(device, host, c.id)
    return Prepared(call, check=check, extra=placed(where, home, node, page_nodes(host.data_ptr(), host.nbytes)))


def price(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu = c.gpus[0]
    direction, where = c.variant.split("_")
    nodes = m.spec.numa_nodes
    if where == "remote" and nodes < 2:
        raise NotPlaceable("no other NUMA node: the simulated machine has one (numa_nodes in its spec)")
    local = index(gpu) * nodes // m.spec.gpus
    node = local if where == "local" else (local + 1) % nodes
    cap = m.spec.remote_GBps if where == "remote" else None
    call = then_sync(sync, lambda: m.copy(f"{direction}_pinned", c.size, gpu, waits=False, cap=cap))
    extra = placed(where, None, node, {node: 1}) | {"numa_distance": 10 if node == local else 21}  # SLIT: one hop
    return Prepared(call, extra=extra)


FAMILY = ScenarioFamily("numa", sizes((256 * MiB,), (64 * MiB, 256 * MiB)), plan, prepare, price)
