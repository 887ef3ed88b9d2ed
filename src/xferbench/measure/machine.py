"""The machine fingerprint written into pytest-benchmark's ``machine_info``.

Numbers are only comparable between runs on the same hardware and software, so
the fingerprint holds what changes transfer speed: torch and CUDA/HIP versions,
the driver, each device with its memory and link, and the peer-access matrix.
PCIe and NVLink come from NVML when nvidia-ml-py is installed; without it they
are recorded as unknown, never guessed.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from .devices import DeviceBackend, available_devices

__all__ = ["fingerprint"]


def fingerprint(backend: DeviceBackend) -> dict[str, Any]:
    import torch

    devices = available_devices(backend)[1:]
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "accelerator": backend.type,
        "driver": None,
        "host": {"processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count()},
        "devices": [_device(backend, i) for i in range(len(devices))],
        "peer_access": [[backend.can_access_peer(i, j) for j in range(len(devices))] for i in range(len(devices))],
        "nvml": False,
    }
    if backend.type == "cuda" and devices:
        _add_nvml(info)
    return info


def _device(backend: DeviceBackend, index: int) -> dict[str, Any]:
    memory = backend.memory_info(index)
    return {
        "index": index,
        "device": f"{backend.type}:{index}",
        "name": backend.device_name(index),
        "memory_bytes": None if memory is None else memory[1],
        "pcie_generation": None,
        "pcie_width": None,
        "pcie_max_generation": None,
        "pcie_max_width": None,
        "nvlink_links": None,
        "nvlink_version": None,
        "memory_peak_gbps": None,
    }


def _add_nvml(info: dict[str, Any]) -> None:
    """Fill driver, PCIe and NVLink facts from NVML; leave them None if it is absent."""
    try:
        import pynvml
    except ImportError:
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return
    try:
        info["nvml"] = True
        info["driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
        for device in info["devices"]:
            # NVML counts physical GPUs; CUDA_VISIBLE_DEVICES may reorder them, so
            # match on PCI bus id rather than index where torch can tell us.
            handle = _nvml_handle(pynvml, device["index"])
            device.update(_nvml_link(pynvml, handle))
    finally:
        pynvml.nvmlShutdown()


def _nvml_handle(pynvml: Any, index: int) -> Any:
    """NVML's handle for torch's device ``index``.

    NVML counts physical GPUs while CUDA_VISIBLE_DEVICES may hide or reorder them, so
    the device is matched on its PCI address where torch reports one.
    """
    import torch

    try:
        props = torch.cuda.get_device_properties(index)
        bus_id = f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus_id)
    except Exception:  # no PCI ids in this torch, or NVML does not know the address
        return pynvml.nvmlDeviceGetHandleByIndex(index)


def _nvml_link(pynvml: Any, handle: Any) -> dict[str, Any]:
    def ask(call: str) -> Any:
        try:
            return getattr(pynvml, call)(handle)
        except (pynvml.NVMLError, AttributeError):
            return None

    links, version = 0, None
    for link in range(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18)):
        try:
            if pynvml.nvmlDeviceGetNvLinkState(handle, link):
                links += 1
                version = version or pynvml.nvmlDeviceGetNvLinkVersion(handle, link)
        except pynvml.NVMLError:
            break
    memory_clock_mhz = None
    try:
        memory_clock_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
    except pynvml.NVMLError:
        pass
    bus_width = ask("nvmlDeviceGetMemoryBusWidth")
    # Double data rate: two transfers per clock over the whole bus.
    memory_peak = 2 * memory_clock_mhz * 1e6 * bus_width / 8 / 1e9 if memory_clock_mhz and bus_width else None
    return {
        "pcie_generation": ask("nvmlDeviceGetCurrPcieLinkGeneration"),
        "pcie_width": ask("nvmlDeviceGetCurrPcieLinkWidth"),
        "pcie_max_generation": ask("nvmlDeviceGetMaxPcieLinkGeneration"),
        "pcie_max_width": ask("nvmlDeviceGetMaxPcieLinkWidth"),
        "nvlink_links": links,
        "nvlink_version": version,
        "memory_peak_gbps": memory_peak,
    }


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
