"""Where host memory lives: the NUMA node of a mapping, and running the calling thread on chosen CPUs so the
memory it first touches lands on their node (the numa and all_gpus_host families, and the core families' host
buffers: measure/host_side.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["bound_to", "numa_node_of"]


def numa_node_of(address: int, maps: str | None = None) -> int | None:
    """The NUMA node holding most pages of the mapping at ``address`` (``/proc/self/numa_maps``)."""
    if maps is None:
        try:
            maps = Path("/proc/self/numa_maps").read_text()
        except OSError:
            return None
    best: int | None = None
    for line in maps.splitlines():
        start, _, rest = line.partition(" ")
        try:
            begins = int(start, 16)
        except ValueError:
            continue
        if begins > address:
            break
        pages = {int(n): int(count) for n, count in re.findall(r"\bN(\d+)=(\d+)", rest)}
        best = max(pages, key=lambda node: pages[node]) if pages else None
    return best


@contextmanager
def bound_to(cpus: set[int]) -> Iterator[None]:
    """Run the calling thread on ``cpus``: memory it first touches lands on their node."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
