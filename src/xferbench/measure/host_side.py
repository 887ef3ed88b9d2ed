"""The host side of a core case's move, placed as a user's would be.

A host<->device case runs with the whole process on CPUs of its GPU's NUMA node and its memory preferred there, so
the host buffers it allocates (its source, its destination, every fresh result of ``.cpu()``) land there, as
nvbandwidth places them by default; what landed where is read back and recorded (``host_numa_node``,
``host_placement``: ``spilled`` where the node was full). The ``numa`` family measures the remote case.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .cases import Case
from .hardware.devices import DeviceBackend, accelerator_index
from .hardware.numa import bound_to, landed, node_cpus, page_nodes

__all__ = ["Landed", "empty_host_cache", "gpu_cpus", "near_gpu"]

#: What ``near_gpu`` yields: given the case's buffers and a fresh result, the extra_info saying where its host
#: buffer landed.
Landed = Callable[..., dict[str, Any]]
#: The CPUs bound last, so a change of node empties the host cache once (below).
_last_bound: list[frozenset[int] | None] = [None]


def empty_host_cache(wedged: bool, backend: Any = None) -> None:
    """Give the pinned blocks torch's caching host allocator holds back to the driver (the backend's own where it
    has one: a fake's); never once a copy is stuck (cudaFreeHost synchronizes implicitly: it would wait for ever)."""
    if wedged:
        return
    if hasattr(backend, "empty_host_cache"):
        backend.empty_host_cache()
        return
    if getattr(backend, "simulated", False):  # its pinned buffers are plain host memory: no driver cache to empty
        return
    import torch

    if (accelerator := getattr(torch, "accelerator", None)) is not None and hasattr(accelerator, "empty_host_cache"):
        accelerator.empty_host_cache()
    elif hasattr(torch._C, "_host_emptyCache"):  # torch < 2.9
        torch._C._host_emptyCache()


def gpu_cpus(device: str, backend: DeviceBackend) -> set[int] | None:
    """The CPUs of ``device``'s NUMA node: the backend's answer where it has one (a fake's), else sysfs by the GPU's
    PCI address; None where unknown or where the backend keeps the device's tensors elsewhere (not a real GPU)."""
    if (known := getattr(backend, "gpu_local_cpus", None)) is not None:
        return known(device)
    if backend.tensor_device(device) != device:
        return None
    import torch

    from .hardware.machine import gpu_local_cpus
    from .hardware.probe import pci_bus_id

    if not device.startswith("cuda:") or not torch.cuda.is_available():
        return None  # another accelerator, or a fake GPU on a machine without CUDA: where it runs
    return gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(device))))


def _pages(case: Case, buffers: Any, result: Any, reader: Callable[[int, int], dict[int, int]]) -> dict[int, int]:
    """Pages per node of the case's host buffer: an h2d source, a d2h copy_ destination, or an allocating d2h call's
    fresh result (a call's own, made while bound: none on the simulated machine, whose timed calls make none)."""
    host = buffers.src if case.op == "h2d" else result if buffers.dst is None else buffers.dst
    return {} if host is None else reader(host.data_ptr(), host.nbytes)


def _gpu_node(gpu: str, backend: DeviceBackend, cpus: set[int]) -> int | None:
    """The GPU's NUMA node: the spec's on the simulated machine, else the node whose CPUs are the GPU's."""
    if (simulated := getattr(backend, "host_numa_node", None)) is not None:
        return simulated(gpu)
    return next((node for node, on in node_cpus().items() if on & cpus), None)


@contextmanager
def near_gpu(case: Case, backend: DeviceBackend, wedged: bool = False) -> Iterator[Landed]:
    """Run a host<->device case bound to its GPU's NUMA node: every thread of the process on the node's CPUs, the
    calling thread's new memory preferred there (``numa.bound_to``); yield what says, given the case's buffers and a
    fresh result of its call, where its host buffer landed: the node holding most of its pages, and ``spilled``
    where any page of it sits on another node. The node's pages are read from the backend where it keeps them (the
    simulated machine: on the node of the CPUs the reading thread runs on), else from the kernel."""
    gpu = case.dst if case.op == "h2d" else case.src
    if case.op not in ("h2d", "d2h") or accelerator_index(gpu) is None or (
            backend.simulated and _gpu_node(gpu, backend, set()) is None):  # a spec of one node: nothing to place
        yield lambda *_: {}
        return
    cpus = (gpu_cpus(gpu, backend) or set()) & set(os.sched_getaffinity(0))
    node = _gpu_node(gpu, backend, cpus)
    reader = getattr(backend, "page_nodes", page_nodes)
    if not cpus:  # the node is unknown, or this process may not run there: where it runs, and said so
        yield lambda buffers, result=None: landed(_pages(case, buffers, result, reader), None, "unbound")
        return
    if _last_bound[0] is not None and _last_bound[0] != frozenset(cpus):
        # A pinned block cached from a case on another node would be handed back, and sit there.
        empty_host_cache(wedged, backend)
    _last_bound[0] = frozenset(cpus)
    with bound_to(cpus, None if backend.simulated else node):  # a simulated node has no memory of its own
        yield lambda buffers, result=None: landed(_pages(case, buffers, result, reader), node, "gpu_node")
