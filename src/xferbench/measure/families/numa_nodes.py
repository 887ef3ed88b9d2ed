"""Where a host buffer lives: the NUMA node of a mapping, the CPUs of a GPU's node or of another one,
and allocating from a thread bound to them (the numa and all_gpus_host families)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..hardware.machine import parse_cpu_list
from ..hardware.numa import bound_to, numa_node_of
from .concurrent import NotPlaceable

__all__ = ["bound_to", "near", "numa_cpus", "numa_node_of"]

SYSFS_NODES = Path("/sys/devices/system/node")


def _node_cpus(root: Path = SYSFS_NODES) -> dict[int, set[int]]:
    nodes = {}
    for folder in root.glob("node[0-9]*"):
        try:
            nodes[int(folder.name[4:])] = parse_cpu_list((folder / "cpulist").read_text())
        except (OSError, ValueError):
            continue
    return nodes


def numa_cpus(local: set[int] | None, allowed: set[int], where: str,
              nodes: dict[int, set[int]] | None = None) -> set[int]:
    """CPUs this process may use on the GPU's node (``local``) or on another node (``remote``)."""
    if not local:
        raise NotPlaceable("the GPU's NUMA node is unknown (no PCI address or sysfs local_cpulist)")
    if where == "local":
        cpus = local & allowed
        if not cpus:
            raise NotPlaceable("this process may not run on any CPU of the GPU's NUMA node")
        return cpus
    for node_cpus in (_node_cpus() if nodes is None else nodes).values():
        cpus = (node_cpus - local) & allowed
        if cpus and not node_cpus & local:
            return cpus
    raise NotPlaceable("no other NUMA node with CPUs this process may use: the machine has one node here")


def near(local: set[int] | None, allocate: Callable[[], Any]) -> Any:
    """``allocate()`` run on CPUs of a GPU's NUMA node (``local``), so the pages it first touches
    land on that node; where the node is unknown or off limits, where this thread runs."""
    try:
        cpus = numa_cpus(local, set(os.sched_getaffinity(0)), "local")
    except NotPlaceable:
        return allocate()
    with bound_to(cpus):
        return allocate()
