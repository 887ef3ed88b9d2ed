"""What each rank does for one distributed case: buffers, the timed call, the check.

A case names an op, a payload and, for point-to-point, the pair of ranks (the one
that starts the ping-pong first) and which link the pair crosses. Each rank builds
its side with ``operation``: ``reset`` puts known values in its buffers, ``call``
is one synchronized iteration, ``check`` says whether this rank holds exactly what
the op must have delivered. Checks run after timing, on freshly reset buffers (as
nccl-tests ``-c`` does), so the timed loop is not slowed by them.

Bus bandwidth follows nccl-tests: busbw = algbw x 2(n-1)/n for all_reduce (and the
overlap of all_reduces), (n-1)/n for all_gather, reduce_scatter and all_to_all,
1 for broadcast and point-to-point.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...contract import Identity
from ...families import ops
from ...units import DTYPE_SIZES, format_bytes, format_size
from ..cases import Skipped

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "BOTH_PLACEMENTS",
    "DIST_OPS",
    "IN_FLIGHT",
    "IN_PLACE",
    "POINT_TO_POINT",
    "FOOTPRINT",
    "RING",
    "DistCase",
    "Operation",
    "build_dist_cases",
    "bus_factor",
    "bytes_needed",
    "calls_for",
    "operation",
    "planned_cases",
    "plateau_sizes",
    "scan_sizes",
    "swept",
    "world_backend",
]

DIST_OPS = ops("distributed")
POINT_TO_POINT = ("send_recv", "isend_irecv")
#: The overlap family's variants, and how many all_reduces it keeps in flight.
OVERLAP_VARIANTS = ("in_flight", "one_by_one")
IN_FLIGHT = 4
#: send_recv's world-wide variant, nccl-tests' sendrecv_perf: every rank sends to the next and receives from the one
#: before, at once (out of place: a send buffer and a receive buffer), rather than a ping-pong between two ranks.
RING = "ring"
#: The collectives torch can run both in place and out of place, as nccl-tests times each (its two columns): by
#: default out of place (a send and a receive buffer); this variant in place (the send buffer is this rank's block
#: of the receive buffer, all_gather's, or the receive buffer this rank's block of the send buffer, reduce_scatter's,
#: which is how NCCL tells an in-place call). torch's all_reduce and broadcast are in place only.
IN_PLACE = "in_place"
BOTH_PLACEMENTS = ("all_gather", "reduce_scatter")


def bus_factor(op: str, world_size: int) -> float:
    """nccl-tests' bus bandwidth factor: busbw = algbw x factor."""
    n = world_size
    if op in ("all_reduce", "overlap"):
        return 2 * (n - 1) / n
    return (n - 1) / n if op in ("all_gather", "reduce_scatter", "all_to_all") else 1.0


@dataclass(frozen=True)
class DistCase:
    op: str
    nbytes: int
    backend: str
    world_size: int
    device: str = "cpu"  # each rank's device kind: cpu, or cuda (each rank on its own GPU)
    dtype: str = "float32"
    pair: tuple[int, int] = (0, 1)  # point-to-point: (the rank that sends first, its partner)
    variant: str | None = None  # overlap: in_flight or one_by_one
    crosses: str | None = None  # point-to-point: intra-node or inter-node

    @property
    def numel(self) -> int:
        return max(1, self.nbytes // DTYPE_SIZES[self.dtype])

    @property
    def point_to_point(self) -> bool:
        """A ping-pong between the two ranks of ``pair`` (the ring is world-wide)."""
        return self.op in POINT_TO_POINT and self.variant != RING

    @property
    def id(self) -> str:
        where = f"-r{self.pair[0]}r{self.pair[1]}" if self.point_to_point and self.pair != (0, 1) else ""
        variant = f"-{self.variant}" if self.variant else ""
        return f"{self.op}{variant}-{format_size(self.nbytes)}-{self.dtype}-{self.backend}-x{self.world_size}{where}"

    def identity(self) -> Identity:
        ends = [f"rank{r}" for r in self.pair] if self.point_to_point else ["rank0", "all"]
        src, dst = (f"{end}:{self.device}" for end in ends)
        return Identity(self.op, self.op, src, dst, self.nbytes, self.dtype, (self.numel,),
                        non_blocking=self.op == "isend_irecv" or self.variant == "in_flight", variant=self.variant,
                        world_size=self.world_size, backend=self.backend)

    def extra_info(self) -> dict[str, Any]:
        # A ping-pong call is a round trip: the payload crosses twice.
        return self.identity().extra_info() | {"round_trip": self.point_to_point,
                                               "bus_factor": bus_factor(self.op, self.world_size)} | (
            {"crosses": self.crosses} if self.crosses else {})


def world_backend(devices: Sequence[str], requested: str, world_size: int = 2) -> str:
    """The backend for ``requested``: ``auto`` is nccl with one GPU per rank, else gloo."""
    if requested != "auto":
        return requested
    return "nccl" if sum(d.startswith("cuda:") for d in devices) >= world_size else "gloo"


#: Peak resident bytes one rank holds per payload byte for each op: its buffers, the
#: backend's own copies and the check, measured on a 2-rank gloo world at 128 MiB (peak
#: VmHWM over build, calls and check, over the payload). Split ops' send or receive block
#: shrinks as 1/n, so 2 ranks is the largest; nccl keeps fewer copies than gloo.
FOOTPRINT = {"send_recv": 1.25, "isend_irecv": 1.25, "broadcast": 1.25, "all_reduce": 1.25, "overlap": 1.25,
             "reduce_scatter": 2.6, "all_gather": 2.6, "all_to_all": 2.25}


def bytes_needed(op: str, nbytes: int, variant: str | None = None) -> int:
    """Memory one rank holds for ``op`` on a payload of ``nbytes`` (see FOOTPRINT); the ring holds a send and a
    receive buffer, twice the ping-pong's one (not measured: its footprint's double)."""
    return math.ceil(nbytes * FOOTPRINT[op] * (2 if variant == RING else 1))


def _x4_past(sizes: Sequence[int], below: int) -> Iterator[int]:
    """x4 steps on from the largest of ``sizes`` (4 B where there are none), while below ``below``."""
    top = max(sizes, default=4)
    return itertools.takewhile(lambda size: size < below, (top * 4**k for k in itertools.count(1)))


def scan_sizes(sizes: Sequence[int], free_bytes: int | None, fraction: float) -> list[int] | str:
    """``sizes`` extended by x4 steps up to the largest payload the leanest op can hold in
    ``fraction`` of ``free_bytes``, that largest size included; a reason when free memory is
    unknown. Each op's own footprint then decides which of these sizes it runs (``planned_cases``)."""
    if free_bytes is None:
        return "free memory is unknown on this machine, so the scan to the largest size that fits was skipped"
    cap = int(free_bytes * fraction / min(FOOTPRINT.values()))
    cap -= cap % 2**20 if cap > 2**20 else cap % 64  # a round number that every world size and dtype divides
    out = [s for s in sizes if s <= cap] + list(_x4_past(sizes, cap))
    if cap > 0 and cap not in out:
        out.append(cap)
    return sorted(set(out))


#: Where bus bandwidth levels off (nccl-tests sweeps to it before quoting a figure): a GPU world's sweep goes on to
#: this size, where memory allows, so that its figures compare with nccl-tests'.
PLATEAU_BYTES = 2**30


def plateau_sizes(sizes: Sequence[int], free_bytes: int | None) -> list[int] | str:
    """``sizes`` and x4 steps beyond the largest up to PLATEAU_BYTES (that included), each that the leanest op's
    real footprint (``FOOTPRINT``) fits in ``free_bytes``; a reason when free memory is unknown. Each op's own
    footprint then decides which of these sizes it runs."""
    if free_bytes is None:
        return (f"free GPU memory is unknown, so the sweep stops at the profile's sizes, short of the bus bandwidth "
                f"plateau ({format_size(PLATEAU_BYTES)})")
    leanest = min(FOOTPRINT.values())
    out = [*sizes, *itertools.takewhile(lambda size: size * leanest <= free_bytes, _x4_past(sizes, PLATEAU_BYTES))]
    if max(sizes, default=0) < PLATEAU_BYTES and PLATEAU_BYTES * leanest <= free_bytes:
        out.append(PLATEAU_BYTES)
    return sorted(set(out))


def swept(sizes: Sequence[int], free_bytes: int | None, mem_fraction: float | None, plateau: bool,
          ) -> tuple[list[int], Skipped | None]:
    """The sizes a world runs: with ``mem_fraction``, on to the largest that fits that share of ``free_bytes``
    (``scan_sizes``); else, where ``plateau``, on to the bus-bandwidth plateau (``plateau_sizes``); else ``sizes``.
    Where free memory is unknown, ``sizes`` and why the sweep stopped short."""
    if mem_fraction:
        found, why = scan_sizes(sizes, free_bytes, mem_fraction), "largest-size-scan"
    elif plateau:
        found, why = plateau_sizes(sizes, free_bytes), "plateau-scan"
    else:
        return list(sizes), None
    return (list(sizes), Skipped(why, found)) if isinstance(found, str) else (found, None)


def pairs(nodes: Sequence[str], rails: bool = False) -> list[tuple[tuple[int, int], str]]:
    """Point-to-point pairs for ranks on ``nodes`` (node name of each rank), labelled by the link
    crossed: rank 0 and the next rank on its node; rank 0 and the first rank of every other
    node, each way round. ``rails``: the i-th rank of node 0 and the i-th rank of every other node,
    for every i, each way round: one pair per GPU, so every GPU's own NIC (rail) is crossed."""
    out: list[tuple[tuple[int, int], str]] = []
    if same := [r for r in range(1, len(nodes)) if nodes[r] == nodes[0]]:
        out += [((0, same[0]), "intra-node"), ((same[0], 0), "intra-node")]
    local: dict[str, list[int]] = {}
    for rank, node in enumerate(nodes):
        local.setdefault(node, []).append(rank)
    for node, ranks in local.items():
        if node == nodes[0]:
            continue
        for mine, theirs in zip(local[nodes[0]], ranks, strict=False) if rails else [(0, ranks[0])]:
            out += [((mine, theirs), "inter-node"), ((theirs, mine), "inter-node")]
    return out


#: Ops whose payload is split in equal blocks: one per rank, or one per all_reduce in flight.
SPLIT = ("all_gather", "reduce_scatter", "all_to_all")


def moved(op: str, nbytes: int, world_size: int, dtype: str = "float32") -> int:
    """The bytes ``op`` really moves for a requested payload of ``nbytes``: whole elements, and for
    ops that split the payload, whole blocks (16 ranks cannot all_gather 4 B: 16 elements, 64 B)."""
    blocks = world_size if op in SPLIT else IN_FLIGHT if op == "overlap" else 1
    element = DTYPE_SIZES[dtype]
    return max(blocks, nbytes // element // blocks * blocks) * element


#: The variants of each op measured in more than one (the rest: none).
_VARIANTS: dict[str, tuple[str | None, ...]] = {**dict.fromkeys(BOTH_PLACEMENTS, (None, IN_PLACE)), "overlap": OVERLAP_VARIANTS}


def cases_for(world_size: int, nodes: Sequence[str], backend: str, device: str, sizes: Sequence[int],
              dtype: str = "float32", rails: bool = False, rails_most: int | None = None) -> list[DistCase]:
    """Every case of a world whose ranks sit on ``nodes``, size by size; each case's ``nbytes`` is
    what it moves (see ``moved``); ``rails``: the point-to-point pairs of every local rank (``pairs``), those
    without rank 0 only at sizes up to ``rails_most`` where it is given."""
    out = []
    links = pairs(nodes, rails)
    for requested in sizes:
        for op in DIST_OPS:
            size = moved(op, requested, world_size, dtype)
            if op in POINT_TO_POINT:
                out += [DistCase(op, size, backend, world_size, device, dtype, pair, None, crosses)
                        for pair, crosses in links if 0 in pair or rails_most is None or requested <= rails_most]
                if op == "send_recv":
                    out.append(DistCase(op, size, backend, world_size, device, dtype, variant=RING))
            else:
                out += [DistCase(op, size, backend, world_size, device, dtype, variant=v) for v in _VARIANTS.get(op, (None,))]
    return out


def build_dist_cases(devices: Sequence[str], backend: str, sizes: Sequence[object], world_size: int = 2,
                     ) -> list[DistCase | Skipped]:
    """The cases of the 2-rank world inside pytest (both ranks on this node), over byte ``sizes``."""
    gpus = [d for d in devices if d.startswith("cuda:")]
    backend = world_backend(devices, backend, world_size)
    if backend == "nccl" and len(gpus) < world_size:
        return [Skipped("nccl-needs-gpus", f"nccl needs one GPU per rank: {world_size} ranks, {len(gpus)} GPU(s)")]
    if backend == "gloo" and "cpu" not in devices:
        return [Skipped("gloo-needs-cpu", "gloo runs on CPU tensors: add cpu to --xfer-devices")]
    device = "cuda" if backend == "nccl" else "cpu"
    chosen = [s for s in sizes if isinstance(s, int)]
    return list(cases_for(world_size, ["this node"] * world_size, backend, device, chosen))


def planned_cases(devices: Sequence[str], backend: str, sizes: Sequence[object], mem_fraction: float | None,
                  free_bytes: Callable[[str], int | None], world_size: int = 2, plateau: bool = True,
                  ) -> list[DistCase | Skipped]:
    """The 2-rank world's cases; with ``mem_fraction``, the sweep goes on to the largest size that
    fits that fraction of the least free memory of the ranks' devices (``free_bytes(kind)``: of
    one GPU, or of the whole host, shared by the ranks of this node); without it a GPU world's sweep
    goes on to the bus-bandwidth plateau (``plateau_sizes``) unless ``plateau`` is False (sizes the user
    chose). A case whose op's footprint does not fit is skipped with the figures."""
    planned = build_dist_cases(devices, backend, sizes, world_size)
    if not planned or isinstance(planned[0], Skipped):
        return planned
    kind = planned[0].device
    free = free_bytes(kind)
    if free is not None and kind == "cpu":
        free //= world_size  # every rank of this node allocates from the same host memory at once
    byte_sizes, stopped = swept([s for s in sizes if isinstance(s, int)], free, mem_fraction, kind != "cpu" and plateau)
    notes = [stopped] if stopped is not None else []
    budget = math.inf if free is None else int(free * (mem_fraction or 1))  # unknown: every case is kept
    where = f"{kind} memory per rank" if kind != "cpu" else f"host memory per rank ({world_size} ranks on this node)"

    def kept(case: DistCase | Skipped) -> DistCase | Skipped:
        """The case, or its skip where no rank can hold it (it would fail inside the world and break it for every
        later case)."""
        if isinstance(case, DistCase) and (need := bytes_needed(case.op, case.nbytes, case.variant)) > budget:
            return Skipped(case.id, f"{case.op} of {format_size(case.nbytes)} needs {format_bytes(need)} per rank; "
                                    f"{format_bytes(budget)} of {where} is available to it")
        return case

    return [kept(case) for case in build_dist_cases(devices, backend, byte_sizes, world_size)] + notes


#: Calls per round at least, behind one sync: the line-up skew of the ranks, the sync and the
#: dispatch are shared by these calls instead of being charged to each (nccl-tests times 20).
MIN_CALLS = 4


def calls_for(nbytes: int) -> int:
    """Iterations per round: enough that a round of a tiny op is not all timer overhead, and
    never a lone call per round."""
    return max(MIN_CALLS, min(100, 2**20 // max(nbytes, 1)))


# --- each rank's side of an op ----------------------------------------------------------------------------

def _done(*_steps: Any) -> None:
    """Lets a one-line reset run its steps (the arguments) and return None."""


def _wait(work: Any) -> None:
    """Wait for an async op's handle (torch types it optional; with async_op it is always there)."""
    if work is not None:
        work.wait()

def _issued(work: Any) -> Any:
    """A collective issued with async_op=True, waited for as its blocking form waits inside torch (the host on
    gloo, the current stream on nccl), and its handle: on nccl the handle times the collective on NCCL's own
    stream (timing.NcclCallTimer)."""
    _wait(work)
    return work


def _nothing() -> None:
    """The sync of a rank with nothing to wait for (the CPU, or a rank outside a ping-pong's pair)."""


@dataclass(frozen=True)
class Operation:
    reset: Callable[[], None]  # known values in this rank's buffers
    call: Callable[[], object]  # one iteration, issued (on a GPU it may still run when this returns); a collective
    # returns its handle
    check: Callable[[], bool]  # after reset, one call and sync: does this rank hold what the op delivers?
    sync: Callable[[], None] = _nothing  # wait for this rank's device: once after K calls, as nccl-tests does


#: Elements compared at a time by a check, so a check's temporaries stay small whatever the payload.
CHECK_CHUNK = 2**22


def _holds(tensor: Tensor, value: float) -> bool:
    """Every element of ``tensor`` equals ``value``, compared a chunk at a time (no full-size temporary)."""
    return all(bool(chunk.eq(value).all()) for chunk in tensor.reshape(-1).split(CHECK_CHUNK))


def _blocks_hold(tensor: Tensor, values: Sequence[float]) -> bool:
    """Block ``i`` of ``tensor`` (split into ``len(values)`` equal blocks) holds ``values[i]`` throughout."""
    return all(_holds(block, value) for block, value in zip(tensor.reshape(len(values), -1), values, strict=True))


def operation(case: DistCase, rank: int, local_device: str) -> Operation:
    """Rank ``rank``'s side of ``case`` on its device ``local_device``.

    Only the op's own buffers are allocated: values are written and checked block by block,
    so a rank needs ``bytes_needed`` and no full-size expected tensors besides."""
    import torch

    dtype = getattr(torch, case.dtype)
    n = case.world_size
    per = max(1, case.numel // n)  # elements per rank's block for the ops that split the payload
    sync: Callable[[], None] = (lambda: torch.cuda.synchronize(local_device)) if case.device == "cuda" else _nothing

    def empty(count: int) -> Tensor:
        return torch.zeros(count, dtype=dtype, device=local_device)

    if case.point_to_point:
        return _point_to_point(case, rank, empty(case.numel), sync)
    if case.variant == RING:
        return _ring(case, rank, empty(case.numel), empty(case.numel), sync)
    if case.op == "overlap":
        return _overlap(case, rank, [empty(max(1, case.numel // IN_FLIGHT)) for _ in range(IN_FLIGHT)], sync)
    import torch.distributed as dist

    total = n * (n + 1) / 2  # the sum of every rank's value rank + 1
    # torch 2.9 renamed these; the old names still work but warn
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    if case.op == "broadcast":
        buf = empty(case.numel)
        return Operation(lambda: _done(buf.fill_(rank + 1)), lambda: _issued(dist.broadcast(buf, src=0, async_op=True)),
                         lambda: _holds(buf, 1), sync)
    if case.op == "all_reduce":
        buf = empty(case.numel)
        return Operation(lambda: _done(buf.fill_(rank + 1)), lambda: _issued(dist.all_reduce(buf, async_op=True)),
                         lambda: _holds(buf, total), sync)
    if case.op == "all_gather":
        recv = empty(per * n)
        send = recv.narrow(0, rank * per, per) if case.variant == IN_PLACE else empty(per)
        return Operation(lambda: _done(recv.zero_(), send.fill_(rank + 1)),  # in place, send is part of recv
                         lambda: _issued(gather(recv, send, async_op=True)),
                         lambda: _blocks_hold(recv, [i + 1 for i in range(n)]), sync)
    if case.op == "reduce_scatter":
        send = empty(per * n)
        recv = send.narrow(0, rank * per, per) if case.variant == IN_PLACE else empty(per)
        return Operation(lambda: _done(recv.zero_(), send.fill_(rank + 1)),  # in place, recv is part of send
                         lambda: _issued(scatter(recv, send, async_op=True)),
                         lambda: _holds(recv, total), sync)
    if case.op == "all_to_all":
        # Block j of rank r's input holds r*n + j + 1; after the exchange block i of
        # rank r's output must hold i*n + r + 1 (rank i's block for r).
        send, recv = empty(per * n), empty(per * n)

        def reset() -> None:
            for j, block in enumerate(send.view(n, per)):
                block.fill_(rank * n + j + 1)
            recv.zero_()
        return Operation(reset, lambda: _issued(dist.all_to_all_single(recv, send, async_op=True)),
                         lambda: _blocks_hold(recv, [i * n + rank + 1 for i in range(n)]), sync)
    raise ValueError(f"unknown distributed op {case.op!r}")


def _point_to_point(case: DistCase, rank: int, buf: Tensor, sync: Callable[[], None]) -> Operation:
    """A ping-pong: the first rank of the pair sends and gets it back; ranks outside the pair sit out."""
    import torch.distributed as dist

    first, partner = case.pair
    if rank not in case.pair:
        return Operation(lambda: None, lambda: None, lambda: True)
    peer = partner if rank == first else first

    def blocking() -> None:
        for step in (dist.send, dist.recv) if rank == first else (dist.recv, dist.send):
            step(buf, peer)

    def nonblocking() -> None:
        for step in (dist.isend, dist.irecv) if rank == first else (dist.irecv, dist.isend):
            _wait(step(buf, peer))

    # Only the first rank's values travel: both ends must hold them after one round trip.
    return Operation(lambda: _done(buf.fill_(first + 1 if rank == first else 0)),
                     blocking if case.op == "send_recv" else nonblocking,
                     lambda: _holds(buf, first + 1), sync)


def _ring(case: DistCase, rank: int, send: Tensor, recv: Tensor, sync: Callable[[], None]) -> Operation:
    """nccl-tests' sendrecv_perf: every rank sends its buffer to the next rank and receives the one before's, at once
    (one batch of an isend and an irecv, which NCCL runs as one group)."""
    import torch.distributed as dist

    n = case.world_size
    before = (rank - 1) % n

    def call() -> None:
        for work in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, (rank + 1) % n), dist.P2POp(dist.irecv, recv, before)]):
            _wait(work)

    return Operation(lambda: _done(send.fill_(rank + 1), recv.zero_()), call, lambda: _holds(recv, before + 1), sync)


def _overlap(case: DistCase, rank: int, bufs: list[Tensor], sync: Callable[[], None]) -> Operation:
    """IN_FLIGHT all_reduces of a quarter of the payload each: all issued with async_op=True and
    then waited for, or one after another; the same bytes either way. Each call syncs its device
    itself: what this family measures is whether the host waits between the all_reduces."""
    import torch.distributed as dist

    n = case.world_size

    def in_flight() -> None:
        works = [dist.all_reduce(buf, async_op=True) for buf in bufs]
        for work in works:
            _wait(work)
        sync()

    def one_by_one() -> None:
        for buf in bufs:
            dist.all_reduce(buf)
        sync()

    return Operation(lambda: _done(*(buf.fill_(rank + 1) for buf in bufs)),
                     in_flight if case.variant == "in_flight" else one_by_one,
                     lambda: all(_holds(buf, n * (n + 1) / 2) for buf in bufs))
