"""The concurrent families' record and what they share: measurements nvbandwidth makes that a PyTorch user feels.

Copies at once (``bidir``, ``all_gpus_host``, ``peer_bidir``, ``peer_all``), copy paths
(``copy_kind``) and NUMA placement (``numa``), each in a folder of ``xferbench.families``. Each is a family of
``Concurrent`` records (frozen, like ``cases.Case``); a call enqueues its copies and returns once
every GPU involved is synchronized (clock ``wall+sync``). Machines that cannot run one get a
one-line skip reason. CUDA only: the copies run on CUDA streams. Here: the record, the choice of
GPUs, the payloads and checks their real calls share, and ``time_concurrent``, which times any of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...contract import Identity
from ...units import format_size
from ..cases import Skipped, accelerators, no_accelerator
from ..hardware.devices import DeviceBackend
from ..timing import copy_deadline
from .base import Prepared, Sync, device_sync
from .scenario import missing_cuda, time_prepared

if TYPE_CHECKING:
    from ..simulate import SimBackend

__all__ = ["PEER_OPS", "Concurrent", "NotPlaceable", "ring_legs", "time_concurrent"]

#: float32 elements per row of the 2-D payloads (strided views take every other column).
ROW = 1024
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
        return 2 if self.variant == "h2d+d2h" else len(self.gpus) if self.variant.endswith("_all") else 1

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


Planned = Concurrent | Skipped


def cuda_gpus(op: str, devices: Sequence[str], *, host: bool = True) -> tuple[list[str], list[Planned]]:
    """The GPUs a family runs on here, or the one skip line saying why there are none."""
    if not (gpus := accelerators(devices)):
        return [], [no_accelerator(op, devices)]
    if not all(g.startswith("cuda:") for g in gpus):
        return [], [Skipped(f"{op}-needs-cuda", f"{op} times copies on CUDA streams; the accelerators here are "
                                                 f"{', '.join(gpus)}")]
    if host and "cpu" not in devices:
        return [], [Skipped(f"{op}-no-cpu", f"{op} needs cpu in --xfer-devices")]
    return gpus, []


# --- what the real calls share ----------------------------------------------------------------------------

class NotPlaceable(Exception):
    """The case cannot run here as specified (no real CUDA device, no such NUMA node); the message says why."""


def require_cuda(c: Concurrent) -> None:
    """These cases time real CUDA streams and copy engines: a backend without them
    (a simulated machine, a fake) gets a reason rather than a crash."""
    if reason := missing_cuda(c.gpus):
        raise NotPlaceable(f"{c.op} {reason}")


def pattern(shape: tuple[int, ...], device: str, pinned: bool = False) -> Any:
    """The suite's known values (``transfers.pattern``) on ``device``, page-locked when ``pinned``."""
    import torch

    from ..transfers import pattern as values_of

    values = values_of(shape, torch.float32, device)
    return values.pin_memory() if pinned else values


def equal(got: Any, expected: Any, what: str) -> None:
    import torch

    if not torch.equal(got.cpu().float(), expected.cpu().float()):
        raise AssertionError(f"{what}: the destination does not hold the source's values")


def streamed(device: str) -> Any:
    """A new CUDA stream on ``device``."""
    import torch

    return torch.cuda.Stream(torch.device(device))


# --- timing one ----------------------------------------------------------------------------------------------

def time_concurrent(c: Concurrent, make: Callable[[Sync], Prepared], benchmark: Any, backend: DeviceBackend,
                    simulator: SimBackend | None) -> dict[str, Any]:
    """Time ``c`` with ``benchmark`` after a warm-up, check what arrived, fill in extra_info. ``make``
    builds the calls (the real ones, or the simulated machine's prices when ``simulator`` is given).

    Raises CannotRun (the caller skips) when memory is short or a NUMA placement is impossible, Wedged
    when a peer family's copy is stuck (the caller then refuses its GPUs to every later case).
    """
    from ..transfers import CannotRun, out_of_memory_skips

    sync = _synchronizer(c, backend)
    with out_of_memory_skips(c.size_label, backend):
        try:
            prepared = make(sync)
        except NotPlaceable as reason:
            raise CannotRun(str(reason)) from None
        return time_prepared(c, prepared, sync, benchmark, simulator)


def _synchronizer(c: Concurrent, backend: DeviceBackend) -> Sync:
    """A synchronize of every GPU ``c`` uses. A peer family's gives up after the copy's deadline and raises
    Wedged, as a peer case's does: with the IOMMU or ACS on, a copy between GPUs can hang for ever."""
    return device_sync(c.gpus, backend, copy_deadline(c.nbytes) if c.op in PEER_OPS else None)
