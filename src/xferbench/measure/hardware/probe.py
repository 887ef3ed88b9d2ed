"""What the GPU management library says about each GPU: NVML on NVIDIA GPUs (nvidia-ml-py); none is read on ROCm.

Shared by the fingerprint (``machine.py``), the link classes of the peer plan (``topology.py``) and the
clocks read around each benchmark (``session/run_state.py``). Every GPU is matched by its PCI address
(then its UUID), never by index: NVML counts GPUs in PCI order, CUDA fastest first. A library that is
absent, fails to start or cannot answer leaves a fact unknown (None), never guessed. This module imports
nothing of the suite: it sits below every module that asks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .devices import DeviceBackend

__all__ = [
    "NVLINK_GENERATIONS",
    "clocks_and_link_now",
    "cuda_properties",
    "nvlink_generation",
    "nvlinks",
    "nvml_affinity",
    "nvml_facts",
    "nvml_handle",
    "nvml_session",
    "pci_bus_id",
    "text",
]

#: NVML's ``nvmlNvlinkVersion_t`` (what nvmlDeviceGetNvLinkVersion returns) -> NVLink
#: generation. The enum is not the generation: 6 is NVLink 4.0 (H100/H200).
NVLINK_GENERATIONS = {1: "1.0", 2: "2.0", 3: "2.2", 4: "3.0", 5: "3.1", 6: "4.0", 7: "5.0", 8: "6.0"}
_HOPPER = 9  # NVML_DEVICE_ARCH_HOPPER
_NVLINK_TO_SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH (nvmlIntNvLinkDeviceType_t)
#: NVML's errors past a GPU's last NVLink (INVALID_ARGUMENT, NOT_SUPPORTED); None: an error without a code.
_NO_MORE_LINKS = (2, 3, None)


def cuda_properties(backend: DeviceBackend, index: int) -> Any:
    """torch's device properties of a real CUDA device (no context needed), else None."""
    if backend.type != "cuda" or not getattr(backend, "torch_devices", False):  # a fake's or a simulated GPU
        return None
    import torch

    with suppress(RuntimeError, AssertionError):
        return torch.cuda.get_device_properties(index)
    return None


def pci_bus_id(props: Any) -> str | None:
    """``0000:18:00.0``, the form sysfs and NVML both accept, from torch's PCI ids."""
    with suppress(AttributeError, TypeError, ValueError):
        return f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
    return None


@contextmanager
def nvml_session() -> Iterator[Any]:
    """pynvml, initialized, or None when nvidia-ml-py or the driver is absent."""
    try:
        import pynvml
    except ImportError:
        yield None
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        yield None
        return
    try:
        yield pynvml
    finally:
        pynvml.nvmlShutdown()


def nvml_handle(pynvml: Any, props: Any) -> Any:
    """NVML's handle for the GPU torch describes in ``props``, or None.

    NVML counts physical GPUs in PCI order, while CUDA orders them fastest first and
    CUDA_VISIBLE_DEVICES hides or reorders them: the index means nothing across the
    two, so the GPU is matched on its PCI address, then on its UUID, never by index.
    """
    bus_id, uuid = pci_bus_id(props), str(getattr(props, "uuid", None) or "")
    handle = _ask(pynvml, "nvmlDeviceGetHandleByPciBusId", bus_id) if bus_id else None
    if handle is None and uuid:
        handle = _ask(pynvml, "nvmlDeviceGetHandleByUUID", (uuid if uuid.startswith("GPU-") else f"GPU-{uuid}").encode())
    return handle


def _ask(pynvml: Any, call: str, *args: Any) -> Any:
    try:
        return getattr(pynvml, call)(*args)
    except (pynvml.NVMLError, AttributeError):
        return None


def nvlink_generation(pynvml: Any, handle: Any, enum: int) -> str | None:
    """The NVLink generation behind NVML's version enum, e.g. 6 -> ``4.0``."""
    generation = NVLINK_GENERATIONS.get(enum)
    if generation == "5.0" and _ask(pynvml, "nvmlDeviceGetArchitecture", handle) == _HOPPER:
        generation = "4.0"  # some drivers report 5.0 for Hopper, which has NVLink 4
    return generation


def _bus(nvml_bus_id: Any) -> str:
    """NVML's ``00000000:18:00.0`` as ``pci_bus_id`` writes it: ``0000:18:00.0``."""
    domain, rest = text(nvml_bus_id).lower().split(":", 1)
    return f"{int(domain, 16):04x}:{rest}"


def _link_end(pynvml: Any, handle: Any, link: int) -> str | None:
    """What an active NVLink joins: ``nvswitch``, the far GPU's PCI address, or None when NVML cannot say."""
    if _ask(pynvml, "nvmlDeviceGetNvLinkRemoteDeviceType", handle, link) == _NVLINK_TO_SWITCH:
        return "nvswitch"
    far = _ask(pynvml, "nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
    bus = getattr(far, "busId", None) or getattr(far, "busIdLegacy", None)
    return _bus(bus) if bus else None


def nvlinks(pynvml: Any, handle: Any) -> tuple[int, int | None, dict[str, int] | None]:
    """A GPU's active NVLinks: how many, NVML's version enum of the first, and where they go (``nvswitch`` or a
    GPU's PCI address -> links: a peer copy uses the links between its pair only). The map is None once a
    link's far end is unknown, so that no pair is under-counted."""
    links, enum = 0, None
    remote: dict[str, int] | None = {}
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if pynvml.nvmlDeviceGetNvLinkState(handle, link):
                links += 1
                enum = enum or pynvml.nvmlDeviceGetNvLinkVersion(handle, link)
                end = _link_end(pynvml, handle, link)
                remote = None if remote is None or end is None else remote | {end: remote.get(end, 0) + 1}
        except pynvml.NVMLError as error:
            # Past the GPU's last link (or a GPU without NVLink): NOT_SUPPORTED or INVALID_ARGUMENT. Any other
            # failure before a link was found (NO_PERMISSION, UNKNOWN) leaves the links unknown, not absent.
            if not links and getattr(error, "value", None) not in _NO_MORE_LINKS:
                remote = None
            break
    return links, enum, remote


def nvml_facts(pynvml: Any, handle: Any) -> dict[str, Any]:
    links, enum, remote = nvlinks(pynvml, handle)
    memory_clock_mhz = _ask(pynvml, "nvmlDeviceGetMaxClockInfo", handle, pynvml.NVML_CLOCK_MEM)
    bus_width = _ask(pynvml, "nvmlDeviceGetMemoryBusWidth", handle)
    # Double data rate: two transfers per clock over the whole bus; reads and writes share it.
    memory_peak = 2 * memory_clock_mhz * 1e6 * bus_width / 8 / 1e9 if memory_clock_mhz and bus_width else None
    return {
        "pcie_generation": _ask(pynvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_width": _ask(pynvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
        "pcie_max_generation": _ask(pynvml, "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        "pcie_max_width": _ask(pynvml, "nvmlDeviceGetMaxPcieLinkWidth", handle),
        "nvlink_links": links,
        "nvlink_version": None if enum is None else nvlink_generation(pynvml, handle, enum),
        "nvlink_remote": remote,
        "memory_peak_gbps": memory_peak,
        "numa_node": _ask(pynvml, "nvmlDeviceGetNumaNodeId", handle),
        "sm_clock_max_mhz": _ask(pynvml, "nvmlDeviceGetMaxClockInfo", handle, getattr(pynvml, "NVML_CLOCK_SM", 1)),
        "memory_clock_max_mhz": memory_clock_mhz,
    }


def nvml_affinity(pynvml: Any, handle: Any) -> set[int] | None:
    """The CPUs NVML calls ideal for the GPU (its NUMA node), from 64-bit mask words."""
    count = os.cpu_count() or 64
    words = _ask(pynvml, "nvmlDeviceGetCpuAffinity", handle, (count + 63) // 64) or ()
    return {64 * w + bit for w, word in enumerate(words) for bit in range(64) if int(word) >> bit & 1} or None


def clocks_and_link_now(pynvml: Any, handle: Any) -> dict[str, int | None]:
    """Clocks and PCIe link now (they drop when a GPU idles), for a benchmark's extra_info."""
    return {
        "sm_clock_mhz": _ask(pynvml, "nvmlDeviceGetClockInfo", handle, getattr(pynvml, "NVML_CLOCK_SM", 1)),
        "memory_clock_mhz": _ask(pynvml, "nvmlDeviceGetClockInfo", handle, pynvml.NVML_CLOCK_MEM),
        "pcie_generation_now": _ask(pynvml, "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "pcie_width_now": _ask(pynvml, "nvmlDeviceGetCurrPcieLinkWidth", handle),
    }


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
