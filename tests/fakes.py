"""Fakes that stand in for a GPU runtime and for pytest-benchmark's fixture."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from xferbench.measure.hardware.devices import poll


class FakeBackend:
    """A device backend with ``gpus`` CUDA devices that records every call made of it."""

    simulated = False

    def __init__(self, gpus: int = 0, *, type: str = "cuda", peer: bool = True,
                 free: int = 80 * 2**30, total: int = 80 * 2**30, event_s: float = 1e-5,
                 profile_s: float | None = None, stuck: bool = False) -> None:
        self.type = type if gpus else None
        self.gpus = gpus
        self.peer = peer
        self.free, self.total = free, total
        self.event_s = event_s
        self.profile_s = profile_s
        self.stuck = stuck  # a wedged copy: every wait's query answers "not done" until its deadline
        self.calls: list[tuple[Any, ...]] = []

    def device_count(self) -> int:
        return self.gpus

    def synchronize(self, index: int) -> None:
        self.calls.append(("synchronize", index))

    def wait(self, index: int, seconds: float) -> bool:
        """The real deadline loop (devices.poll) over a query that never completes when ``stuck``."""
        self.calls.append(("wait", index, seconds))
        return poll(lambda: not self.stuck, seconds)

    def device_name(self, index: int) -> str:
        return f"Fake GPU {index}"

    def memory_info(self, index: int) -> tuple[int, int] | None:
        return self.free, self.total

    def can_access_peer(self, src: int, dst: int) -> bool:
        return self.peer and src != dst

    def empty_cache(self) -> None:
        self.calls.append(("empty_cache",))

    def event_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        self.calls.append(("events", index, repeats))
        for _ in range(repeats):
            fn()
        return [self.event_s] * repeats

    def profiled_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """The profiler's per-copy times (``profile_s`` each), or None when it has none."""
        self.calls.append(("profiled", index, repeats))
        if self.profile_s is None:
            return None
        for _ in range(repeats):
            fn()
        return [self.profile_s] * repeats

    def tensor_device(self, device: str) -> str:
        return device

    def pin_memory(self, tensor: Any) -> Any:
        self.calls.append(("pin_memory",))
        return tensor

    @contextlib.contextmanager
    def timed(self, case: Any, op: Callable[[], Any]) -> Iterator[Callable[[], Any]]:
        self.calls.append(("timed", case.op))
        yield op

    def syncs(self) -> list[int]:
        """The devices synchronized, in order, with or without a deadline."""
        return [call[1] for call in self.calls if call[0] in ("synchronize", "wait")]


class Stats:
    """Like pytest-benchmark's: per-iteration times of each round, statistics derived."""

    def __init__(self, median: float) -> None:
        self.data = [median]

    @property
    def median(self) -> float:
        return sorted(self.data)[len(self.data) // 2]


class FakeBenchmark:
    """Calls the function a fixed number of times, like ``benchmark(fn)`` does."""

    def __init__(self, calls: int = 5, median: float = 1e-3) -> None:
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None
        self.calls = calls
        self.stats = type("Metadata", (), {"stats": Stats(median), "iterations": 1})()

    def pedantic(self, target: Callable[[], Any], setup: Callable[[], Any] | None = None,
                 teardown: Callable[[], Any] | None = None, rounds: int = 1, warmup_rounds: int = 0,
                 iterations: int = 1) -> Any:
        """Makes as many calls as pytest-benchmark's pedantic does."""
        self.pedantic_rounds = rounds
        result = None
        for _ in range(warmup_rounds + rounds):
            if setup:
                setup()
            for _ in range(iterations):
                result = target()
            if teardown:
                teardown()
        if iterations > 1:
            result = target()
        return result

    def __call__(self, fn: Callable[[], Any]) -> Any:
        result = None
        for _ in range(self.calls):
            result = fn()
        return result


class NVMLError(Exception):
    """pynvml's error: its ``value`` is NVML's return code."""

    NAMES: ClassVar[dict[int, str]] = {2: "Invalid Argument", 3: "Not Supported", 4: "Insufficient Permissions",
                                       999: "Unknown Error"}

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self.NAMES.get(self.value, f"NVML error {self.value}")


NOT_SUPPORTED, NO_PERMISSION = 3, 4
SWITCH_BUS = 0xFE  # an NVSwitch's PCI bus, as an older driver names a link's far end


def gpu_props(bus: int) -> Any:
    """torch's device properties of a GPU at PCI bus ``bus``, as far as NVML's matching reads them."""
    import types

    return types.SimpleNamespace(pci_domain_id=0, pci_bus_id=bus, pci_device_id=0, uuid=None)


def nvml_box(buses: list[int], ends: Callable[[int, int], str | None], level: Callable[[int, int], int],
             links: int = 18, version: int = 6, state_error: int | None = None,
             ancestor_error: Callable[[int, int], int | None] = lambda a, b: None, switch_type: bool = True) -> Any:
    """Just enough of nvidia-ml-py for a box of GPUs at PCI ``buses``: GPU i's link l joins ``ends(i, l)``
    ("switch", a GPU's index as text, or None: no link), two GPUs meet at NVML topology ``level(i, j)``;
    ``state_error`` fails every NVLink query with that code, ``ancestor_error(i, j)`` the topology query.
    Without ``switch_type`` (an older driver) a link's far end is only ever a PCI address, an NVSwitch's too."""
    import types

    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = NVMLError  # type: ignore[attr-defined]
    nvml.NVML_NVLINK_MAX_LINKS = 18  # type: ignore[attr-defined]
    nvml.nvmlInit = lambda: None  # type: ignore[attr-defined]
    nvml.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    names = {f"0000:{bus:02x}:00.0": i for i, bus in enumerate(buses)}

    def by_bus(bus: str) -> int:
        if bus not in names:
            raise NVMLError(999)
        return names[bus]

    def state(gpu: int, link: int) -> int:
        if state_error is not None:
            raise NVMLError(state_error)
        if link >= links or ends(gpu, link) is None:
            raise NVMLError(NOT_SUPPORTED)  # past the last link (a PCIe GPU: at link 0)
        return 1

    def far_bus(gpu: int, link: int) -> Any:
        end = ends(gpu, link)
        bus = SWITCH_BUS if end == "switch" else buses[int(end or 0)]
        return types.SimpleNamespace(busId=f"00000000:{bus:02X}:00.0".encode())

    def nvlink_p2p(a: int, b: int, index: int) -> int:
        """NVML_P2P_STATUS_OK (0) where a link of ``a`` reaches ``b`` (directly or both through a switch), else 5."""
        assert index == 2  # NVML_P2P_CAPS_INDEX_NVLINK
        reach = {ends(a, link) for link in range(links)}
        return 0 if str(b) in reach or ("switch" in reach and ends(b, 0) == "switch") else 5

    def ancestor(a: int, b: int) -> int:
        error = ancestor_error(a, b)
        if error is not None:
            raise NVMLError(error)
        return level(a, b)

    nvml.nvmlDeviceGetHandleByPciBusId = by_bus  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetNvLinkState = state  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetNvLinkVersion = lambda gpu, link: version  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetArchitecture = lambda gpu: 9  # type: ignore[attr-defined]
    if switch_type:
        nvml.nvmlDeviceGetNvLinkRemoteDeviceType = lambda gpu, link: 2 if ends(gpu, link) == "switch" else 0  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetP2PStatus = nvlink_p2p  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetNvLinkRemotePciInfo = far_bus  # type: ignore[attr-defined]
    nvml.nvmlDeviceGetTopologyCommonAncestor = ancestor  # type: ignore[attr-defined]
    return nvml


def amdsmi_box(buses: list[int], link: Callable[[int, int], dict[str, Any]]) -> Any:
    """Just enough of amdsmi for a box of AMD GPUs at PCI ``buses``: ``link(i, j)`` is what
    amdsmi_topo_get_link_type answers (a dict of hops and type), or raises. Its enum is this release's
    AmdSmiLinkType (XGMI 1, PCIe 2)."""
    import enum
    import types

    class AmdSmiLinkType(enum.IntEnum):
        AMDSMI_LINK_TYPE_INTERNAL = 0
        AMDSMI_LINK_TYPE_XGMI = 1
        AMDSMI_LINK_TYPE_PCIE = 2

    smi = types.ModuleType("amdsmi")
    smi.AmdSmiLinkType = AmdSmiLinkType  # type: ignore[attr-defined]
    smi.amdsmi_init = lambda: None  # type: ignore[attr-defined]
    smi.amdsmi_shut_down = lambda: None  # type: ignore[attr-defined]
    smi.amdsmi_get_processor_handles = lambda: list(range(len(buses)))  # type: ignore[attr-defined]
    smi.amdsmi_get_gpu_device_bdf = lambda h: f"0000:{buses[h]:02x}:00.0"  # type: ignore[attr-defined]
    smi.amdsmi_topo_get_link_type = link  # type: ignore[attr-defined]
    return smi
