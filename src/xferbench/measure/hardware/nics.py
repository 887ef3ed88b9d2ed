"""A node's network adapters and each GPU's nearest one, from sysfs: what NCCL's traffic between nodes crosses.

InfiniBand/RoCE adapters are under ``/sys/class/infiniband``, network interfaces under ``/sys/class/net``; each that
is a PCI device (not ``lo``, a bridge or a veth) has a ``device`` link into ``/sys/devices/pciDDDD:BB/...``, whose
path is the chain of bridges from the host bridge down to it, and a ``numa_node``. A GPU's nearest adapter is the
one whose chain shares the most bridges with the GPU's (behind one PCIe switch, NCCL's PIX/PXB: GPUDirect RDMA's
best case), then one on the same NUMA node. NVML cannot say it: its topology calls take two GPUs, not a NIC.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["adapters", "nearest", "numa_node"]

SYSFS = Path("/sys")


def numa_node(device: Path) -> int | None:
    """The NUMA node of a sysfs PCI device; None where sysfs does not say."""
    try:
        node = int((device / "numa_node").read_text().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None  # -1: a machine of one node, or firmware that does not say


def _chain(device: Path) -> tuple[str, ...]:
    """The PCI chain of a sysfs device, from its host bridge (``pci0000:00``) down to it."""
    parts = device.resolve().parts
    roots = [i for i, part in enumerate(parts) if part.startswith("pci")]
    return tuple(parts[roots[0]:]) if roots else ()


def adapters(sysfs: Path = SYSFS) -> list[dict[str, Any]]:
    """Each adapter that is a PCI device: its name, kind (``hca`` or ``net``), PCI address, NUMA node and PCI chain."""
    found = []
    for kind, folder in (("hca", "class/infiniband"), ("net", "class/net")):
        base = sysfs / folder
        if not base.is_dir():
            continue
        for entry in sorted(base.iterdir()):
            device = entry / "device"
            chain = _chain(device) if device.exists() else ()
            if chain:
                found.append({"name": entry.name, "kind": kind, "pci": chain[-1], "numa_node": numa_node(device),
                              "pci_chain": list(chain)})
    return found


def nearest(gpu_bus_id: str | None, found: list[dict[str, Any]], sysfs: Path = SYSFS) -> dict[str, Any] | None:
    """The adapter nearest the GPU at ``gpu_bus_id`` (``0000:1b:00.0``) and how they are joined; None where sysfs
    does not know the GPU or the node has no adapter. An HCA before a network interface at the same distance."""
    gpu = sysfs / "bus" / "pci" / "devices" / (gpu_bus_id or "").lower()
    if not gpu_bus_id or not gpu.exists() or not found:
        return None
    chain, numa = _chain(gpu), numa_node(gpu)

    def shared(adapter: dict[str, Any]) -> int:
        count = 0
        for mine, theirs in zip(chain, adapter["pci_chain"], strict=False):
            if mine != theirs:
                break
            count += 1
        return count

    best = max(found, key=lambda a: (shared(a), numa is not None and a["numa_node"] == numa, a["kind"] == "hca"))
    depth = shared(best)
    # The chain starts at the host bridge, then the root port, which has one link: two devices below one root port
    # are behind a switch.
    via = ("PCIe switch" if depth >= 2 else "host bridge" if depth >= 1 else
           "NUMA node" if numa is not None and best["numa_node"] == numa else "across NUMA nodes")
    return {"name": best["name"], "kind": best["kind"], "pci": best["pci"], "via": via}
