"""Each GPU pair's link class, so that the peer family's default plan comes from the topology.

Two ordered pairs of one class move their bytes over the same kind of path (the same NVLinks through an
NVSwitch, the same PCIe switch, the same socket link), so one pair's sweep stands for the others'
(``--xfer-peer-pairs=one-per-class``, measure/cases.py). NVML says it on NVIDIA GPUs; a pair it cannot tell
about (and every pair on ROCm) is None (unknown), with why, and one unknown pair keeps every pair swept.
No call here may fail a run: a library error makes its pair unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cases import LinkClasses, Pair
from . import probe

if TYPE_CHECKING:
    from .devices import DeviceBackend

__all__ = ["PCIE_LEVELS", "link_classes"]

#: NVML's ``nvmlGpuTopologyLevel_t`` (nvmlDeviceGetTopologyCommonAncestor) -> the PCIe path a peer copy takes,
#: with nvidia-smi topo -m's name for it.
PCIE_LEVELS = {
    0: "PCIe on one board",
    10: "PCIe same switch (PIX)",
    20: "PCIe across switches (PXB)",
    30: "PCIe across host bridge (PHB)",
    40: "PCIe across host bridges of one NUMA node (NODE)",
    50: "PCIe across sockets (SYS)",
}
NVSWITCH = "nvswitch"  # probe._link_end's name for a link to an NVSwitch
NVML_P2P_CAPS_INDEX_NVLINK = 2  # nvmlGpuP2PCapsIndex_t
NVML_P2P_STATUS_OK = 0  # nvmlGpuP2PStatus_t


def link_classes(backend: DeviceBackend, gpus: Sequence[str], rocm: bool) -> LinkClasses:
    """Every ordered pair of ``gpus``' link class, from NVML (unknown when ``rocm``); ``, no peer access``
    is added where the pair cannot reach each other's memory (the copy is staged through the host)."""
    pairs = [(s, d) for s in gpus for d in gpus if s != d]
    if any(not g.startswith("cuda:") for g in gpus):
        return _unknown(pairs, f"the links of {backend.type} devices are not read")
    if rocm:
        return _unknown(pairs, "the links of ROCm GPUs are not read")
    classes = _nvml_classes(pairs, {g: probe.cuda_properties(backend, _index(g)) for g in gpus})
    for (src, dst), cls in list(classes.items()):
        if cls is not None:
            classes[src, dst] = cls + _peer_access(backend, src, dst)
    return classes


def _index(device: str) -> int:
    """``cuda:i``'s index (only CUDA GPUs are paired here)."""
    return int(device.rsplit(":", 1)[1])


def _classified(pairs: Sequence[Pair], classify: Callable[[Pair], tuple[str | None, str | None]]) -> LinkClasses:
    """Each pair's class as ``classify`` gives it (NVML's), with why where it is unknown."""
    classes = LinkClasses()
    for pair in pairs:
        classes[pair], why = classify(pair)
        if why:
            classes.why[pair] = why
    return classes


def _unknown(pairs: Sequence[Pair], why: str) -> LinkClasses:
    return _classified(pairs, lambda _: (None, why))


def _peer_access(backend: DeviceBackend, src: str, dst: str) -> str:
    """``, no peer access`` where torch copies the pair through host memory; torch's own answer, the one
    its copy acts on (and the fingerprint's peer_access)."""
    try:
        able = backend.can_access_peer(_index(src), _index(dst))
    except (RuntimeError, AssertionError):
        return ", peer access unknown"
    return "" if able else ", no peer access"


# --- NVML -------------------------------------------------------------------------------------------------------

def _nvml_classes(pairs: Sequence[Pair], props: Mapping[str, Any]) -> LinkClasses:
    with probe.nvml_session() as pynvml:
        if pynvml is None:
            return _unknown(pairs, "no NVML (nvidia-ml-py is not installed, or NVML did not start)")
        handles = {g: probe.nvml_handle(pynvml, p) for g, p in props.items()}
        links = {g: probe.nvlinks(pynvml, h) for g, h in handles.items() if h is not None}
        return _classified(pairs, lambda pair: _nvml_class(pynvml, handles, links, props, pair))


def _nvml_class(pynvml: Any, handles: Mapping[str, Any], links: Mapping[str, tuple[int, int | None, Any]],
                props: Mapping[str, Any], pair: Pair) -> tuple[str | None, str | None]:
    """One pair's class, or None and why: its NVLinks where it has some, else the PCIe level joining it."""
    src, dst = pair
    if missing := next((g for g in pair if handles[g] is None), None):
        return None, f"{missing} is not matched to an NVML device (by PCI address or UUID)"
    (count, enum, remote), (far_count, _, far) = links[src], links[dst]
    if remote is None or far is None:
        return None, f"NVML cannot tell where the NVLinks of {src if remote is None else dst} go"
    generation = probe.nvlink_generation(pynvml, handles[src], enum) if enum else None
    name = f"NVLink {generation}" if generation else "NVLink"
    if remote.get(NVSWITCH) and far.get(NVSWITCH):
        return f"{name} x{min(remote[NVSWITCH], far[NVSWITCH])} via NVSwitch", None
    if direct := remote.get(probe.pci_bus_id(props[dst]) or ""):
        return f"{name} x{direct} direct", None
    if count and far_count and _nvlink_p2p(pynvml, handles[src], handles[dst]) is not False:
        # Both have NVLinks, none seen joining them (an NVSwitch an older driver names by its PCI address):
        # unless NVML says the pair has no NVLink path, PCIe would be a guess.
        return None, f"NVML does not say which NVLinks join {src} and {dst}"
    return _pcie_class(pynvml, handles[src], handles[dst])


def _nvlink_p2p(pynvml: Any, one: Any, other: Any) -> bool | None:
    """Whether NVML reports a peer path over NVLink between two GPUs (nvmlDeviceGetP2PStatus); None when it cannot say."""
    try:
        return int(pynvml.nvmlDeviceGetP2PStatus(one, other, NVML_P2P_CAPS_INDEX_NVLINK)) == NVML_P2P_STATUS_OK
    except (pynvml.NVMLError, AttributeError, TypeError, ValueError):
        return None


def _pcie_class(pynvml: Any, one: Any, other: Any) -> tuple[str | None, str | None]:
    """The PCIe path joining two GPUs: the level of their closest common ancestor."""
    try:
        level = int(pynvml.nvmlDeviceGetTopologyCommonAncestor(one, other))
    except (pynvml.NVMLError, AttributeError, TypeError, ValueError) as error:
        return None, f"nvmlDeviceGetTopologyCommonAncestor: {str(error) or type(error).__name__}"
    return (PCIE_LEVELS[level], None) if level in PCIE_LEVELS else (None, f"NVML topology level {level} unknown")
