"""The scenarios' record and what they share: the lesson's costs as they show up in real PyTorch code.

A scenario is a family of ``Scenario`` records (frozen, hashable, like ``cases.Case``), each
family in a folder of its own (``xferbench.families.<op>``; ``base.py`` says what its run.py holds).
Here: the record, the plan of a family that needs an accelerator, the small MLP several of them move, the helpers their real
calls share, and ``time_scenario``, which times any of them. Scenarios that need an accelerator
are skipped with a reason on a CPU-only machine.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...contract import Identity
from ...units import format_size
from ..cases import Skipped, accelerators, no_accelerator
from .base import Prepared, Sync, device_sync

if TYPE_CHECKING:
    from ..simulate import SimBackend
    from .concurrent import Concurrent

__all__ = ["DeviceMismatch", "Scenario", "checked_forward", "missing_cuda", "mlp", "time_scenario"]

IMAGE = (3, 224, 224)


class DeviceMismatch(RuntimeError):
    """A module and its input are on different devices; the message says what to move."""


@dataclass(frozen=True)
class Scenario:
    op: str
    variant: str
    src: str
    dst: str
    size: int
    unit: str  # "params", "batch", "images" or "bytes"
    dtype: str = "float32"

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((self.src, self.dst)))

    @property
    def size_label(self) -> str:
        if self.unit == "bytes":
            return format_size(self.size)
        return f"{self.size:.0e}{self.unit}".replace("e+0", "e") if self.unit == "params" else f"{self.size}{self.unit}"

    @property
    def id(self) -> str:
        where = self.src if self.src == self.dst else f"{self.src}->{self.dst}"
        return f"{self.variant}-{self.size_label}-{where}"

    @property
    def nbytes(self) -> int:
        if self.unit == "params":
            return sum(parameter_bytes(self.size))
        if self.unit == "images":
            return self.size * math.prod(IMAGE)  # uint8 pixels, as loaded
        return self.size * 1024 * 4 if self.unit == "batch" else self.size

    def identity(self) -> Identity:
        return Identity(self.op, self.variant, self.src, self.dst, self.nbytes, self.dtype, (self.size,),
                        non_blocking=self.variant in ("nonblocking_event", "to_nonblocking", "nonblocking"),
                        variant=self.variant)

    def extra_info(self) -> dict[str, Any]:
        return self.identity().extra_info() | {"size_unit": self.unit}


def _mlp_width(params: int) -> int:
    # 4 square Linear layers with bias: 4 (w^2 + w) parameters.
    return max(2, round((-1 + math.sqrt(1 + params)) / 2))


def parameter_bytes(params: int) -> list[int]:
    """Bytes of each parameter tensor of ``mlp(params)``: 4 Linear layers' weight and bias."""
    width = _mlp_width(params)
    return [4 * width * width, 4 * width] * 4


def mlp(params: int, device: str = "cpu") -> Any:
    """An ``nn.Sequential`` of 4 Linear layers with about ``params`` parameters."""
    from torch import nn

    w = _mlp_width(params)
    return nn.Sequential(*[nn.Linear(w, w) for _ in range(4)]).to(device)


def checked_forward(net: Any, x: Any) -> Any:
    """``net(x)``, but a device mismatch is a DeviceMismatch that says what to move."""
    device = next(net.parameters()).device
    if x.device != device:
        raise DeviceMismatch(f"the module is on {device} but its input is on {x.device}: "
                             f"move the input with x.to('{device}') (or the module with net.to('{x.device}'))")
    return net(x)


def plan_on_gpus(op: str, variants: Sequence[str], unit: str, *, to_host: bool = False,
                 kind: type[Scenario] = Scenario) -> Callable[[Sequence[str], Sequence[int]], list[Scenario | Skipped]]:
    """A family that needs an accelerator: host -> each GPU, or each GPU -> host; its cases are ``kind``'s."""
    def build(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
        if not (gpus := accelerators(devices)):
            return [no_accelerator(op, devices)]
        return [kind(op, v, *((d, "cpu") if to_host else ("cpu", d)), size, unit)
                for size in sizes for d in gpus for v in variants]
    return build


# --- what the real calls share ----------------------------------------------------------------------------

def missing_cuda(devices: Sequence[str]) -> str | None:
    """Why ``devices`` cannot run real CUDA work here (a fake or simulated backend only
    claims them), or None when torch sees every one."""
    import torch

    if not (wanted := [int(d.rsplit(":", 1)[1]) for d in devices if d.startswith("cuda:")]):
        return None
    seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return None if max(wanted) < seen else (f"needs real CUDA devices ({', '.join(d for d in devices if d != 'cpu')}); "
                                            f"torch sees {seen or 'no'} CUDA device(s)")


def on_device(device: str) -> Callable[[Any], None]:
    """A check that every parameter of a module is on ``device``."""
    import torch

    target = torch.device(device)

    def check(module: Any) -> None:
        if wrong := [name for name, p in module.named_parameters() if p.device != target]:
            raise AssertionError(f"after .to({device}) {len(wrong)} parameters are elsewhere, e.g. {wrong[0]}")
    return check


def sleep_cycles(device: str, seconds: float) -> int:
    """Cycles of ``torch.cuda._sleep`` that take about ``seconds`` on ``device``."""
    import torch

    with torch.cuda.device(torch.device(device)):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)  # load the kernel
        start.record()
        torch.cuda._sleep(1_000_000)
        end.record()
        end.synchronize()
        per_cycle = start.elapsed_time(end) / 1e3 / 1_000_000
    return max(1, int(seconds / per_cycle))


def empty_host_cache() -> None:
    """Give the pinned blocks the caching host allocator holds back to the driver; never once a copy is stuck
    (cudaFreeHost synchronizes implicitly: it would wait for that copy for ever)."""
    from ..host_side import empty_host_cache as give_back
    from ..transfers import wedged

    give_back(bool(wedged()))


# --- timing one ----------------------------------------------------------------------------------------------

#: Rounds for scenarios whose every round needs an untimed setup (pytest-benchmark
#: cannot calibrate those): enough for a median and its order-statistic interval (the 2nd and 9th of 10). A
#: DataLoader's start-up, first batch and epoch rounds take 0.1-0.3 s each: 15 in the quick profile cost it 2 s more.
SETUP_ROUNDS = {"quick": 10, "full": 30}
#: Untimed rounds pytest-benchmark's pedantic mode runs before those.
SETUP_WARMUP_ROUNDS = 2


def time_scenario(s: Scenario, make: Callable[[Sync], Prepared], benchmark: Any, backend: Any,
                  simulator: SimBackend | None, profile: str = "quick") -> dict[str, Any]:
    """Time scenario ``s`` with ``benchmark``, check its result, fill in extra_info. ``make`` builds
    the calls (the real ones, or the simulated machine's prices when ``simulator`` is given)."""
    from ..transfers import CannotRun, out_of_memory_skips

    sync = device_sync(s.devices, backend)
    with out_of_memory_skips(s.size_label, backend):
        if simulator is None and (reason := missing_cuda(s.devices)):
            raise CannotRun(f"{s.op} {reason}")
        return time_prepared(s, make(sync), sync, benchmark, simulator, SETUP_ROUNDS[profile])


def time_prepared(case: Scenario | Concurrent, prepared: Prepared, sync: Sync, benchmark: Any,
                  simulator: SimBackend | None, rounds: int = SETUP_ROUNDS["quick"]) -> dict[str, Any]:
    """Time a scenario's or a concurrent family's ``prepared`` calls with ``benchmark`` (``rounds``: where they have a
    setup or teardown), count their page faults where they ran for real, check the result, fill in extra_info."""
    from ..hardware.faults import after_timing
    from ..timing import CLOCK_SIMULATED, CLOCK_WALL
    from ..transfers import WARMUP_CALLS

    try:
        benchmark.group = f"{case.op} {case.src}->{case.dst}"
        benchmark.extra_info.update(case.extra_info(), clock=CLOCK_WALL if simulator is None else CLOCK_SIMULATED,
                                    **prepared.extra)
        with contextlib.nullcontext() if simulator is None else simulator.simulating():
            sync()
            if prepared.setup is None and prepared.teardown is None:
                # Warm up as run_case does: pytest-benchmark calibrates on its first call, which
                # would otherwise pay one-time costs (lazy kernel loading, cuBLAS, the first
                # cudaHostAlloc) and leave too few rounds for a significance test.
                for _ in range(WARMUP_CALLS):
                    prepared.target()
                result = benchmark(prepared.target)
            else:
                result = benchmark.pedantic(prepared.target, setup=prepared.setup, teardown=prepared.teardown,
                                            rounds=rounds, warmup_rounds=SETUP_WARMUP_ROUNDS)
        if simulator is None:  # runs for real (a simulated one prices its device parts)
            benchmark.extra_info["minor_faults_per_call"] = after_timing(benchmark, prepared.target, prepared.setup,
                                                                         prepared.teardown)
        prepared.check(result)
    finally:  # what the calls hold across rounds goes with the case, timed or failed
        if prepared.close is not None:
            prepared.close()
    return benchmark.extra_info
