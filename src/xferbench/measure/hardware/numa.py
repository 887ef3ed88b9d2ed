"""Where host memory lives: the NUMA nodes of a buffer's pages, the nodes' CPUs and SLIT distances, and a whole
process bound to chosen CPUs with its memory preferred on their node while a case runs (the numa and all_gpus_host
families, and the core families' host buffers: measure/host_side.py)."""

from __future__ import annotations

import ctypes
import functools
import os
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from .machine import parse_cpu_list

__all__ = ["bound_to", "distance", "landed", "node_cpus", "numa_node_of", "page_nodes"]

SYSFS_NODES = Path("/sys/devices/system/node")
#: Pages of a buffer asked of the kernel at most, spread evenly over it: enough to see a spill of 1/1000.
SAMPLED_PAGES = 1024


@functools.cache
def _libnuma() -> ctypes.CDLL | None:
    """libnuma, where it is installed and the kernel has NUMA; None otherwise (placement then rests on CPUs)."""
    try:
        lib = ctypes.CDLL("libnuma.so.1", use_errno=True)
    except OSError:
        return None
    return lib if lib.numa_available() >= 0 else None


def node_cpus(root: Path = SYSFS_NODES) -> dict[int, set[int]]:
    """Each NUMA node's CPUs (sysfs)."""
    nodes = {}
    for folder in root.glob("node[0-9]*"):
        with suppress(OSError, ValueError):
            nodes[int(folder.name[4:])] = parse_cpu_list((folder / "cpulist").read_text())
    return nodes


def distance(a: int, b: int, root: Path = SYSFS_NODES) -> int | None:
    """The SLIT distance from node ``a`` to node ``b`` (10: the node itself), None where sysfs does not say."""
    try:
        row = (root / f"node{a}" / "distance").read_text().split()
        return int(row[sorted(node_cpus(root)).index(b)])
    except (OSError, ValueError, IndexError):
        return None


def _mapping_pages(address: int, maps: str | None) -> dict[int, int]:
    """Pages per node of the mapping at ``address`` (``/proc/self/numa_maps``): the whole mapping, not the buffer."""
    if maps is None:
        try:
            maps = Path("/proc/self/numa_maps").read_text()
        except OSError:
            return {}
    pages: dict[int, int] = {}
    for line in maps.splitlines():
        start, _, rest = line.partition(" ")
        try:
            begins = int(start, 16)
        except ValueError:
            continue
        if begins > address:
            break
        pages = {int(n): int(count) for n, count in re.findall(r"\bN(\d+)=(\d+)", rest)}
    return pages


def numa_node_of(address: int, maps: str | None = None) -> int | None:
    """The NUMA node holding most pages of the mapping at ``address`` (``/proc/self/numa_maps``)."""
    pages = _mapping_pages(address, maps)
    return max(pages, key=lambda node: pages[node]) if pages else None


def page_nodes(address: int, nbytes: int) -> dict[int, int]:
    """Pages of the buffer at ``address`` per node: each of up to ``SAMPLED_PAGES`` pages spread over it asked of the
    kernel (move_pages through libnuma, moving nothing), else the counts of the mapping that holds it."""
    if (lib := _libnuma()) is None:
        return _mapping_pages(address, None)
    size = os.sysconf("SC_PAGE_SIZE")
    first, count = address // size, max(1, -(-(address % size + nbytes) // size))
    pages = [(first + i) * size for i in range(0, count, max(1, count // SAMPLED_PAGES))]
    status = (ctypes.c_int * len(pages))()
    asked = (ctypes.c_void_p * len(pages))(*pages)
    if lib.numa_move_pages(0, ctypes.c_ulong(len(pages)), asked, None, status, 0) != 0:  # pid 0: this process
        return _mapping_pages(address, None)
    return dict(Counter(node for node in status if node >= 0))  # a negative status: a page not yet touched


def landed(pages: dict[int, int], asked: int | None, placement: str) -> dict[str, Any]:
    """What a buffer asked for on node ``asked`` records: the node holding most of its ``pages`` and ``placement``,
    or ``spilled`` where a page of it sits on another node; the placement alone without pages."""
    if not pages:
        return {"host_placement": placement}
    spilled = asked is not None and any(node != asked for node in pages)
    return {"host_placement": "spilled" if spilled else placement, "host_numa_node": max(pages, key=pages.__getitem__)}


def _threads() -> list[int]:
    return [int(task.name) for task in Path("/proc/self/task").iterdir()]


def _affinity(task: int, cpus: set[int] | None = None) -> set[int] | None:
    """The CPUs thread ``task`` may run on, set to ``cpus`` first where given; None once the thread has ended."""
    try:
        if cpus is not None:
            os.sched_setaffinity(task, cpus)
        return os.sched_getaffinity(task)
    except ProcessLookupError:
        return None


@contextmanager
def bound_to(cpus: set[int], node: int | None = None) -> Iterator[None]:
    """Run every thread of the process on ``cpus`` (torch's intra-op pool too: the threads that fill a tensor place
    its pages), threads started meanwhile included, and prefer ``node`` for the calling thread's new memory
    (libnuma, where present: pages it touches land there while the node has room); everything as before after."""
    mine = os.sched_getaffinity(0)
    before = {task: _affinity(task) for task in _threads()}
    for task in before:
        _affinity(task, cpus)
    lib = _libnuma() if node is not None else None
    if lib is not None:
        lib.numa_set_preferred(node)
    try:
        yield
    finally:
        if lib is not None:
            lib.numa_set_localalloc()
        for task in _threads():  # a thread started inside inherited the binding: it gets the process's own back
            _affinity(task, before.get(task) or mine)
