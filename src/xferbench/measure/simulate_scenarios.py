"""What the GPU scenarios and the concurrent families cost on the simulated machine.

``scenarios.py`` and ``concurrent.py`` time real CUDA calls (queued sleep kernels,
side streams, page-locking, NUMA-bound threads). On a simulated machine
(``--xfer-simulate``) each of their variants is priced here instead, call by call, in
the spec's terms (docs/simulated-machine.md):

- a copy is a launch (``launch_us``) and ``alpha + n/GBps`` of device time on its path,
  waited for when it is blocking or from or to pageable memory, like a core case's;
- a copy kernel (strided, converting) costs the ``d2d`` path's time for the bytes it
  writes, times ``kernel_slowdown``;
- a host-side copy or conversion costs the bytes it writes at ``host_copy_GBps``;
  page-locking fresh memory, the bytes at ``pin_GBps``;
- h2d and d2h at once run on their own copy engines when ``duplex`` (else they take
  turns); every GPU copying to or from the host at once gets ``shared_host_GBps / N``
  at most; a host buffer on another NUMA node caps the copy at ``remote_GBps``;
- copies between GPUs at once (``peer_copy_caps``) share each GPU's link: a GPU sending
  (or receiving) k of them gives each 1/k of the ``peer`` path's bandwidth, and both
  directions count together unless ``peer_duplex``; all of them together get
  ``shared_peer_GBps`` at most (a PCIe switch; none: a non-blocking NVSwitch).

Nothing here runs on a real GPU path: each family's object (``scenario_families.py``)
comes here for its ``price`` only on the simulated backend. No data moves in these variants (what their real checks
look at, a tensor's device, a simulated GPU does not have); their figures, like every
simulated one, are never measurements.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from .concurrent import Concurrent, NotPlaceable
from .hardware.devices import accelerator_index
from .scenarios import BATCH_PIECE, OVERLAP_KERNEL_S, STALL_SECONDS, Prepared, Scenario, Sync, parameter_bytes
from .simulate import SimBackend

__all__ = ["Priced", "peer_copy_caps"]


class Priced:
    """The calls a simulated variant is made of, each charged to the simulated clocks."""

    def __init__(self, backend: SimBackend) -> None:
        self.backend, self.spec = backend, backend.spec

    def copy(self, path: str, nbytes: int, device: str, *, waits: bool, stream: str | None = None,
             cap: float | None = None) -> None:
        """One copy on ``path`` (its bandwidth capped at ``cap``), queued on ``device``."""
        seconds = self.spec.paths[path].capped(cap).seconds(nbytes)
        self.backend.issue(self.spec.launch_us * 1e-6, _index(device), seconds, waits, stream)

    def kernel(self, written: int, device: str) -> None:
        """A copy kernel on ``device`` writing ``written`` bytes (queued, the host does not wait)."""
        seconds = self.spec.paths["d2d"].seconds(written) * self.spec.kernel_slowdown
        self.backend.issue(self.spec.launch_us * 1e-6, _index(device), seconds, False)

    def host_copy(self, written: int) -> None:
        self.backend.issue(written / (self.spec.host_copy_GBps * 1e9), None, 0.0, False)

    def pin(self, nbytes: int) -> None:
        self.backend.issue(nbytes / (self.spec.pin_GBps * 1e9), None, 0.0, False)

    def dispatch(self, calls: int = 1) -> None:
        self.backend.issue(calls * self.spec.dispatch_ns * 1e-9, None, 0.0, False)

    def queue(self, device: str, seconds: float) -> None:
        """Device work of ``seconds`` (a sleep kernel) queued on ``device``."""
        self.backend.issue(self.spec.launch_us * 1e-6, _index(device), seconds, False)


def _index(device: str) -> int:
    index = accelerator_index(device)
    assert index is not None, f"{device} is not a simulated accelerator"
    return index


def _then_sync(sync: Sync, *steps: Callable[[], None]) -> Callable[[], None]:
    def call() -> None:
        for step in steps:
            step()
        sync()
    return call


# --- scenarios ----------------------------------------------------------------------------------------------

def price_module_to(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    sizes = parameter_bytes(s.size)
    if s.variant == "first":  # every parameter copied from pageable host memory, one blocking copy each
        return Prepared(_then_sync(sync, *(lambda n=n: m.copy("h2d_pageable", n, s.dst, waits=True) for n in sizes)))
    return Prepared(_then_sync(sync, lambda: m.dispatch(len(sizes))))  # again: a no-op per parameter


def price_forward(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    from .transfers import CannotRun

    raise CannotRun(f"forward on {s.dst}: the simulated machine prices copies and synchronizes, not compute")


def price_sync_stall(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    def queue_work() -> None:
        sync()
        m.queue(s.src, STALL_SECONDS)

    if s.variant == "nonblocking_event":  # queued behind the work; the host returns after the launch and the record
        def call() -> None:
            m.copy("d2h_pinned", s.size, s.src, waits=False)
            m.dispatch()
    else:  # item reads one float32 element, the others the whole tensor, into pageable memory
        nbytes = 4 if s.variant == "item" else s.size

        def call() -> None:
            m.copy("d2h_pageable", nbytes, s.src, waits=True)
    return Prepared(call, setup=queue_work, teardown=sync, extra={"queued_seconds": STALL_SECONDS})


def price_pin_memory(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.size

    def pinned_then_to() -> None:  # a memcpy into a pinned block (cached or reused), then a non_blocking DMA
        m.host_copy(n)
        m.copy("h2d_pinned", n, s.dst, waits=False)

    def pin_cold() -> None:  # page-locks fresh memory, then copies into it
        m.pin(n)
        m.host_copy(n)

    calls: dict[str, Callable[[], None]] = {
        "pin_cold": pin_cold,
        "pin_cached": lambda: m.host_copy(n),
        "to": _then_sync(sync, lambda: m.copy("h2d_pageable", n, s.dst, waits=True)),
        "pin_cached_then_to": _then_sync(sync, pinned_then_to),
        "reused_pinned_to": _then_sync(sync, pinned_then_to),
        "pinned_to": _then_sync(sync, lambda: m.copy("h2d_pinned", n, s.dst, waits=False)),
    }
    return Prepared(calls[s.variant], setup=sync if s.variant == "pin_cold" else None)


def price_placement(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.nbytes  # uint8 pixels; normalized float32 is 4x that
    calls: dict[str, Callable[[], None]] = {
        "convert_then_move": _then_sync(sync, lambda: m.host_copy(4 * n),
                                        lambda: m.copy("h2d_pageable", 4 * n, s.dst, waits=True)),
        "move_then_convert": _then_sync(sync, lambda: m.copy("h2d_pageable", n, s.dst, waits=True),
                                        lambda: m.kernel(4 * n, s.dst)),
    }
    return Prepared(calls[s.variant])


def price_cuda_vs_to(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    if s.variant.startswith("module"):  # Module.to / .cuda: one blocking copy per parameter
        sizes = parameter_bytes(max(10**3, s.size // 4))
        copies = [lambda n=n: m.copy("h2d_pageable", n, s.dst, waits=True) for n in sizes]
        return Prepared(_then_sync(sync, *copies), setup=sync)
    # .cuda(i), .to('cuda:i'), .to(device), non_blocking: a pageable source, so the host waits in each
    return Prepared(_then_sync(sync, lambda: m.copy("h2d_pageable", s.size, s.dst, waits=True)))


def price_batching(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    n = s.size
    many = [lambda: m.copy("h2d_pageable", BATCH_PIECE, s.dst, waits=True)] * (n // BATCH_PIECE)
    calls: dict[str, tuple[Callable[[], None], ...]] = {
        "many_small": tuple(many),  # a blocking pageable copy per piece, each with its fixed cost
        "cat_then_one": (lambda: m.host_copy(n), lambda: m.copy("h2d_pageable", n, s.dst, waits=True)),
        "one_copy": (lambda: m.copy("h2d_pageable", n, s.dst, waits=True),),
    }
    return Prepared(_then_sync(sync, *calls[s.variant]))


def price_copy_overlap(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    def kernel() -> None:
        m.queue(s.dst, OVERLAP_KERNEL_S)

    def copy(stream: str | None) -> Callable[[], None]:
        return lambda: m.copy("h2d_pinned", s.size, s.dst, waits=False, stream=stream)

    calls: dict[str, tuple[Callable[[], None], ...]] = {
        "kernel_alone": (kernel,),
        "copy_alone": (copy(None),),
        "sequential": (kernel, copy(None)),  # one stream: the copy starts when the kernel is done
        "overlapped": (kernel, copy("h2d")),  # a side stream: the copy runs beside the kernel
    }
    return Prepared(_then_sync(sync, *calls[s.variant]))


def price_state_dict(s: Scenario, m: Priced, sync: Sync) -> Prepared:
    sizes = parameter_bytes(s.size)
    if s.variant == "cpu":  # one blocking copy into fresh pageable memory per tensor
        copies = [lambda n=n: m.copy("d2h_pageable", n, s.src, waits=True) for n in sizes]
    else:  # into pinned memory, queued; the synchronize waits for them all
        copies = [lambda n=n: m.copy("d2h_pinned", n, s.src, waits=False) for n in sizes]
    return Prepared(_then_sync(sync, *copies))


# --- concurrent families ------------------------------------------------------------------------------------

def price_bidir(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu = c.gpus[0]
    up, down = ("h2d", "d2h") if m.spec.duplex else ("copy", "copy")  # one engine: the copies take turns
    parts = {
        "h2d": lambda: m.copy("h2d_pinned", c.size, gpu, waits=False, stream=up),
        "d2h": lambda: m.copy("d2h_pinned", c.size, gpu, waits=False, stream=down),
    }
    return Prepared(_then_sync(sync, *(parts[v] for v in c.variant.split("+"))))


def price_all_gpus_host(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    direction = c.variant.split("_")[0]
    shared = m.spec.shared_host_GBps
    cap = None if shared is None else shared / len(c.gpus)
    legs = [lambda gpu=gpu: m.copy(f"{direction}_pinned", c.size, gpu, waits=False, stream=direction, cap=cap)
            for gpu in c.gpus]
    return Prepared(_then_sync(sync, *legs))


def price_copy_kind(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu, n = c.gpus[0], c.size
    if c.src == "cpu":
        calls: dict[str, tuple[Callable[[], None], ...]] = {
            "memcpy": (lambda: m.copy("h2d_pinned", n, gpu, waits=True),),
            # made contiguous (or converted) on the host into pageable memory, then copied from there
            "strided": (lambda: m.host_copy(n), lambda: m.copy("h2d_pageable", n, gpu, waits=True)),
            "convert": (lambda: m.host_copy(n // 2), lambda: m.copy("h2d_pageable", n // 2, gpu, waits=True)),
            "convert_nonblocking": (lambda: m.copy("h2d_pinned", n, gpu, waits=False), lambda: m.kernel(n // 2, gpu)),
        }
    else:
        calls = {
            "memcpy": (lambda: m.copy("d2d", n, gpu, waits=False),),
            "strided": (lambda: m.kernel(n, gpu),),
            "convert": (lambda: m.kernel(n // 2, gpu),),
        }
    return Prepared(_then_sync(sync, *calls[c.variant]))


def price_numa(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    gpu = c.gpus[0]
    direction, where = c.variant.split("_")
    nodes = m.spec.numa_nodes
    if where == "remote" and nodes < 2:
        raise NotPlaceable("no other NUMA node: the simulated machine has one (numa_nodes in its spec)")
    local = _index(gpu) * nodes // m.spec.gpus
    node = local if where == "local" else (local + 1) % nodes
    cap = m.spec.remote_GBps if where == "remote" else None
    call = _then_sync(sync, lambda: m.copy(f"{direction}_pinned", c.size, gpu, waits=False, cap=cap))
    return Prepared(call, extra={"host_numa_node": node})


def peer_copy_caps(legs: Sequence[tuple[str, str]], GBps: float, duplex: bool, shared: float | None) -> list[float]:
    """The bandwidth each of ``legs`` (GPU-to-GPU copies running at once, (source, destination)) gets: the
    ``peer`` path's ``GBps`` shared fairly by the copies on its busiest end (the copies its source sends and its
    destination receives; with ``duplex`` off, every copy either end takes part in), and ``shared / len(legs)``
    at most. A copy alone keeps the path's bandwidth."""
    sends, receives = Counter(s for s, _ in legs), Counter(d for _, d in legs)

    def load(gpu: str, sending: bool) -> int:
        if not duplex:
            return sends[gpu] + receives[gpu]
        return sends[gpu] if sending else receives[gpu]

    caps = [GBps / max(load(src, True), load(dst, False)) for src, dst in legs]
    return [min(cap, shared / len(legs)) if shared is not None else cap for cap in caps]


def price_peer(c: Concurrent, m: Priced, sync: Sync) -> Prepared:
    """peer_bidir and peer_all: each leg queued on its source, on a stream of its own, at its share of the links."""
    caps = peer_copy_caps(c.legs, m.spec.paths["peer"].GBps, m.spec.peer_duplex, m.spec.shared_peer_GBps)
    legs = [lambda src=src, dst=dst, cap=cap: m.copy("peer", c.size, src, waits=False, stream=f"peer->{dst}", cap=cap)
            for (src, dst), cap in zip(c.legs, caps, strict=True)]
    return Prepared(_then_sync(sync, *legs), extra={"peer_access": True})
