"""copy_overlap: a pinned non_blocking copy on a side stream while a kernel runs, against both in sequence."""

from __future__ import annotations

from collections.abc import Callable

from ...measure.families.base import MiB, Prepared, Priced, ScenarioFamily, Sync, sizes, then_sync
from ...measure.families.scenario import Scenario, plan_on_gpus, sleep_cycles

#: The kernel the overlap scenario runs beside (or before) its copy, in seconds.
OVERLAP_KERNEL_S = 1e-3


def prepare(s: Scenario, sync: Sync) -> Prepared:
    import torch

    device = torch.device(s.dst)
    src = torch.ones(s.size // 4).pin_memory()
    dst = torch.empty(s.size // 4, device=device)
    side = torch.cuda.Stream(device)
    cycles = sleep_cycles(s.dst, OVERLAP_KERNEL_S)

    def kernel() -> None:
        with torch.cuda.device(device):
            torch.cuda._sleep(cycles)

    def copy() -> None:
        dst.copy_(src, non_blocking=True)

    def copy_beside() -> None:  # on the side stream, while the default one runs the kernel
        with torch.cuda.stream(side):
            dst.copy_(src, non_blocking=True)

    steps: dict[str, tuple[Callable[[], None], ...]] = {
        "kernel_alone": (kernel,),
        "copy_alone": (copy,),
        "sequential": (kernel, copy),
        "overlapped": (kernel, copy_beside),
    }
    return Prepared(then_sync(sync, *steps[s.variant]))  # sync: the whole device, side stream included


def price(s: Scenario, m: Priced, sync: Sync) -> Prepared:
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
    return Prepared(then_sync(sync, *calls[s.variant]))


FAMILY = ScenarioFamily("copy_overlap", sizes((64 * MiB,), (MiB, 16 * MiB, 64 * MiB, 256 * MiB)),
                        plan_on_gpus("copy_overlap", ("kernel_alone", "copy_alone", "sequential", "overlapped"),
                                     "bytes"),
                        prepare, price)
