"""A simulated machine: accelerators whose costs are known, to check the suite reads them back.

``pytest bench --benchmark-only --xfer-simulate=SPEC.toml`` runs the real pipeline
(plugin, case matrix, timing, transfers, JSON, analysis) on ``gpus`` simulated CUDA
devices. The spec (docs/simulated-machine.md) gives each copy path a fixed cost
and a bandwidth; a copy of n bytes takes ``alpha + n/GBps`` of device time. What
pytest-benchmark measures is the simulated clock (it is handed to it as its timer),
so a figure is exact whatever this machine's speed: the suite's own Python between
two readings costs nothing simulated. Cases that touch no accelerator (host copies,
creation on the CPU) are timed on the real clock, as always.

Tensors of a simulated device live on the CPU: a case's data moves for real in its
verification call, outside the timed region; the timed calls only charge their
simulated cost.

Everything simulated says so: rows carry ``clock = "simulated"`` and the machine
info an ``xferbench.simulated`` block with the spec.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import random
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import tomllib

from ..bounded_read import NotRegular, TooLarge, read_bounded
from .cases import Case
from .hardware.devices import accelerator_index
from .timing import event_device

__all__ = [
    "CLOCK",
    "PATHS",
    "Link",
    "MachineSpec",
    "PathCost",
    "SimBackend",
    "SimClock",
    "SpecError",
    "Workers",
    "describe",
    "load_spec",
    "parse_spec",
    "path_of",
]

T = TypeVar("T")

#: The copy paths a spec prices, each ``{alpha_us, GBps}`` (and an optional ``slowdown``).
PATHS = ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable", "d2d", "peer")
#: One reading of the simulated clock advances it by this much, like a real clock's
#: resolution: pytest-benchmark measures its timer's precision by reading it until
#: it moves, and a clock that never moves would stall it.
TICK_S = 1e-9
#: Period of the ``drift`` wander, in simulated seconds (a quick 2-GPU run lasts ~100).
DRIFT_PERIOD_S = 60.0
#: Slowest wander and jitter allowed: a cost never drops below this fraction of itself.
_FLOOR = 0.1


class SpecError(ValueError):
    """A machine spec that cannot be used; the message names the key."""


@dataclass(frozen=True)
class PathCost:
    """Device time of one copy on a path: ``(alpha + n / GBps) x slowdown``."""

    alpha_us: float
    GBps: float
    slowdown: float = 1.0

    def seconds(self, nbytes: int) -> float:
        return (self.alpha_us * 1e-6 + nbytes / (self.GBps * 1e9)) * self.slowdown

    def capped(self, GBps: float | None) -> PathCost:
        """This path with its bandwidth capped (a shared or remote link); itself without a cap."""
        return self if GBps is None or GBps >= self.GBps else PathCost(self.alpha_us, GBps, self.slowdown)


@dataclass(frozen=True)
class Link:
    """What the fingerprint reports about each simulated GPU's links (for link peaks)."""

    pcie_gen: int | None = None
    pcie_width: int | None = None
    nvlink_version: int | None = None
    nvlink_links: int | None = None


@dataclass(frozen=True)
class MachineSpec:
    """A simulated machine, validated: every key known, every cost possible."""

    gpus: int
    sync_us: float
    dispatch_ns: float
    launch_us: float
    paths: Mapping[str, PathCost]
    link: Link = field(default_factory=Link)
    name: str = "simulated GPU"
    memory_gib: float = 80.0
    noise: float = 0.0
    seed: int = 0
    drift: float = 0.0
    # The scenarios' and the concurrent families' costs (docs/simulated-machine.md):
    pin_GBps: float = 6.0  # page-locking fresh host memory (t.pin_memory() with an empty cache)
    host_copy_GBps: float = 10.0  # a copy or dtype conversion on the host, per byte written
    decode_GBps: float = 2.0  # a DataLoader worker making a batch (decode, normalise, collate), per byte of it
    unpin_GBps: float = 20.0  # giving pinned memory back (cudaFreeHost), per byte
    kernel_slowdown: float = 1.0  # a copy kernel (strided, converting) against the d2d path's DMA
    duplex: bool = True  # h2d and d2h at once on separate copy engines; False: they take turns
    shared_host_GBps: float | None = None  # what every GPU's host copies at once share, per direction
    numa_nodes: int = 1  # host NUMA nodes; GPU i sits on node i * numa_nodes // gpus
    remote_GBps: float | None = None  # cap of a copy whose host buffer is on another node
    peer_duplex: bool = True  # a peer link carries both directions at once at full speed; False: they share it
    shared_peer_GBps: float | None = None  # what every peer copy at once shares (a PCIe switch; None: an NVSwitch)
    source: str = ""

    def as_json(self) -> dict[str, Any]:
        """The spec as machine_info records it."""
        data = asdict(self)
        data["paths"] = {name: asdict(cost) for name, cost in self.paths.items()}
        return data


_TOP: dict[str, tuple[type, bool]] = {  # key: (type, required)
    "gpus": (int, True), "sync_us": (float, True), "dispatch_ns": (float, True), "launch_us": (float, True),
    "name": (str, False), "memory_gib": (float, False), "noise": (float, False), "seed": (int, False),
    "drift": (float, False), "pin_GBps": (float, False), "host_copy_GBps": (float, False), "decode_GBps": (float, False),
    "unpin_GBps": (float, False),
    "kernel_slowdown": (float, False), "duplex": (bool, False), "shared_host_GBps": (float, False),
    "numa_nodes": (int, False), "remote_GBps": (float, False), "peer_duplex": (bool, False),
    "shared_peer_GBps": (float, False),
}
#: More simulated GPUs than this is a typo, not a node: the peer family alone plans gpus x (gpus - 1)
#: pairs, and a billion exhausted the host's memory while planning.
MAX_GPUS = 64
#: A fixed cost above one second a call is a typo as well (and near 1e308 the simulated clock overflows).
_MAX_FIXED = {"sync_us": 1e6, "launch_us": 1e6, "dispatch_ns": 1e9, "alpha_us": 1e6}
#: Optional keys that are rates or factors: zero would be an infinite cost.
_POSITIVE = ("pin_GBps", "host_copy_GBps", "decode_GBps", "unpin_GBps", "kernel_slowdown", "shared_host_GBps",
             "numa_nodes", "remote_GBps", "shared_peer_GBps")
_PATH_KEYS: dict[str, tuple[type, bool]] = {"alpha_us": (float, True), "GBps": (float, True), "slowdown": (float, False)}
_LINK_KEYS: dict[str, tuple[type, bool]] = {"pcie_gen": (int, False), "pcie_width": (int, False),
                                            "nvlink_version": (int, False), "nvlink_links": (int, False)}


#: No rate, factor or count of a machine comes near this; past it, sums of costs overflow a float.
_MOST_NUMBER = 1e15
#: A GPU's memory in GiB: a PiB is past any device (memory_gib = 1e308 passed and overflowed every d2d case).
_MOST = {"memory_gib": float(2**20)}
#: A spec is a few lines: past this, a file is no spec (and nesting it deeply exhausts the parser's stack).
_MOST_SPEC_BYTES = 1 << 20


def _value(key: str, value: Any, kind: type) -> Any:
    if kind in (bool, str):
        if not isinstance(value, kind) or value == "":
            raise SpecError(f"{key} must be {'true or false' if kind is bool else 'a non-empty string'}, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{key} must be a number, got {value!r}")
    if kind is int and not isinstance(value, int):
        raise SpecError(f"{key} must be a whole number, got {value!r}")
    if not math.isfinite(value) or value < 0:
        raise SpecError(f"{key} must be a finite number >= 0, got {value!r}")
    if value > _MOST.get(key, _MOST_NUMBER):  # near 1e308 a product overflows mid-run, in every case that reads it
        raise SpecError(f"{key} must be at most {_MOST.get(key, _MOST_NUMBER):g}, got {value!r:.30}")
    return kind(value)


def _known(prefix: str, data: Mapping[str, Any], keys: Mapping[str, tuple[type, bool]]) -> None:
    """SpecError naming a key of one TOML table that is unknown, or a required one that is missing."""
    for key in data:
        if key not in keys:
            raise SpecError(f"unknown key {prefix}{key}; expected one of {', '.join(keys)}")
    for key, (_, required) in keys.items():
        if required and key not in data:
            raise SpecError(f"missing key {prefix}{key}")


def _table(prefix: str, data: Mapping[str, Any], keys: Mapping[str, tuple[type, bool]]) -> dict[str, Any]:
    """The known keys of one TOML table, typed; SpecError names an unknown, missing or bad one."""
    _known(prefix, data, keys)
    return {key: _value(prefix + key, value, keys[key][0]) for key, value in data.items()}


def _path(name: str, data: Any) -> PathCost:
    if not isinstance(data, Mapping):
        raise SpecError(f"paths.{name} must be a table like {{ alpha_us = 2.0, GBps = 55 }}")
    cost = PathCost(**_table(f"paths.{name}.", data, _PATH_KEYS))
    for key, value in (("GBps", cost.GBps), ("slowdown", cost.slowdown)):
        if value <= 0:
            raise SpecError(f"paths.{name}.{key} must be > 0, got {value}")
    if cost.alpha_us > _MAX_FIXED["alpha_us"]:
        raise SpecError(f"paths.{name}.alpha_us must be at most {_MAX_FIXED['alpha_us']:g} (one second), got {cost.alpha_us}")
    return cost


def parse_spec(data: Mapping[str, Any], source: str = "") -> MachineSpec:
    """A validated MachineSpec from parsed TOML; SpecError names the first bad key."""
    top = {key: value for key, value in data.items() if key not in ("paths", "link")}
    values = _table("", top, _TOP)
    if values["gpus"] < 1:
        raise SpecError(f"gpus must be at least 1, got {values['gpus']}")
    if values["gpus"] > MAX_GPUS:
        raise SpecError(f"gpus must be at most {MAX_GPUS}, got {values['gpus']}")
    for key in ("sync_us", "launch_us", "dispatch_ns"):
        if values[key] > _MAX_FIXED[key]:
            raise SpecError(f"{key} must be at most {_MAX_FIXED[key]:g} (one second a call), got {values[key]}")
    for key, what in (("noise", "jitter"), ("drift", "wander")):
        if values.get(key, 0.0) >= 1:
            raise SpecError(f"{key} is a relative {what} below 1, got {values[key]}")
    for key in _POSITIVE:
        if key in values and values[key] <= 0:
            raise SpecError(f"{key} must be > 0, got {values[key]}")
    if not isinstance(paths := data.get("paths"), Mapping):
        raise SpecError("missing table [paths] (" + ", ".join(PATHS) + ")")
    _known("paths.", paths, dict.fromkeys(PATHS, (dict, True)))
    if not isinstance(link := data.get("link", {}), Mapping):
        raise SpecError("link must be a table")
    return MachineSpec(paths={name: _path(name, paths[name]) for name in PATHS},
                       link=Link(**_table("link.", link, _LINK_KEYS)), source=source, **values)


def load_spec(path: str | Path) -> MachineSpec:
    """Read and validate a TOML machine spec; SpecError (one line) otherwise."""
    try:  # a regular file of at most _MOST_SPEC_BYTES, read without blocking (a FIFO is refused)
        text = read_bounded(Path(path), _MOST_SPEC_BYTES).decode("utf-8")
    except NotRegular:
        raise SpecError("not a regular file (a FIFO, device or socket); give a TOML file") from None
    except TooLarge:
        raise SpecError(f"larger than {_MOST_SPEC_BYTES // 2**20} MiB; a machine spec is a few lines") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"cannot read it: {error.strerror if isinstance(error, OSError) else error}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"not TOML: {error}") from None
    except (RecursionError, MemoryError):
        raise SpecError("not a machine spec: nested too deeply") from None
    return parse_spec(data, str(path))


def describe(spec: MachineSpec, fingerprint: dict[str, Any]) -> None:
    """Mark a machine fingerprint simulated (the whole spec) and give its GPUs the spec's links."""
    fingerprint["simulated"] = spec.as_json()
    # On a machine with real GPUs, NVML may have described those: none of it is the spec's.
    fingerprint.update(driver=None, nvml=False)
    for device in fingerprint.get("devices", []):
        device.update(pcie_generation=spec.link.pcie_gen, pcie_width=spec.link.pcie_width,
                      pcie_max_generation=spec.link.pcie_gen, pcie_max_width=spec.link.pcie_width,
                      nvlink_version=spec.link.nvlink_version, nvlink_links=spec.link.nvlink_links,
                      memory_peak_gbps=None)


class SimClock:
    """pytest-benchmark's timer: simulated seconds while a simulated case is timed, else the real clock."""

    __module__ = __name__
    __name__ = "CLOCK (simulated)"  # what pytest-benchmark's JSON names its timer

    def __init__(self) -> None:
        self.now = 0.0
        self.simulating = False

    def __call__(self) -> float:
        if not self.simulating:
            return time.perf_counter()
        self.now += TICK_S
        return self.now

    def reset(self) -> None:
        self.now, self.simulating = 0.0, False


#: The one clock a session hands to pytest-benchmark (``--benchmark-timer`` takes a dotted name).
CLOCK = SimClock()


def path_of(case: Case) -> str | None:
    """The spec path a case's copy takes, None when it copies nothing across or within devices."""
    if case.op in ("h2d", "d2h"):
        return f"{case.op}_{case.host_memory or 'pageable'}"
    return case.op if case.op in ("d2d", "peer") else None


def _waits(case: Case) -> bool:
    """Whether the host waits for the copy: pageable memory and blocking calls do;
    a non_blocking copy from or to pinned memory and device-side copies return at once."""
    return case.op in ("h2d", "d2h") and (not case.non_blocking or case.host_memory != "pinned")


class Workers:
    """A DataLoader's workers on the simulated machine (an assumed model, docs/simulated-machine.md): ``count``
    processes each making a whole batch in ``make_s`` (decode, normalise, collate), staggered, so at best one batch
    is ready every ``make_s / count``; at most ``ahead`` made and not taken (``num_workers x prefetch_factor``); with
    ``pin_s``, the pin-memory thread pins each in turn. Without workers the main process makes and pins each batch
    when it asks for it. The spec has no CPU count: workers never compete for CPUs."""

    def __init__(self, count: int, make_s: float, pin_s: float, ahead: int, start: float) -> None:
        self.count, self.make_s, self.pin_s = count, make_s, pin_s
        self.made = self.pinned = start  # when the last batch was made, and pinned
        self.taken: deque[float] = deque([start] * ahead, maxlen=max(ahead, 1))  # the last ``ahead`` taken

    def take(self, now: float) -> float:
        """When the next batch is in the main process's hands, asked for at ``now``."""
        if not self.count:
            return now + self.make_s + self.pin_s
        self.made = max(self.made + self.make_s / self.count, self.taken[0] + self.make_s)  # a slot freed first
        self.pinned = max(self.pinned, self.made) + self.pin_s
        self.taken.append(max(now, self.pinned))
        return self.taken[-1]


class SimBackend:
    """The DeviceBackend of a simulated machine (``spec.gpus`` CUDA devices)."""

    type: str | None = "cuda"
    simulated = True

    def __init__(self, spec: MachineSpec, clock: SimClock = CLOCK) -> None:
        self.spec = spec
        self.clock = clock
        clock.reset()
        self.busy_until = [0.0] * spec.gpus  # when each device's stream has done its queued work
        # Side streams (a concurrent family's): (device, copy engine) -> when its queued work is done.
        self.side_streams: dict[tuple[int, str], float] = {}
        self.device_work = [0.0] * spec.gpus  # device seconds charged to each device so far
        self._rng = random.Random(spec.seed)
        self._varies = bool(spec.noise or spec.drift)
        cpus, nodes = sorted(os.sched_getaffinity(0)), spec.numa_nodes
        # This machine's CPUs stand for the spec's nodes, shared out in order; too few CPUs: no node has CPUs.
        self.node_cpus = [set(cpus[k * len(cpus) // nodes:(k + 1) * len(cpus) // nodes]) for k in range(nodes)
                          ] if 2 <= nodes <= len(cpus) else []

    # -- costs -------------------------------------------------------------------------------
    def _factor(self) -> float:
        """Jitter and drift of one cost (1 exactly without noise and drift)."""
        factor = 1.0
        if self.spec.drift:
            factor *= 1 + self.spec.drift * math.sin(2 * math.pi * self.clock.now / DRIFT_PERIOD_S)
        if self.spec.noise:
            factor *= 1 + self.spec.noise * self._rng.gauss(0.0, 1.0)
        return max(_FLOOR, factor)

    def _host(self, seconds: float) -> None:
        self.clock.now += seconds * self._factor() if self._varies else seconds

    def plan(self, case: Case) -> tuple[float, int | None, float, bool]:
        """What one call of ``case`` costs: (host seconds, device index, device seconds, host waits)."""
        index = event_device(case.src, case.dst)
        path = path_of(case)
        launch = self.spec.launch_us * 1e-6
        if case.op == "noop" or (case.op == "create" and case.method == "empty"):
            return self.spec.dispatch_ns * 1e-9, None, 0.0, False  # enqueues nothing (empty: a cached block)
        if path is not None and index is not None:
            return launch, index, self.spec.paths[path].seconds(case.nbytes), _waits(case)
        if case.op == "create" and index is not None:  # a fill writes every byte: priced as a same-device copy
            return launch, index, self.spec.paths["d2d"].seconds(case.nbytes), False
        raise ValueError(f"the simulated machine has no cost for {case.op} {case.method}")

    def host_numa_node(self, device: str) -> int | None:
        """The NUMA node of ``device`` (GPU i on node i x numa_nodes // gpus), where its host buffers are placed;
        None on a spec of one node (nothing to place)."""
        index = accelerator_index(device)
        nodes = self.spec.numa_nodes
        return None if nodes < 2 or index is None else index * nodes // self.spec.gpus

    def gpu_local_cpus(self, device: str) -> set[int] | None:
        """The CPUs standing for ``device``'s node, None where there are none (one node, or fewer CPUs than nodes)."""
        node = self.host_numa_node(device)
        return self.node_cpus[node] if node is not None and self.node_cpus else None

    def page_nodes(self, address: int, nbytes: int) -> dict[int, int]:
        """Where a buffer's pages sit: first touched by the calling thread, on the nodes of the CPUs it may run on
        (one node when it is bound to one, shared out when not)."""
        mine = os.sched_getaffinity(0)
        return dict(Counter(node for node, cpus in enumerate(self.node_cpus) for _ in cpus & mine))

    def done(self, index: int, stream: str | None = None) -> float:
        """When ``index``'s default stream (or side ``stream``) will have done what is queued on it."""
        return self.side_streams.get((index, stream), 0.0) if stream else self.busy_until[index]

    def join(self, index: int, stream: str) -> None:
        """The default stream waits for side ``stream`` (``wait_stream``): later work starts after its copies."""
        self.busy_until[index] = max(self.busy_until[index], self.done(index, stream))

    def issue(self, host_s: float, index: int | None, device_s: float, waits: bool, stream: str | None = None) -> None:
        """One simulated call: the host pays ``host_s``; ``device_s`` of work starts when
        ``index``'s stream is free (none when ``index`` is None); a waiting call returns when
        it is done. ``stream`` names a side stream (a copy engine) that runs beside the
        device's default one. The building block for simulating other calls (a scenario's, say)."""
        self._host(host_s)
        if index is None:
            return
        if self._varies:
            device_s *= self._factor()
        done = max(self.clock.now, self.done(index, stream)) + device_s
        if stream:
            self.side_streams[(index, stream)] = done
        else:
            self.busy_until[index] = done
        self.device_work[index] += device_s
        if waits:
            self.clock.now = done

    # -- DeviceBackend -----------------------------------------------------------------------
    def device_count(self) -> int:
        return self.spec.gpus

    def synchronize(self, index: int) -> None:
        sides = (done for (device, _), done in self.side_streams.items() if device == index)
        self.clock.now = max(self.clock.now, self.busy_until[index], *sides)
        self._host(self.spec.sync_us * 1e-6)

    def wait(self, index: int, seconds: float) -> bool:
        self.synchronize(index)  # a simulated copy never sticks
        return True

    @contextlib.contextmanager
    def simulating(self) -> Iterator[None]:
        """pytest-benchmark reads the simulated clock inside (a scenario's or concurrent case's timing)."""
        self.clock.simulating = True
        try:
            yield
        finally:
            self.clock.simulating = False

    def device_name(self, index: int) -> str:
        return f"{self.spec.name} (simulated)"

    def memory_info(self, index: int) -> tuple[int, int] | None:
        total = int(self.spec.memory_gib * 2**30)
        return total, total

    def can_access_peer(self, src: int, dst: int) -> bool:
        return src != dst

    def peer_link_classes(self, gpus: list[str]) -> dict[tuple[str, str], str | None]:
        """Every pair's link class: one, the spec prices every peer pair alike (--xfer-peer-pairs)."""
        return {(s, d): "peer (one simulated price)" for s in gpus for d in gpus if s != d}

    def empty_cache(self) -> None:
        return None

    def event_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """Device time per call of ``fn``, from ``repeats`` calls back to back (three windows),
        as events around them on a held stream would read it: the device work alone."""
        times = []
        for _ in range(3):
            before = self.device_work[index]
            for _ in range(repeats):
                fn()
            times.append((self.device_work[index] - before) / repeats)
        return times

    def profiled_seconds(self, fn: Callable[[], Any], index: int, repeats: int) -> list[float] | None:
        """None: the simulated machine has no profiler (its device time comes from events)."""
        return None

    def tensor_device(self, device: str) -> str:
        return "cpu"  # a simulated accelerator's tensors live in host memory

    def pin_memory(self, tensor: Any) -> Any:
        return tensor  # pinned is a property of the simulated buffer, priced by its path

    @contextlib.contextmanager
    def timed(self, case: Case, op: Callable[[], T]) -> Iterator[Callable[[], T | None]]:
        """The call to time for ``case``: a case on a simulated device charges its cost to
        the simulated clock, which pytest-benchmark reads meanwhile; a host-only case runs
        for real on the real clock."""
        if all(accelerator_index(d) is None for d in case.devices):
            yield op
            return
        call: Callable[[], T | None] = op if case.op == "sync" else self._simulated(case, op)
        # (a sync case's operation is this backend's own synchronize)
        with self.simulating():
            yield call

    def _simulated(self, case: Case, op: Callable[[], T]) -> Callable[[], None]:
        # The timed calls only charge: the data moves for real in the verification call,
        # outside the timed region (run_case verifies with ``op`` itself).
        return functools.partial(self.issue, *self.plan(case))
