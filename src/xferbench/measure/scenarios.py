"""Scenarios from the lesson: the costs that show up in real PyTorch code.

Each scenario is a family of ``Scenario`` records (frozen, hashable, like
``cases.Case``), a plan (which records a machine gets) and a ``prepare`` that
returns what to time: a target, an untimed setup run before every round (to put
state back, e.g. move a module home), an untimed teardown, and a check run after
timing. ``scenario_families.py`` registers each family's plan, sizes, preparation and
simulated price as one object. Scenarios that need an accelerator are skipped with a
reason on a CPU-only machine.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..contract import Identity
from ..units import format_size
from .cases import Skipped, accelerators, no_accelerator

if TYPE_CHECKING:
    from .simulate import SimBackend

__all__ = [
    "DeviceMismatch",
    "Prepared",
    "Scenario",
    "checked_forward",
    "missing_cuda",
    "mlp",
    "non_blocking_hazard",
    "time_scenario",
]

#: The piece of the batching scenario's many small copies (1024 of them in 4 MiB).
BATCH_PIECE = 4 * 2**10
#: The kernel the overlap scenario runs beside (or before) its copy, in seconds.
OVERLAP_KERNEL_S = 1e-3
#: Work queued on the GPU before a synchronizing call, in seconds.
STALL_SECONDS = 2e-3
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
            return _mlp_params(self.size) * 4
        if self.unit == "images":
            return self.size * math.prod(IMAGE)  # uint8 pixels, as loaded
        if self.unit == "batch":
            return self.size * 1024 * 4
        return self.size

    def identity(self) -> Identity:
        return Identity(self.op, self.variant, self.src, self.dst, self.nbytes, self.dtype, (self.size,),
                        non_blocking=self.variant in ("nonblocking_event", "to_nonblocking", "nonblocking"),
                        variant=self.variant)

    def extra_info(self) -> dict[str, Any]:
        return self.identity().extra_info() | {"size_unit": self.unit}


Sync = Callable[[], None]


@dataclass
class Prepared:
    target: Callable[[], Any]
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None
    check: Callable[[Any], None] = lambda result: None
    extra: dict[str, Any] = field(default_factory=dict)


def _mlp_width(params: int) -> int:
    # 4 square Linear layers with bias: 4 (w^2 + w) parameters.
    return max(2, round((-1 + math.sqrt(1 + params)) / 2))


def _mlp_params(params: int) -> int:
    return sum(parameter_bytes(params)) // 4


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


# --- which scenarios a machine gets -------------------------------------------------------------------------

def plan_module_to(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    planned: list[Scenario | Skipped] = []
    for size in sizes:
        for dst in devices:
            if dst != "cpu":
                planned.append(Scenario("module_to", "first", "cpu", dst, size, "params"))
            planned.append(Scenario("module_to", "again", dst, dst, size, "params"))
    return planned


def plan_forward(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    return [Scenario("forward", "forward", d, d, size, "batch") for size in sizes for d in devices]


def plan_on_gpus(op: str, variants: Sequence[str], unit: str, *,
                 to_host: bool = False) -> Callable[[Sequence[str], Sequence[int]], list[Scenario | Skipped]]:
    """A family that needs an accelerator: host -> each GPU, or each GPU -> host."""
    def build(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
        gpus = accelerators(devices)
        if not gpus:
            return [skip for skip in no_accelerator(op, devices) if isinstance(skip, Skipped)]
        return [Scenario(op, v, *((d, "cpu") if to_host else ("cpu", d)), size, unit)
                for size in sizes for d in gpus for v in variants]
    return build


def plan_placement(devices: Sequence[str], sizes: Sequence[int]) -> list[Scenario | Skipped]:
    planned: list[Scenario | Skipped] = [Scenario("placement", "convert_on_cpu", "cpu", "cpu", s, "images") for s in sizes]
    gpus = accelerators(devices)
    if not gpus:
        planned.append(Skipped("placement-gpu-half", "placement's move-then-convert half needs an accelerator"))
    for size in sizes:
        for d in gpus:
            planned += [Scenario("placement", v, "cpu", d, size, "images") for v in ("convert_then_move", "move_then_convert")]
    return planned


# --- what is timed -----------------------------------------------------------------------------------------

def missing_cuda(devices: Sequence[str]) -> str | None:
    """Why ``devices`` cannot run real CUDA work here (a fake or simulated backend only
    claims them), or None when torch sees every one."""
    import torch

    wanted = [int(d.rsplit(":", 1)[1]) for d in devices if d.startswith("cuda:")]
    if not wanted:
        return None
    seen = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if max(wanted) < seen:
        return None
    return f"needs real CUDA devices ({', '.join(d for d in devices if d != 'cpu')}); torch sees {seen or 'no'} " \
           "CUDA device(s)"


def _synced(fn: Callable[[], Any], sync: Callable[[], None]) -> Callable[[], Any]:
    """``fn`` followed by a synchronize of every device the scenario touches; returns fn's result."""
    def call() -> Any:
        result = fn()
        sync()
        return result
    return call


def _on(device: str) -> Callable[[Any], None]:
    import torch

    target = torch.device(device)

    def check(module: Any) -> None:
        wrong = [name for name, p in module.named_parameters() if p.device != target]
        if wrong:
            raise AssertionError(f"after .to({device}) {len(wrong)} parameters are elsewhere, e.g. {wrong[0]}")
    return check


def prepare_module_to(s: Scenario, sync: Sync) -> Prepared:
    net = mlp(s.size, s.src)
    if s.variant == "first":
        # Every round starts with the module back on the CPU, untimed.
        def home() -> None:
            net.to("cpu")
            sync()
        return Prepared(_synced(lambda: net.to(s.dst), sync), setup=home, check=_on(s.dst))
    return Prepared(_synced(lambda: net.to(s.dst), sync), check=_on(s.dst))


def prepare_forward(s: Scenario, sync: Sync) -> Prepared:
    import torch

    net = mlp(4 * (1024 * 1024 + 1024), s.dst).eval()
    x = torch.randn(s.size, 1024, device=s.dst)

    def call() -> Any:
        with torch.no_grad():
            out = checked_forward(net, x)
        sync()
        return out

    def check(out: Any) -> None:
        if not (out.device == x.device and tuple(out.shape) == (s.size, 1024)):  # not assert: python -O drops it
            raise AssertionError(f"forward gave {tuple(out.shape)} on {out.device}, not ({s.size}, 1024) on {x.device}")
    return Prepared(call, check=check)


def _sleep_cycles(device: str, seconds: float) -> int:
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


def prepare_sync_stall(s: Scenario, sync: Sync) -> Prepared:
    import torch

    t = torch.ones(s.size // 4, device=s.src)
    cycles = _sleep_cycles(s.src, STALL_SECONDS)
    pinned = torch.empty_like(t, device="cpu").pin_memory()
    event = torch.cuda.Event()
    stream = torch.cuda.current_stream(t.device)  # the copy's stream, whatever the current device

    def queue_work() -> None:
        sync()
        with torch.cuda.device(t.device):
            torch.cuda._sleep(cycles)  # returns at once; the GPU stays busy for STALL_SECONDS

    calls: dict[str, Callable[[], Any]] = {
        "item": lambda: t[0].item(),
        "cpu": t.cpu,
        "tolist": t.tolist,
        "str": lambda: str(t),
        # The copy is queued behind the work and the call returns at once; completion is
        # observed later through the event (teardown, untimed), so the host was free.
        "nonblocking_event": lambda: (pinned.copy_(t, non_blocking=True), event.record(stream))[0],
    }
    return Prepared(calls[s.variant], setup=queue_work, teardown=_synced(event.synchronize, sync),
                    extra={"queued_seconds": STALL_SECONDS})


def empty_host_cache() -> None:
    """Give the pinned blocks the caching host allocator holds back to the driver; never once a copy is stuck
    (cudaFreeHost synchronizes implicitly: it would wait for that copy for ever)."""
    import torch

    from .transfers import wedged

    if wedged():
        return
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "empty_host_cache"):
        accelerator.empty_host_cache()
    elif hasattr(torch._C, "_host_emptyCache"):  # torch < 2.9
        torch._C._host_emptyCache()


def prepare_pin_memory(s: Scenario, sync: Sync) -> Prepared:
    import torch

    src = torch.ones(s.size // 4)
    dst = torch.device(s.dst)
    reused = torch.empty_like(src).pin_memory()
    calls: dict[str, Callable[[], Any]] = {
        # Cold: the host cache is emptied before each round, so pin_memory() page-locks fresh
        # memory (cudaHostAlloc), what the first pin of a size costs.
        "pin_cold": src.pin_memory,
        # Cached: the caching host allocator still holds the block the previous call freed, so
        # this is a memcpy into already page-locked memory, what a loop that pins each batch pays.
        "pin_cached": src.pin_memory,
        "to": _synced(lambda: src.to(dst), sync),
        "pin_cached_then_to": _synced(lambda: src.pin_memory().to(dst, non_blocking=True), sync),
        # The realistic reuse: stage into one pinned buffer, then a fast DMA.
        "reused_pinned_to": _synced(lambda: reused.copy_(src).to(dst, non_blocking=True), sync),
        # What each reuse of a tensor pinned once costs: the DMA alone. pin_cold / (to - pinned_to) is
        # the number of reuses that pays for pinning it (the break-even).
        "pinned_to": _synced(lambda: reused.to(dst, non_blocking=True), sync),
    }

    def cold() -> None:
        sync()
        empty_host_cache()
    return Prepared(calls[s.variant], setup=cold if s.variant == "pin_cold" else None)


def normalize(x: Any) -> Any:
    """uint8 images -> float32 in [0, 1], normalized with ImageNet's mean and std."""
    import torch

    mean = torch.tensor([0.485, 0.456, 0.406], device=x.device).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225], device=x.device).view(1, 3, 1, 1)
    return (x.float().div_(255) - mean).div_(std)


def prepare_placement(s: Scenario, sync: Sync) -> Prepared:
    import torch

    images = torch.randint(0, 256, (s.size, *IMAGE), dtype=torch.uint8)
    dst = torch.device(s.dst)
    calls: dict[str, Callable[[], Any]] = {
        "convert_on_cpu": lambda: normalize(images),
        "convert_then_move": _synced(lambda: normalize(images).to(dst), sync),  # 4x the bytes cross the link
        "move_then_convert": _synced(lambda: normalize(images.to(dst)), sync),
    }

    def check(out: Any) -> None:
        if not (out.dtype == torch.float32 and out.device == dst and tuple(out.shape) == (s.size, *IMAGE)):
            raise AssertionError(f"placement gave {out.dtype} {tuple(out.shape)} on {out.device}, "  # survives python -O
                                 f"not float32 {(s.size, *IMAGE)} on {dst}")
    return Prepared(calls[s.variant], check=check)


def prepare_cuda_vs_to(s: Scenario, sync: Sync) -> Prepared:
    import torch

    src = torch.ones(s.size // 4)
    device = torch.device(s.dst)
    index = device.index
    net = mlp(max(10**3, s.size // 4))

    def home() -> None:
        net.to("cpu")
        sync()

    calls: dict[str, Callable[[], Any]] = {
        "cuda": lambda: src.cuda(index),
        "to_str": lambda: src.to(s.dst),
        "to_device": lambda: src.to(device),
        "to_nonblocking": lambda: src.to(device, non_blocking=True),
        "module_to": lambda: net.to(device),
        "module_cuda": lambda: net.cuda(index),
    }
    call = calls[s.variant]
    is_module = s.variant.startswith("module")
    return Prepared(_synced(call, sync), setup=home if is_module else None,
                    check=_on(s.dst) if is_module else lambda out: None)


def prepare_batching(s: Scenario, sync: Sync) -> Prepared:
    import torch

    dst = torch.device(s.dst)
    whole = torch.ones(s.size // 4)
    pieces = list(whole.split(BATCH_PIECE // 4))  # contiguous views, as a list of small tensors would be
    calls: dict[str, Callable[[], Any]] = {
        "many_small": lambda: [piece.to(dst) for piece in pieces],
        "cat_then_one": lambda: torch.cat(pieces).to(dst),
        "one_copy": lambda: whole.to(dst),
    }

    def check(out: Any) -> None:
        moved = out if isinstance(out, list) else [out]
        assert all(t.device == dst for t in moved) and sum(t.numel() for t in moved) == whole.numel()
    return Prepared(_synced(calls[s.variant], sync), check=check)


def prepare_copy_overlap(s: Scenario, sync: Sync) -> Prepared:
    import torch

    device = torch.device(s.dst)
    src = torch.ones(s.size // 4).pin_memory()
    dst = torch.empty(s.size // 4, device=device)
    side = torch.cuda.Stream(device)
    cycles = _sleep_cycles(s.dst, OVERLAP_KERNEL_S)

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

    def call() -> None:
        for step in steps[s.variant]:
            step()
    return Prepared(_synced(call, sync))  # sync: the whole device, side stream included


def prepare_state_dict(s: Scenario, sync: Sync) -> Prepared:
    net = mlp(s.size, s.src)
    calls: dict[str, Callable[[], Any]] = {
        "cpu": lambda: {k: v.cpu() for k, v in net.state_dict().items()},
        # pinned results (torch's _to_copy pins a non-blocking copy to the CPU): read only after the synchronize
        "nonblocking": lambda: {k: v.to("cpu", non_blocking=True) for k, v in net.state_dict().items()},
    }

    def check(out: Any) -> None:
        assert out.keys() == net.state_dict().keys() and all(v.device.type == "cpu" for v in out.values())
    return Prepared(_synced(calls[s.variant], sync), check=check)


def non_blocking_hazard(device: str, numel: int = 1 << 20) -> tuple[bool, bool]:
    """Show the hazard of reading a ``non_blocking`` device-to-host copy too early.

    A fill is queued behind ~STALL_SECONDS of GPU work, then copied non-blocking into
    pinned memory that starts as zeros. Returns (stale_before_sync, correct_after_sync):
    read before synchronizing, the buffer still holds zeros; after, it holds the fill.
    """
    import torch

    src = torch.zeros(numel, device=device)
    host = torch.zeros(numel, pin_memory=True)
    cycles = _sleep_cycles(device, STALL_SECONDS)
    torch.cuda.synchronize(device)
    with torch.cuda.device(torch.device(device)):
        torch.cuda._sleep(cycles)
        src.fill_(7)  # written late: behind the queued work
        host.copy_(src, non_blocking=True)
        stale = bool((host != 7).any())  # read without synchronizing: the hazard
        torch.cuda.synchronize(device)
    return stale, bool((host == 7).all())


#: Rounds for scenarios whose every round needs an untimed setup (pytest-benchmark
#: cannot calibrate those): enough for a median and a significance test.
SETUP_ROUNDS = {"quick": 15, "full": 30}


def time_scenario(s: Scenario, make: Callable[[Sync], Prepared], benchmark: Any, backend: Any,
                  simulator: SimBackend | None, profile: str = "quick") -> dict[str, Any]:
    """Time scenario ``s`` with ``benchmark``, check its result, fill in extra_info. ``make`` builds
    the calls (the real ones, or the simulated machine's prices when ``simulator`` is given)."""
    from .hardware.devices import accelerator_index
    from .hardware.faults import after_timing
    from .timing import CLOCK_SIMULATED, CLOCK_WALL
    from .transfers import WARMUP_CALLS, CannotRun, out_of_memory_skips

    indices = [i for i in map(accelerator_index, s.devices) if i is not None]

    def sync() -> None:
        for index in indices:
            backend.synchronize(index)

    with out_of_memory_skips(s.size_label, backend):
        reason = None if simulator is not None else missing_cuda(s.devices)
        if reason:
            raise CannotRun(f"{s.op} {reason}")
        prepared = make(sync)
        benchmark.group = f"{s.op} {s.src}->{s.dst}"
        benchmark.extra_info.update(s.extra_info(), clock=CLOCK_WALL if simulator is None else CLOCK_SIMULATED,
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
                                            rounds=SETUP_ROUNDS[profile], warmup_rounds=2)
        if simulator is None:  # a scenario runs for real (a simulated one prices its device parts)
            benchmark.extra_info["minor_faults_per_call"] = after_timing(benchmark, prepared.target, prepared.setup,
                                                                         prepared.teardown)
        prepared.check(result)
    return benchmark.extra_info

