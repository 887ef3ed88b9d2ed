"""The registry of benchmark families: one declarative record per family, listed once.

In the spirit of nvbandwidth's list of test cases: each family says what it times,
what it needs from the machine, whether it moves a payload and over which link, and
how the report shows it (order, colour, prose). Every stage reads this registry —
the case matrix, the plugin, results, the model, the plots, findings, history — so
adding a family is one record here plus one ``bench/test_*.py`` (docs/contributing.md, "Adding a
benchmark family"); a scenario or concurrent family also has one module in
``measure/families/`` with what it runs (its plan, real calls and price). Plain data: no torch, nothing from either side
(a record's ``finding`` is a function of the torch-free ``family_findings.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import family_findings

__all__ = [
    "FAMILIES",
    "KINDS",
    "Family",
    "Variant",
    "family",
    "fitted_ops",
    "moving_ops",
    "ops",
    "order_of",
    "register",
]


@dataclass(frozen=True)
class Variant:
    """One way a core family's payload is moved: the call, the host memory, blocking or not.

    ``cuda_only`` variants (``.cuda(i)``) exist only where the accelerator is CUDA (or ROCm).
    ``variant`` names a second way of running the same call (``single_thread``: with torch's
    intra-op threads set to one); it is part of the identity.
    """

    method: str
    host_memory: str | None = None
    non_blocking: bool = False
    cuda_only: bool = False
    variant: str | None = None


#: Where a core family's cases run: each device; the host alone; host and each accelerator
#: (either direction); each accelerator alone; every ordered pair of accelerators.
ENDPOINTS = ("each", "host", "host->accelerator", "accelerator->host", "accelerator", "accelerator->accelerator")


#: The kinds of family: the case matrix; a scenario and copies at once, copy paths and NUMA
#: (a module each in measure/families/); collectives between processes (measure/distributed).
KINDS = ("core", "scenario", "concurrent", "distributed")


@dataclass(frozen=True)
class Family:
    """One benchmark family."""

    op: str
    title: str
    times: str  # one sentence: what is timed
    kind: str  # "core" (the case matrix), "scenario", "concurrent" (copies at once) or "distributed"
    colour: str  # matplotlib colour of its lines and bars
    moves_payload: bool = True  # bandwidth = bytes / time means something; fitted with t = α + n/β
    link: str | None = None  # what bounds it: "pcie", "nvlink", "device memory", "host memory", "network"
    endpoints: str = "each"  # core families: see ENDPOINTS
    variants: tuple[Variant, ...] = ()  # core families: the calls timed
    sizes: str = "sweep"  # core families: "sweep", "ends" (smallest and largest only: a no-op), or "none"
    # (no size axis: one case per endpoint and variant, nbytes 0, no size in its id: a synchronize)
    caption: str = ""  # the report's prose for its section or plot
    # A scenario or concurrent family's sentences from its rows (family_findings.py), or None
    finding: Callable[[Any], list[str]] | None = None
    break_even: bool = False  # its report section carries the pinning break-even table (pin_cold against pinned_to)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"family {self.op!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "core" and (self.endpoints not in ENDPOINTS or not self.variants):
            raise ValueError(f"family {self.op!r}: a core family needs endpoints (one of {', '.join(ENDPOINTS)}) "
                             "and at least one variant")
        if self.sizes not in ("sweep", "ends", "none"):
            raise ValueError(f"family {self.op!r}: sizes must be sweep, ends or none, got {self.sizes!r}")


def _v(*methods: str, memory: str | None = None, non_blocking: bool = False) -> tuple[Variant, ...]:
    return tuple(Variant(m, memory, non_blocking, cuda_only=m == "cuda") for m in methods)


_H2D = tuple(v for memory in ("pageable", "pinned") for nb in (False, True)
             for v in _v("to", "cuda", "copy_", memory=memory, non_blocking=nb))
#: Blocking allocating moves back land in fresh pageable memory (their faults are the cost
#: that grows past glibc's mmap threshold); copy_ into a preallocated buffer (written once
#: before timing: its pages are touched) is the control without them. .to('cpu',
#: non_blocking=True) returns pinned memory (torch's _to_copy pins the result of a non-blocking
#: copy from CUDA to the CPU): the one-line fix.
_D2H = (*_v("cpu", "to", "copy_", memory="pageable"), *_v("copy_", memory="pinned"),
        *_v("copy_", "to", memory="pinned", non_blocking=True))
#: Host copies: torch's (multi-threaded) clone and copy_, and copy_ on one thread, the roof of a
#: pageable copy to or from a GPU (the driver stages it through a pinned buffer with one thread).
_HOST = (*_v("clone", "copy_", memory="pageable"), Variant("copy_", "pageable", variant="single_thread"))
#: No-ops in the forms users write: .to(torch.device) (the plain "to"), .to('cuda:0') with a string (variant "str":
#: torch parses it on every call), .cuda(i) with an index, and .cpu().
_NOOP = (*_v("to"), Variant("to", variant="str"), *_v("cuda", "cpu"))

_CORE = (
    Family("h2d", "host to device", "pageable and pinned sources, blocking and non_blocking, .to / .cuda / copy_",
           "core", "tab:blue", link="pcie", endpoints="host->accelerator", variants=_H2D),
    Family("d2h", "device to host", ".cpu() / .to('cpu') into fresh pageable memory, .to('cpu', non_blocking=True) "
           "into fresh pinned memory, copy_ into preallocated pageable or pinned",
           "core", "tab:red", link="pcie", endpoints="accelerator->host", variants=_D2H),
    Family("d2d", "same device", "clone and copy_ within one device: its memory bandwidth",
           "core", "tab:green", link="device memory", endpoints="accelerator", variants=_v("clone", "copy_")),
    Family("peer", "device to device", ".to('cuda:j') and copy_ for every ordered pair of GPUs",
           "core", "tab:purple", link="nvlink", endpoints="accelerator->accelerator", variants=_v("to", "copy_")),
    Family("host", "host memory", "host-memory clone and copy_ (also on one thread): the reference any move to or "
           "from the CPU is bounded by", "core", "tab:gray", link="host memory", endpoints="host", variants=_HOST),
    Family("create", "creation", "torch.empty / zeros / ones / rand(shape, device=d) on each device",
           "core", "tab:orange", moves_payload=False, endpoints="each", variants=_v("empty", "zeros", "ones", "rand"),
           caption="torch.empty only reserves memory; zeros/ones/rand also write every byte, so they grow with size. "
                   "Creating directly on the device (device=...) moves nothing across a link."),
    Family("noop", "no-op moves", ".cuda(i), .to(device), .cpu() on a tensor already there: the same object comes back",
           "core", "tab:olive", moves_payload=False, endpoints="each", variants=_NOOP, sizes="ends",
           caption=".cuda(i), .to(torch.device), .to('device') and .cpu() on a tensor already there return the very "
                   "same object; what they cost is PyTorch's dispatch (parsing a string is part of it), shown next to "
                   "the cheapest real copy measured."),
    Family("sync", "synchronizing an idle device", "torch.cuda.synchronize(i) with nothing queued on the device",
           "core", "tab:brown", moves_payload=False, endpoints="accelerator", variants=_v("synchronize"), sizes="none",
           caption="A synchronize of a device with nothing queued still costs a round trip to the driver: what a "
                   "caller pays who synchronizes around every no-op or small move. Nothing moves, so it has no size."),
)

_SCENARIOS = (
    Family("module_to", "Scenario: moving a module (net.to(device))", "net.to(device): a first move and a second no-op one",
           "scenario", "tab:cyan", finding=family_findings.module_to,
           caption="The first move copies every parameter; a second .to() to the same device copies nothing but still "
                   "visits every parameter tensor: its cost does not follow the bytes."),
    Family("forward", "Scenario: a forward pass where the data is (net(X))", "net(X) with net and X on one device",
           "scenario", "tab:cyan", moves_payload=False,
           caption="net and X on the same device; a mismatch is an error (checked_forward says which tensor to move)."),
    Family("sync_stall", "Scenario: hidden synchronizations", ".item(), .cpu(), .tolist(), str(t) behind queued GPU work",
           "scenario", "tab:cyan", finding=family_findings.sync_stall, moves_payload=False,
           caption=".item(), .cpu(), .tolist() and str(t) wait for all queued GPU work (2 ms here) before copying, so even "
                   "4 bytes cost milliseconds. A non_blocking copy into pinned memory, completed by an event, returns at "
                   "once and lets the host work meanwhile. The bandwidth sweep starts every call on an idle GPU: its "
                   "figures hold none of this wait. Read such a buffer only after the event or a synchronize."),
    Family("pin_memory", "Scenario: is pinning worth it?",
           "t.pin_memory() cold and from the host cache, pin-then-move against a reused buffer, and the DMA from "
           "a tensor pinned once (the break-even: how many reuses pay for pinning)",
           "scenario", "tab:cyan", finding=family_findings.pin_memory, break_even=True,
           caption="pin_cold: t.pin_memory() with the pinned host cache emptied before each round, so it page-locks fresh "
                   "memory (what the first pin of a size costs). pin_cached: the caching host allocator still holds a "
                   "freed pinned block of that size, so the call is a memcpy into it (what a loop that pins every batch "
                   "pays after its first). Whether pinning every transfer pays is read from the run, size by size: "
                   "pin_cached_then_to (pin from the cache, then move) against to. pinned_to: the DMA from a tensor "
                   "pinned once, what each reuse costs; pin_cold / (to - pinned_to) reuses pay for pinning it."),
    Family("placement", "Scenario: where to convert an image batch", "convert on the CPU then move, or move then convert",
           "scenario", "tab:cyan", finding=family_findings.cpu_convert,
           caption="An image batch arrives as uint8 and must become normalized float32 on the GPU. Converting on the CPU "
                   "first moves 4x the bytes; moving the uint8 batch and converting on the device moves a quarter."),
    Family("cuda_vs_to", "Scenario: .cuda() against .to()", ".cuda(i), .to('cuda:i'), .to(torch.device), Module.to/.cuda",
           "scenario", "tab:cyan", finding=family_findings.cuda_vs_to,
           caption="Tensor.cuda(i), .to('cuda:i') and .to(torch.device) have the same semantics; what each costs is "
                   "measured below, size by size. "
                   "Module.to and Module.cuda both move parameters in place and return the module itself."),
)

#: What users ask about moving data that nvbandwidth and the tutorials do not time (bench/test_workloads.py).
_WORKLOADS = (
    Family("batching", "Scenario: many small copies or one batched copy",
           "1024 x 4 KiB .to(device) against torch.cat then one copy, and one copy of a contiguous buffer",
           "scenario", "tab:cyan",
           caption="many_small: one blocking .to() per 4 KiB piece of pageable memory, each paying the fixed cost "
                   "of a copy; cat_then_one: torch.cat on the host, then one copy; one_copy: the same bytes already "
                   "contiguous, one copy. Bytes are the total moved, counted once."),
    Family("copy_overlap", "Scenario: copy/compute overlap", "a non-blocking pinned host-to-device copy on a side stream "
           "while a kernel runs, against the two in sequence on one stream", "scenario", "tab:cyan",
           caption="kernel_alone: a kernel of about 1 ms (torch.cuda._sleep); copy_alone: the pinned non-blocking copy; "
                   "sequential: both on the default stream, one after the other; overlapped: the copy on a side stream "
                   "while the kernel runs. Near the longer of the two alone is full overlap; near their sum is none."),
    Family("state_dict", "Scenario: a state_dict() to the CPU",
           "{k: v.cpu()} of a module's state_dict against .to('cpu', non_blocking=True) and one synchronize",
           "scenario", "tab:cyan",
           caption="cpu: every tensor of net.state_dict() copied with .cpu(), one blocking copy into fresh pageable "
                   "memory each; nonblocking: .to('cpu', non_blocking=True) for each (torch returns pinned memory), "
                   "then one synchronize before the tensors are read."),
    Family("d2h_registered", "Scenario: .cpu() taken apart",
           ".cpu() against copy_ into a touched pageable buffer, the same kind of buffer registered with the driver "
           "(cudaHostRegister), and pinned memory", "scenario", "tab:cyan", finding=family_findings.d2h_registered,
           caption="cpu: .cpu(), a copy into fresh pageable memory; pageable: copy_ into a pageable buffer touched "
                   "before timing; registered: copy_ into such a buffer page-locked in place with cudaHostRegister "
                   "(torch.cuda.cudart()); pinned: copy_ into memory allocated pinned. cpu - pageable is what the "
                   "fresh destination costs (allocation, page faults), pageable - registered what the driver's "
                   "staging copy through its own pinned buffer costs; registered near pinned means registering a "
                   "buffer you already have is as good as allocating it pinned."),
)

#: Copies at once, copy paths and NUMA placement (measure/families/): what nvbandwidth
#: measures, as a PyTorch user meets it.
_CONCURRENT = (
    Family("bidir", "Host and device copying both ways at once", "h2d and d2h on two streams of one GPU, and each alone",
           "concurrent", "tab:cyan",
           caption="A GPU has copy engines for each direction, so host-to-device and device-to-host can run at once. "
                   "h2d+d2h is the sum of both directions' bytes over the time both take; near twice one direction "
                   "means the link and the engines are duplex, near one direction means something is shared."),
    Family("all_gpus_host", "Every GPU and the host at once", "pinned copies from (or to) every GPU at once, and one alone",
           "concurrent", "tab:cyan",
           caption="The _all figure is the sum over every GPU copying at once; _one is one GPU alone. An aggregate "
                   "well below the number of GPUs times one GPU's figure is a shared PCIe switch, root complex or "
                   "host memory, which data loaders feeding all GPUs at once will meet."),
    Family("copy_kind", "Copy engine against kernel copies", ".to() of a contiguous same-dtype tensor against a strided "
           "or a dtype-converting one", "concurrent", "tab:cyan",
           caption="memcpy: a contiguous, same-dtype move is one DMA (or memcpy). strided: a non-dense view is first "
                   "made contiguous (on the host, in pageable memory; on the device, by a kernel). convert: .to(dev, "
                   "float16) converts on the CPU when blocking, on the GPU after a float32 copy when non_blocking. "
                   "Bytes are the source's, counted once."),
    Family("numa", "Host buffer near or far from the GPU (NUMA)", "pinned copies with the host buffer on the GPU's NUMA "
           "node and on another", "concurrent", "tab:cyan",
           caption="The host buffer is allocated from a thread bound to the GPU's NUMA node (local) or to another node "
                   "(remote); the node that holds it, read back from /proc/self/numa_maps, is in each benchmark's "
                   "host_numa_node. A remote buffer crosses the link between sockets."),
    Family("peer_bidir", "GPU to GPU both ways at once", "a copy from GPU a to GPU b and one from b to a on streams "
           "of their own at once, and each alone, for the pairs the peer plan sweeps", "concurrent", "tab:purple",
           link="nvlink",
           caption="both_ways is the sum of both directions' bytes over the time both take; near twice the faster "
                   "direction alone means the link between the two GPUs is duplex, near one direction alone that "
                   "both share it. Pairs: those --xfer-peer-pairs sweeps at every size (one per link class on a "
                   "node whose links are known)."),
    Family("peer_all", "Every GPU to the next at once", "every GPU copying to the next one at once (a ring: each "
           "sends one copy and receives one)", "concurrent", "tab:purple", link="nvlink",
           caption="The figure is the sum over every copy of the ring. Compared with the sum of each pair's one-way "
                   "figure (peer and peer_bidir rows of the same payload): near it, the fabric (an NVSwitch) carries "
                   "every pair at full speed; well below it, the pairs share a switch or a link."),
)

_DISTRIBUTED = tuple(
    Family(op, op, what, "distributed", colour, link="network")
    for op, what, colour in (
        ("send_recv", "send/recv ping-pong between a pair of ranks, within a node or across nodes "
                      "(a call is a round trip)", "tab:brown"),
        ("isend_irecv", "isend/irecv ping-pong between a pair of ranks", "tab:pink"),
        ("broadcast", "broadcast from rank 0", "tab:blue"),
        ("all_reduce", "all_reduce (sum)", "tab:red"),
        ("all_gather", "all_gather_into_tensor", "tab:green"),
        ("reduce_scatter", "reduce_scatter_tensor", "tab:purple"),
        ("all_to_all", "all_to_all_single: every rank sends a block to every rank (mixture-of-experts layers)", "tab:olive"),
        ("overlap", "4 all_reduces in flight at once (async_op=True) against the same 4 one by one", "tab:cyan"),
    )
)

def _by_op(records: Iterable[Family]) -> dict[str, Family]:
    """The records keyed by op; two records of one op (a scenario named like a collective) are refused."""
    table: dict[str, Family] = {}
    for record in records:
        if record.op in table:
            raise ValueError(f"two families are named {record.op!r}")
        table[record.op] = record
    return table


#: Every family, in report order.
FAMILIES: dict[str, Family] = _by_op((*_CORE, *_SCENARIOS, *_WORKLOADS, *_CONCURRENT, *_DISTRIBUTED))


def register(new: Family) -> Family:
    """Add a family (a plugin's or a test's); its op must be new."""
    if new.op in FAMILIES:
        raise ValueError(f"a family {new.op!r} is registered already")
    FAMILIES[new.op] = new
    return new


def family(op: str) -> Family:
    """The family of ``op``; KeyError names the ops that exist."""
    try:
        return FAMILIES[op]
    except KeyError:
        raise KeyError(f"unknown op {op!r}; the families are: {', '.join(FAMILIES)}") from None


def ops(kind: str | None = None) -> tuple[str, ...]:
    """The ops of every family of ``kind`` (all when None), in report order."""
    return tuple(op for op, f in FAMILIES.items() if kind is None or f.kind == kind)


def moving_ops(kinds: Iterable[str] = ("core",)) -> tuple[str, ...]:
    """Core families whose time is a payload moving (drawn as bandwidth, in the matrix)."""
    return tuple(op for op, f in FAMILIES.items() if f.kind in kinds and f.moves_payload)


def fitted_ops() -> tuple[str, ...]:
    """Families fitted with t = α + n/β: payload moves of the core and distributed kinds."""
    return moving_ops(("core", "distributed"))


def order_of(op: object) -> int:
    """Position of ``op`` in report order; unknown ops go last."""
    return list(FAMILIES).index(op) if op in FAMILIES else len(FAMILIES)
