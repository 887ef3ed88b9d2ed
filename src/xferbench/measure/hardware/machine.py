"""The machine fingerprint written into pytest-benchmark's ``machine_info``.

Numbers are only comparable between runs on the same hardware and software, so
the fingerprint holds what changes transfer speed: torch and CUDA/HIP versions,
the driver, each device with its memory, caches and link, where it sits (NUMA),
the peer-access matrix, and the host's caches. PCIe, NVLink and clocks come from
NVML when nvidia-ml-py is installed and the GPU can be matched by PCI address or
UUID (not on ROCm); otherwise they are recorded as unknown, never guessed.

Device facts come from device properties, which need no CUDA context: the
fingerprint creates none on GPUs that ``--xfer-devices`` leaves out.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable
from contextlib import suppress
from itertools import groupby
from pathlib import Path
from typing import Any

from .devices import DeviceBackend, available_devices
from .probe import cuda_properties, nvml_affinity, nvml_facts, nvml_handle, nvml_session, pci_bus_id, text

__all__ = [
    "cache_resident",
    "cpu_list",
    "device_l2_bytes",
    "fingerprint",
    "glibc_version",
    "gpu_local_cpus",
    "host_cache_bytes",
    "load_snapshot",
    "machine_load",
    "parse_cpu_list",
    "run_facts",
    "transparent_hugepage",
]


SYSFS_CPU = Path("/sys/devices/system/cpu")
SYSFS_PCI = Path("/sys/bus/pci/devices")
SYSFS_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def fingerprint(backend: DeviceBackend) -> dict[str, Any]:
    import torch

    devices = available_devices(backend)[1:]
    props = [cuda_properties(backend, i) for i in range(len(devices))]
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "accelerator": backend.type,
        "driver": None,
        "host": {"processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
                 "cache_bytes": host_cache_bytes(), "process_cpus": cpu_list(_process_cpus()),
                 # What a fresh host allocation costs: who maps it (glibc), in what pages (THP),
                 # and how many threads touch it (torch's intra-op pool).
                 "transparent_hugepage": transparent_hugepage(), "glibc": glibc_version(),
                 "torch_threads": torch.get_num_threads()},
        "devices": [_device(backend, i, props[i]) for i in range(len(devices))],
        "peer_access": [[backend.can_access_peer(i, j) for j in range(len(devices))] for i in range(len(devices))],
        "nvml": False,
        "pytest_benchmark": _version("pytest-benchmark"),
    }
    if backend.type == "cuda" and devices and not info["hip"]:
        _add_nvml(info, props)
    for device in info["devices"]:
        _add_numa(device, device.pop("_nvml_affinity", None))
    return info


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    with suppress(PackageNotFoundError):
        return version(package)
    return None


#: /proc/stat's cpu line: user nice system idle iowait irq softirq steal (jiffies of all CPUs).
PROC_STAT = Path("/proc/stat")


def load_snapshot(stat: Path = PROC_STAT) -> dict[str, Any]:
    """The counters ``machine_load`` needs at one moment: wall clock, this process's CPU time, /proc/stat."""
    times = os.times()
    jiffies: list[int] = []
    with suppress(OSError, ValueError):  # not Linux
        jiffies = [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:9]]
    return {"wall": times.elapsed, "own": times.user + times.system + times.children_user + times.children_system,
            "jiffies": jiffies if len(jiffies) == 8 else None, "load": _loadavg()}


def _loadavg() -> float | None:
    with suppress(OSError):
        return round(os.getloadavg()[0], 2)
    return None


def machine_load(start: dict[str, Any] | None, stat: Path = PROC_STAT) -> dict[str, Any]:
    """How busy the machine was around the run since ``start`` (a ``load_snapshot``).

    A benchmark shares the machine with whatever else runs there: the 1-minute load average
    before and after, the share of CPU time the hypervisor stole, and the share of all CPUs'
    time used by processes other than this one (and its children). None where unknown.
    """
    end = load_snapshot(stat)
    cpus = os.cpu_count() or 1
    steal = others = None
    if start is not None and start["jiffies"] and end["jiffies"]:
        delta = [b - a for a, b in zip(start["jiffies"], end["jiffies"], strict=True)]
        total = sum(delta)
        if total > 0:
            steal = round(delta[7] / total, 4)
            busy = (delta[0] + delta[1] + delta[2] + delta[5] + delta[6]) / os.sysconf("SC_CLK_TCK")
            wall = max(end["wall"] - start["wall"], 1e-9)
            others = round(min(max(busy - (end["own"] - start["own"]), 0.0) / (wall * cpus), 1.0), 4)
    return {"cpus": cpus, "load_before": None if start is None else start["load"], "load_after": end["load"],
            "cpu_steal": steal, "cpu_others": others}


#: The kernel's id of this boot: two runs with one boot id ran on one machine instance (same uptime, same state).
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def run_facts(start: dict[str, Any] | None, started: str | None, boot_id: Path = BOOT_ID,
              stat: Path = PROC_STAT) -> dict[str, Any]:
    """What varies from run to run of one machine, kept beside ``machine_info`` (never in it: pytest-benchmark's
    ``--benchmark-compare`` takes any difference there for another machine): which boot of the machine it ran in,
    when it started (ISO-8601 UTC), and the load around it (``machine_load``)."""
    boot: str | None = None
    with suppress(OSError):  # not Linux
        boot = boot_id.read_text().strip() or None
    return {"boot_id": boot, "started": started, "load": machine_load(start, stat)}


def _device(backend: DeviceBackend, index: int, props: Any) -> dict[str, Any]:
    # not CUDA (or a fake): the backend's own answer
    memory = int(props.total_memory) if props is not None else (backend.memory_info(index) or (None, None))[1]
    return {
        "index": index,
        "device": f"{backend.type}:{index}",
        "name": backend.device_name(index),
        "memory_bytes": memory,
        "l2_cache_bytes": device_l2_bytes(props),
        "pci_bus_id": pci_bus_id(props),
        # Tells A100 (8.0) from GA10x (8.6), which NVML both call NVLink "3.1" though their links differ.
        "compute_capability": f"{props.major}.{props.minor}" if hasattr(props, "major") else None,
        **dict.fromkeys(_FILLED_LATER),
    }


#: A GPU's facts that NVML and sysfs fill in where they can: unknown (None) until they do.
_FILLED_LATER = ("numa_node", "cpu_affinity", "host_numa_local", "pcie_generation", "pcie_width", "pcie_max_generation",
                "pcie_max_width", "nvlink_links", "nvlink_version", "nvlink_remote", "memory_peak_gbps",
                "sm_clock_max_mhz", "memory_clock_max_mhz")


def device_l2_bytes(props: Any) -> int | None:
    """The GPU's L2 cache in bytes, from device properties where torch exposes it."""
    size = getattr(props, "L2_cache_size", None)
    return int(size) if size else None


# --- host: caches, CPUs, NUMA ---------------------------------------------------------------------------------

def host_cache_bytes(root: Path = SYSFS_CPU, cpus: Iterable[int] | None = None) -> dict[str, int] | None:
    """The host's data caches by level as cpu0 sees them, and the last level summed over
    every instance this process may use, e.g. ``{"L1d": 49152, "L2": 2097152, "L3": 33554432,
    "L3_all": 268435456}``.

    One thread sees cpu0's sizes (on a chiplet CPU, its own L3 slice); a large host copy
    runs on many threads and spreads over every slice (and socket) they sit on, hence
    ``L3_all``. None where sysfs does not say (not Linux, a container hiding it).
    """
    caches: dict[str, int] = {}
    last: tuple[int, str] | None = None  # (level, index folder name)
    for index in sorted((root / "cpu0" / "cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = _size((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        caches[f"L{level}d" if kind == "Data" else f"L{level}"] = size
        if last is None or level > last[0]:
            last = (level, index.name)
    if not caches or last is None:
        return None
    instances = set()
    for cpu in cpus if cpus is not None else (_process_cpus() or {0}):
        with suppress(OSError):
            instances.add((root / f"cpu{cpu}" / "cache" / last[1] / "shared_cpu_list").read_text().strip())
    caches[f"L{last[0]}_all"] = caches[f"L{last[0]}"] * max(1, len(instances))
    return caches


def transparent_hugepage(path: Path = SYSFS_THP) -> str | None:
    """The kernel's transparent huge pages mode (``always``, ``madvise`` or ``never``: the one
    sysfs shows in brackets), None where it does not say."""
    with suppress(OSError):
        match = re.search(r"\[(\w+)\]", path.read_text())
        return match.group(1) if match else None
    return None


def glibc_version() -> str | None:
    """The C library's version, e.g. ``2.36``; None when it is not glibc (musl, macOS)."""
    confstr: str | None = None
    with suppress(ValueError, OSError, AttributeError):
        confstr = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36": the library loaded, not the one linked
    if confstr and confstr.startswith("glibc "):
        return confstr.split()[1]
    library, version = platform.libc_ver()
    return version if library == "glibc" and version else None


def _size(text: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def parse_cpu_list(text: str) -> set[int]:
    """sysfs's ``0-3,8-11`` -> {0, 1, 2, 3, 8, 9, 10, 11}."""
    cpus: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, dash, high = part.partition("-")
        cpus.update(range(int(low), int(high if dash else low) + 1))
    return cpus


def cpu_list(cpus: Iterable[int] | None) -> str | None:
    """{0, 1, 2, 3, 8} -> ``0-3,8`` (sysfs's own form), None for None."""
    if cpus is None:
        return None
    # consecutive CPUs keep the same difference to their position in the sorted list: one run each
    runs = [[cpu for _, cpu in run] for _, run in groupby(enumerate(sorted(cpus)), lambda pair: pair[1] - pair[0])]
    return ",".join(f"{run[0]}" if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _process_cpus() -> set[int] | None:
    with suppress(AttributeError, OSError):
        return set(os.sched_getaffinity(0))
    return None


def gpu_local_cpus(bus_id: str | None, root: Path | None = None) -> set[int] | None:
    """The CPUs of the GPU's NUMA node (sysfs ``local_cpulist``), None when unknown."""
    if not bus_id:
        return None
    with suppress(OSError, ValueError):
        return parse_cpu_list(((root or SYSFS_PCI) / bus_id / "local_cpulist").read_text()) or None
    return None


# --- caches: which payloads never leave them ------------------------------------------------------------------

def cache_resident(info: dict[str, Any], host_caches: dict[str, int] | None, l2_by_device: dict[str, int | None]) -> bool | None:
    """Whether the bytes a case touches fit the cache that serves it: twice its payload for a copy (it reads the source
    and writes the destination, as ``analyze.model.COPY_TOUCHES``), the payload for creation; None when unknown or
    irrelevant.

    Host copies and creation on the host: the host's last-level cache summed over the instances
    this process may use (a large host copy runs on many threads). Same-device
    copies, peer copies (their source) and creation on a GPU: that GPU's L2. Moves across PCIe
    are bounded by the link, far below any cache: None. A resident size measures the cache, not
    the memory, so the model fits bandwidth only beyond such sizes.
    """
    op, nbytes = info.get("op"), info.get("nbytes")
    if not isinstance(nbytes, int):
        return None
    src, dst = str(info.get("src")), str(info.get("dst"))
    if op == "host" or (op == "create" and src == "cpu"):
        cache = max(host_caches.values()) if host_caches else None
    elif op in ("d2d", "peer", "create"):
        cache = l2_by_device.get(src if op != "create" else dst)
    else:
        return None
    return None if cache is None else nbytes * (1 if op == "create" else 2) <= cache



def _add_nvml(info: dict[str, Any], props: list[Any]) -> None:
    """Fill driver, PCIe, NVLink, NUMA and clock facts from NVML; leave them None if it is absent."""
    with nvml_session() as pynvml:
        if pynvml is None:
            return
        info["nvml"] = True
        info["driver"] = text(pynvml.nvmlSystemGetDriverVersion())
        for device, prop in zip(info["devices"], props, strict=True):
            if (handle := nvml_handle(pynvml, prop)) is None:
                continue  # not matched: every NVML fact stays unknown rather than another GPU's
            device.update(nvml_facts(pynvml, handle))
            device["_nvml_affinity"] = nvml_affinity(pynvml, handle)


def numa_node(device: Path) -> int | None:
    """The NUMA node of a sysfs PCI device; None where sysfs does not say."""
    with suppress(OSError, ValueError):
        node = int((device / "numa_node").read_text().strip())
        return node if node >= 0 else None  # -1: a machine of one node, or firmware that does not say
    return None


def _add_numa(device: dict[str, Any], nvml_affinity: set[int] | None) -> None:
    """The GPU's NUMA node and CPUs (NVML, else sysfs), and whether this process stays on them."""
    bus_id = device["pci_bus_id"]
    if device["numa_node"] is None and bus_id:
        device["numa_node"] = numa_node(SYSFS_PCI / bus_id)
    affinity = nvml_affinity or gpu_local_cpus(bus_id)
    device["cpu_affinity"] = cpu_list(affinity)
    if affinity and (process := _process_cpus()):
        # Host buffers land on the node of the CPU that first touches them: a process
        # allowed outside the GPU's node may place them across the socket link.
        device["host_numa_local"] = process <= affinity


