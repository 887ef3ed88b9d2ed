"""Build a case's buffers, run it under the benchmark, and check the data arrived."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ..units import DTYPE_SIZES, first_line, format_bytes
from .cases import Case
from .hardware.devices import EVENT_WINDOWS, DeviceBackend, Wedged, accelerator_index, host_memory_available
from .hardware.faults import after_timing
from .host_side import near_gpu
from .injected_slowdown import slowdown_for, slowed
from .record.pytest_benchmark_adapter import scale_rounds
from .timing import BARE_OPS, CLOCK_SIMULATED, CLOCK_WALL, COPY_OPS, copy_deadline, device_seconds, sync_rule, synchronized

__all__ = [
    "Buffers",
    "CannotRun",
    "CopyMismatch",
    "bytes_needed",
    "check_supported",
    "counts_faults",
    "intra_op_threads",
    "mark_wedged",
    "operation",
    "pattern",
    "prepare",
    "refuse_stuck",
    "out_of_memory_skips",
    "run_case",
    "verify",
]

#: Small prime period: every element is exactly representable in every supported
#: dtype (int8 and bfloat16 included), and neighbours differ, so a copy that
#: dropped, zeroed or shifted data by less than a period is caught.
_PERIOD = 127
#: Warm-up calls before timing: CUDA context, caching allocator, pinned pool.
WARMUP_CALLS = 3


class CannotRun(Exception):
    """This machine cannot run the case (memory, hardware); the message says why."""


class CopyMismatch(AssertionError):
    """The destination does not hold what the source held."""


#: Accelerators with a copy stuck on them in this process (device -> the case it came from): their
#: queued work never ends and nothing cancels it, so every later case on them would hang.
_WEDGED: dict[str, str] = {}


def wedged() -> dict[str, str]:
    """The accelerators a stuck copy left unusable in this process, and the case each came from: whatever would
    synchronize implicitly (cudaFreeHost, empty_cache) checks it first."""
    return _WEDGED


def refuse_stuck(devices: Sequence[str]) -> None:
    """Raise CannotRun when one of ``devices`` has a stuck copy: a synchronize there would never return."""
    for device in devices:
        if device in _WEDGED:
            raise CannotRun(f"{device} has a stuck copy from {_WEDGED[device]}; nothing more runs on it in this process")


def mark_wedged(devices: Sequence[str], case_id: str) -> None:
    """Record that ``case_id`` left a stuck copy on ``devices`` (``refuse_stuck`` then refuses them)."""
    _WEDGED.update((device, case_id) for device in devices if device != "cpu")


def _deadline(case: Case) -> float | None:
    """A peer copy's synchronizes give up after ``copy_deadline``: on PCIe boards with the IOMMU or ACS
    on one can hang for ever. Other copies keep the plain synchronize, whose cost their figures hold."""
    return copy_deadline(case.nbytes) if case.op == "peer" else None


class Benchmark(Protocol):
    """The part of pytest-benchmark's fixture that a run uses."""

    extra_info: dict[str, Any]
    group: str | None

    def __call__(self, fn: Callable[[], Any]) -> Any: ...


@dataclass
class Buffers:
    """Source and (for ``copy_`` and creation checks) a preallocated destination."""

    src: torch.Tensor | None
    dst: torch.Tensor | None

    def reset(self) -> None:
        """Zero the destination, so verification sees only the last copy's work."""
        if self.dst is not None:
            self.dst.zero_()


def pattern(shape: tuple[int, ...], dtype: torch.dtype, device: str | torch.device) -> torch.Tensor:
    """0, 1, ..., 126, 0, 1, ... in ``dtype``: one period converted, then repeated. Not an arange of every
    element taken modulo the period: three passes over fresh memory, 2.9 s for 1 GiB on a 2-core machine."""
    count = math.prod(shape)
    period = torch.arange(min(count, _PERIOD), dtype=torch.int32, device=device).to(dtype)
    return period.repeat(-(-count // len(period))).narrow(0, 0, count).reshape(shape)


def _dtype(case: Case) -> torch.dtype:
    return getattr(torch, case.dtype)


def _pattern_peak(case: Case) -> int:
    """Bytes ``pattern()`` holds at once: the payload, repeated from one period (int32 and the dtype)."""
    return case.nbytes + _PERIOD * (4 + DTYPE_SIZES[case.dtype])


def bytes_needed(case: Case) -> dict[str, int]:
    """Peak bytes per device: payloads plus the pattern built to verify against."""
    need = {device: 0 for device in case.devices}
    if case.op == "create":
        need[case.dst] += 3 * case.nbytes
        return need
    if case.op == "sync":
        return need
    # The source is built as a pattern (then pinned: a second copy); the destination side
    # holds the destination, a fresh result and the expected pattern while verifying.
    need[case.src] += max(_pattern_peak(case), 2 * case.nbytes)
    need[case.dst] += 2 * case.nbytes + _pattern_peak(case)
    return need


def check_supported(case: Case) -> None:
    """Raise CannotRun for a case torch has no kernel for: rand of an integer dtype."""
    dtype = _dtype(case)
    if case.op == "create" and case.method == "rand" and not (dtype.is_floating_point or dtype.is_complex):
        raise CannotRun(f"torch.rand has no {case.dtype} kernel (uniform [0, 1) needs a floating type); "
                        "empty, zeros and ones are measured for it")


def check_memory(case: Case, backend: DeviceBackend) -> None:
    """Raise CannotRun when a device has too little free memory for the case."""
    for device, need in bytes_needed(case).items():
        index = accelerator_index(device)
        free = host_memory_available() if index is None else (backend.memory_info(index) or (None, None))[0]
        if free is not None and need > 0.9 * free:
            raise CannotRun(f"needs {format_bytes(need)} on {device}, {format_bytes(free)} free")


class _Kept:
    """Host tensors a simulated case's buffers are taken from, the last one of each role (source,
    destination, expected), so that cases of one shape and dtype in a row share them.

    Why: on a simulated machine every device's tensors live in host memory and the timed calls only charge
    the simulated clock, so the real time of a case is its buffers. A 1 GiB pattern took 2.9 s to build on
    the 2-core build machine (three passes, each over freshly faulted pages), and each case built two, and a
    destination: about 7 s a 1 GiB case, 40 min of the full profile on 8 GPUs. The verification call
    (``_verify_once``) still returns a fresh copy, compared with a pattern no call is handed."""

    def __init__(self) -> None:
        self._tensors: dict[str, tuple[tuple[Any, ...], torch.Tensor]] = {}
        self.verified: set[Case] = set()  # host calls verified on these buffers (``_verify_once``)

    def get(self, role: str, shape: tuple[int, ...], dtype: torch.dtype, make: Callable[[], torch.Tensor]) -> torch.Tensor:
        key = (shape, dtype)
        kept = self._tensors.get(role)
        if kept is None or kept[0] != key:
            self._tensors.pop(role, None)  # give the old one back before making the new one
            self.verified.clear()
            kept = self._tensors[role] = (key, make())
        return kept[1]

    def clear(self) -> None:
        """Give every kept tensor back (a case that runs for real gets the host memory it had before)."""
        self._tensors.clear()
        self.verified.clear()


_KEPT = _Kept()


def _uses_kept(case: Case, backend: DeviceBackend | None) -> bool:
    """Whether ``case`` takes its buffers from ``_KEPT``: it runs on a simulated accelerator, whose timed
    calls touch no byte of them (and never pageable or pinned memory of its own: the simulated machine
    prices those by path)."""
    return bool(backend is not None and backend.simulated and any(d != "cpu" for d in case.devices))


def prepare(case: Case, backend: DeviceBackend | None = None) -> Buffers:
    """The case's source (the pattern) and, for copy_, its destination, where ``backend`` keeps them."""
    if case.op in ("create", "sync"):
        return Buffers(src=None, dst=None)
    dtype = _dtype(case)
    if _uses_kept(case, backend):
        assert backend is not None
        return _kept(case, dtype, backend)
    place = backend.tensor_device if backend is not None else str
    pin: Callable[[torch.Tensor], torch.Tensor] = backend.pin_memory if backend is not None else torch.Tensor.pin_memory

    def on(device: str, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor``, pinned where the case's host end is pinned memory."""
        return pin(tensor) if case.host_memory == "pinned" and device == "cpu" else tensor

    src = on(case.src, pattern(case.shape, dtype, place(case.src)))
    dst = on(case.dst, torch.zeros(case.shape, dtype=dtype, device=place(case.dst))) if case.method == "copy_" else None
    return Buffers(src=src, dst=dst)


def _kept(case: Case, dtype: torch.dtype, backend: DeviceBackend) -> Buffers:
    """A simulated case's buffers, from ``_KEPT``: the destination zeroed as a fresh one would be."""
    src = _KEPT.get("source", case.shape, dtype, lambda: pattern(case.shape, dtype, backend.tensor_device(case.src)))
    empty = functools.partial(torch.empty, case.shape, dtype=dtype, device=backend.tensor_device(case.dst))
    dst = _KEPT.get("destination", case.shape, dtype, empty).zero_() if case.method == "copy_" else None
    return Buffers(src=src, dst=dst)


@dataclass(frozen=True)
class _Bound:
    """What a core case's call is built from: the case, its buffers, where its tensors are kept (``place``:
    a simulated GPU's on the host) and the device it moves to."""

    case: Case
    src: Any
    dst: Any
    place: Callable[[str], str]
    target: torch.device
    relocated: bool  # the backend keeps a device's tensors elsewhere: a move must be forced to copy
    backend: DeviceBackend | None


def _synchronize(b: _Bound) -> Callable[[], Any]:
    index = accelerator_index(b.case.src)
    assert b.backend is not None and index is not None, "a synchronize needs the backend and an accelerator"
    return functools.partial(b.backend.synchronize, index)


def _create(b: _Bound) -> Callable[[], Any]:
    return functools.partial(getattr(torch, b.case.method), b.case.shape, dtype=_dtype(b.case), device=b.target)


def _copy_into(b: _Bound) -> Callable[[], Any]:
    assert b.dst is not None
    return functools.partial(b.dst.copy_, b.src, non_blocking=b.case.non_blocking)


def _forced(b: _Bound) -> Callable[[], Any] | None:
    """A move between devices whose tensors the backend keeps elsewhere: forced to copy, so the data moves."""
    return functools.partial(b.src.to, b.target, non_blocking=b.case.non_blocking, copy=True) if b.relocated else None


def _noop_cuda(b: _Bound) -> Callable[[], Any]:
    if b.relocated:
        return functools.partial(b.src.to, b.target)  # .cuda() would need CUDA; the same no-op
    return functools.partial(b.src.cuda, accelerator_index(b.case.dst))


#: The timed call of a core case by (op, method); op None: any family that moves its payload (h2d, d2h, d2d,
#: peer, host, and a family a plugin registers).
_CALLS: dict[tuple[str | None, str], Callable[[_Bound], Callable[[], Any]]] = {
    ("sync", "synchronize"): _synchronize,
    **{("create", method): _create for method in ("empty", "zeros", "ones", "rand")},
    ("noop", "cuda"): _noop_cuda,
    # The form users write most, a string, is its own variant: torch parses it per call.
    ("noop", "to"): lambda b: functools.partial(b.src.to, b.place(b.case.dst) if b.case.variant == "str" else b.target),
    ("noop", "cpu"): lambda b: b.src.cpu,  # builds the call; the call itself is the bound method
    (None, "copy_"): _copy_into,
    (None, "clone"): lambda b: b.src.clone,
    (None, "cpu"): lambda b: _forced(b) or b.src.cpu,
    (None, "cuda"): lambda b: _forced(b) or functools.partial(b.src.cuda, accelerator_index(b.case.dst),
                                                              non_blocking=b.case.non_blocking),
    (None, "to"): lambda b: _forced(b) or functools.partial(b.src.to, b.target, non_blocking=b.case.non_blocking),
}


def operation(case: Case, buffers: Buffers, backend: DeviceBackend | None = None) -> Callable[[], Any]:
    """The call that is timed, with every argument bound up front (``_CALLS``).

    Bound with functools.partial, not a lambda: a lambda adds a Python frame to every
    call, a quarter of a CPU no-op's figure. Where ``backend`` keeps a device's tensors
    elsewhere (a simulated GPU's on the host), a move between two devices is forced to
    copy, so the data still moves.
    """
    moves = case.op not in ("sync", "create")  # these two have no source tensor, nor a moving op's calls
    build = _CALLS.get((case.op, case.method)) or (_CALLS.get((None, case.method)) if moves else None)
    if build is None:
        raise ValueError(f"no operation for method {case.method!r} of op {case.op!r}")
    assert buffers.src is not None or not moves
    place = backend.tensor_device if backend is not None else str
    relocated = place(case.src) != case.src or place(case.dst) != case.dst
    return build(_Bound(case, buffers.src, buffers.dst, place, torch.device(place(case.dst)), relocated, backend))


def verify(case: Case, buffers: Buffers, result: Any, where: str | None = None, kept: bool = False) -> None:
    """Raise CopyMismatch unless ``result`` is what the case should have produced
    (on ``where``, the device that holds ``case.dst``'s tensors; by default case.dst). ``kept``: the
    expected pattern may come from ``_KEPT`` (a simulated case)."""
    if case.op == "sync":
        return  # nothing moves; the call returning is all there is
    if case.op == "noop":
        if result is not buffers.src:
            raise CopyMismatch(f"{case.id}: {case.method}() on a tensor already on {case.dst} returned a new object")
        return
    expected_device = torch.device(where or case.dst)
    if result.device != expected_device or tuple(result.shape) != case.shape or result.dtype != _dtype(case):
        raise CopyMismatch(f"{case.id}: got a {tuple(result.shape)} {result.dtype} tensor on {result.device}, "
                           f"expected {case.shape} {_dtype(case)} on {expected_device}")
    if case.op == "create":
        if case.method in _CREATED and not _CREATED[case.method](result):
            raise CopyMismatch(f"{case.id}: torch.{case.method} produced wrong values")
        return
    if buffers.src is not None and _shares_memory(result, buffers.src):
        # Where both ends are host memory (a simulated machine's), the source holds the pattern too.
        raise CopyMismatch(f"{case.id}: the result is the source's own memory, not a copy of it")
    # the pattern result must hold: built for it, or for a simulated case (kept) taken from _KEPT, where no call of
    # any case is ever handed it
    build = functools.partial(pattern, case.shape, result.dtype, result.device)
    expected = _KEPT.get("expected", case.shape, result.dtype, build) if kept else build()
    if not torch.equal(result, expected):
        wrong = (result != expected).flatten().nonzero()
        first = int(wrong[0]) if len(wrong) else -1
        raise CopyMismatch(f"{case.id}: destination differs from source at {len(wrong)} of {result.numel()} elements "
                           f"(first at index {first})")


def _shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.device == b.device and a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


#: What each creation method's result must hold; empty's, any contents, is not checked.
_CREATED = {"zeros": lambda result: not bool(result.any()), "ones": lambda result: bool((result == 1).all()),
            "rand": lambda result: bool(((result >= 0) & (result < 1)).all())}


def _free(backend: DeviceBackend) -> None:
    gc.collect()
    if not _WEDGED:  # cudaFree synchronizes implicitly: with a copy stuck on any device it would never return
        backend.empty_cache()


def _is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, _OOM) or "out of memory" in str(error).lower()


# torch.OutOfMemoryError is new in torch 2.5; older ones raise torch.cuda's.
_OOM: type[Exception] = getattr(torch, "OutOfMemoryError", getattr(torch.cuda, "OutOfMemoryError", RuntimeError))

#: Calls of a no-op per timed iteration. pytest-benchmark calls the timed function as
#: ``fn(*args, **kwargs)``, which costs ~50 ns on its own: a quarter of a CPU no-op. A
#: loop of calls inside the timed function, divided out afterwards, costs what
#: timeit's inline loop does (torch.utils.benchmark; tools/harness_overhead.py).
NOOP_CALLS = 100
#: Seconds of device-event timing to spend per case, at most: shared by its EVENT_WINDOWS windows (each window had
#: the whole budget, three times this in all: about 230 s of the 8-GPU simulated full profile's 426 s of clock).
EVENT_BUDGET_S = 0.2


@contextlib.contextmanager
def out_of_memory_skips(label: str, backend: DeviceBackend) -> Iterator[None]:
    """Turn an out-of-memory error into CannotRun, after giving memory back.

    Prefer ``run_case``'s handling: here the traceback (and the buffers its frames
    hold) is still alive while memory is given back.
    """
    try:
        yield
    except (RuntimeError, _OOM) as error:
        if not _is_out_of_memory(error):
            raise
        _free(backend)
        raise CannotRun(f"out of memory at {label}: {first_line(error)}") from None


def run_case(case: Case, benchmark: Benchmark, backend: DeviceBackend) -> dict[str, Any]:
    """Time ``case`` with ``benchmark``, verify its result, and fill in extra_info.

    Raises CannotRun (the caller skips) when memory is short or a device has a stuck copy,
    CopyMismatch when the data did not arrive, Wedged when this case's copy is stuck.
    """
    check_supported(case)
    refuse_stuck(case.devices)
    check_memory(case, backend)
    if not _uses_kept(case, backend):
        _KEPT.clear()  # a case that runs for real has the host memory it would have without simulated ones
    reason = None
    try:
        with near_gpu(case, backend, bool(_WEDGED)) as landed:  # host buffers on the GPU's NUMA node
            return _run(case, benchmark, backend, landed)
    except Wedged:
        mark_wedged(case.devices, case.id)
        reason = "wedged"  # and no freeing: giving device memory back waits for the stuck copy
        raise
    except (RuntimeError, _OOM) as error:
        if not _is_out_of_memory(error):
            raise
        reason = f"out of memory at {case.size_label}: {first_line(error)}"
    finally:
        if reason is None and case.nbytes >= 2**28 and not _uses_kept(case, backend):
            _free(backend)  # give large buffers back before the next case (a simulated case's are kept)
    # Memory is given back only here, after the handler: until it ends, the error's
    # traceback keeps _run's frame, and the buffers it holds, alive.
    _free(backend)
    raise CannotRun(reason)


def _run(case: Case, benchmark: Benchmark, backend: DeviceBackend,
         landed: Callable[..., dict[str, Any]] = lambda *_: {}) -> dict[str, Any]:
    buffers = prepare(case, backend)
    op = operation(case, buffers, backend)
    touched = () if case.op in BARE_OPS else case.devices
    deadline = _deadline(case)
    benchmark.group = f"{case.op} {case.src}->{case.dst}"
    info = benchmark.extra_info
    with intra_op_threads(1 if case.variant == "single_thread" else None), backend.timed(case, op) as issued:
        call = slowed(synchronized(issued, touched, backend, deadline), slowdown_for(case.op, case.nbytes))  # unset: unwrapped
        for _ in range(WARMUP_CALLS):
            fresh = call()
        simulated = backend.simulated and any(d != "cpu" for d in case.devices)
        info.update(case.extra_info(), clock=CLOCK_SIMULATED if simulated else CLOCK_WALL, **landed(buffers, fresh))
        del fresh  # a fresh result's node is read: held on, it would change what the timed calls allocate
        if (rule := sync_rule(touched, deadline is not None)) is not None:
            info["sync_rule"] = rule
        if case.op == "noop":
            benchmark(_repeated(call, NOOP_CALLS))
            # each round's time over its calls, ``iterations`` counting calls (no stats under --benchmark-disable)
            scale_rounds(getattr(benchmark, "stats", None), NOOP_CALLS)
        else:
            benchmark(call)
        if counts_faults(case.op, case.devices, simulated):
            info["minor_faults_per_call"] = after_timing(benchmark, call)
    if (backend.type is not None and case.op not in BARE_OPS and any(d != "cpu" for d in case.devices)
            and case.host_memory != "pageable"):
        # A pageable copy has no device time of its own: the driver stages it through a pinned
        # bounce buffer with the host's memcpy, so events around back-to-back calls time the
        # host's staging too (on an H200 they read up to 1.4x the synchronized wall time of one
        # call). nvbandwidth, too, times only pinned host memory.
        median = getattr(getattr(getattr(benchmark, "stats", None), "stats", None), "median", None)
        info.update(_device_time(case, buffers, op, backend, median))
    _verify_once(case, buffers, op, backend, deadline)
    src, dst = accelerator_index(case.src), accelerator_index(case.dst)
    if case.op == "peer" and src is not None and dst is not None:
        info["peer_access"] = backend.can_access_peer(src, dst)
    return info


def _verify_once(case: Case, buffers: Buffers, op: Callable[[], Any], backend: DeviceBackend, deadline: float | None) -> None:
    """Verify ``case`` on a call of its own, synchronized, outside the timed region.

    A simulated case only once per host call: every end of it is host memory, so two cases that differ in
    their endpoints alone (the 56 pairs of 8 GPUs, a size created on each GPU) bind the same call on the
    same kept buffers, and the bytes it returns are the same. A failed one is not remembered: each case
    with that call fails on its own."""
    host_call = None
    if _uses_kept(case, backend):
        host_call = dataclasses.replace(case, src=backend.tensor_device(case.src), dst=backend.tensor_device(case.dst))
        if host_call in _KEPT.verified:
            return
    buffers.reset()
    verify(case, buffers, synchronized(op, case.devices, backend, deadline)(), backend.tensor_device(case.dst),
           host_call is not None)
    if host_call is not None:
        _KEPT.verified.add(host_call)


def counts_faults(op: str, devices: Sequence[str], simulated: bool) -> bool:
    """Whether a case's page faults are recorded: it touches host memory (the CPU is one of its
    devices; a no-op or a synchronize touches nothing) and really runs (a simulated accelerator's
    copies only charge a clock, so their faults would be none of the copy's)."""
    return "cpu" in devices and op not in BARE_OPS and not simulated


#: What ``device_time_stand_in`` names: the call timed for device_seconds in place of the case's own.
PINNED_DESTINATION = "pinned_destination"


def _device_time(case: Case, buffers: Buffers, op: Callable[[], Any], backend: DeviceBackend,
                 median: float | None) -> dict[str, Any]:
    """device_seconds, the method that took it and its repeats (timing.device_seconds); for a copy into fresh
    pinned memory, the stand-in timed instead (``_pinned_destination``)."""
    repeats = max(3, min(100, int(EVENT_BUDGET_S / EVENT_WINDOWS / median))) if median else 10
    info: dict[str, Any] = {}
    if (stand_in := _pinned_destination(case, buffers, backend)) is not None:
        case, op = dataclasses.replace(case, method="copy_"), stand_in
        info["device_time_stand_in"] = PINNED_DESTINATION
    # a blocking copy between host and device: the call waits for the copy (docs/design.md section 4)
    host_paced = case.op in ("h2d", "d2h") and not case.non_blocking
    twin_case = dataclasses.replace(case, non_blocking=True) if host_paced else None
    twin_op = operation(twin_case, buffers, backend) if twin_case is not None else None
    with contextlib.ExitStack() as stack:
        issued = stack.enter_context(backend.timed(case, op))
        twin = stack.enter_context(backend.timed(twin_case, twin_op)) if twin_case and twin_op else None
        seconds, method = device_seconds(issued, case.src, case.dst, backend, repeats, twin, case.op in COPY_OPS, _deadline(case))
    return {"device_seconds": seconds, "device_time_method": method, "device_repeats": repeats, **info}


def _pinned_destination(case: Case, buffers: Buffers, backend: DeviceBackend) -> Callable[[], Any] | None:
    """For ``.to('cpu', non_blocking=True)``, the same copy into one pinned buffer kept for the case.

    Why: that call returns fresh pinned memory. Back to back behind the spin, no block is free again before
    the window ends, so each call would cudaHostAlloc its own (40 x 256 MiB = 10 GiB in one case, paced by the
    host at ~134 ms a 256 MiB block, and held page-locked until the family ends). The DMA is the same: device
    to pinned host memory, non-blocking. None for every other case (its own call is timed)."""
    if case.op != "d2h" or case.method == "copy_" or not case.non_blocking or buffers.src is None:
        return None
    src = buffers.src
    kept = backend.pin_memory(torch.empty(tuple(src.shape), dtype=src.dtype, device=backend.tensor_device("cpu")))
    return functools.partial(kept.copy_, src, non_blocking=True)


@contextlib.contextmanager
def intra_op_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op threads set to ``count`` inside (unchanged for None), restored after."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _repeated(call: Callable[[], Any], times: int) -> Callable[[], Any]:
    calls = range(times)

    def repeated() -> Any:
        for _ in calls:
            call()

    return repeated
