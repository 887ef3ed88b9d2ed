"""The host side of a core case's move, placed as a user's would be.

A host<->device case runs on CPUs of its GPU's NUMA node, so the host buffers it allocates (its source, its
destination, every fresh result of ``.cpu()``) land there, as nvbandwidth places them by default; what landed
where is recorded (``host_numa_node``, ``host_placement``). The ``numa`` family keeps measuring the remote case.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .cases import Case
from .hardware.devices import DeviceBackend, accelerator_index
from .hardware.numa import bound_to, numa_node_of

__all__ = ["Landed", "empty_host_cache", "gpu_cpus", "near_gpu"]

#: What ``near_gpu`` yields: given the case's buffers, the extra_info saying where its host buffer landed.
Landed = Callable[[Any], dict[str, Any]]
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
    import torch

    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "empty_host_cache"):
        accelerator.empty_host_cache()
    elif hasattr(torch._C, "_host_emptyCache"):  # torch < 2.9
        torch._C._host_emptyCache()


def gpu_cpus(device: str, backend: DeviceBackend) -> set[int] | None:
    """The CPUs of ``device``'s NUMA node: the backend's answer where it has one (a fake's), else sysfs by the GPU's
    PCI address; None where unknown or where the backend keeps the device's tensors elsewhere (not a real GPU)."""
    known = getattr(backend, "gpu_local_cpus", None)
    if known is not None:
        return known(device)
    if backend.tensor_device(device) != device:
        return None
    import torch

    from .hardware.machine import gpu_local_cpus
    from .hardware.probe import pci_bus_id

    if not device.startswith("cuda:") or not torch.cuda.is_available():
        return None  # another accelerator, or a fake GPU on a machine without CUDA: where it runs
    return gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(device))))


def _host_buffer(case: Case, buffers: Any) -> Any:
    """The host buffer the case prepared: an h2d source, a d2h copy_ destination (None for an allocating d2h call,
    whose results are fresh each call and land where the bound thread runs)."""
    return buffers.src if case.op == "h2d" else buffers.dst


@contextmanager
def near_gpu(case: Case, backend: DeviceBackend, wedged: bool = False,
             maps: Callable[[], str | None] = lambda: None) -> Iterator[Landed]:
    """Run a host<->device case on CPUs of its GPU's NUMA node; yield what says where its host buffer landed.

    On a simulated machine of several nodes (``numa_nodes``) the node is the spec's (GPU i on node i x nodes / gpus,
    priced local); with one node nothing is recorded: the run is as before. ``maps``: the numa_maps text to read
    (None: the process's own), for tests."""
    gpu = case.dst if case.op == "h2d" else case.src
    if case.op not in ("h2d", "d2h") or accelerator_index(gpu) is None:
        yield lambda _: {}
        return
    simulated = getattr(backend, "host_numa_node", None)
    if backend.simulated:
        node = simulated(gpu) if simulated is not None else None
        yield lambda _: {} if node is None else {"host_numa_node": node, "host_placement": "gpu_node"}
        return
    local = gpu_cpus(gpu, backend)
    cpus = (local or set()) & set(os.sched_getaffinity(0))
    if not cpus:  # the node is unknown, or this process may not run there: where it runs, and said so
        yield lambda buffers: _landed(case, buffers, "unbound", maps)
        return
    if _last_bound[0] is not None and _last_bound[0] != frozenset(cpus):
        # A pinned block cached from a case on another node would be handed back, and sit there.
        empty_host_cache(wedged, backend)
    _last_bound[0] = frozenset(cpus)
    with bound_to(cpus):
        yield lambda buffers: _landed(case, buffers, "gpu_node", maps)


def _landed(case: Case, buffers: Any, placement: str, maps: Callable[[], str | None]) -> dict[str, Any]:
    host = _host_buffer(case, buffers)
    node = None if host is None else numa_node_of(host.data_ptr(), maps())
    return {"host_placement": placement, **({} if node is None else {"host_numa_node": node})}
