"""Fakes that stand in for a GPU runtime and for pytest-benchmark's fixture."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from xferbench.measure.hardware import devices

#: What CUDA raises once a copy faulted: the error is sticky, every later call on the context repeats it.
STICKY_ERROR = "CUDA error: an illegal memory access was encountered"


class WouldHang(AssertionError):
    """A call that blocks for ever on a real GPU: an implicit synchronize (cudaFree, cudaFreeHost, a
    synchronize) while a stream holds a copy that never ends."""


class FakeBackend:
    """A device backend with ``gpus`` CUDA devices that records every call made of it.

    As CUDA does: once a wait gave up on a stream (``stuck``), that stream's copy never ends, so a
    synchronize of its device, and anything that synchronizes implicitly (``empty_cache``: cudaFree;
    ``empty_host_cache``: cudaFreeHost), would block for ever: they raise WouldHang instead. With ``fault``
    every query of an event raises CUDA's sticky error."""

    simulated = False

    def __init__(self, gpus: int = 0, *, type: str = "cuda", peer: bool = True,
                 free: int = 80 * 2**30, total: int = 80 * 2**30, event_s: float = 1e-5,
                 profile_s: float | None = None, stuck: bool = False, fault: bool = False) -> None:
        self.type = type if gpus else None
        self.gpus = gpus
        self.peer = peer
        self.free, self.total = free, total
        self.event_s = event_s
        self.profile_s = profile_s
        self.stuck = stuck  # a wedged copy: every wait's query answers "not done" until its deadline
        self.fault = fault  # a faulted copy: every query raises the sticky error
        self.wedged_streams: set[int] = set()  # devices whose queued copy never ends
        self.calls: list[tuple[Any, ...]] = []

    def device_count(self) -> int:
        return self.gpus

    def synchronize(self, index: int) -> None:
        self.calls.append(("synchronize", index))
        if index in self.wedged_streams:
            raise WouldHang(f"cudaDeviceSynchronize on cuda:{index}, whose copy never ends")
        if self.fault:
            with devices.sticky_errors(f"cuda:{index}"):  # as TorchBackend's synchronize turns it
                raise RuntimeError(STICKY_ERROR)

    def wait(self, index: int, seconds: float) -> bool:
        """The real deadline loop (devices.poll) over a query that never completes when ``stuck``."""
        self.calls.append(("wait", index, seconds))
        done = devices.poll(self._query, seconds, where=f"cuda:{index}")
        if not done:
            self.wedged_streams.add(index)
        return done

    def _query(self) -> bool:
        if self.fault:
            raise RuntimeError(STICKY_ERROR)
        return not self.stuck

    def empty_host_cache(self) -> None:
        """cudaFreeHost of every cached pinned block: it synchronizes implicitly."""
        self.calls.append(("empty_host_cache",))
        self._implicit_sync("cudaFreeHost")

    def _implicit_sync(self, what: str) -> None:
        if self.wedged_streams:
            raise WouldHang(f"{what} synchronizes implicitly, and cuda:{min(self.wedged_streams)}'s copy never ends")

    def device_name(self, index: int) -> str:
        return f"Fake GPU {index}"

    def memory_info(self, index: int) -> tuple[int, int] | None:
        return self.free, self.total

    def can_access_peer(self, src: int, dst: int) -> bool:
        return self.peer and src != dst

    def empty_cache(self) -> None:
        """cudaFree of every cached block: it synchronizes implicitly."""
        self.calls.append(("empty_cache",))
        self._implicit_sync("cudaFree")

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


class FakeCudaRuntime:
    """Stands in for ``torch.cuda`` (and ``torch.profiler``) behind a real TorchBackend, on one stream
    whose timeline behaves as a GPU's does: work runs in order, each piece when the host has enqueued it
    and the work before it is done; an event completes when the work before it has; ``_sleep(cycles)`` lasts
    ``cycles / spin_hz`` (``spin_hz``: the SM clock, which may change between calls); the host clock
    advances by ``enqueue_s`` a CUDA call. Then:

    - ``copy()`` is a timed call: ``copy_s`` on the device;
    - with ``cupti_attached`` each CUDA call costs the host ``cupti_s`` more: a profiler session attaches
      CUPTI and detaches it at its end only when ``TEARDOWN_CUPTI`` is "1" (Kineto);
    - with ``fault`` every query and record raises CUDA's sticky error;
    - with ``stuck`` nothing queued ever completes, and ``empty_cache`` (cudaFree) would block for ever."""

    def __init__(self, spin_hz: float = 1e9, enqueue_s: float = 5e-6, copy_s: float = 1e-5) -> None:
        self.now = 0.0  # host seconds
        self.stream_free = 0.0  # device seconds: when the last queued work ends
        self.spin_hz, self.enqueue_s, self.copy_s = spin_hz, enqueue_s, copy_s
        self.cupti_attached, self.cupti_s = False, 0.0
        self.fault = self.stuck = False
        self.log: list[tuple[Any, ...]] = []
        self.Event = self._event_class()
        self.profiler = self._profiler()

    def clock(self) -> float:
        return self.now

    def _api(self, name: str, *args: Any) -> None:
        self.log.append((name, *args))
        self.now += self.enqueue_s + (self.cupti_s if self.cupti_attached else 0.0)

    def _queue(self, seconds: float) -> None:
        self.stream_free = max(self.stream_free, self.now) + seconds

    def copy(self) -> None:
        self._api("copy")
        self._queue(self.copy_s)

    def _sleep(self, cycles: int) -> None:
        self._api("spin", cycles)
        self._queue(cycles / self.spin_hz)

    @contextlib.contextmanager
    def device(self, index: int) -> Iterator[None]:
        yield

    def current_stream(self) -> Any:
        runtime = self

        class Stream:
            def query(self) -> bool:
                return runtime._done(runtime.stream_free)

        return Stream()

    def synchronize(self, index: int | None = None) -> None:
        self._api("synchronize")
        if self.fault:
            raise RuntimeError(STICKY_ERROR)
        if self.stuck:
            raise WouldHang("cudaDeviceSynchronize on a stream whose copy never ends")
        self.now = max(self.now, self.stream_free)

    def empty_cache(self) -> None:
        self._api("empty_cache")
        if self.stuck:
            raise WouldHang("cudaFree synchronizes implicitly, and the stream's copy never ends")

    def _done(self, at: float) -> bool:
        if self.fault:
            raise RuntimeError(STICKY_ERROR)
        self.now += 1e-6  # a query's own cost: time passes while the host polls
        return not self.stuck and self.now >= at

    def _event_class(self) -> type:
        runtime = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.at: float | None = None

            def record(self) -> None:
                if runtime.fault:
                    raise RuntimeError(STICKY_ERROR)
                runtime._api("record")
                self.at = max(runtime.stream_free, runtime.now)  # after the work queued before it

            def query(self) -> bool:
                assert self.at is not None
                return runtime._done(self.at)

            def elapsed_time(self, end: Any) -> float:
                return (end.at - self.at) * 1e3

        return Event

    def _profiler(self) -> Any:
        """torch.profiler's part that TorchBackend uses: one Memcpy activity record per copy queued inside."""
        import types

        runtime = self

        class Profile:
            def __init__(self, activities: Any = None) -> None:
                self.copies = 0

            def __enter__(self) -> Profile:
                runtime.cupti_attached = True
                self.before = sum(1 for entry in runtime.log if entry[0] == "copy")
                return self

            def __exit__(self, *exc: Any) -> None:
                self.copies = sum(1 for entry in runtime.log if entry[0] == "copy") - self.before
                if os.environ.get("TEARDOWN_CUPTI") == "1":  # Kineto calls cuptiFinalize only then
                    runtime.cupti_attached = False

            def events(self) -> list[Any]:
                record = types.SimpleNamespace(name="Memcpy DtoH (Device -> Pinned)",
                                               device_type=types.SimpleNamespace(name="CUDA"),
                                               time_range=types.SimpleNamespace(elapsed_us=lambda: runtime.copy_s * 1e6))
                return [record] * self.copies

        activity = types.SimpleNamespace(CPU="CPU", CUDA="CUDA")
        return types.SimpleNamespace(ProfilerActivity=activity, profile=Profile,
                                     supported_activities=lambda: {"CPU", "CUDA"})


def runtime_backend(runtime: FakeCudaRuntime, monkeypatch: Any) -> Any:
    """A real TorchBackend driving ``runtime``: its torch.cuda, its host clock, and torch.profiler's
    profile and activities (TorchBackend imports them from torch.profiler when it profiles)."""
    import types

    import torch.profiler

    from xferbench.measure.hardware.devices import TorchBackend

    backend = TorchBackend()
    backend._torch = types.SimpleNamespace(cuda=runtime, profiler=runtime.profiler)
    backend.type = "cuda"
    backend._host_clock = runtime.clock
    for name in ("ProfilerActivity", "profile", "supported_activities"):
        monkeypatch.setattr(torch.profiler, name, getattr(runtime.profiler, name))
    return backend


def priced_seconds(case: Any, backend: Any, index: int) -> float:
    """Simulated seconds of one call of a scenario or concurrent ``case`` as its family prices it on the simulated
    ``backend``, synchronizing accelerator ``index`` as the run does."""
    from xferbench.measure.families.registry import SCENARIO_FAMILIES

    prepared = SCENARIO_FAMILIES[case.op].prepared(case, backend, lambda: backend.synchronize(index))
    with backend.simulating():
        start = backend.clock.now
        prepared.target()
        return float(backend.clock.now - start)


def warm_call_seconds(case: Any, spec: Any, warmup: int = 3) -> float:
    """Simulated seconds of one call of a scenario or concurrent ``case`` on a fresh machine of ``spec`` without its
    noise and drift, after ``warmup`` calls (a concurrent family's side streams settle in one; the run warms up
    with three), as its family prices it: what the run's simulated clock charges the call."""
    import dataclasses

    from xferbench.measure.families.base import Priced, device_sync
    from xferbench.measure.families.registry import SCENARIO_FAMILIES
    from xferbench.measure.simulate import SimBackend, SimClock

    machine = SimBackend(dataclasses.replace(spec, noise=0.0, drift=0.0), SimClock())
    sync = device_sync(case.devices, machine)
    prepared = SCENARIO_FAMILIES[case.op].price(case, Priced(machine), sync)
    sync()
    for _ in range(warmup):
        for step in (prepared.setup, prepared.target, prepared.teardown):
            if step is not None:
                step()
    if prepared.setup is not None:
        prepared.setup()
    start = machine.clock.now
    prepared.target()
    return float(machine.clock.now - start)


def drifting_spec(drift: float) -> str:
    """A simulated one-GPU spec (docs/simulated-machine.md) whose costs wander by ``drift`` over the run: pinned h2d
    priced 1.5x pageable, so a real difference stands beside the drift (tests/test_drift.py, test_blocks.py)."""
    return f"""gpus = 1
sync_us = 5.0
dispatch_ns = 400
launch_us = 4.0
drift = {drift}
[paths]
h2d_pinned   = {{ alpha_us = 2.0, GBps = 30 }}
h2d_pageable = {{ alpha_us = 6.0, GBps = 20 }}
d2h_pinned   = {{ alpha_us = 3.0, GBps = 45 }}
d2h_pageable = {{ alpha_us = 8.0, GBps = 10 }}
d2d          = {{ alpha_us = 1.5, GBps = 1500 }}
peer         = {{ alpha_us = 3.5, GBps = 300 }}
[link]
pcie_gen = 5
pcie_width = 16
"""


def build_html(run: Any) -> str:
    """The HTML page of ``run`` (results or a view) as ``write_report`` writes it, read back from a scratch folder."""
    import tempfile
    from pathlib import Path

    from xferbench.analyze.report.page import write_report

    with tempfile.TemporaryDirectory() as folder:
        return write_report(run, Path(folder) / "index.html").read_text()


def view_of_rows(frame: Any, machine_info: dict[str, Any] | None = None) -> Any:
    """The run's view of hand-fed rows, without the files they would come from."""
    from xferbench.analyze.load.results import Results
    from xferbench.analyze.view import RunView

    return RunView(Results(frame=frame, machine_info=machine_info or {}, commit_info={}, sources=[]))


#: A pytester conftest: xferbench's plugin on a fake backend without GPUs (a CPU-only machine).
CPU_ONLY_CONFTEST = """
pytest_plugins = ("xferbench.measure.session.plugin",)
from fakes import FakeBackend

def pytest_xfer_make_backend(config):
    return FakeBackend(gpus=0)
"""

#: A pytester benchmark file: the host family, as bench/test_host.py runs it.
HOST_BENCH = """
import pytest

@pytest.mark.xfer("host")
def test_host(xfer_case, xfer):
    xfer(xfer_case)
"""
