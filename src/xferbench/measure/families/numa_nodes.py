"""Where a host buffer lives: the NUMA node of a mapping, the node and CPUs of a GPU's node or of the farthest
other one, and allocating with the process bound to them (the numa and all_gpus_host families)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ..hardware.numa import bound_to, distance, landed, node_cpus, numa_node_of, page_nodes
from .concurrent import NotPlaceable

__all__ = ["bound_to", "distance", "landed", "near", "numa_cpus", "numa_node_of", "page_nodes"]


def numa_cpus(local: set[int] | None, allowed: set[int], where: str,
              nodes: dict[int, set[int]] | None = None,
              far: Callable[[int, int], int | None] = distance) -> tuple[int | None, int | None, set[int]]:
    """The GPU's node (``local``: its CPUs), and the node and CPUs this process may use there or, ``remote``, on
    the other node farthest from it by SLIT distance (``far``): a misplaced buffer's worst case, never a sibling
    sub-node that shares the socket. A node is None where sysfs names none for the GPU's CPUs."""
    if not local:
        raise NotPlaceable("the GPU's NUMA node is unknown (no PCI address or sysfs local_cpulist)")
    nodes = node_cpus() if nodes is None else nodes
    home = next((node for node, cpus in nodes.items() if cpus & local), None)
    if where == "local":
        if not local & allowed:
            raise NotPlaceable("this process may not run on any CPU of the GPU's NUMA node")
        return home, home, local & allowed
    if not (others := [node for node, cpus in nodes.items() if cpus & allowed and not cpus & local]):
        raise NotPlaceable("no other NUMA node with CPUs this process may use: the machine has one node here")
    node = max(others, key=lambda n: (far(home, n) or 0) if home is not None else 0)
    return home, node, nodes[node] & allowed


def near(local: set[int] | None, allocate: Callable[[], Any]) -> Any:
    """``allocate()`` run on CPUs of a GPU's NUMA node (``local``), so the pages it first touches
    land on that node; where the node is unknown or off limits, where this thread runs."""
    try:
        _, node, cpus = numa_cpus(local, set(os.sched_getaffinity(0)), "local")
    except NotPlaceable:
        return allocate()
    with bound_to(cpus, node):
        return allocate()
