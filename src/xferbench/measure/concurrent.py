"""Measurements nvbandwidth makes that a PyTorch user feels: copies at once, copy paths, NUMA.

- ``bidir``: host-to-device and device-to-host at the same time on two streams of one
  GPU (its copy engines are duplex), next to each direction alone;
- ``all_gpus_host``: every GPU copying to (or from) the host at once, next to one GPU
  alone: the shared PCIe switch or root complex shows as a lower aggregate;
- ``copy_kind``: a contiguous same-dtype move (one DMA / memcpy) against a strided
  source or a dtype-converting ``.to()`` (a kernel, or a host-side copy first);
- ``numa``: pinned copies with the host buffer on the GPU's NUMA node against one on
  another node (placed by allocating from a thread bound to that node's CPUs, and
  checked in ``/proc/self/numa_maps``);
- ``peer_bidir``: GPU a to GPU b and b to a at the same time, next to each direction
  alone, for the pairs the peer plan sweeps (nvbandwidth's device_to_device_bidirectional);
- ``peer_all``: every GPU copying to the next one at once (a ring): every GPU's link
  sends and receives while the fabric (an NVSwitch, a PCIe switch) carries them all.

Each is a family of ``Concurrent`` records (frozen, like ``cases.Case``), a plan and a
preparation, registered with its sizes and simulated price in ``scenario_families.py``;
a call enqueues its copies and returns once every GPU involved is synchronized (clock
``wall+sync``). Machines that cannot run one get a one-line skip reason. CUDA only: the copies run on CUDA streams.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract import Identity
from ..units import format_size
from .cases import PeerPlan, Skipped, accelerators, no_accelerator
from .hardware.devices import DeviceBackend, Wedged, accelerator_index
from .hardware.machine import gpu_local_cpus, parse_cpu_list, pci_bus_id
from .scenarios import Prepared, Sync, empty_host_cache, missing_cuda

if TYPE_CHECKING:
    from .simulate import SimBackend

__all__ = ["PEER_OPS", "Concurrent", "NotPlaceable", "numa_node_of", "ring_legs", "time_concurrent"]

#: float32 elements per row of the 2-D payloads (strided views take every other column).
ROW = 1024
SYSFS_NODES = Path("/sys/devices/system/node")
#: The families whose copies run between GPUs: their synchronizes give up after a deadline (a stuck peer copy).
PEER_OPS = ("peer_bidir", "peer_all")
Pair = tuple[str, str]


def ring_legs(gpus: Sequence[str]) -> tuple[Pair, ...]:
    """Each GPU to the next one, the last to the first: every GPU sends one copy and receives one."""
    return tuple((gpu, gpus[(i + 1) % len(gpus)]) for i, gpu in enumerate(gpus))


@dataclass(frozen=True)
class Concurrent:
    op: str
    variant: str
    src: str  # "cpu", "cuda:i", or "all:cuda" (every GPU at once)
    dst: str
    size: int  # bytes of one payload
    gpus: tuple[str, ...]  # the GPUs the call uses

    @property
    def legs(self) -> tuple[Pair, ...]:
        """The GPU-to-GPU copies one call of a peer family makes, each (source, destination); none elsewhere."""
        if self.op == "peer_all":
            return ring_legs(self.gpus)
        if self.op == "peer_bidir":
            return ((self.src, self.dst), (self.dst, self.src)) if self.variant == "both_ways" else ((self.src, self.dst),)
        return ()

    @property
    def copies(self) -> int:
        """Payloads moved by one call: both directions, one per GPU, or one per peer copy."""
        if self.legs:
            return len(self.legs)
        if self.variant == "h2d+d2h":
            return 2
        return len(self.gpus) if self.variant.endswith("_all") else 1

    @property
    def nbytes(self) -> int:
        """Bytes one call moves, summed over directions and GPUs (the figure says it is a sum)."""
        return self.size * self.copies

    @property
    def devices(self) -> tuple[str, ...]:
        """The GPUs the call uses: what must exist for real, or what the simulated machine prices."""
        return self.gpus

    @property
    def size_label(self) -> str:
        return format_size(self.size)

    @property
    def shape(self) -> tuple[int, ...]:
        return (max(1, self.size // 4 // ROW), ROW)

    @property
    def id(self) -> str:
        joint = "<->" if self.variant == "both_ways" else "->"
        where = self.src if self.src == self.dst else f"{self.src}{joint}{self.dst}"
        return f"{self.variant}-{self.size_label}-{where}"

    @property
    def host_memory(self) -> str | None:
        return "pinned" if "cpu" in (self.src, self.dst) else None

    def identity(self) -> Identity:
        return Identity(self.op, self.variant, self.src, self.dst, self.nbytes, "float32", self.shape,
                        host_memory=self.host_memory, non_blocking=self.op in ("bidir", "all_gpus_host", *PEER_OPS),
                        variant=self.variant)

    def extra_info(self) -> dict[str, Any]:
        legs = {"peer_legs": [f"{src}->{dst}" for src, dst in self.legs]} if self.legs else {}
        return self.identity().extra_info() | {"size_unit": "bytes"} | legs


# --- which cases a machine gets -----------------------------------------------------------------------------

Planned = Concurrent | Skipped


def _cuda_gpus(op: str, devices: Sequence[str], *, host: bool = True) -> tuple[list[str], list[Planned]]:
    """The GPUs a family runs on here, or the one skip line saying why there are none."""
    gpus = accelerators(devices)
    if not gpus:
        return [], [skip for skip in no_accelerator(op, devices) if isinstance(skip, Skipped)]
    if not all(g.startswith("cuda:") for g in gpus):
        return [], [Skipped(f"{op}-needs-cuda", f"{op} times copies on CUDA streams; the accelerators here are "
                                                 f"{', '.join(gpus)}")]
    if host and "cpu" not in devices:
        return [], [Skipped(f"{op}-no-cpu", f"{op} needs cpu in --xfer-devices")]
    return gpus, []


def plan_bidir(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = _cuda_gpus("bidir", devices)
    return skip + [c for size in sizes for g in gpus for c in (
        Concurrent("bidir", "h2d", "cpu", g, size, (g,)),
        Concurrent("bidir", "d2h", g, "cpu", size, (g,)),
        Concurrent("bidir", "h2d+d2h", "cpu", g, size, (g,)),
    )]


def plan_all_gpus_host(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = _cuda_gpus("all_gpus_host", devices)
    if skip:
        return skip
    if len(gpus) < 2:
        return [Skipped("all_gpus_host-needs-two-accelerators",
                        f"all_gpus_host loads the host link from every GPU at once; it needs two or more, found "
                        f"{len(gpus)} ({', '.join(gpus)}): see bidir and h2d for one GPU")]
    every, one = tuple(gpus), gpus[0]
    return [c for size in sizes for c in (
        Concurrent("all_gpus_host", "h2d_one", "cpu", one, size, (one,)),
        Concurrent("all_gpus_host", "h2d_all", "cpu", "all:cuda", size, every),
        Concurrent("all_gpus_host", "d2h_one", one, "cpu", size, (one,)),
        Concurrent("all_gpus_host", "d2h_all", "all:cuda", "cpu", size, every),
    )]


#: copy_kind variants: host to device, and within one device.
COPY_KINDS_H2D = ("memcpy", "strided", "convert", "convert_nonblocking")
COPY_KINDS_D2D = ("memcpy", "strided", "convert")


def plan_copy_kind(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = _cuda_gpus("copy_kind", devices, host=False)
    planned: list[Planned] = list(skip)
    for size in sizes:
        for g in gpus:
            if "cpu" in devices:
                planned += [Concurrent("copy_kind", v, "cpu", g, size, (g,)) for v in COPY_KINDS_H2D]
            planned += [Concurrent("copy_kind", v, g, g, size, (g,)) for v in COPY_KINDS_D2D]
    return planned


def plan_numa(devices: Sequence[str], sizes: Sequence[int]) -> list[Planned]:
    gpus, skip = _cuda_gpus("numa", devices)
    return skip + [
        Concurrent("numa", f"{direction}_{where}", *(("cpu", g) if direction == "h2d" else (g, "cpu")), size, (g,))
        for size in sizes for g in gpus for direction in ("h2d", "d2h") for where in ("local", "remote")]


def _peer_gpus(op: str, devices: Sequence[str], least: int, why: str) -> tuple[list[str], list[Planned]]:
    """The GPUs a peer family runs on, or the one skip line saying why there are none (the host is not needed)."""
    gpus, skip = _cuda_gpus(op, devices, host=False)
    if not skip and len(gpus) < least:
        count = {2: "two", 3: "three"}[least]
        skip = [Skipped(f"{op}-needs-{count}-accelerators", f"{op} {why}; it needs {least} or more GPUs, found "
                                                             f"{len(gpus)} ({', '.join(gpus)})")]
    return (gpus, []) if not skip else ([], skip)


def duplex_pairs(gpus: Sequence[str], swept: Iterable[Pair] | None) -> list[Pair]:
    """The GPU pairs peer_bidir times, each once, in device order: those the peer plan sweeps at every
    size (in either direction; one per link class keeps an 8-GPU node to one pair), every pair without one."""
    order = {gpu: i for i, gpu in enumerate(gpus)}
    wanted = [(s, d) for s in gpus for d in gpus if s != d] if swept is None else swept
    pairs = {(s, d) if order[s] < order[d] else (d, s) for s, d in wanted if s in order and d in order}
    return sorted(pairs, key=lambda pair: (order[pair[0]], order[pair[1]]))


def plan_peer_bidir(devices: Sequence[str], sizes: Sequence[int], peers: PeerPlan | None = None) -> list[Planned]:
    gpus, skip = _peer_gpus("peer_bidir", devices, 2, "copies between two GPUs both ways at once")
    pairs = duplex_pairs(gpus, None if peers is None else peers.swept)
    return skip + [Concurrent("peer_bidir", variant, *ends, size, (a, b)) for size in sizes for a, b in pairs
                   for variant, ends in (("one_way", (a, b)), ("other_way", (b, a)), ("both_ways", (a, b)))]


def plan_peer_all(devices: Sequence[str], sizes: Sequence[int], peers: PeerPlan | None = None) -> list[Planned]:
    gpus, skip = _peer_gpus("peer_all", devices, 3, "has every GPU copy to the next one at once (a ring); on two "
                                                    "GPUs that is peer_bidir's both_ways")
    return skip + [Concurrent("peer_all", "ring", "all:cuda", "all:cuda", size, tuple(gpus)) for size in sizes if gpus]


# --- what is timed ----------------------------------------------------------------------------------------

class NotPlaceable(Exception):
    """The case cannot run here as specified (no real CUDA device, no such NUMA node); the message says why."""


def _require_cuda(c: Concurrent) -> None:
    """These cases time real CUDA streams and copy engines: a backend without them
    (a simulated machine, a fake) gets a reason rather than a crash."""
    reason = missing_cuda(c.gpus)
    if reason:
        raise NotPlaceable(f"{c.op} {reason}")


def _pattern(shape: tuple[int, ...], device: str, pinned: bool = False) -> Any:
    import torch

    from .transfers import pattern

    values = pattern(shape, torch.float32, device)
    return values.pin_memory() if pinned else values


def _equal(got: Any, expected: Any, what: str) -> None:
    import torch

    if not torch.equal(got.cpu().float(), expected.cpu().float()):
        raise AssertionError(f"{what}: the destination does not hold the source's values")


def _streamed(device: str) -> Any:
    import torch

    return torch.cuda.Stream(torch.device(device))


def prepare_bidir(c: Concurrent, sync: Sync) -> Prepared:
    _require_cuda(c)
    import torch

    gpu = c.gpus[0]
    host_src, dev_src = _pattern(c.shape, "cpu", pinned=True), _pattern(c.shape, gpu)
    dev_dst, host_dst = torch.empty_like(dev_src), torch.empty_like(host_src).pin_memory()
    up, down = _streamed(gpu), _streamed(gpu)
    sync()  # buffers made on the default stream are complete before the side streams read them

    def h2d() -> None:
        with torch.cuda.stream(up):
            dev_dst.copy_(host_src, non_blocking=True)

    def d2h() -> None:
        with torch.cuda.stream(down):
            host_dst.copy_(dev_src, non_blocking=True)

    parts = {"h2d": (h2d,), "d2h": (d2h,), "h2d+d2h": (h2d, d2h)}[c.variant]

    def call() -> None:
        for part in parts:
            part()
        sync()

    def check(_: Any) -> None:
        if h2d in parts:
            _equal(dev_dst, host_src, f"{c.id} host to device")
        if d2h in parts:
            _equal(host_dst, dev_src, f"{c.id} device to host")
    return Prepared(call, check=check)


def _peer_leg(src: str, dst: str, shape: tuple[int, ...]) -> tuple[Callable[[], None], Any, Any]:
    """One GPU-to-GPU copy, queued on a stream of its own on its source, with its source and destination.

    PyTorch queues a copy between GPUs on the source's current stream, which first waits for the
    destination's current stream, and then makes that stream wait for the copy (its
    copy_device_to_device). The destination's current stream stays its default one: nothing of this
    call is queued there before the copy, so no copy waits for another, and after it the default
    stream holds the copy, so the deadline's event there (``DeviceBackend.wait``) ends with it."""
    import torch

    source, target = _pattern(shape, src), _pattern(shape, dst).zero_()
    send = _streamed(src)

    def copy() -> None:
        with torch.cuda.stream(send):
            target.copy_(source, non_blocking=True)
    return copy, source, target


def prepare_peer(c: Concurrent, sync: Sync) -> Prepared:
    """peer_bidir and peer_all: every leg of ``c`` queued, then every GPU synchronized. The check zeroes
    every destination and makes one more call, so what it compares is that call's doing."""
    _require_cuda(c)
    import torch

    legs = [_peer_leg(src, dst, c.shape) for src, dst in c.legs]
    access = all(torch.cuda.can_device_access_peer(torch.device(s).index, torch.device(d).index) for s, d in c.legs)
    sync()

    def call() -> None:
        for copy, _, _ in legs:  # every copy is queued before any is waited for, so they all run at once
            copy()
        sync()

    def check(_: Any) -> None:
        for _, _, target in legs:
            target.zero_()
        sync()
        call()
        for (src, dst), (_, source, target) in zip(c.legs, legs, strict=True):
            _equal(target, source, f"{c.id} {src}->{dst}")
    return Prepared(call, check=check, extra={"peer_access": access})


def _near(local: set[int] | None, allocate: Callable[[], Any]) -> Any:
    """``allocate()`` run on CPUs of a GPU's NUMA node (``local``), so the pages it first touches
    land on that node; where the node is unknown or off limits, where this thread runs."""
    try:
        cpus = numa_cpus(local, set(os.sched_getaffinity(0)), "local")
    except NotPlaceable:
        return allocate()
    with _bound_to(cpus):
        return allocate()


def prepare_all_gpus_host(c: Concurrent, sync: Sync) -> Prepared:
    _require_cuda(c)
    import torch

    to_device = c.variant.startswith("h2d")
    legs = []
    empty_host_cache()  # a cached pinned block would sit wherever it was first allocated
    for gpu in c.gpus:
        # Each GPU's host buffer on its own node: on 2 sockets, half the GPUs would otherwise
        # cross the socket link and the host link be blamed for it.
        local = gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(gpu))))
        host = _near(local, lambda: _pattern(c.shape, "cpu", pinned=True) if to_device
                     else torch.empty(c.shape, pin_memory=True))
        device = torch.empty(c.shape, device=gpu) if to_device else _pattern(c.shape, gpu)
        legs.append((_streamed(gpu), host, device))
    nodes = [numa_node_of(host.data_ptr()) for _, host, _ in legs]
    sync()

    def call() -> None:
        # Every copy is queued before any is waited for, so they all run at once.
        for stream, host, device in legs:
            with torch.cuda.stream(stream):
                (device.copy_(host, non_blocking=True) if to_device else host.copy_(device, non_blocking=True))
        sync()

    def check(_: Any) -> None:
        for _stream, host, device in legs:
            _equal(device, host, f"{c.id} {device.device}")
    return Prepared(call, check=check, extra={"host_numa_nodes": nodes})


def prepare_copy_kind(c: Concurrent, sync: Sync) -> Prepared:
    _require_cuda(c)
    import torch

    gpu = torch.device(c.gpus[0])
    on_host = c.src == "cpu"
    where = "cpu" if on_host else c.src
    if c.variant == "strided":
        # Every other column of a twice-as-wide buffer: not dense, so no single memcpy can move it.
        rows, cols = c.shape
        src = _pattern((rows, 2 * cols), where, pinned=on_host)[:, ::2]
    else:
        src = _pattern(c.shape, where, pinned=on_host)
    half = torch.float16
    calls: dict[str, Callable[[], Any]] = {
        "memcpy": (lambda: src.to(gpu)) if on_host else src.clone,
        # Host: torch first makes the view contiguous in pageable host memory, then copies it.
        # Device: one elementwise copy kernel instead of a memcpy.
        "strided": lambda: src.to(gpu) if on_host else src.contiguous(),
        # Blocking: converted on the CPU, then the (pageable) result is copied; non_blocking:
        # copied as float32, then converted on the GPU by a kernel.
        "convert": lambda: src.to(gpu, half),
        "convert_nonblocking": lambda: src.to(gpu, half, non_blocking=True),
    }
    move = calls[c.variant]

    def call() -> Any:
        result = move()
        sync()
        return result

    def check(result: Any) -> None:
        if result.device != gpu or tuple(result.shape) != tuple(src.shape):
            raise AssertionError(f"{c.id}: got {tuple(result.shape)} on {result.device}")
        _equal(result, src, c.id)
    return Prepared(call, check=check)


def numa_node_of(address: int, maps: str | None = None) -> int | None:
    """The NUMA node holding most pages of the mapping at ``address`` (``/proc/self/numa_maps``)."""
    if maps is None:
        try:
            maps = Path("/proc/self/numa_maps").read_text()
        except OSError:
            return None
    best: int | None = None
    for line in maps.splitlines():
        start, _, rest = line.partition(" ")
        try:
            begins = int(start, 16)
        except ValueError:
            continue
        if begins > address:
            break
        pages = {int(n): int(count) for n, count in re.findall(r"\bN(\d+)=(\d+)", rest)}
        best = max(pages, key=lambda node: pages[node]) if pages else None
    return best


def _node_cpus(root: Path = SYSFS_NODES) -> dict[int, set[int]]:
    nodes = {}
    for folder in root.glob("node[0-9]*"):
        try:
            nodes[int(folder.name[4:])] = parse_cpu_list((folder / "cpulist").read_text())
        except (OSError, ValueError):
            continue
    return nodes


def numa_cpus(local: set[int] | None, allowed: set[int], where: str,
              nodes: dict[int, set[int]] | None = None) -> set[int]:
    """CPUs this process may use on the GPU's node (``local``) or on another node (``remote``)."""
    if not local:
        raise NotPlaceable("the GPU's NUMA node is unknown (no PCI address or sysfs local_cpulist)")
    if where == "local":
        cpus = local & allowed
        if not cpus:
            raise NotPlaceable("this process may not run on any CPU of the GPU's NUMA node")
        return cpus
    for node_cpus in (_node_cpus() if nodes is None else nodes).values():
        cpus = (node_cpus - local) & allowed
        if cpus and not node_cpus & local:
            return cpus
    raise NotPlaceable("no other NUMA node with CPUs this process may use: the machine has one node here")


@contextmanager
def _bound_to(cpus: set[int]) -> Iterator[None]:
    """Run the calling thread on ``cpus``: memory it first touches lands on their node."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def prepare_numa(c: Concurrent, sync: Sync) -> Prepared:
    _require_cuda(c)
    import torch

    gpu = c.gpus[0]
    direction, where = c.variant.split("_")
    local = gpu_local_cpus(pci_bus_id(torch.cuda.get_device_properties(torch.device(gpu))))
    cpus = numa_cpus(local, set(os.sched_getaffinity(0)), where)
    with _bound_to(cpus):
        empty_host_cache()  # a cached pinned block would sit wherever it was first allocated
        host = torch.empty(c.shape, pin_memory=True)  # cudaHostAlloc places the pages from this thread
        host.copy_(_pattern(c.shape, "cpu"))
    device = _pattern(c.shape, gpu) if direction == "d2h" else torch.empty(c.shape, device=gpu)
    node = numa_node_of(host.data_ptr())
    sync()

    def call() -> None:
        (device.copy_(host, non_blocking=True) if direction == "h2d" else host.copy_(device, non_blocking=True))
        sync()

    def check(_: Any) -> None:
        _equal(device, host, c.id)
    return Prepared(call, check=check, extra={"host_numa_node": node})


def time_concurrent(c: Concurrent, make: Callable[[Sync], Prepared], benchmark: Any, backend: DeviceBackend,
                    simulator: SimBackend | None) -> dict[str, Any]:
    """Time ``c`` with ``benchmark`` after a warm-up, check what arrived, fill in extra_info. ``make``
    builds the calls (the real ones, or the simulated machine's prices when ``simulator`` is given).

    Raises CannotRun (the caller skips) when memory is short or a NUMA placement is impossible, Wedged
    when a peer family's copy is stuck (its GPUs are then refused to every later case).
    """
    from .transfers import mark_wedged

    try:
        return _time_concurrent(c, make, benchmark, backend, simulator)
    except Wedged:
        mark_wedged(c.gpus, c.id)  # its queued copy never ends: nothing more runs on these GPUs
        raise


def _synchronizer(c: Concurrent, backend: DeviceBackend) -> Sync:
    """A synchronize of every GPU ``c`` uses. A peer family's gives up after the copy's deadline and raises
    Wedged, as a peer case's does: with the IOMMU or ACS on, a copy between GPUs can hang for ever."""
    from .timing import copy_deadline, wait_or_raise

    indices = [i for i in map(accelerator_index, c.gpus) if i is not None]
    deadline = copy_deadline(c.nbytes) if c.op in PEER_OPS else None

    def sync() -> None:
        for index in indices:
            if deadline is None:
                backend.synchronize(index)
            else:
                wait_or_raise(backend, index, deadline)
    return sync


def _time_concurrent(c: Concurrent, make: Callable[[Sync], Prepared], benchmark: Any, backend: DeviceBackend,
                     simulator: SimBackend | None) -> dict[str, Any]:
    from .hardware.faults import after_timing
    from .timing import CLOCK_SIMULATED, CLOCK_WALL
    from .transfers import WARMUP_CALLS, CannotRun, out_of_memory_skips

    sync = _synchronizer(c, backend)
    with out_of_memory_skips(c.size_label, backend):
        try:
            prepared = make(sync)
        except NotPlaceable as reason:
            raise CannotRun(str(reason)) from None
        benchmark.group = f"{c.op} {c.src}->{c.dst}"
        benchmark.extra_info.update(c.extra_info(), clock=CLOCK_WALL if simulator is None else CLOCK_SIMULATED,
                                    **prepared.extra)
        with nullcontext() if simulator is None else simulator.simulating():
            for _ in range(WARMUP_CALLS):
                prepared.target()
            result = benchmark(prepared.target)
        if simulator is None:  # runs for real (a simulated one prices its copies)
            benchmark.extra_info["minor_faults_per_call"] = after_timing(benchmark, prepared.target)
        prepared.check(result)
    return benchmark.extra_info
